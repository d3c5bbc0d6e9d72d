// The chart's memory limit admits the worst case its own settings allow: V8's heap flags, twice
// the response budget and Node's baseline (test/unit/chart/memory-budget.ts worstCaseMib). A
// change to nodeOptions, responseBudgetBytes or resources.limits.memory that breaks the sum fails here.
import { describe, expect, it } from "vitest";
import { chartValues, mib, worstCaseMib } from "./memory-budget.ts";

describe("charts/keyward memory settings", () => {
  const values = chartValues();

  it("heap flags + 2 × response budget + Node's baseline fit in resources.limits.memory", () => {
    expect(worstCaseMib(values)).toBeLessThanOrEqual(mib(values.resources.limits.memory));
  });

  it("the response budget holds at least one response of the largest size allowed", () => {
    expect(mib(values.responseBudgetBytes)).toBeGreaterThanOrEqual(mib(values.maxResponseBytes));
  });

  it("the sum counts each part (160 MiB old space, 16 MiB budget: 160 + 3 + 32 + 64)", () => {
    const v = { ...values, nodeOptions: "--max-semi-space-size=1 --max-old-space-size=160", responseBudgetBytes: "16Mi" };
    expect(worstCaseMib(v)).toBe(259);
  });
});
