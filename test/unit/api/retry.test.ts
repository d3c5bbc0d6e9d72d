import { describe, expect, it } from "vitest";
import { ApiError, TransportError } from "../../../src/api/errors.ts";
import { parseRetryAfter, retryDecision, retryPolicy, type RetryPolicy } from "../../../src/api/retry.ts";
import type { TransportErrorKind } from "../../../src/api/errors.ts";

const policy: RetryPolicy = { maxAttempts: 5 };

const apiError = (status: number, retryAfterMs?: number) =>
  new ApiError({ operation: "op", status, error: "E", message: "m", ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) });
const transport = (mayHaveLanded: boolean, retryable = true, kind?: TransportErrorKind) =>
  new TransportError({
    operation: "op",
    kind: kind ?? (mayHaveLanded ? "dropped-response" : "connection-refused"),
    detail: "d",
    retryable,
    mayHaveLanded,
  });

describe("retryPolicy", () => {
  it("fills the default and sanitises", () => {
    expect(retryPolicy(undefined)).toEqual({ maxAttempts: 3 });
    expect(retryPolicy({ maxAttempts: 0 })).toEqual({ maxAttempts: 1 });
    expect(retryPolicy({ maxAttempts: 2.7 })).toEqual({ maxAttempts: 2 });
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

describe("retryDecision: sent again inside the call only at once, and only what never reached the service", () => {
  it("sends again a request that never reached the service and cost no wait: refused, or a broken kept-alive connection", () => {
    for (const kind of ["connection-refused", "connection-reset", "dropped-response"] as const) {
      expect(retryDecision(transport(false, true, kind), 1, policy), kind).toBe(true);
    }
  });
  it("hands everything else to the caller (whose engine requeues with backoff): 5xx, timeouts, DNS, anything that may have landed", () => {
    for (const e of [
      apiError(502),
      apiError(503),
      apiError(504),
      apiError(500),
      apiError(400),
      apiError(404),
      transport(true),
      transport(true, true, "connection-reset"),
      transport(false, true, "timeout"),
      transport(true, true, "timeout"),
      transport(false, true, "dns"),
      transport(false, false),
      transport(false, false, "tls"),
      new Error("x"),
    ]) {
      expect(retryDecision(e, 1, policy)).toBe(false);
    }
  });
  it("stops at maxAttempts", () => {
    expect(retryDecision(transport(false), 4, policy)).toBe(true);
    expect(retryDecision(transport(false), 5, policy)).toBe(false);
    expect(retryDecision(transport(false), 1, { maxAttempts: 1 })).toBe(false);
  });
  it("never waits out a 429 or a Retry-After inside the call: that would hold a worker; the caller requeues", () => {
    for (const e of [apiError(429), apiError(429, 700), apiError(429, 0), apiError(503, 10)])
      expect(retryDecision(e, 1, policy)).toBe(false);
  });
});
