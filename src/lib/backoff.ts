// Exponential backoff with jitter (AWS architecture blog's "full" and "equal" jitter), and a
// sleep a stop can cut short. Pure and dependency-free: the service client (src/api), the
// Kubernetes plumbing (src/kube) and the engine all build on it, so it sits below all three.
// The random source is a parameter so tests can pin it.

export type Jitter = "none" | "full" | "equal";

export interface BackoffPolicy {
  baseMs: number;
  maxMs: number;
  jitter?: Jitter;
}

/** The un-jittered ceiling for the given attempt (0-based): min(maxMs, baseMs * 2^attempt). */
export function backoffCeiling(attempt: number, policy: BackoffPolicy): number {
  const base = Math.max(0, policy.baseMs);
  const max = Math.max(base, policy.maxMs);
  // 2^attempt overflows to Infinity long before it matters; clamp the exponent so the
  // arithmetic stays finite and the result is max.
  const exponent = Math.min(Math.max(0, Math.floor(attempt)), 52);
  return Math.min(max, base * 2 ** exponent);
}

/**
 * Delay before retry number `attempt` (0-based).
 * - none:  the ceiling itself
 * - full:  uniform in [0, ceiling]
 * - equal: ceiling/2 + uniform in [0, ceiling/2] (never less than half the ceiling)
 */
export function backoffDelay(attempt: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const ceiling = backoffCeiling(attempt, policy);
  const r = Math.min(Math.max(random(), 0), 1);
  switch (policy.jitter ?? "equal") {
    case "none":
      return ceiling;
    case "full":
      return Math.round(ceiling * r);
    case "equal":
      return Math.round(ceiling / 2 + (ceiling / 2) * r);
  }
}

/**
 * The longest a Retry-After is honoured: a garbage or hostile value (a year, a date far off) must
 * not park a key or a credential for ever. The periodic resync comes sooner anyway.
 */
export const MAX_RETRY_AFTER_MS = 10 * 60_000;

/**
 * A Retry-After (ms) as a floor on a delay: 0 for absent, negative, NaN or infinite (garbage
 * never counts), capped at MAX_RETRY_AFTER_MS.
 */
export function retryAfterFloor(retryAfterMs: number | undefined): number {
  if (retryAfterMs === undefined || !Number.isFinite(retryAfterMs) || retryAfterMs <= 0) return 0;
  return Math.min(retryAfterMs, MAX_RETRY_AFTER_MS);
}

/** Spread a fixed interval by ±fraction so periodic work started together drifts apart. */
export function jitterInterval(intervalMs: number, fraction: number, random: () => number = Math.random): number {
  const f = Math.min(Math.max(fraction, 0), 1);
  return Math.max(0, Math.round(intervalMs * (1 - f + 2 * f * random())));
}

/** Resolves after `ms`, or at once when `signal` aborts (a stop must not wait out a backoff). */
export function interruptibleSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    // The listener goes when the time is up: a loop sleeping on one long-lived signal (the
    // lease's renewals, once a retry period) would otherwise add one per sleep, for good.
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * The longest a Node timer waits: setTimeout with a longer delay (or a non-finite one) fires
 * after 1 ms instead, so every delay that becomes a timer is clamped to this (about 24.8 days).
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** `delayMs` as a timer can wait it: finite, in [0, MAX_TIMER_MS] (NaN counts as 0). */
export function timerDelay(delayMs: number): number {
  if (!(delayMs > 0)) return 0;
  return Math.min(delayMs, MAX_TIMER_MS);
}
