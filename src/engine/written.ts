// Read-your-writes over an informer cache. A reconcile reads its object from the cache, but the
// cache learns of keyward's own writes only when their watch events arrive, a few milliseconds
// later; a pass that runs before then (a requeue, a retry) must not act on the older copy — it
// could create twice what the previous pass created. So every object a pass wrote is kept here
// until the cache holds that version or a newer one, and reads take the newer of the two. A write
// whose watch event arrived before its response (the cache already has it) is not kept at all:
// nothing would come to remove it until the object's next pass, an hour later for a quiet one.
import { keyString } from "../kube/keys.ts";
import type { KubeObject, ObjectKey } from "./types.ts";

export interface WrittenObjects {
  /** The object as keyward's last write returned it, unless `cached` (the cache's copy) is as new. */
  remember(obj: KubeObject, cached: KubeObject | undefined): void;
  /**
   * The newer of the cached copy and keyward's last write; `undefined` when the key was never
   * written and is not cached. `stale` when the two cannot be ordered (resourceVersions that
   * are not numbers): the caller reads the apiserver instead.
   */
  latest(key: ObjectKey, cached: KubeObject | undefined): KubeObject | undefined | "stale";
  /** An informer event: forget a write the cache has caught up with. */
  seen(obj: KubeObject): void;
  forget(key: ObjectKey): void;
  size(): number;
}

/** -1, 0, 1 as a is older, the same, newer than b; undefined when they cannot be compared. */
export function compareVersions(a: string | undefined, b: string | undefined): number | undefined {
  if (a === undefined || b === undefined || !/^\d+$/.test(a) || !/^\d+$/.test(b)) return undefined;
  const x = BigInt(a);
  const y = BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Whether the cache's copy is `mine`'s version or a newer one (the same one, when they cannot be ordered). */
function caughtUp(cached: KubeObject | undefined, mine: KubeObject): boolean {
  if (!cached) return false;
  const order = compareVersions(cached.metadata.resourceVersion, mine.metadata.resourceVersion);
  return order === undefined ? cached.metadata.resourceVersion === mine.metadata.resourceVersion : order >= 0;
}

export function createWrittenObjects(): WrittenObjects {
  const written = new Map<string, KubeObject>();
  return {
    remember(obj, cached) {
      const key = keyString(obj.metadata);
      if (caughtUp(cached, obj)) written.delete(key);
      else written.set(key, obj);
    },
    latest(key, cached) {
      const mine = written.get(keyString(key));
      if (!mine) return cached;
      // Deleted since: the cache saw the delete event (forget ran) or never had it.
      if (!cached) return mine;
      const order = compareVersions(cached.metadata.resourceVersion, mine.metadata.resourceVersion);
      if (order === undefined) return cached.metadata.resourceVersion === mine.metadata.resourceVersion ? cached : "stale";
      if (order >= 0) {
        written.delete(keyString(key));
        return cached;
      }
      return mine;
    },
    seen(obj) {
      const mine = written.get(keyString(obj.metadata));
      if (mine && caughtUp(obj, mine)) written.delete(keyString(obj.metadata));
    },
    forget(key) {
      written.delete(keyString(key));
    },
    size: () => written.size,
  };
}
