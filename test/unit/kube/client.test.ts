// keyward's own kubeconfig loading (src/kube/kubeconfig.ts): which file wins, how each kind of
// credential becomes an Authorization header, and what is refused with a clear message.
import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { afterEach, describe, expect, it } from "vitest";
import { createKube, loadKubeConfig } from "../../../src/kube/client.ts";

const dir = mkdtempSync(join(tmpdir(), "keyward-kc-"));
let n = 0;

function kubeconfigFile(server: string, user = "{}", extra: string[] = []): string {
  n += 1;
  const path = join(dir, `config-${String(n)}`);
  writeFileSync(
    path,
    [
      "apiVersion: v1",
      "kind: Config",
      `clusters: [{name: c, cluster: {server: '${server}'}}]`,
      `users: [{name: u, user: ${user}}]`,
      "contexts: [{name: x, context: {cluster: c, user: u, namespace: team-a}}]",
      "current-context: x",
      ...extra,
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
    expect(loadKubeConfig({ kubeconfigPath: kubeconfigFile("https://explicit.example:6443") }).server).toBe(
      "https://explicit.example:6443",
    );
  });

  it("uses $KUBECONFIG when no path is given, the first file of a list winning like kubectl", () => {
    process.env["KUBECONFIG"] = [
      join(dir, "missing"),
      kubeconfigFile("https://first.example:6443"),
      kubeconfigFile("https://second.example:6443"),
    ].join(delimiter);
    const access = loadKubeConfig();
    expect(access.server).toBe("https://first.example:6443");
    expect(access.namespace).toBe("team-a");
  });

  it("turns a token, a token file and basic auth into the Authorization header", async () => {
    expect(await loadKubeConfig({ kubeconfigPath: kubeconfigFile("https://t.example", "{token: abc123}") }).authorization()).toBe(
      "Bearer abc123",
    );
    const tokenFile = join(dir, "token");
    writeFileSync(tokenFile, "from-file\n");
    expect(await loadKubeConfig({ kubeconfigPath: kubeconfigFile("https://t.example", `{tokenFile: ${tokenFile}}`) }).authorization()).toBe(
      "Bearer from-file",
    );
    const basic = await loadKubeConfig({
      kubeconfigPath: kubeconfigFile("https://t.example", "{username: ann, password: pw}"),
    }).authorization();
    expect(basic).toBe(`Basic ${Buffer.from("ann:pw").toString("base64")}`);
    expect(await loadKubeConfig({ kubeconfigPath: kubeconfigFile("https://t.example") }).authorization()).toBeUndefined();
  });

  it("runs an exec credential plugin once and reuses its token until it expires", async () => {
    const counter = join(dir, "exec-count");
    const plugin = join(dir, "plugin.sh");
    const expires = new Date(Date.now() + 3_600_000).toISOString();
    writeFileSync(
      plugin,
      `#!/bin/sh\necho x >> ${counter}\necho '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"exec-token","expirationTimestamp":"${expires}"}}'\n`,
    );
    chmodSync(plugin, 0o755);
    const access = loadKubeConfig({
      kubeconfigPath: kubeconfigFile("https://t.example", `{exec: {apiVersion: client.authentication.k8s.io/v1, command: ${plugin}}}`),
    });
    expect(await access.authorization()).toBe("Bearer exec-token");
    expect(await access.authorization()).toBe("Bearer exec-token");
    const { readFileSync } = await import("node:fs");
    expect(readFileSync(counter, "utf8").trim().split("\n")).toHaveLength(1);
  });

  it("refuses a legacy auth-provider and a kubeconfig without a current context, naming the problem", () => {
    expect(() => loadKubeConfig({ kubeconfigPath: kubeconfigFile("https://t.example", "{auth-provider: {name: gcp}}") })).toThrow(
      /auth-provider/,
    );
    const noContext = join(dir, "no-context");
    writeFileSync(noContext, "clusters: []\nusers: []\ncontexts: []\n");
    expect(() => loadKubeConfig({ kubeconfigPath: noContext })).toThrow(/current-context/);
  });

  it("createKube takes a kubeconfig another library loaded (tests use client-node's)", () => {
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfigFile("https://from-client-node.example:6443", "{token: t0k3n}"));
    const kube = createKube(kc);
    expect(kube.access.server).toBe("https://from-client-node.example:6443");
  });
});
