// The numbers a service answers (create-token's expiresIn) as the token schedule uses them,
// fuzzed: whatever the double, every expiry, renewal and wait keyward computes from it is a real
// date or a finite delay within bounds, nothing throws but the one documented refusal, and a
// token is never renewed sooner than MIN_RENEW_INTERVAL_MS after its issue.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MAX_TIMER_MS } from "../../../../src/lib/backoff.ts";
import {
  InvalidTokenLifetimeError,
  MAX_TOKEN_LIFETIME_MS,
  MIN_RENEW_INTERVAL_MS,
  renewalPlan,
  renewWaitMs,
  rfc3339,
  tokenExpiry,
  tokenStatus,
} from "../../../../src/resources/provider/token-schedule.ts";

/** Every double, the hostile ones weighted up: 1e308, 0.001, the smallest, NaN, ±Infinity, -0. */
const expiresIn = fc.oneof(
  fc.double(),
  fc.constantFrom(1e308, Number.MAX_VALUE, 0.001, Number.MIN_VALUE, 0, -0, -1, NaN, Infinity, -Infinity, 2 ** 53, 1e-320),
  fc.double({ min: 0, max: 1e12, noNaN: true }),
);
/** Issue times keyward takes from its clock: whole seconds, from 1970 to well past 2100. */
const issuedAt = fc.integer({ min: 0, max: 8_000_000_000 }).map((s) => new Date(s * 1000));
/** Go-style durations as the CRD admits them, huge ones included. */
const renewBefore = fc.option(
  fc.oneof(
    fc.tuple(fc.integer({ min: 0, max: 1_000_000 }), fc.constantFrom("ms", "s", "m", "h")).map(([n, u]) => `${n}${u}`),
    fc.constantFrom("9".repeat(400) + "h", "1h30m", "0s"),
  ),
  { nil: undefined },
);
const now = fc.oneof(fc.double(), fc.integer({ min: 0, max: 8_000_000_000_000 }));

const finite = (d: Date): boolean => Number.isFinite(d.getTime());

describe("tokenExpiry on any expiresIn", () => {
  it("is never a millisecond later than the service said, a fraction of one on a date past 2^41 ms included", () => {
    // Once a flake of the property below: 2039-09-07 + 0.99976 ms rounded to + 1 ms.
    const issued = new Date("2039-09-07T15:47:36.000Z");
    expect((tokenExpiry(issued, 0.0009997558593750002) as Date).getTime() - issued.getTime()).toBe(0);
  });

  it("is a real date within ten years, no expiry for 0, or the documented refusal", () => {
    fc.assert(
      fc.property(issuedAt, expiresIn, (issued, seconds) => {
        let expiry: Date | undefined;
        try {
          expiry = tokenExpiry(issued, seconds);
        } catch (err) {
          expect(err).toBeInstanceOf(InvalidTokenLifetimeError);
          expect(!Number.isFinite(seconds) || seconds < 0).toBe(true);
          return;
        }
        if (seconds === 0) {
          expect(expiry).toBeUndefined();
          return;
        }
        expect(expiry && finite(expiry)).toBe(true);
        const lifetime = (expiry?.getTime() ?? NaN) - issued.getTime();
        expect(lifetime).toBeGreaterThanOrEqual(0);
        expect(lifetime).toBeLessThanOrEqual(MAX_TOKEN_LIFETIME_MS);
        // Never later than the service said.
        expect(lifetime).toBeLessThanOrEqual(seconds * 1000);
        expect(() => rfc3339(expiry as Date)).not.toThrow();
      }),
      { numRuns: 2_000 },
    );
  });
});

describe("renewalPlan and the waits on it", () => {
  it("renews between MIN_RENEW_INTERVAL_MS and ten years after the issue, never throwing", () => {
    fc.assert(
      fc.property(issuedAt, expiresIn, renewBefore, now, (issued, seconds, before, at) => {
        let expiry: Date | undefined;
        try {
          expiry = tokenExpiry(issued, seconds);
        } catch {
          return;
        }
        const plan = renewalPlan(issued, expiry, before);
        if (!expiry) {
          expect(plan).toBeUndefined();
          return;
        }
        const renewAt = plan?.renewAt ?? new Date(NaN);
        expect(finite(renewAt)).toBe(true);
        const after = renewAt.getTime() - issued.getTime();
        expect(after).toBeGreaterThanOrEqual(MIN_RENEW_INTERVAL_MS);
        expect(after).toBeLessThanOrEqual(MAX_TOKEN_LIFETIME_MS);
        expect(() => rfc3339(renewAt)).not.toThrow();
        const wait = renewWaitMs(renewAt, at);
        expect(Number.isFinite(wait)).toBe(true);
        expect(wait).toBeGreaterThanOrEqual(0);
        expect(wait).toBeLessThanOrEqual(MAX_TIMER_MS);
        const capped = renewWaitMs(renewAt, at, 3_600_000);
        expect(capped).toBeLessThanOrEqual(3_600_000);
      }),
      { numRuns: 2_000 },
    );
  });

  it("takes any dates (a status edited by hand) without throwing: a date that is not one makes the renewal due", () => {
    const anyDate = fc.oneof(fc.date({ noInvalidDate: false }), fc.constant(new Date(NaN)), issuedAt);
    fc.assert(
      fc.property(anyDate, fc.option(anyDate, { nil: undefined }), renewBefore, (issued, expires, before) => {
        const plan = renewalPlan(issued, expires, before);
        if (!expires) {
          expect(plan).toBeUndefined();
          return;
        }
        expect(plan && finite(plan.renewAt)).toBe(true);
        if (!finite(issued) || !finite(expires)) expect(plan?.renewAt.getTime()).toBe(0);
      }),
    );
  });

  it("a tokenAuth config's status and next look: real times, a finite wait a timer can hold", () => {
    fc.assert(
      fc.property(issuedAt, expiresIn, renewBefore, now, (issued, seconds, before, at) => {
        let expiresAt: Date | undefined;
        try {
          expiresAt = tokenExpiry(issued, seconds);
        } catch {
          return;
        }
        const schedule = { issuedAt: issued, expiresAt, renewAt: renewalPlan(issued, expiresAt, before)?.renewAt };
        const out = tokenStatus({ tokenSchedule: () => schedule }, "ProviderConfig/ns/a", { tokenAuth: {} }, at);
        for (const v of Object.values(out.status)) if (v !== undefined) expect(Number.isFinite(Date.parse(v))).toBe(true);
        if (out.renewInMs !== undefined) {
          expect(Number.isFinite(out.renewInMs)).toBe(true);
          expect(out.renewInMs).toBeGreaterThanOrEqual(0);
          expect(out.renewInMs).toBeLessThanOrEqual(MAX_TIMER_MS);
        }
      }),
      { numRuns: 1_000 },
    );
  });

  it("with a fake clock: whatever lifetime the service names, a holder renewing when due mints at most once per MIN_RENEW_INTERVAL_MS", () => {
    fc.assert(
      fc.property(
        expiresIn.filter((s) => Number.isFinite(s) && s > 0),
        renewBefore,
        fc.array(fc.integer({ min: 1, max: 3_000 }), { minLength: 1, maxLength: 300 }),
        (seconds, before, steps) => {
          // A holder that looks at every step and mints when the plan says so (the connector's rule).
          let clock = Date.UTC(2030, 0, 1);
          const start = clock;
          let renewAt = -Infinity;
          let mints = 0;
          for (const step of steps) {
            if (clock >= renewAt) {
              mints += 1;
              const issued = new Date(Math.floor(clock / 1000) * 1000);
              renewAt = renewalPlan(issued, tokenExpiry(issued, seconds), before)?.renewAt.getTime() ?? Infinity;
            }
            clock += step;
          }
          // Issue times are whole seconds (taken before the call), so a renewal may come up to 1 s early.
          expect(mints).toBeLessThanOrEqual(Math.floor((clock - start) / (MIN_RENEW_INTERVAL_MS - 1_000)) + 1);
        },
      ),
      { numRuns: 500 },
    );
  });
});
