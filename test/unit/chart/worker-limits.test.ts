// The chart's limits on what one tenant can hold: maxInFlightPerNamespace and
// maxRequestTimeoutSeconds reach keyward's environment, and the schema refuses what keyward would.
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/config.ts";
import { deploymentEnv, helm, parseYamlDocuments, renderChart, templateArgs } from "./helm.ts";

const render = async (setJson: Record<string, unknown> = {}) => parseYamlDocuments(await renderChart({ setJson }));

describe("worker and timeout limits", () => {
  it("by default: a 30 s ceiling on request timeouts, and keyward's own default cap per namespace (no MAX_IN_FLIGHT_PER_NAMESPACE)", async () => {
    const env = deploymentEnv(await render());
    expect(env.MAX_REQUEST_TIMEOUT).toBe("30s");
    expect(env).not.toHaveProperty("MAX_IN_FLIGHT_PER_NAMESPACE");
    // What keyward makes of it: 30 s.
    expect(loadConfig([], { MAX_REQUEST_TIMEOUT: env.MAX_REQUEST_TIMEOUT }).maxRequestTimeout).toBe(30_000);
  });

  it("passes a set cap, 0 (no cap) included, and a set ceiling in keyward's duration form", async () => {
    const env = deploymentEnv(await render({ maxInFlightPerNamespace: 0, maxRequestTimeoutSeconds: 300 }));
    expect(env).toMatchObject({ MAX_IN_FLIGHT_PER_NAMESPACE: "0", MAX_REQUEST_TIMEOUT: "300s" });
    const c = loadConfig([], {
      MAX_IN_FLIGHT_PER_NAMESPACE: env.MAX_IN_FLIGHT_PER_NAMESPACE,
      MAX_REQUEST_TIMEOUT: env.MAX_REQUEST_TIMEOUT,
    });
    expect(c).toMatchObject({ maxInFlightPerNamespace: 0, maxRequestTimeout: 300_000 });
    expect(deploymentEnv(await render({ maxInFlightPerNamespace: 1 })).MAX_IN_FLIGHT_PER_NAMESPACE).toBe("1");
  });

  it("refuses at install what keyward would refuse at start: a ceiling above 300 s or below 1 s, a negative or fractional cap", async () => {
    for (const [key, value] of [
      ["maxRequestTimeoutSeconds", 301],
      ["maxRequestTimeoutSeconds", 0],
      ["maxRequestTimeoutSeconds", "30s"],
      ["maxInFlightPerNamespace", -1],
      ["maxInFlightPerNamespace", 1.5],
    ] as const) {
      const result = await helm(templateArgs({ setJson: { [key]: value } }));
      expect(result.code, `${key}=${JSON.stringify(value)}`).not.toBe(0);
      expect(result.stderr).toContain(key);
    }
  });
});
