// The chart's memory limit admits the worst case its own settings allow: V8's heap flags, twice
// the response budget and Node's baseline (test/unit/chart/memory-budget.ts worstCaseMib). A
// change to nodeOptions, responseBudgetBytes or resources.limits.memory that breaks the sum fails here.
import { describe, expect, it } from "vitest";
import { chartValues, kustomizeValues, mib, worstCaseMib } from "./memory-budget.ts";

// What keyward runs with when installed by the chart, or by `kubectl apply -k config/default`
// (there a setting the Deployment leaves out counts at keyward's own default).
describe.each([
  ["charts/keyward", chartValues()],
  ["config/manager (kustomize)", kustomizeValues()],
])("%s memory settings", (_install, values) => {
  it("heap flags + 2 × response budget + Node's baseline fit in resources.limits.memory", () => {
    expect(worstCaseMib(values)).toBeLessThanOrEqual(mib(values.resources.limits.memory));
  });

  it("the response budget holds a response of the largest size allowed beside one namespace's share", () => {
    expect(mib(values.responseBudgetBytes)).toBeGreaterThanOrEqual(2 * mib(values.maxResponseBytes));
  });
});

describe("the memory sum and the two installs", () => {
  it("the sum counts each part (160 MiB old space, 16 MiB budget: 160 + 3 + 32 + 64)", () => {
    const v = { ...chartValues(), nodeOptions: "--max-semi-space-size=1 --max-old-space-size=160", responseBudgetBytes: "16Mi" };
    expect(worstCaseMib(v)).toBe(259);
  });

  it("the kustomize Deployment runs with the chart's V8 flags, response sizes and memory limit", () => {
    const chart = chartValues();
    const values = kustomizeValues();
    expect(values.nodeOptions).toBe(chart.nodeOptions);
    expect(mib(values.responseBudgetBytes)).toBe(mib(chart.responseBudgetBytes));
    expect(mib(values.maxResponseBytes)).toBe(mib(chart.maxResponseBytes));
    expect(values.resources.limits.memory).toBe(chart.resources.limits.memory);
  });
});
