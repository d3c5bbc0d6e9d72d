// The Shard: one sharded replica as a value (docs/sharding.md), built before the operator and
// handed to it whole. It says which objects are this replica's (the engine's Ownership, with its
// write policy), whether it may act now (the fence), whether it leads, and how the operator's
// parts take a share: its informers' selection, its controllers' step before each pass, its
// clients' fences. Without --sharding none of this is made.
import type { Logger } from "../log.ts";
import type { KindRef, Kube } from "../kube/client.ts";
import type { SharedInformer } from "../kube/informer.ts";
import type { KubeAccess } from "../kube/kubeconfig.ts";
import type { KubeObject, Ownership, ReconcileFn } from "../engine/types.ts";
import { fenceKube } from "./fence.ts";
import { createLeadership, inShare, shardSelector, type Leadership } from "./plan.ts";
import { queueOnLeading, sharded } from "./reconcile.ts";
import { shardedKinds } from "./sharder.ts";

export interface Shard extends Ownership {
  /** This replica's identity: its shard label's value, its shard Lease's name. */
  readonly identity: string;
  /** Whether this replica holds its shard Lease now: while it does not, nothing is sent (the fence). */
  readonly holds: () => boolean;
  /** Whether this replica holds the leader Lease: cluster-scoped kinds are the leader's. */
  readonly leadership: Leadership;
  /** This replica won the leader Lease (losing it ends the process, so this is never taken back). */
  lead(): void;
  /** The informers' selection: namespaced kinds of `served` are watched by this replica's shard label only. */
  selection(served: readonly KindRef[]): { selector: string; selects: (kind: KindRef) => boolean };
  /** A kind's reconcile, run only on this replica's objects while the fence holds (reconcile.ts). */
  sharded(reconcile: ReconcileFn, o: { kind: KindRef; kube: Kube; cache: SharedInformer; logger: Logger }): ReconcileFn;
  /** A controller of a cluster-scoped kind queues every object when this replica starts to lead; returns the unsubscribe. */
  follow(kind: KindRef, controller: Parameters<typeof queueOnLeading>[1]): (() => void) | undefined;
  /** The operator's apiserver access, fenced: a copy of `access` whose writes are refused unsent while the fence does not hold. */
  fenced(access: KubeAccess): KubeAccess;
}

export interface ShardOptions {
  identity: string;
  /** This replica holds its shard Lease now (membership.ts); absent: always (an operator a test starts without membership). */
  holds?: () => boolean;
}

export function createShard(o: ShardOptions): Shard {
  const { identity } = o;
  const holds = o.holds ?? ((): boolean => true);
  const leadership = createLeadership();
  // A cluster-scoped kind is not on the ring: its objects are the leader's, whatever their labels.
  const leaders = (kind: KindRef): boolean => shardedKinds([kind]).length === 0;
  return {
    identity,
    // A pass acts only on an object whose shard label, as the pass read it, names this replica.
    owns: (obj: KubeObject) => inShare(obj.metadata, identity),
    exactWrites: true,
    holds,
    leadership,
    lead: () => leadership.set(true),
    selection(served) {
      const selected = new Set(shardedKinds(served).map((k) => `${k.group}/${k.plural}`));
      return { selector: shardSelector(identity), selects: (kind) => selected.has(`${kind.group}/${kind.plural}`) };
    },
    sharded: (reconcile, s) => sharded(reconcile, { ...s, identity, holds, ...(leaders(s.kind) ? { leadership } : {}) }),
    follow: (kind, controller) => (leaders(kind) ? queueOnLeading(leadership, controller) : undefined),
    fenced: (access) => fenceKube(access, holds),
  };
}
