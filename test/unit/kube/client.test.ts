import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createKube, loadKubeConfig } from "../../../src/kube/client.ts";

function kubeconfigFile(server: string): string {
  const dir = mkdtempSync(join(tmpdir(), "keyward-kc-"));
  const path = join(dir, "config");
  writeFileSync(
    path,
    [
      "apiVersion: v1",
      "kind: Config",
      "clusters: [{name: c, cluster: {server: '" + server + "'}}]",
      "users: [{name: u, user: {}}]",
      "contexts: [{name: x, context: {cluster: c, user: u}}]",
      "current-context: x",
    ].join("\n"),
  );
  return path;
}

const saved = process.env["KUBECONFIG"];
afterEach(() => {
  if (saved === undefined) delete process.env["KUBECONFIG"];
  else process.env["KUBECONFIG"] = saved;
});

describe("loadKubeConfig", () => {
  it("prefers an explicit path over $KUBECONFIG", () => {
    process.env["KUBECONFIG"] = kubeconfigFile("https://from-env.example:6443");
    const kc = loadKubeConfig({ kubeconfigPath: kubeconfigFile("https://explicit.example:6443") });
    expect(kc.getCurrentCluster()?.server).toBe("https://explicit.example:6443");
  });

  it("uses $KUBECONFIG when no path is given", () => {
    process.env["KUBECONFIG"] = kubeconfigFile("https://from-env.example:6443");
    expect(loadKubeConfig().getCurrentCluster()?.server).toBe("https://from-env.example:6443");
  });

  it("createKube builds the typed clients from it", () => {
    const kube = createKube(loadKubeConfig({ kubeconfigPath: kubeconfigFile("https://x.example") }));
    expect(typeof kube.custom.getNamespacedCustomObject).toBe("function");
    expect(typeof kube.core.createNamespacedEvent).toBe("function");
    expect(typeof kube.coordination.readNamespacedLease).toBe("function");
    expect(typeof kube.events.createNamespacedEvent).toBe("function");
  });
});
