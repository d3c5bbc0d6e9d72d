// What the sharder changes on each object, given who owns it now and who its shares say should
// (issue 18; docs/sharding.md). Pure: the sharder applies the changes as label patches.
// The rule that keeps one reconciler per object: an object only ever moves from a live owner by
// way of the drain label, which the old owner clears itself once it has let the object go; an
// owner whose shard Lease expired has already stopped (self-fencing at its renew deadline), so
// its objects move at once.

export const SHARD_LABEL = "shard.keyward.dev/owner";
export const DRAIN_LABEL = "shard.keyward.dev/drain";

export interface ShardedObject {
  key: string;
  /** The shard label's value, if any. */
  owner?: string | undefined;
  /** The drain label is set: the owner was asked to let the object go. */
  draining?: boolean;
}

export type ShardChange =
  | { key: string; change: "assign"; to: string }
  | { key: string; change: "drain"; from: string }
  | { key: string; change: "undrain"; owner: string };

/**
 * The changes that move every object toward its owner in the shares: assign an unowned object (or
 * one whose owner is gone), ask a live owner that should no longer have it to drain, and take the
 * drain back when the shares return the object to its owner before it let go. An object being
 * drained by a live owner waits for that owner (nothing to do). No live shard: nothing. An object
 * whose owner's liveness is not known yet (`unknown`: a Lease not yet seen to change) waits too:
 * that owner may be reconciling it.
 */
export function shardChanges(
  objects: readonly ShardedObject[],
  ownerOf: (key: string) => string | undefined,
  live: ReadonlySet<string>,
  unknown: ReadonlySet<string> = new Set(),
): ShardChange[] {
  const changes: ShardChange[] = [];
  for (const o of objects) {
    const target = ownerOf(o.key);
    if (target === undefined) continue;
    if (o.owner !== undefined && unknown.has(o.owner)) continue;
    if (o.owner === undefined || o.owner === "" || !live.has(o.owner)) {
      changes.push({ key: o.key, change: "assign", to: target });
    } else if (o.owner === target) {
      if (o.draining) changes.push({ key: o.key, change: "undrain", owner: o.owner });
    } else if (!o.draining) {
      changes.push({ key: o.key, change: "drain", from: o.owner });
    }
  }
  return changes;
}

/** The metadata labels of a change, as a merge patch (null removes a label). */
export function shardLabels(c: ShardChange): Record<string, string | null> {
  switch (c.change) {
    case "assign":
      return { [SHARD_LABEL]: c.to, [DRAIN_LABEL]: null };
    case "drain":
      return { [DRAIN_LABEL]: "true" };
    case "undrain":
      return { [DRAIN_LABEL]: null };
  }
}

/** Where an object stands for a replica: its own, another replica's (or nobody's yet), or its own but asked to let go. */
export type ShardStanding = "own" | "foreign" | "draining";

export function shardStanding(labels: Readonly<Record<string, string>> | undefined, identity: string): ShardStanding {
  if (labels?.[SHARD_LABEL] !== identity) return "foreign";
  return labels[DRAIN_LABEL] === undefined ? "own" : "draining";
}

/**
 * Whether a replica may act on an object as it read it (from its cache, its own last write or the
 * apiserver): a namespaced object must carry this replica's shard label (draining or not: a
 * drained object is this replica's until it lets it go). One rule for every read path of every
 * kind: an object read at the apiserver after it left this replica's share (the old owner's
 * requeue timer, the DELETED event of its label-selected watch) is another's, and the pass stops
 * before any call or write. Cluster-scoped objects are not on the ring (the leader's).
 */
export function inShare(
  meta: { namespace?: string | undefined; labels?: Readonly<Record<string, string>> | undefined },
  identity: string,
): boolean {
  return meta.namespace === undefined || meta.namespace === "" || shardStanding(meta.labels, identity) !== "foreign";
}

/** The labels the old owner removes to let a drained object go: the sharder then assigns it anew. */
export const RELEASE_LABELS: Readonly<Record<string, null>> = { [SHARD_LABEL]: null, [DRAIN_LABEL]: null };

/** The label selector of one replica's share. */
export function shardSelector(identity: string): string {
  return `${SHARD_LABEL}=${identity}`;
}

/**
 * Whether this replica holds the leader Lease, and a way to hear when it starts to. With sharding,
 * cluster-scoped kinds (ClusterProviderConfig) are not split over the ring: the leader reconciles
 * every one of them, fenced by the leader Lease as an unsharded leader is (docs/sharding.md).
 */
export interface Leadership {
  leads(): boolean;
  /** Calls `fn` each time this replica starts to lead; returns the unsubscribe. */
  onLeading(fn: () => void): () => void;
}

/** A Leadership main.ts sets when the leader Lease is won (losing it ends the process). */
export function createLeadership(): Leadership & { set(leads: boolean): void } {
  let leads = false;
  const listeners = new Set<() => void>();
  return {
    leads: () => leads,
    onLeading(fn) {
      listeners.add(fn);
      return () => listeners.delete(fn);
    },
    set(value) {
      const started = value && !leads;
      leads = value;
      if (started) for (const fn of [...listeners]) fn();
    },
  };
}
