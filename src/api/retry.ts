// When to try a request again, and after how long. Pure: the clock and the random source are
// parameters so tests can pin them.
import { backoffDelay, timerDelay } from "../lib/backoff.ts";
import { ApiError, RETRIED_STATUSES, TransportError } from "./errors.ts";

export interface RetryPolicy {
  /** Attempts in all, the first included. 1 = never retry. */
  maxAttempts: number;
  baseDelayMs: number;
  /** Cap of one backoff. */
  maxDelayMs: number;
}

export const defaultRetryPolicy: RetryPolicy = { maxAttempts: 3, baseDelayMs: 200, maxDelayMs: 10_000 };

export function retryPolicy(partial: Partial<RetryPolicy> | undefined): RetryPolicy {
  const merged = { ...defaultRetryPolicy, ...partial };
  return {
    maxAttempts: Math.max(1, Math.floor(merged.maxAttempts)),
    baseDelayMs: Math.max(0, merged.baseDelayMs),
    maxDelayMs: Math.max(0, merged.baseDelayMs, merged.maxDelayMs),
  };
}

/**
 * How a repeat of the operation behaves:
 * - idempotent: reads and updates/deletes that converge; safe to send again.
 * - non-idempotent: creates and triggers; a repeat makes a second object or job. Sent again
 *   only when the first provably never landed.
 */
export type Idempotency = "idempotent" | "non-idempotent";

/**
 * How long to wait before sending a service request again, retry number `retry` (1 = the first
 * retry): lib/backoff's equal-jitter backoffDelay under the RetryPolicy, so the ceiling is
 * min(maxDelayMs, baseDelayMs * 2^(retry-1)) and the delay is uniform in [ceiling/2, ceiling].
 */
export function requestRetryDelay(retry: number, policy: RetryPolicy, random: () => number = Math.random): number {
  return backoffDelay(Math.floor(retry) - 1, { baseMs: policy.baseDelayMs, maxMs: policy.maxDelayMs, jitter: "equal" }, random);
}

/**
 * Retry-After (RFC 9110 §10.2.3): delay-seconds or an HTTP-date. Returns milliseconds from
 * `nowMs` (never negative, at most MAX_TIMER_MS: a longer wait made a timer fire at once, so a
 * service asking for days of quiet got an immediate retry), or undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | undefined, nowMs: number = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (trimmed === "") return undefined;
  if (/^\d+$/.test(trimmed)) return timerDelay(Number(trimmed) * 1000);
  // Only the date forms: Date.parse would also read "5" or "1.5" as dates.
  if (!/[a-z]/i.test(trimmed)) return undefined;
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return timerDelay(at - nowMs);
}

export type RetryDecision = { retry: true; delayMs: number } | { retry: false };

/**
 * Whether to send the request again after `error` on attempt `attempt` (1-based).
 * - idempotent calls: 502, 503, 504 and retryable transport failures (timeouts included).
 * - non-idempotent calls: only a connection that was never established; after a timeout or a
 *   lost response the first may have landed, so the error goes to the caller, who looks the
 *   object up.
 * - never a 429, nor any answer with a Retry-After: the service asked for time, and waiting it
 *   out here would hold a worker; the error (retryable, with retryAfterMs) goes to the caller,
 *   whose engine requeues the key, and the credential's bucket turns its other calls away until then.
 */
export function retryDecision(
  error: unknown,
  attempt: number,
  idempotency: Idempotency,
  policy: RetryPolicy,
  random: () => number = Math.random,
): RetryDecision {
  if (attempt >= policy.maxAttempts || !mayRetry(error, idempotency)) return { retry: false };
  return { retry: true, delayMs: requestRetryDelay(attempt, policy, random) };
}

function mayRetry(error: unknown, idempotency: Idempotency): boolean {
  if (error instanceof ApiError) {
    if (!RETRIED_STATUSES.has(error.status) || error.retryAfterMs !== undefined) return false;
    return idempotency === "idempotent";
  }
  if (error instanceof TransportError) {
    if (!error.retryable) return false;
    return idempotency === "idempotent" || !error.mayHaveLanded;
  }
  return false;
}
