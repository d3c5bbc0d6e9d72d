// Shard membership for active-active replicas (issue 18, first slice): every replica holds a
// coordination.k8s.io Lease of its own, `keyward-shard-<identity>`, taken and renewed with the
// same rules as leader election (lease.ts: it is the only candidate for it, so it takes it at
// once; it stops reconciling when it cannot renew within the renew deadline — self-fencing). The
// live replicas are the shard Leases with a holder whose last renewal is within its duration;
// src/lib/ring.ts assigns objects over them. Kubernetes is the whole membership protocol: no
// gossip, no extra service (timebertt/kubernetes-controller-sharding does the same).
import type { Logger } from "../log.ts";
import type { Kube } from "./client.ts";
import { runLeaderElection, type LeaderElection, type LeaseTimes } from "./lease.ts";

/**
 * The shard Leases of one keyward installation are `<group>-shard-<identity>`, the group being its
 * leader election id: two installations in one namespace never count each other's replicas.
 */
export function shardLeasePrefix(group: string): string {
  return `${group}-shard-`;
}

/** The parts of a Lease membership reads. */
export interface ShardLease {
  metadata?: { name?: string };
  spec?: { holderIdentity?: string; leaseDurationSeconds?: number; renewTime?: string };
}

/**
 * The identities of the live shards, sorted: shard Leases (by name) held by the identity the name
 * carries, renewed within their duration plus `skewMs` of wall-clock tolerance between replicas.
 * A released Lease (empty holder) or a replica that stopped renewing drops out; a Lease whose
 * holder is not its own identity (someone else's Lease by that name) is ignored.
 */
export function liveShards(leases: readonly ShardLease[], prefix: string, nowMs: number, skewMs: number): string[] {
  const live = new Set<string>();
  for (const lease of leases) {
    const name = lease.metadata?.name ?? "";
    if (!name.startsWith(prefix)) continue;
    const identity = name.slice(prefix.length);
    const spec = lease.spec ?? {};
    if (!identity || spec.holderIdentity !== identity) continue;
    const renewed = spec.renewTime === undefined ? NaN : Date.parse(spec.renewTime);
    const durationMs = (spec.leaseDurationSeconds ?? 0) * 1000;
    if (Number.isFinite(renewed) && renewed + durationMs + skewMs > nowMs) live.add(identity);
  }
  return [...live].sort();
}

export interface ShardLeaseOptions extends LeaseTimes {
  kube: Kube;
  namespace: string;
  /** The installation's leader election id: the Lease is <group>-shard-<identity>. */
  group: string;
  /** This replica's identity (its pod name). */
  identity: string;
  logger: Logger;
  /** Holding the Lease: this replica may reconcile its share. */
  onJoined: () => void;
  /** Could not renew within the renew deadline: stop reconciling at once (another may own the share). */
  onLost: () => void;
}

/** Takes and renews this replica's shard Lease; stop() releases it so the others take over at once. */
export function runShardLease(opts: ShardLeaseOptions): LeaderElection {
  return runLeaderElection({
    kube: opts.kube,
    namespace: opts.namespace,
    name: `${shardLeasePrefix(opts.group)}${opts.identity}`,
    identity: opts.identity,
    leaseDurationMs: opts.leaseDurationMs,
    renewDeadlineMs: opts.renewDeadlineMs,
    retryPeriodMs: opts.retryPeriodMs,
    onStartedLeading: opts.onJoined,
    onStoppedLeading: opts.onLost,
    logger: opts.logger,
  });
}
