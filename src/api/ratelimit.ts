// Client-side rate limit: a token bucket per base URL, shared by every client of that URL, so
// several ProviderConfigs (or token rotations) pointing at one service stay under one budget.

export interface RateLimit {
  requestsPerSecond: number;
  burst: number;
}

export interface TokenBucket {
  /** Reserves one request slot; returns how long to wait (ms) before sending it. */
  reserve(): number;
  /** Changes rate and burst, keeping the tokens already earned (capped at the new burst). */
  configure(limit: RateLimit): void;
  readonly limit: RateLimit;
}

export function validateRateLimit(limit: RateLimit): RateLimit {
  if (!(limit.requestsPerSecond > 0) || !Number.isFinite(limit.requestsPerSecond)) {
    throw new RangeError("rateLimit.requestsPerSecond must be a positive number");
  }
  if (!(limit.burst >= 1) || !Number.isFinite(limit.burst)) throw new RangeError("rateLimit.burst must be at least 1");
  return { requestsPerSecond: limit.requestsPerSecond, burst: Math.floor(limit.burst) };
}

/**
 * A bucket that starts full. Tokens refill continuously at requestsPerSecond up to burst.
 * A reservation takes a token even when none is left (the count goes negative), so callers
 * queue in order: the n-th waiting caller waits n/rate seconds.
 */
export function createTokenBucket(limit: RateLimit, now: () => number = () => performance.now()): TokenBucket {
  let current = validateRateLimit(limit);
  let tokens = current.burst;
  let last = now();

  function refill(): void {
    const t = now();
    tokens = Math.min(current.burst, tokens + ((t - last) * current.requestsPerSecond) / 1000);
    last = t;
  }

  return {
    reserve() {
      refill();
      tokens -= 1;
      return tokens >= 0 ? 0 : Math.ceil((-tokens * 1000) / current.requestsPerSecond);
    },
    configure(next) {
      refill();
      current = validateRateLimit(next);
      tokens = Math.min(tokens, current.burst);
    },
    get limit() {
      return current;
    },
  };
}

const buckets = new Map<string, TokenBucket>();

/** The key two base URLs share a bucket by: scheme, host, port and path, without a trailing slash. */
export function bucketKey(baseUrl: string): string {
  const url = new URL(baseUrl);
  return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, "")}`;
}

/**
 * The shared bucket of `baseUrl`. A later client with a different limit reconfigures it (the
 * newest ProviderConfig wins), so two clients never double the budget of one service.
 */
export function sharedBucket(baseUrl: string, limit: RateLimit, now?: () => number): TokenBucket {
  const key = bucketKey(baseUrl);
  const existing = buckets.get(key);
  if (!existing) {
    const bucket = createTokenBucket(limit, now);
    buckets.set(key, bucket);
    return bucket;
  }
  if (existing.limit.requestsPerSecond !== limit.requestsPerSecond || existing.limit.burst !== Math.floor(limit.burst)) {
    existing.configure(limit);
  }
  return existing;
}
