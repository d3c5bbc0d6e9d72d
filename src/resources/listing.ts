// One listing of the service shared by many objects' passes. With the service's default budget
// of 60 reads a minute per token, reading every object on every resync caps keyward at about 600
// objects per 10-minute resync; a resync pass of an object in steady state instead takes its
// record from a listing at most `ttlMs` old, so N objects cost a handful of list calls per
// resync. Passes that act on a change (a new spec, a failure, a pending create) read the object
// itself, never a listing. Listings are kept per scope — the credential (a hash of base URL and
// token: what one token sees at one service, whichever namespaces or kind of config use it),
// narrowed by a project — and dropped when keyward writes to the scope, so a steady pass never
// judges a listing older than keyward's own last write, and when no pass has used them for a TTL
// (a listing that old is never served again), so a gone config, a rotated token or a deleted
// project leaves nothing behind.
//
// A listing can outgrow --max-response-bytes (an organisation with tens of thousands of
// projects): the service's answer is then refused unread. That is remembered for the TTL like a
// listing, so a scope costs one such call per window, and the steady passes read their own
// object instead (listedOrTooLarge) — the optimisation is lost there, never the object.
import { isResponseTooLarge } from "../api/index.ts";

/** How old a listing may be for a steady pass by default (the operator passes one from its resync interval). */
export const DEFAULT_LISTING_TTL_MS = 30_000;

export interface SharedListing<T> {
  /** The items of `scope` by id: the cached listing, or a new one from `list` when older than the TTL (one call at a time per scope). */
  get(scope: string, list: () => Promise<T[]>): Promise<Map<string, T>>;
  /** Keyward wrote to the scope: the next get lists again. */
  invalidate(scope: string): void;
  /** Listings held now (tests, metrics). */
  size(): number;
}

/**
 * `now` is the clock of the TTL; the sweep that drops listings nobody used for a TTL runs on every
 * get once a TTL has passed since the last, and on a timer (unref'd) while any listing is held, so
 * an idle keyward lets go of them too. `wanted`, when given, is asked once per listing for the
 * ids a steady pass may look up (those keyward's own resources record); every other item is
 * dropped as the answer is read, so a listing holds what keyward manages, not all the service
 * keeps: a token that sees a whole organisation's projects (and those Retain deletions leave
 * behind, more every day) costs memory by keyward's resources alone.
 */
export function createSharedListing<T>(
  idOf: (item: T) => string,
  ttlMs: number,
  now: () => number = Date.now,
  wanted?: () => ReadonlySet<string>,
): SharedListing<T> {
  const listings = new Map<string, { at: number; items: Promise<Map<string, T>> }>();
  let lastSweep = now();
  let timer: NodeJS.Timeout | undefined;
  const sweep = (): void => {
    const t = now();
    lastSweep = t;
    for (const [scope, entry] of listings) if (t - entry.at >= ttlMs) listings.delete(scope);
  };
  const arm = (): void => {
    if (timer !== undefined || listings.size === 0) return;
    timer = setTimeout(() => {
      timer = undefined;
      sweep();
      arm();
    }, ttlMs);
    timer.unref();
  };
  return {
    get(scope, list) {
      if (now() - lastSweep >= ttlMs) sweep();
      const cached = listings.get(scope);
      if (cached && now() - cached.at < ttlMs) return cached.items;
      const items = list().then((all) => {
        const keep = wanted?.();
        const byId = new Map<string, T>();
        for (const item of all) {
          const id = idOf(item);
          if (!keep || keep.has(id)) byId.set(id, item);
        }
        return byId;
      });
      const entry = { at: now(), items };
      listings.set(scope, entry);
      arm();
      // A failed listing is not kept: the next pass tries again. One too large to read is: it
      // will be as large on the next pass.
      items.catch((err: unknown) => {
        if (!isResponseTooLarge(err) && listings.get(scope) === entry) listings.delete(scope);
      });
      return items;
    },
    invalidate(scope) {
      listings.delete(scope);
    },
    size: () => listings.size,
  };
}

/**
 * The scope's listing, or undefined when its answer is larger than --max-response-bytes: the
 * caller then reads its own object. Every other failure is the caller's.
 */
export async function listedOrTooLarge<T>(
  listing: SharedListing<T>,
  scope: string,
  list: () => Promise<T[]>,
): Promise<Map<string, T> | undefined> {
  try {
    return await listing.get(scope, list);
  } catch (err) {
    if (isResponseTooLarge(err)) return undefined;
    throw err;
  }
}

/**
 * The scope of a listing: what one set of credentials sees — the connection's credential, a hash
 * of base URL and token (src/api/ratelimit.ts credentialKey), so the objects of every namespace a
 * ClusterProviderConfig serves share one listing, and configs with other tokens never do —
 * narrowed by `parts` (a project id).
 */
export function listingScope(c: { conn: { credential: string } }, ...parts: string[]): string {
  return [c.conn.credential, ...parts].join("/");
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
