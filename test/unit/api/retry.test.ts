import { describe, expect, it } from "vitest";
import { ApiError, TransportError } from "../../../src/api/errors.ts";
import { requestRetryDelay, parseRetryAfter, retryDecision, retryPolicy, type RetryPolicy } from "../../../src/api/retry.ts";

const policy: RetryPolicy = { maxAttempts: 5, baseDelayMs: 100, maxDelayMs: 1_000 };

const apiError = (status: number, retryAfterMs?: number) =>
  new ApiError({ operation: "op", status, error: "E", message: "m", ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) });
const transport = (mayHaveLanded: boolean, retryable = true) =>
  new TransportError({
    operation: "op",
    kind: mayHaveLanded ? "dropped-response" : "connection-refused",
    detail: "d",
    retryable,
    mayHaveLanded,
  });

describe("requestRetryDelay", () => {
  it("stays within [ceiling/2, ceiling] for the lowest and highest random draws", () => {
    for (let retry = 1; retry <= 8; retry++) {
      const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1));
      expect(requestRetryDelay(retry, policy, () => 0)).toBe(ceiling / 2);
      expect(requestRetryDelay(retry, policy, () => 1)).toBe(ceiling);
      const mid = requestRetryDelay(retry, policy, () => 0.5);
      expect(mid).toBeGreaterThanOrEqual(ceiling / 2);
      expect(mid).toBeLessThanOrEqual(ceiling);
    }
  });

  it("doubles per retry until the cap", () => {
    const ceilings = [1, 2, 3, 4, 5, 6].map((r) => requestRetryDelay(r, policy, () => 1));
    expect(ceilings).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  it("stays finite for absurd attempt numbers and clamps a bad random source", () => {
    expect(requestRetryDelay(10_000, policy, () => 7)).toBe(1000);
    expect(requestRetryDelay(1, policy, () => -3)).toBe(50);
  });

  it("retryPolicy fills defaults and sanitises", () => {
    expect(retryPolicy(undefined)).toEqual({ maxAttempts: 3, baseDelayMs: 200, maxDelayMs: 10_000 });
    expect(retryPolicy({ maxAttempts: 0, baseDelayMs: 500, maxDelayMs: 100 })).toEqual({
      maxAttempts: 1,
      baseDelayMs: 500,
      maxDelayMs: 500,
    });
  });
});

describe("parseRetryAfter", () => {
  const now = Date.parse("2026-01-01T00:00:00Z");
  it("reads delay-seconds", () => {
    expect(parseRetryAfter("0", now)).toBe(0);
    expect(parseRetryAfter("3", now)).toBe(3000);
    expect(parseRetryAfter(" 120 ", now)).toBe(120_000);
  });
  it("reads an HTTP date, relative to now, never negative", () => {
    expect(parseRetryAfter("Thu, 01 Jan 2026 00:00:05 GMT", now)).toBe(5000);
    expect(parseRetryAfter("Wed, 31 Dec 2025 23:59:00 GMT", now)).toBe(0);
  });
  // Found by client-decoding.property.test.ts: "9"×400 seconds read as Infinity and a far date or
  // 30 days as more than a timer can wait (Node fires those after 1 ms); both are clamped.
  it("clamps a huge delay or a far date to the longest a timer waits (2^31-1 ms)", () => {
    expect(parseRetryAfter("9".repeat(400), now)).toBe(2 ** 31 - 1);
    expect(parseRetryAfter("2592000", now)).toBe(2 ** 31 - 1);
    expect(parseRetryAfter("Fri, 01 Jan 2300 00:00:00 GMT", now)).toBe(2 ** 31 - 1);
    expect(parseRetryAfter("86400", now)).toBe(86_400_000);
  });
  it("ignores absent and unreadable values", () => {
    for (const v of [undefined, "", "soon", "-1", "1.5", "Thu, 99 Foo 2026"]) expect(parseRetryAfter(v, now)).toBeUndefined();
  });
});

describe("retryDecision", () => {
  const fixed = () => 1;
  it("retries idempotent calls on 502, 503, 504 and retryable transport failures", () => {
    for (const e of [apiError(502), apiError(503), apiError(504), transport(true), transport(false)]) {
      expect(retryDecision(e, 1, "idempotent", policy, fixed)).toEqual({ retry: true, delayMs: 100 });
    }
  });
  it("never retries other statuses, non-retryable transport errors or unknown errors", () => {
    for (const e of [
      apiError(400),
      apiError(401),
      apiError(403),
      apiError(404),
      apiError(422),
      apiError(500),
      transport(false, false),
      new Error("x"),
    ]) {
      expect(retryDecision(e, 1, "idempotent", policy, fixed)).toEqual({ retry: false });
    }
  });
  it("retries a create only when it provably never landed: no connection", () => {
    expect(retryDecision(transport(false), 1, "non-idempotent", policy, fixed).retry).toBe(true);
    expect(retryDecision(transport(true), 1, "non-idempotent", policy, fixed).retry).toBe(false);
    for (const s of [502, 503, 504]) expect(retryDecision(apiError(s), 1, "non-idempotent", policy, fixed).retry).toBe(false);
  });
  it("stops at maxAttempts", () => {
    expect(retryDecision(apiError(503), 4, "idempotent", policy, fixed).retry).toBe(true);
    expect(retryDecision(apiError(503), 5, "idempotent", policy, fixed).retry).toBe(false);
  });
  it("never waits out a 429 or a Retry-After inside the call: that would hold a worker; the caller requeues", () => {
    for (const idempotency of ["idempotent", "non-idempotent"] as const) {
      expect(retryDecision(apiError(429), 1, idempotency, policy, fixed)).toEqual({ retry: false });
      expect(retryDecision(apiError(429, 700), 1, idempotency, policy, fixed)).toEqual({ retry: false });
      expect(retryDecision(apiError(429, 0), 1, idempotency, policy, fixed)).toEqual({ retry: false });
      expect(retryDecision(apiError(503, 10), 1, idempotency, policy, fixed)).toEqual({ retry: false });
    }
  });
});
