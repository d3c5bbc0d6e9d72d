// The chart's kubeApiQps and kubeApiBurst reach keyward's environment as KUBE_API_QPS and
// KUBE_API_BURST, and the schema refuses what keyward would.
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/config.ts";
import { deploymentEnv, helm, parseYamlDocuments, renderChart, templateArgs } from "./helm.ts";

const render = async (setJson: Record<string, unknown> = {}) => parseYamlDocuments(await renderChart({ setJson }));

describe("apiserver request limit", () => {
  it("by default auto (the apiserver's own priority and fairness, else 300 a second), bursts of 600, as keyward's own defaults", async () => {
    const env = deploymentEnv(await render());
    expect(env).toMatchObject({ KUBE_API_QPS: "auto", KUBE_API_BURST: "600" });
    expect(loadConfig([], { KUBE_API_QPS: env.KUBE_API_QPS, KUBE_API_BURST: env.KUBE_API_BURST })).toMatchObject({
      kubeApiQps: "auto",
      kubeApiBurst: 600,
    });
    expect(loadConfig([], {})).toMatchObject({ kubeApiQps: "auto", kubeApiBurst: 600 });
  });

  it("passes set values, 0 (no limit) included", async () => {
    const env = deploymentEnv(await render({ kubeApiQps: 0, kubeApiBurst: 7 }));
    expect(env).toMatchObject({ KUBE_API_QPS: "0", KUBE_API_BURST: "7" });
    expect(loadConfig([], { KUBE_API_QPS: env.KUBE_API_QPS }).kubeApiQps).toBe(0);
    expect(deploymentEnv(await render({ kubeApiQps: 300 }))).toMatchObject({ KUBE_API_QPS: "300" });
    expect(loadConfig(["--kube-api-qps", "2.5"], {}).kubeApiQps).toBe(2.5);
  });

  it("refuses at install what keyward would refuse at start", async () => {
    for (const [key, value] of [
      ["kubeApiQps", -1],
      ["kubeApiQps", "Auto"],
      ["kubeApiQps", "300"],
      ["kubeApiBurst", 0],
      ["kubeApiBurst", 1.5],
    ] as const) {
      const result = await helm(templateArgs({ setJson: { [key]: value } }));
      expect(result.code, `${key}=${JSON.stringify(value)}`).not.toBe(0);
      expect(result.stderr).toContain(key);
    }
    expect(() => loadConfig([], { KUBE_API_BURST: "0" })).toThrow();
    expect(() => loadConfig([], { KUBE_API_QPS: "Auto" })).toThrow(/neither auto nor a number/);
    expect(() => loadConfig([], { KUBE_API_QPS: "10001" })).toThrow(/KUBE_API_QPS/);
  });
});
