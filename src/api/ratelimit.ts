// Client-side rate limit: a token bucket per credential — a hash of the base URL and the token,
// since the service counts its limits per token — and per limit, so no ProviderConfig's settings
// ever change the bucket of another (two namespaces at one base URL each keep their own).
//
// A service's Retry-After is the token's, so it holds off every bucket of the credential
// (holdOffCredential), whatever limit each config gives it.
//
// A bucket never makes a caller wait: a call that finds no token, or a Retry-After of the service
// still pending, is turned away at once with the time of its turn (ThrottledError), and the
// engine requeues its key for then. A worker is never held by the limit.
import { createHash } from "node:crypto";
import { retryAfterFloor, MAX_RETRY_AFTER_MS } from "../lib/backoff.ts";

export interface RateLimit {
  requestsPerSecond: number;
  burst: number;
}

export interface TokenBucket {
  /**
   * Takes a token and returns 0, or takes nothing and returns in how many ms (> 0) this caller's
   * turn comes. Callers turned away get turns one interval apart, so they do not all come back at
   * the same moment and find one token between them.
   *
   * `borrow`: a later call of a unit of work whose first call went out takes a token even when
   * none is left (the count goes below zero, so newcomers' turns come later and the rate holds
   * on average). Turned away, the unit would come back for one token, spend it on its first call
   * and be turned away again, for ever. A pending Retry-After turns even a borrower away.
   */
  take(borrow?: boolean): number;
  /** The service said Retry-After: no call gets a token for `ms` (capped at MAX_HOLD_OFF_MS; garbage ignored). */
  holdOff(ms: number): void;
  /** Full and not held off: the same as a new bucket, so dropping it loses nothing. */
  idle(): boolean;
  readonly limit: RateLimit;
}

/** The longest a Retry-After holds a credential off: a garbage or hostile value cannot park it for ever. */
export const MAX_HOLD_OFF_MS = MAX_RETRY_AFTER_MS;

export function validateRateLimit(limit: RateLimit): RateLimit {
  if (!(limit.requestsPerSecond > 0) || !Number.isFinite(limit.requestsPerSecond)) {
    throw new RangeError("rateLimit.requestsPerSecond must be a positive number");
  }
  if (!(limit.burst >= 1) || !Number.isFinite(limit.burst)) throw new RangeError("rateLimit.burst must be at least 1");
  return { requestsPerSecond: limit.requestsPerSecond, burst: Math.floor(limit.burst) };
}

/** A bucket that starts full. Tokens refill continuously at requestsPerSecond up to burst. */
export function createTokenBucket(limit: RateLimit, now: () => number = () => performance.now()): TokenBucket {
  const current = validateRateLimit(limit);
  const interval = 1000 / current.requestsPerSecond;
  let tokens = current.burst;
  let last = now();
  let heldUntil = Number.NEGATIVE_INFINITY;
  // The turn given to the last caller turned away; the next one gets the interval after it.
  let lastTurn = Number.NEGATIVE_INFINITY;

  function refill(t: number): void {
    tokens = Math.min(current.burst, tokens + (t - last) / interval);
    last = t;
  }

  return {
    take(borrow = false) {
      const t = now();
      refill(t);
      if (t >= heldUntil && (tokens >= 1 || borrow)) {
        tokens -= 1;
        return 0;
      }
      const firstToken = t + Math.max(0, (1 - tokens) * interval);
      lastTurn = Math.max(firstToken, heldUntil, lastTurn + interval);
      return Math.max(1, Math.ceil(lastTurn - t));
    },
    holdOff(ms) {
      const floor = retryAfterFloor(ms);
      if (floor > 0) heldUntil = Math.max(heldUntil, now() + floor);
    },
    idle() {
      const t = now();
      refill(t);
      return tokens >= current.burst && t >= heldUntil && t >= lastTurn;
    },
    get limit() {
      return current;
    },
  };
}

/** The base URL two clients share a credential by: scheme, host, port and path, without a trailing slash. */
export function bucketKey(baseUrl: string): string {
  const url = new URL(baseUrl);
  return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, "")}`;
}

/**
 * What the service knows a caller by: base URL and token, hashed so the key can be logged, held
 * in maps and compared without the token in clear. Also the key of the shared listings
 * (src/resources/listing.ts): one token at one service sees one set of objects.
 */
export function credentialKey(baseUrl: string, token: string | undefined): string {
  return createHash("sha256")
    .update(`${bucketKey(baseUrl)}\n${token ?? ""}`)
    .digest("hex")
    .slice(0, 32);
}

/** credential → limit → bucket: one credential may be used by configs with different limits. */
const buckets = new Map<string, Map<string, TokenBucket>>();
const SWEEP_EVERY = 1024;
let lookups = 0;

/**
 * The bucket of `credential` with `limit`. Clients look it up on every call rather than keep it,
 * so an idle bucket can be dropped (sweepIdleBuckets) — a rotated token leaves nothing behind —
 * and the next call simply starts a full one, which is what the dropped one was.
 */
export function bucketFor(credential: string, limit: RateLimit, now?: () => number): TokenBucket {
  const valid = validateRateLimit(limit);
  const limitKey = `${valid.requestsPerSecond}/${valid.burst}`;
  lookups += 1;
  if (lookups % SWEEP_EVERY === 0) sweepIdleBuckets();
  let group = buckets.get(credential);
  if (!group) {
    group = new Map();
    buckets.set(credential, group);
  }
  let bucket = group.get(limitKey);
  if (!bucket) {
    bucket = createTokenBucket(valid, now);
    group.set(limitKey, bucket);
  }
  return bucket;
}

/**
 * The service answered the credential with Retry-After: it counts per token, so every bucket of
 * the token is held off, whichever config's limit it carries.
 */
export function holdOffCredential(credential: string, ms: number): void {
  for (const bucket of buckets.get(credential)?.values() ?? []) bucket.holdOff(ms);
}

/** Drops every bucket that is full and not held off. */
export function sweepIdleBuckets(): void {
  for (const [credential, group] of buckets) {
    for (const [limitKey, bucket] of group) if (bucket.idle()) group.delete(limitKey);
    if (group.size === 0) buckets.delete(credential);
  }
}

/** How many buckets are held (for tests and metrics). */
export function bucketsHeld(): number {
  let n = 0;
  for (const group of buckets.values()) n += group.size;
  return n;
}
