// When to send a request again inside the call (never after a wait), and how long a Retry-After
// asks for. Pure: the clock is a parameter so tests can pin it.
import { timerDelay } from "../lib/backoff.ts";
import { TransportError } from "./errors.ts";

export interface RetryPolicy {
  /** Attempts in all, the first included. 1 = never send again. */
  maxAttempts: number;
}

export const defaultRetryPolicy: RetryPolicy = { maxAttempts: 3 };

export function retryPolicy(partial: Partial<RetryPolicy> | undefined): RetryPolicy {
  return { maxAttempts: Math.max(1, Math.floor(partial?.maxAttempts ?? defaultRetryPolicy.maxAttempts)) };
}

/**
 * How a repeat of the operation behaves:
 * - idempotent: reads and updates/deletes that converge; safe to send again.
 * - non-idempotent: creates and triggers; a repeat makes a second object or job. Sent again
 *   only when the first provably never landed.
 */
export type Idempotency = "idempotent" | "non-idempotent";

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

/**
 * Whether to send the request again at once, inside the call, after `error` on attempt `attempt`
 * (1-based). Never after a wait: a call runs in a worker, and a worker that slept (or waited out
 * a second timeout) would hold back every other key, of every namespace, it could serve. So only
 * a request that provably never reached the service (`mayHaveLanded: false`: refused, or a
 * kept-alive connection the service had closed, found broken before the request was written) and
 * that cost no wait (not a timeout, not a DNS failure) is sent again, up to maxAttempts; that is
 * safe for creates too. Everything else that is retryable — a 502/503/504, a timeout, a dropped
 * response, a 429 or any answer with Retry-After — goes to the caller as a retryable error, and
 * the engine requeues the key with its backoff (Retry-After a floor on it), the worker free meanwhile.
 */
export function retryDecision(error: unknown, attempt: number, policy: RetryPolicy): boolean {
  return attempt < policy.maxAttempts && neverSent(error);
}

const RESENT_KINDS: ReadonlySet<string> = new Set(["connection-refused", "connection-reset", "dropped-response"]);

function neverSent(error: unknown): boolean {
  return error instanceof TransportError && error.retryable && !error.mayHaveLanded && RESENT_KINDS.has(error.kind);
}
