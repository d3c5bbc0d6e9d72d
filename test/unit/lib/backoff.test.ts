import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { backoffCeiling, backoffDelay, interruptibleSleep, jitterInterval } from "../../../src/lib/backoff.ts";

const policy = { baseMs: 100, maxMs: 10_000 };

describe("backoff", () => {
  it("doubles from the base and stops at the maximum", () => {
    expect([0, 1, 2, 3].map((a) => backoffCeiling(a, policy))).toEqual([100, 200, 400, 800]);
    expect(backoffCeiling(7, policy)).toBe(10_000);
    expect(backoffCeiling(10_000, policy)).toBe(10_000);
    expect(Number.isFinite(backoffCeiling(Number.MAX_SAFE_INTEGER, policy))).toBe(true);
  });

  it("full jitter stays within [0, ceiling]", () => {
    for (let attempt = 0; attempt < 20; attempt++) {
      const ceiling = backoffCeiling(attempt, policy);
      expect(backoffDelay(attempt, { ...policy, jitter: "full" }, () => 0)).toBe(0);
      expect(backoffDelay(attempt, { ...policy, jitter: "full" }, () => 1)).toBe(ceiling);
      const d = backoffDelay(attempt, { ...policy, jitter: "full" });
      expect(d).toBeGreaterThanOrEqual(0);
      expect(d).toBeLessThanOrEqual(ceiling);
    }
  });

  it("equal jitter never goes below half the ceiling nor above it", () => {
    for (let attempt = 0; attempt < 20; attempt++) {
      const ceiling = backoffCeiling(attempt, policy);
      expect(backoffDelay(attempt, { ...policy, jitter: "equal" }, () => 0)).toBe(Math.round(ceiling / 2));
      expect(backoffDelay(attempt, { ...policy, jitter: "equal" }, () => 1)).toBe(ceiling);
      const d = backoffDelay(attempt, { ...policy, jitter: "equal" });
      expect(d).toBeGreaterThanOrEqual(ceiling / 2 - 1);
      expect(d).toBeLessThanOrEqual(ceiling);
    }
  });

  it("no jitter is the ceiling; a random source out of range is clamped", () => {
    expect(backoffDelay(3, { ...policy, jitter: "none" })).toBe(800);
    expect(backoffDelay(3, { ...policy, jitter: "full" }, () => 7)).toBe(800);
    expect(backoffDelay(3, { ...policy, jitter: "full" }, () => -3)).toBe(0);
  });

  it("a maximum below the base is raised to the base", () => {
    expect(backoffCeiling(5, { baseMs: 500, maxMs: 100 })).toBe(500);
  });

  it("jitterInterval spreads an interval by at most the fraction", () => {
    expect(jitterInterval(1000, 0.1, () => 0)).toBe(900);
    expect(jitterInterval(1000, 0.1, () => 1)).toBe(1100);
    expect(jitterInterval(1000, 0.1, () => 0.5)).toBe(1000);
  });
});

describe("interruptibleSleep", () => {
  it("a sleep that ran its time leaves no listener on the signal, however many ran on it", async () => {
    // The lease's renew loop sleeps on one signal for the whole election, once a retry period:
    // a listener left per sleep kept each sleep's closure for good.
    const stop = new AbortController();
    for (let i = 0; i < 5; i += 1) await interruptibleSleep(1, stop.signal);
    expect(getEventListeners(stop.signal, "abort")).toHaveLength(0);
  });

  it("an abort still ends a sleep at once", async () => {
    const stop = new AbortController();
    const sleeping = interruptibleSleep(60_000, stop.signal);
    stop.abort();
    await sleeping;
    expect(getEventListeners(stop.signal, "abort")).toHaveLength(0);
  });
});
