// Sharding under the chart's own RBAC, against the real apiserver: the chart (cluster-wide, serving
// ClusterProviderConfigs, sharding on) is applied for real, and two keyward processes
// (src/main.ts --sharding) run with a token the TokenRequest API minted for its ServiceAccount. A
// ClusterProviderConfig must reach Ready (the leader reconciles it; no replica needs a write on
// it but its status), and nobody's request is refused.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthenticationV1TokenRequest, CoreV1Api, CustomObjectsApi, KubeConfig, V1TokenRequestSpec } from "@kubernetes/client-node";
import { createTestNamespace, kubectl, testKubeConfig, waitFor, type TestNamespace } from "../../controlplane/testenv.ts";
import { freePort } from "../../controlplane/controlplane.ts";
import { loadDefaultSeed } from "../../emulator/default-seed.ts";
import { startEmulator, type Emulator } from "../../emulator/server.ts";
import { SHARD_LABEL } from "../../../src/shard/plan.ts";
import { ALLOWED_BASE_URLS_ANNOTATION, CREDENTIALS_LABEL } from "../../../src/resources/provider/credentials.ts";
import { parseYamlDocuments, renderChart } from "../../unit/chart/helm.ts";
import { condition, createCustom, getCustom, isReady } from "../support/keyward.ts";

const TOKEN = "kw-sharding-rbac-token-7c21d9";
const cpcApi = { group: "keyward.dev", version: "v1alpha1", plural: "clusterproviderconfigs" };
const admin = (): KubeConfig => testKubeConfig();

let emulator: Emulator;
let releaseNs: TestNamespace;
let creds: TestNamespace;
let watched: TestNamespace;
let clusterScoped: string[] = [];
const children: { child: ChildProcess; logs: string[] }[] = [];
const release = `kw-${randomBytes(3).toString("hex")}`;
const fullname = `${release}-keyward`;
const cpc = `shrbac-${randomBytes(3).toString("hex")}`;
// ClusterProviderConfigs are cluster-wide: another test file's keyward running beside this one
// reconciles this one too, and must not find a Secret of this name in its credentials namespace
// (it would send its own token to this test's emulator).
const secretName = `${cpc}-token`;

/** A kubeconfig file that authenticates as the chart's ServiceAccount (TokenRequest API). */
async function serviceAccountKubeconfigFile(): Promise<string> {
  const request = await admin()
    .makeApiClient(CoreV1Api)
    .createNamespacedServiceAccountToken({
      name: fullname,
      namespace: releaseNs.name,
      body: Object.assign(new AuthenticationV1TokenRequest(), {
        spec: Object.assign(new V1TokenRequestSpec(), { audiences: [], expirationSeconds: 3600 }),
      }),
    });
  const token = request.status?.token;
  const cluster = admin().getCurrentCluster();
  if (!token || !cluster) throw new Error("no token or no cluster");
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ ...cluster, name: "test" }],
    users: [{ name: fullname, token }],
    contexts: [{ name: "sa", cluster: "test", user: fullname }],
    currentContext: "sa",
  });
  const path = join(mkdtempSync(join(tmpdir(), "kw-shrbac-")), "kubeconfig");
  writeFileSync(path, kc.exportConfig(), { mode: 0o600 });
  return path;
}

async function startReplica(kubeconfig: string, identity: string): Promise<void> {
  const args = [
    "src/main.ts",
    ...["--namespaces", watched.name],
    ...["--sharding", "true", "--leader-elect", "true", "--leader-election-namespace", releaseNs.name],
    // The chart's Role grants get/update on its own leader Lease name only.
    ...["--leader-election-id", `${fullname}-leader`, "--identity", identity],
    ...["--cluster-provider-configs", "true", "--credentials-namespace", creds.name],
    ...["--lease-duration", "6s", "--renew-deadline", "4s", "--retry-period", "1s", "--resync-interval", "10m"],
    ...["--metrics-port", String(await freePort()), "--health-port", String(await freePort())],
    ...["--bind-address", "127.0.0.1", "--metrics-auth", "localhost"],
  ];
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, KUBECONFIG: kubeconfig } });
  const logs: string[] = [];
  const take = (chunk: Buffer): void => void logs.push(...chunk.toString("utf8").split("\n").filter(Boolean));
  child.stdout?.on("data", take);
  child.stderr?.on("data", take);
  children.push({ child, logs });
}

beforeAll(async () => {
  emulator = await startEmulator({ tokens: [TOKEN], seed: loadDefaultSeed(), jobDelayMs: 50 });
  [releaseNs, creds, watched] = await Promise.all([
    createTestNamespace("shrbac-release"),
    createTestNamespace("shrbac-creds"),
    createTestNamespace("shrbac-watched"),
  ]);
  const yaml = await renderChart({
    release,
    namespace: releaseNs.name,
    setJson: {
      watchNamespaces: [],
      rbac: { aggregateToDefaultRoles: false },
      crds: { enabled: false },
      replicas: 2,
      sharding: { enabled: true },
      clusterProviderConfig: { enabled: true, create: false, credentialsNamespace: creds.name },
    },
  });
  const applied = await kubectl(["apply", "-f", "-"], { input: yaml });
  expect(applied.code, applied.stderr).toBe(0);
  clusterScoped = parseYamlDocuments(yaml)
    .filter((d) => d.kind.startsWith("Cluster"))
    .map((d) => `${d.kind.toLowerCase()}/${d.metadata.name}`);
}, 120_000);

afterAll(async () => {
  for (const { child } of children) child.kill("SIGKILL");
  await admin()
    .makeApiClient(CustomObjectsApi)
    .deleteClusterCustomObject({ ...cpcApi, name: cpc })
    .catch(() => undefined);
  if (clusterScoped.length > 0) await kubectl(["delete", "--ignore-not-found", ...clusterScoped]);
  await Promise.all([releaseNs.cleanup(), creds.cleanup(), watched.cleanup()]);
  await emulator.close();
});

describe("sharding under the chart's RBAC", () => {
  it("brings a ClusterProviderConfig and a Project using it to Ready with two replicas, no request refused", async () => {
    await admin()
      .makeApiClient(CoreV1Api)
      .createNamespacedSecret({
        namespace: creds.name,
        body: {
          metadata: {
            name: secretName,
            labels: { [CREDENTIALS_LABEL]: "true" },
            annotations: { [ALLOWED_BASE_URLS_ANNOTATION]: emulator.url },
          },
          stringData: { token: TOKEN },
        },
      });
    await admin()
      .makeApiClient(CustomObjectsApi)
      .createClusterCustomObject({
        ...cpcApi,
        body: {
          apiVersion: "keyward.dev/v1alpha1",
          kind: "ClusterProviderConfig",
          metadata: { name: cpc },
          spec: { baseUrl: emulator.url, credentialsSecretRef: { name: secretName }, namespaces: [watched.name] },
        },
      });
    await createCustom(admin(), watched.name, "projects", {
      apiVersion: "keyward.dev/v1alpha1",
      kind: "Project",
      metadata: { name: "shrbac" },
      spec: { name: "shrbac", slug: "sharded-cluster-config", providerConfigRef: { kind: "ClusterProviderConfig", name: cpc } },
    });
    const kubeconfig = await serviceAccountKubeconfigFile();
    await startReplica(kubeconfig, "shrbac-a");
    await startReplica(kubeconfig, "shrbac-b");

    const readCpc = async (): Promise<{
      metadata: { labels?: Record<string, string> };
      status?: { conditions?: { type: string; status: string }[] };
    }> =>
      (await admin()
        .makeApiClient(CustomObjectsApi)
        .getClusterCustomObject({ ...cpcApi, name: cpc })) as {
        metadata: { labels?: Record<string, string> };
        status?: { conditions?: { type: string; status: string }[] };
      };
    const ready = await waitFor(
      async () => {
        const o = await readCpc();
        return o.status?.conditions?.find((c) => c.type === "Ready")?.status === "True" ? o : undefined;
      },
      { timeoutMs: 90_000, description: `ClusterProviderConfig ${cpc} Ready` },
    ).catch((err: unknown) => {
      // What the replicas said (the 403s of a missing grant, say), with the failure.
      throw new Error(`${String(err)}\n${children.flatMap(({ logs }) => logs.slice(-20)).join("\n")}`);
    });
    // The leader's: no shard label, so no write on the object itself was needed.
    expect(ready.metadata.labels?.[SHARD_LABEL]).toBeUndefined();
    const projectObj = await waitFor(
      async () => {
        const o = await getCustom(admin(), watched.name, "projects", "shrbac");
        return isReady(o) ? o : undefined;
      },
      { timeoutMs: 60_000, description: "the Project Ready" },
    );
    expect(condition(projectObj, "Ready")?.status).toBe("True");
    expect(projectObj.metadata.labels?.[SHARD_LABEL]).toMatch(/^shrbac-[ab]$/);

    for (const { child, logs } of children) {
      expect(child.exitCode).toBeNull();
      // 403 as a status, not as digits of a decimal such as "durationMs":21.403.
      expect(logs.filter((line) => /forbidden|(?<![.\d])\b403\b(?!\.\d)/i.test(line))).toEqual([]);
      expect(logs.join("\n")).not.toContain(TOKEN);
    }
  }, 180_000);
});
