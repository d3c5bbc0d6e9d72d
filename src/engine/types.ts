// Contracts shared by the engine (generic) and the kinds (src/resources). Plain data only; the
// object shapes live in src/kube/types.ts and are re-exported here.

export * from "../kube/types.ts";
import type { KubeObject, ObjectKey } from "../kube/types.ts";

/**
 * What a reconcile asks of the work queue next (ACK's requeue intent, typed).
 * - done: steady state; the periodic resync still applies. `gone`: the object is gone (or no
 *   longer this process's: Ownership): a requeue still waiting for it is dropped too, so nothing
 *   of it stays in the queue.
 * - requeueAfter: come back after a delay without counting as a failure (a job still running).
 * - retryable: failed, try again with per-key exponential backoff (never sooner than retryAfterMs
 *   when the service said so).
 * - throttled: keyward's own rate limit turned a call away before sending it; come back at the
 *   turn it gave. Not a failure: no backoff step, no status write.
 * - terminal: failed in a way retrying cannot fix; wait for the object to change (or resync).
 */
export type Outcome =
  | { type: "done"; gone?: true }
  | { type: "requeueAfter"; afterMs: number }
  | { type: "retryable"; error: Error; retryAfterMs?: number }
  | { type: "terminal"; error: Error }
  | { type: "throttled"; afterMs: number };

export const done = (): Outcome => ({ type: "done" });
export const gone = (): Outcome => ({ type: "done", gone: true });
export const requeueAfter = (afterMs: number): Outcome => ({ type: "requeueAfter", afterMs });
export const retryable = (error: Error, retryAfterMs?: number): Outcome =>
  retryAfterMs === undefined ? { type: "retryable", error } : { type: "retryable", error, retryAfterMs };
export const terminal = (error: Error): Outcome => ({ type: "terminal", error });
export const throttled = (afterMs: number): Outcome => ({ type: "throttled", afterMs });

/**
 * One reconcile of one key. The engine's controller calls it; it never throws on purpose.
 * `forget`, when given, drops what the kind keeps for an object that is no longer this process's
 * to act on (Ownership) without a pass: its clients, minted token, metric series — what the pass
 * of an object gone from Kubernetes drops.
 */
export type ReconcileFn = ((key: ObjectKey, signal: AbortSignal) => Promise<Outcome>) & { forget?: (key: ObjectKey) => void };

/**
 * Which objects this process acts on, and how its passes write them: the seam a process serving
 * a part of the objects fills in (sharding, src/shard/shard.ts). Absent: every object, and each
 * write merged onto the latest version.
 */
export interface Ownership {
  /** Whether a pass may act on the object as it read it; one it may not is let go as if gone: no call, no write. */
  owns(obj: KubeObject): boolean;
  /**
   * Every write of a pass only on the version the pass holds (its read, then its own last write):
   * another's write in between — the object handed to another process mid-pass — is a 409 that
   * ends the pass before any further write or call, so a copy this process no longer owns is never
   * written back (it could erase the new owner's pending marks).
   */
  exactWrites: boolean;
}

/** Whether a pass may act on `obj` as read: always without an Ownership. */
export function actsOn(ownership: Ownership | undefined, obj: KubeObject): boolean {
  return ownership === undefined || ownership.owns(obj);
}
