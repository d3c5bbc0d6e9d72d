// A sharded replica's step before each pass (docs/sharding.md): the fence, then the object's
// standing on this replica's shard label. The engine's controller runs what `sharded` returns
// like any reconcile; the work queue never hands one key to two workers, so a pass in flight ends
// before the next step of the same key.
import type { Logger } from "../log.ts";
import type { KindRef, Kube } from "../kube/client.ts";
import type { SharedInformer } from "../kube/informer.ts";
import { keyString } from "../kube/keys.ts";
import { getObject, isConflict, patchMetadata } from "../kube/objects.ts";
import { errorSummary } from "../kube/rest.ts";
import { done, gone, type KubeObject, type Outcome, type ReconcileFn } from "../engine/types.ts";
import { RELEASE_LABELS, shardStanding, type Leadership } from "./plan.ts";

export interface ShardedOptions {
  /** This replica's identity: the shard label's value on its objects. */
  identity: string;
  /** This replica holds its shard Lease now (lease.ts holds): no pass starts otherwise. */
  holds: () => boolean;
  kind: KindRef;
  kube: Kube;
  /** The kind's informer (this replica's share of it): the object as the controller sees it. */
  cache: SharedInformer;
  logger: Logger;
  /**
   * A cluster-scoped kind: labels do not count, the leader reconciles every object of the kind
   * (queueOnLeading queues them all when this replica starts to lead).
   */
  leadership?: Leadership;
}

/**
 * `reconcile`, run only on this replica's objects, and only while it holds its shard Lease. An
 * object the sharder asks to drain is let go (its shard labels removed) instead of reconciled. A
 * key missing from the cache (deleted, or gone from this replica's label selection: the DELETED
 * event of a release, an older requeue timer) is looked up at the apiserver first: gone, it gets
 * its pass (the reconcile lets go of what it kept); another replica's (or nobody's yet), it is let
 * go without a pass — no call, no write, no requeue — as is a cached object that is not this
 * replica's. A cluster-scoped kind (`leadership`) is the leader's, whatever its labels.
 */
export function sharded(reconcile: ReconcileFn, o: ShardedOptions): ReconcileFn {
  const releases = releaseSchedule();
  const release = releaser(o.kube, o.kind);
  const { leadership } = o;
  const step: ReconcileFn = async (key, signal) => {
    // The fence: a replica whose shard Lease is not renewed in time (or was taken over) acts on nothing.
    if (!o.holds()) return { type: "retryable", error: new Error("this replica does not hold its shard Lease") };
    if (leadership) return leadership.leads() ? reconcile(key, signal) : done();
    const id = keyString(key);
    let obj: KubeObject | undefined;
    try {
      obj = o.cache.get(key) ?? (await getObject(o.kube, o.kind, key));
    } catch (err) {
      return { type: "retryable", error: new Error(`could not read the object to check its shard: ${errorSummary(err)}`) };
    }
    if (!obj) {
      releases.forget(id);
      return reconcile(key, signal);
    }
    const standing = shardStanding(obj.metadata.labels, o.identity);
    if (standing !== "draining") releases.forget(id);
    switch (standing) {
      case "own":
        return reconcile(key, signal);
      case "foreign":
        // Not this replica's: what the kind keeps for it goes, and `gone` drops a requeue still waiting.
        reconcile.forget?.(key);
        return gone();
      default:
        return releaseShare(release, obj, releases, o.logger);
    }
  };
  if (reconcile.forget) step.forget = reconcile.forget;
  return step;
}

/** A cluster-scoped kind's controller queues every object when this replica starts to lead; returns the unsubscribe. */
export function queueOnLeading(
  leadership: Leadership,
  controller: { list(): KubeObject[]; enqueue(key: KubeObject["metadata"]): void },
): () => void {
  return leadership.onLeading(() => controller.list().forEach((o) => controller.enqueue(o.metadata)));
}

/** A failed release is tried again after 250 ms, doubling to at most this: never the object's own backoff. */
export const RELEASE_RETRY_MAX_MS = 5_000;
const RELEASE_RETRY_BASE_MS = 250;

export interface ReleaseSchedule {
  /** The wait before the next try of a release that just failed. */
  next(key: string): number;
  forget(key: string): void;
}

/** Each draining key's own short backoff for its release (reset when it is let go or stops draining). */
export function releaseSchedule(): ReleaseSchedule {
  const failures = new Map<string, number>();
  return {
    next(key) {
      const n = failures.get(key) ?? 0;
      failures.set(key, n + 1);
      return Math.min(RELEASE_RETRY_MAX_MS, RELEASE_RETRY_BASE_MS * 2 ** Math.min(n, 20));
    },
    forget: (key) => void failures.delete(key),
  };
}

/**
 * Lets a drained object go. The release is conditional on the version this replica holds, so a
 * stale cache can never remove the next owner's label. A failure (a 409: the newer version may
 * be this replica's own status write, which wakes nothing) comes back on the release's own short
 * schedule, not the object's backoff: a key that failed its reconciles for a while would
 * otherwise wait up to 5 minutes, draining, reconciled by nobody. By the next try the cache holds
 * the newer version, or the object is gone.
 */
export async function releaseShare(
  release: (obj: KubeObject) => Promise<void>,
  obj: KubeObject,
  releases: ReleaseSchedule,
  log: Logger,
): Promise<Outcome> {
  const key = keyString(obj.metadata);
  try {
    await release(obj);
    releases.forget(key);
    log.info({ key }, "let go of a drained object");
    return done();
  } catch (err) {
    const afterMs = releases.next(key);
    const why = isConflict(err) ? "the object changed while it was let go" : errorSummary(err);
    log.info({ key, afterMs, err: why }, "could not let go of a drained object yet; trying again soon");
    return { type: "requeueAfter", afterMs };
  }
}

/** Lets go of a drained object: its shard labels come off, on the version this replica holds only. */
function releaser(kube: Kube, kind: KindRef): (obj: KubeObject) => Promise<void> {
  return async (obj) => {
    await patchMetadata(kube, kind, obj.metadata, { labels: { ...RELEASE_LABELS } }, { base: obj, exact: true });
  };
}
