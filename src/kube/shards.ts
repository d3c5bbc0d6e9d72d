// Shard membership for active-active replicas (issue 18): every replica holds a
// coordination.k8s.io Lease of its own, `<leader id>-shard-<identity>`, taken and renewed with the
// same rules as leader election (lease.ts: it is the only candidate for it, so it takes it at
// once; it stops reconciling when it cannot renew within the renew deadline — self-fencing). The
// live replicas are the shard Leases whose record the observer saw change within their duration
// (createShardObserver); src/lib/ring.ts assigns objects over them. Kubernetes is the whole
// membership protocol: no gossip, no extra service (timebertt/kubernetes-controller-sharding
// does the same).
import type { Logger } from "../log.ts";
import type { Kube } from "./client.ts";
import { leaseExpired, runLeaderElection, type LeaderElection, type LeaseTimes } from "./lease.ts";

/**
 * The shard Leases of one keyward installation are `<group>-shard-<identity>`, the group being its
 * leader election id: two installations in one namespace never count each other's replicas.
 */
export function shardLeasePrefix(group: string): string {
  return `${group}-shard-`;
}

/** The parts of a Lease membership reads. */
export interface ShardLease {
  metadata?: { name?: string; resourceVersion?: string; uid?: string };
  spec?: { holderIdentity?: string; leaseDurationSeconds?: number; renewTime?: string };
}

export interface ShardObserver {
  /**
   * The identities of the live shards among `leases` (one list of the namespace's Leases), sorted:
   * shard Leases held by the identity their name carries whose record this observer saw change
   * within their duration, timed on this process's monotonic clock from when it saw the change —
   * never by the holder's wall clock. A holder fences itself a renew deadline after it sent its
   * last renewal, which is before anyone can see it, so it has stopped before any observer calls
   * it dead. A Lease first seen is not live: see `view`.
   */
  live(leases: readonly ShardLease[]): string[];
  /**
   * `live`, and the shards whose liveness is not known yet: a Lease held by its identity that this
   * observer has not yet seen change, for less than its duration since it first saw it (a new
   * leader's first lists, a replica just joined). Its record may be a dead replica's last renewal,
   * or a live one's; it is known once it changes (live) or stays unchanged for its duration (dead).
   */
  view(leases: readonly ShardLease[]): { live: string[]; unknown: string[] };
  /** Shard Leases released, or unchanged for `unchangedMs`: their replicas are gone for good. */
  stale(leases: readonly ShardLease[], unchangedMs: number): ShardLease[];
}

export function createShardObserver(prefix: string, monotonicNow: () => number = () => performance.now()): ShardObserver {
  // at: when the record was last seen to change, or first seen; changed: it was seen to change.
  const seen = new Map<string, { stamp: string; at: number; changed: boolean }>();
  const track = (leases: readonly ShardLease[], now: number): ShardLease[] => {
    const shards = leases.filter((l) => (l.metadata?.name ?? "").startsWith(prefix));
    const names = new Set(shards.map((l) => l.metadata?.name ?? ""));
    for (const name of seen.keys()) if (!names.has(name)) seen.delete(name);
    for (const l of shards) {
      const name = l.metadata?.name ?? "";
      const stamp = [l.spec?.holderIdentity ?? "", l.spec?.renewTime ?? "", l.metadata?.resourceVersion ?? ""].join("\u0000");
      const before = seen.get(name);
      if (!before) seen.set(name, { stamp, at: now, changed: false });
      else if (before.stamp !== stamp) seen.set(name, { stamp, at: now, changed: true });
    }
    return shards;
  };
  const view = (leases: readonly ShardLease[]): { live: string[]; unknown: string[] } => {
    const now = monotonicNow();
    const live = new Set<string>();
    const unknown = new Set<string>();
    for (const l of track(leases, now)) {
      const name = l.metadata?.name ?? "";
      const identity = name.slice(prefix.length);
      const durationMs = (l.spec?.leaseDurationSeconds ?? 0) * 1000;
      const record = seen.get(name);
      if (identity === "" || l.spec?.holderIdentity !== identity || !record || leaseExpired(record.at, durationMs, now)) continue;
      (record.changed ? live : unknown).add(identity);
    }
    return { live: [...live].sort(), unknown: [...unknown].sort() };
  };
  return {
    live: (leases) => view(leases).live,
    view,
    stale(leases, unchangedMs) {
      const now = monotonicNow();
      return track(leases, now).filter(
        (l) => (l.spec?.holderIdentity ?? "") === "" || now - (seen.get(l.metadata?.name ?? "")?.at ?? now) >= unchangedMs,
      );
    },
  };
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
  /** Could not renew within the renew deadline, or the leader took it over: stop reconciling at once (another may own the share). */
  onLost: () => void;
  monotonicNow?: () => number;
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
    ownedOnce: true,
    ...(opts.monotonicNow ? { monotonicNow: opts.monotonicNow } : {}),
  });
}
