// Shard membership for active-active replicas (issue 18): every replica holds a
// coordination.k8s.io Lease of its own, `<leader id>-shard-<identity>`, taken and renewed with the
// same rules as leader election (lease.ts: it is the only candidate for it, so it takes it at
// once; it stops reconciling when it cannot renew within the renew deadline — self-fencing). The
// live replicas are the shard Leases whose record the observer saw change within their duration
// (createShardObserver); src/lib/ring.ts assigns objects over them. Kubernetes is the whole
// membership protocol: no gossip, no extra service (timebertt/kubernetes-controller-sharding
// does the same).
import type { Logger } from "../log.ts";
import { resourcePath, type Kube } from "../kube/client.ts";
import { leaseExpired, leaseKind, runLeaderElection, type LeaderElection, type LeaseTimes } from "../kube/lease.ts";
import { isConflict, isKubeNotFound } from "../kube/objects.ts";
import { errorSummary, kubeJson } from "../kube/rest.ts";
import { interruptibleSleep } from "../lib/backoff.ts";

/**
 * The join handshake (docs/sharding.md). A replica's process writes a fresh incarnation on its
 * shard Lease; it reconciles only once the leader has written the same value back as `joined`,
 * which the leader does only after every sharder pass planned before it saw that incarnation has
 * ended. A replica restarted under the same name can then never meet a pass still moving its
 * objects away, however long that pass or its Lease list stalled.
 */
export const INCARNATION_ANNOTATION = "shard.keyward.dev/incarnation";
export const JOINED_ANNOTATION = "shard.keyward.dev/joined";
/**
 * On the leader Lease: the identity of a leader that acknowledges joins. A leader that does not
 * (an older release during a rolling update) leaves it unset or naming another holder; its
 * replicas then fall back to waiting a lease duration and a retry period.
 */
export const HANDSHAKE_ANNOTATION = "shard.keyward.dev/acknowledges-joins";

/**
 * The shard Leases of one keyward installation are `<group>-shard-<identity>`, the group being its
 * leader election id: two installations in one namespace never count each other's replicas.
 */
export function shardLeasePrefix(group: string): string {
  return `${group}-shard-`;
}

/** The parts of a Lease membership reads. */
export interface ShardLease {
  metadata?: { name?: string; resourceVersion?: string; uid?: string; annotations?: Record<string, string> };
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
  /** This process's incarnation (a fresh random value per process), written on the Lease. */
  incarnation?: string;
  /** Holding the Lease: this replica may reconcile its share once the leader acknowledged it (awaitJoin). */
  onJoined: () => void;
  /** Could not renew within the renew deadline, or the leader took it over: stop reconciling at once (another may own the share). */
  onLost: () => void;
  monotonicNow?: () => number;
}

/**
 * The sharding marker: one Lease of a fixed name, `<group>-sharded`, that every sharded replica
 * writes on each renewal of its shard Lease. An unsharded leader (sharding turned off) `get`s it by
 * name and reconciles only once it is gone or has stayed unchanged for its duration: then no
 * sharded replica can still act (each stops at its renew deadline when it cannot write it).
 */
export function shardingMarkerName(group: string): string {
  return `${group}-sharded`;
}

/**
 * A sharded replica's write of the sharding marker: its renew time on the version read, or the
 * marker's creation. A 409 is another replica's write in between, which keeps it alive as well.
 */
export async function touchShardingMarker(
  kube: Kube,
  namespace: string,
  group: string,
  identity: string,
  durationMs: number,
): Promise<void> {
  const name = shardingMarkerName(group);
  const path = resourcePath(leaseKind, namespace, name);
  const renewTime = new Date().toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
  const spec = { holderIdentity: identity, leaseDurationSeconds: Math.max(1, Math.ceil(durationMs / 1000)), renewTime };
  const lease = { apiVersion: "coordination.k8s.io/v1", kind: "Lease" };
  try {
    const current = await kubeJson<ShardLease>(kube.access, { path }).catch((err: unknown) =>
      isKubeNotFound(err) ? undefined : Promise.reject(err as Error),
    );
    if (current) await kubeJson(kube.access, { method: "PUT", path, body: { ...lease, metadata: current.metadata, spec } });
    else
      await kubeJson(kube.access, {
        method: "POST",
        path: resourcePath(leaseKind, namespace),
        body: { ...lease, metadata: { name, namespace }, spec },
      });
  } catch (err) {
    // Written or created by another replica meanwhile: it is fresh.
    if (!isConflict(err)) throw err;
  }
}

export interface NoShardsWaitOptions {
  kube: Kube;
  namespace: string;
  group: string;
  /** This process's lease duration: the marker is dead after the longer of it and the marker's own. */
  leaseDurationMs: number;
  pollMs: number;
  signal: AbortSignal;
  logger: Logger;
  monotonicNow?: () => number;
}

/**
 * An unsharded leader's wait before it reconciles: resolves true once the sharding marker is gone,
 * or has been seen unchanged for its duration on this process's monotonic clock (first seen counts
 * as changed then: its record may be a live replica's), and is then deleted at the version judged.
 */
export async function awaitNoShards(o: NoShardsWaitOptions): Promise<boolean> {
  const now = o.monotonicNow ?? (() => performance.now());
  const path = resourcePath(leaseKind, o.namespace, shardingMarkerName(o.group));
  let seen: { stamp: string; at: number } | undefined;
  let logged = false;
  while (!o.signal.aborted) {
    try {
      const marker = await kubeJson<ShardLease>(o.kube.access, { path, signal: o.signal }).catch((err: unknown) =>
        isKubeNotFound(err) ? undefined : Promise.reject(err as Error),
      );
      if (!marker) return true;
      const stamp = [marker.spec?.holderIdentity, marker.spec?.renewTime, marker.metadata?.resourceVersion].join("\u0000");
      if (seen?.stamp !== stamp) seen = { stamp, at: now() };
      const durationMs = Math.max(o.leaseDurationMs, (marker.spec?.leaseDurationSeconds ?? 0) * 1000);
      if (now() - seen.at >= durationMs) {
        const { uid, resourceVersion } = marker.metadata ?? {};
        await kubeJson(o.kube.access, {
          method: "DELETE",
          path,
          body: { apiVersion: "v1", kind: "DeleteOptions", preconditions: { uid, resourceVersion } },
        }).catch((err: unknown) => (isKubeNotFound(err) || isConflict(err) ? undefined : Promise.reject(err as Error)));
        // Deleted, or changed meanwhile (a 409): read again.
        continue;
      }
      if (!logged) o.logger.info("sharded replicas may still be reconciling (the sharding marker is live); waiting for them to stop");
      logged = true;
    } catch (err) {
      if (!o.signal.aborted) o.logger.warn({ err: errorSummary(err) }, "reading the sharding marker failed");
    }
    await interruptibleSleep(o.pollMs, o.signal);
  }
  return false;
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
    // Every renewal keeps the sharding marker alive too: an unsharded leader waits for it.
    alsoOnRenew: () => touchShardingMarker(opts.kube, opts.namespace, opts.group, opts.identity, opts.leaseDurationMs),
    ...(opts.incarnation !== undefined ? { annotations: { [INCARNATION_ANNOTATION]: opts.incarnation } } : {}),
    ...(opts.monotonicNow ? { monotonicNow: opts.monotonicNow } : {}),
  });
}

/** A shard Lease whose holder's incarnation the leader has not acknowledged yet. */
export function joinPending(lease: ShardLease): string | undefined {
  const incarnation = lease.metadata?.annotations?.[INCARNATION_ANNOTATION];
  return incarnation !== undefined && lease.metadata?.annotations?.[JOINED_ANNOTATION] !== incarnation ? incarnation : undefined;
}

export interface JoinWaitOptions {
  kube: Kube;
  namespace: string;
  /** The shard Lease's name and the leader Lease's. */
  shardLease: string;
  leaderLease: string;
  incarnation: string;
  pollMs: number;
  /** With a leader that does not acknowledge joins: how long to wait instead (a lease duration and a retry period). */
  fallbackMs: number;
  signal: AbortSignal;
  logger: Logger;
  monotonicNow?: () => number;
}

/**
 * Resolves true once the leader acknowledged this incarnation on the shard Lease; or, when the
 * leader Lease's holder does not acknowledge joins (an older release), once `fallbackMs` passed.
 * False when aborted.
 */
export async function awaitJoin(o: JoinWaitOptions): Promise<boolean> {
  const now = o.monotonicNow ?? (() => performance.now());
  const since = now();
  const get = async (name: string): Promise<ShardLease | undefined> => {
    try {
      return await kubeJson<ShardLease>(o.kube.access, { path: resourcePath(leaseKind, o.namespace, name), signal: o.signal });
    } catch (err) {
      if (isKubeNotFound(err)) return undefined;
      throw err;
    }
  };
  while (!o.signal.aborted) {
    try {
      const own = await get(o.shardLease);
      if (own?.metadata?.annotations?.[JOINED_ANNOTATION] === o.incarnation) return true;
      if (now() - since >= o.fallbackMs) {
        const leader = await get(o.leaderLease);
        const holder = leader?.spec?.holderIdentity ?? "";
        if (leader?.metadata?.annotations?.[HANDSHAKE_ANNOTATION] !== holder || holder === "") {
          o.logger.info({ holder }, "the leader does not acknowledge joins; reconciling after the lease duration instead");
          return true;
        }
      }
    } catch (err) {
      if (!o.signal.aborted) o.logger.warn({ err: errorSummary(err) }, "reading the shard Leases while joining failed");
    }
    await interruptibleSleep(o.pollMs, o.signal);
  }
  return false;
}
