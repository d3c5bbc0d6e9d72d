// One listing of the service shared by many objects' passes. With the service's default budget
// of 60 reads a minute per token, reading every object on every resync caps keyward at about 600
// objects per 10-minute resync; a resync pass of an object in steady state instead takes its
// record from a listing at most `ttlMs` old, so N objects cost a handful of list calls per
// resync. Passes that act on a change (a new spec, a failure, a pending create) read the object
// itself, never a listing. Listings are kept per scope (a ProviderConfig, a project), and
// dropped when keyward writes to the scope, so a steady pass never judges a listing older than
// keyward's own last write.
import { providerConfigKind, providerConfigName, type ProviderConfigRef } from "./common.ts";

/** How old a listing may be for a steady pass by default (the operator passes one from its resync interval). */
export const DEFAULT_LISTING_TTL_MS = 30_000;


export interface SharedListing<T> {
  /** The items of `scope` by id: the cached listing, or a new one from `list` when older than the TTL (one call at a time per scope). */
  get(scope: string, list: () => Promise<T[]>): Promise<Map<string, T>>;
  /** Keyward wrote to the scope: the next get lists again. */
  invalidate(scope: string): void;
}

export function createSharedListing<T>(idOf: (item: T) => string, ttlMs: number, now: () => number = Date.now): SharedListing<T> {
  const listings = new Map<string, { at: number; items: Promise<Map<string, T>> }>();
  return {
    get(scope, list) {
      const cached = listings.get(scope);
      if (cached && now() - cached.at < ttlMs) return cached.items;
      const items = list().then((all) => new Map(all.map((item) => [idOf(item), item])));
      const entry = { at: now(), items };
      listings.set(scope, entry);
      // A failed listing is not kept: the next pass tries again.
      items.catch(() => {
        if (listings.get(scope) === entry) listings.delete(scope);
      });
      return items;
    },
    invalidate(scope) {
      listings.delete(scope);
    },
  };
}

/**
 * The scope of a listing: what one set of credentials sees — the kind and name of the
 * ProviderConfig (a namespaced one and a ClusterProviderConfig may share a name) in the object's
 * namespace — narrowed by `parts` (a project id).
 */
export function listingScope(c: { key: { namespace: string }; spec: { providerConfigRef?: ProviderConfigRef | undefined } }, ...parts: string[]): string {
  return [providerConfigKind(c.spec), c.key.namespace, providerConfigName(c.spec), ...parts].join("/");
}

/** A pass of an object keyward already holds in steady state (Ready and Synced for this generation, nothing pending). */
export function isSteady(obj: {
  metadata: { generation?: number; deletionTimestamp?: string; annotations?: Record<string, string> };
  status?: { observedGeneration?: number; conditions?: { type: string; status: string }[] };
}): boolean {
  const conditions = obj.status?.conditions ?? [];
  const holds = (type: string): boolean => conditions.some((c) => c.type === type && c.status === "True");
  return (
    obj.metadata.deletionTimestamp === undefined &&
    obj.metadata.generation !== undefined &&
    obj.metadata.generation === obj.status?.observedGeneration &&
    holds("Ready") &&
    holds("Synced")
  );
}
