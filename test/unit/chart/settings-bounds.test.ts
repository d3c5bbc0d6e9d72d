// The chart refuses at install what keyward would refuse at start (src/config.ts), for the
// settings whose bounds a JSON schema pattern cannot say: a duration's or a size's range, and the
// response budget against the largest response. Each value is tried both ways: `helm template`
// fails exactly when loadConfig throws on the environment the chart would have set.
import { beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/config.ts";
import { deploymentEnv, helm, parseYamlDocuments, renderChart, templateArgs } from "./helm.ts";

/** Values to set, the environment they become, and the value an error must name when refused. */
type Case = { values: Record<string, string>; env: Record<string, string>; blame: string };

// The environment the chart renders by default: what the cases below leave alone.
let chartEnv: Record<string, string> = {};
beforeAll(async () => {
  chartEnv = deploymentEnv(parseYamlDocuments(await renderChart()));
});

const one = (key: string, envName: string, value: string): Case => ({ values: { [key]: value }, env: { [envName]: value }, blame: key });
const cases: Case[] = [
  ...["999ms", "100ms", "0.5s", "999.4ms", "999.5ms", "1000ms", "1s", "10m", "1.5h"].map((v) =>
    one("resyncInterval", "RESYNC_INTERVAL", v),
  ),
  ...["99ms", "99.4ms", "100ms", "0.1s", "30s", "600s", "10m", "600001ms", "10.1m", "20m", "1h"].map((v) =>
    one("kubeRequestTimeout", "KUBE_REQUEST_TIMEOUT", v),
  ),
  // With the budget raised to 1Gi, so that maxResponseBytes' own range decides up to 512Mi (half
  // the budget); past it, within its range, the budget is what is too small.
  ...["1023", "1024", "02048", "1Ki", "16Mi", "512Mi", "513Mi", "1048576Ki", "1048577Ki", "1Gi", "2Gi", "18014398509481985Ki"].map((v) => ({
    values: { maxResponseBytes: v, responseBudgetBytes: "1Gi" },
    env: { MAX_RESPONSE_BYTES: v, RESPONSE_BUDGET_BYTES: "1Gi" },
    blame: ["513Mi", "1048576Ki", "1Gi"].includes(v) ? "responseBudgetBytes" : "maxResponseBytes",
  })),
  ...["1Ki", "1Mi", "16383Ki", "16Mi", "016Mi", "16777216", "32767Ki", "32Mi", "032Mi", "33554432", "1Gi", "2Gi", "17179869185Gi"].map(
    (v) => one("responseBudgetBytes", "RESPONSE_BUDGET_BYTES", v),
  ),
  {
    values: { maxResponseBytes: "9Mi", responseBudgetBytes: "010Mi" },
    env: { MAX_RESPONSE_BYTES: "9Mi", RESPONSE_BUDGET_BYTES: "010Mi" },
    blame: "responseBudgetBytes",
  },
  // A leading zero is decimal to keyward (and must be to the chart: Go's int64 would read octal).
  ...["32Mi", "64Mi", "064Mi", "010Mi", "127Mi", "128Mi", "0128Mi"].map((v) => ({
    values: { maxResponseBytes: "64Mi", responseBudgetBytes: v },
    env: { MAX_RESPONSE_BYTES: "64Mi", RESPONSE_BUDGET_BYTES: v },
    blame: "responseBudgetBytes",
  })),
];

const keywardAccepts = (env: Record<string, string>): boolean => {
  try {
    loadConfig([], { ...chartEnv, ...env });
    return true;
  } catch {
    return false;
  }
};

describe("chart settings keyward checks at start", () => {
  it("the chart's defaults are what keyward accepts", () => {
    expect(Object.keys(chartEnv)).toEqual(
      expect.arrayContaining(["RESYNC_INTERVAL", "KUBE_REQUEST_TIMEOUT", "MAX_RESPONSE_BYTES", "RESPONSE_BUDGET_BYTES"]),
    );
    expect(keywardAccepts({})).toBe(true);
  });

  it.each(cases.map((c) => [JSON.stringify(c.values), c] as const))("%s: helm and keyward agree", async (_name, c) => {
    const accepted = keywardAccepts(c.env);
    const result = await helm(templateArgs({ setJson: c.values }));
    expect(result.code === 0, result.stderr).toBe(accepted);
    if (!accepted) expect(result.stderr).toContain(`${c.blame} ${c.values[c.blame] ?? ""}:`);
  });

  it("refuses each side of every range (the cases above are not all accepted or all refused)", () => {
    const verdicts = cases.map((c) => keywardAccepts(c.env));
    expect(verdicts).toContain(true);
    expect(verdicts).toContain(false);
  });
});
