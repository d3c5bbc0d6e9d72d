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
  metadata?: { name?: string; resourceVersion?: string };
  spec?: { holderIdentity?: string; leaseDurationSeconds?: number; renewTime?: string };
}

export interface ShardObserver {
  /**
   * The identities of the live shards among `leases` (one list of the namespace's Leases), sorted:
   * shard Leases held by the identity their name carries whose record changed within their
   * duration, timed on this process's monotonic clock from when it saw the change — never by the
   * holder's wall clock. A holder fences itself a renew deadline after it sent its last renewal,
   * which is before anyone can see it, so it has stopped before any observer calls it dead. A
   * Lease first seen now counts as just renewed (a new leader waits a full duration).
   */
  live(leases: readonly ShardLease[]): string[];
  /** Shard Leases released, or unchanged for `unchangedMs`: their replicas are gone for good. */
  stale(leases: readonly ShardLease[], unchangedMs: number): string[];
}

export function createShardObserver(prefix: string, monotonicNow: () => number = () => performance.now()): ShardObserver {
  const seen = new Map<string, { stamp: string; at: number }>();
  const track = (leases: readonly ShardLease[], now: number): ShardLease[] => {
    const shards = leases.filter((l) => (l.metadata?.name ?? "").startsWith(prefix));
    const names = new Set(shards.map((l) => l.metadata?.name ?? ""));
    for (const name of seen.keys()) if (!names.has(name)) seen.delete(name);
    for (const l of shards) {
      const name = l.metadata?.name ?? "";
      const stamp = [l.spec?.holderIdentity ?? "", l.spec?.renewTime ?? "", l.metadata?.resourceVersion ?? ""].join("\u0000");
      if (seen.get(name)?.stamp !== stamp) seen.set(name, { stamp, at: now });
    }
    return shards;
  };
  return {
    live(leases) {
      const now = monotonicNow();
      const live = new Set<string>();
      for (const l of track(leases, now)) {
        const name = l.metadata?.name ?? "";
        const identity = name.slice(prefix.length);
        const durationMs = (l.spec?.leaseDurationSeconds ?? 0) * 1000;
        const at = seen.get(name)?.at ?? now;
        if (identity !== "" && l.spec?.holderIdentity === identity && !leaseExpired(at, durationMs, now)) live.add(identity);
      }
      return [...live].sort();
    },
    stale(leases, unchangedMs) {
      const now = monotonicNow();
      return track(leases, now)
        .filter((l) => (l.spec?.holderIdentity ?? "") === "" || now - (seen.get(l.metadata?.name ?? "")?.at ?? now) >= unchangedMs)
        .map((l) => l.metadata?.name ?? "");
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
