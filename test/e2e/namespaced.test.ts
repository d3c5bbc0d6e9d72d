// A namespaced install (watchNamespaces): keyward manages its namespace and cannot touch another.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  apply,
  createNamespace,
  deployEmulator,
  emulatorRequests,
  installKeyward,
  keywardObjects,
  kubectl,
  kubectlJson,
  providerResources,
  waitAllReady,
  type Emulator,
  type List,
  uninstallKeyward,
} from "./support.ts";

const release = "kw-ns";
const systemNs = "kw-e2e-ns-system";
const watchedNs = "kw-e2e-ns-watched";
const otherNs = "kw-e2e-ns-other";
const serviceAccount = `system:serviceaccount:${systemNs}:${release}-keyward`;

let emulator: Emulator;

function resources(baseUrl: string, slug: string): unknown[] {
  return [
    ...providerResources(baseUrl),
    { apiVersion: "keyward.dev/v1alpha1", kind: "Project", metadata: { name: slug }, spec: { name: slug, slug, type: "secret-manager" } },
  ];
}

describe("a namespaced install", () => {
  beforeAll(async () => {
    emulator = await deployEmulator(await createNamespace("kw-e2e-ns-emulator"));
    await createNamespace(systemNs);
    await createNamespace(watchedNs);
    await createNamespace(otherNs);
    // The other namespace's objects exist before keyward starts, so it would see them at once.
    await apply(resources(emulator.baseUrl, "ns-other-project"), otherNs);
    await installKeyward(release, systemNs, ["--set-json", `watchNamespaces=["${watchedNs}"]`]);
  }, 600_000);

  afterAll(async () => {
    await uninstallKeyward(release, systemNs);
  }, 300_000);

  test("renders no cluster-scoped RBAC of keyward's but the webhook's on the CRDs, and its ServiceAccount may not touch another namespace", async () => {
    const clusterRoles = await kubectlJson<List>([
      "get",
      "clusterroles,clusterrolebindings",
      "-l",
      `app.kubernetes.io/instance=${release}`,
    ]);
    // The conversion webhook's, which may only write keyward's CRDs' caBundle (the chart installs the CRDs).
    expect(clusterRoles.items.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual([
      `ClusterRole/${release}-keyward-webhook`,
      `ClusterRoleBinding/${release}-keyward-webhook`,
    ]);
    const canI = async (verb: string, resource: string, namespace: string) =>
      (await kubectl(["auth", "can-i", verb, resource, "-n", namespace, "--as", serviceAccount], { allowFailure: true })).trim();
    expect(await canI("patch", "projects.keyward.dev", watchedNs)).toBe("yes");
    expect(await canI("get", "secrets", watchedNs)).toBe("yes");
    for (const [verb, resource] of [
      ["list", "projects.keyward.dev"],
      ["patch", "projects.keyward.dev"],
      ["patch", "projects.keyward.dev/status"],
      ["get", "secrets"],
      ["create", "secrets"],
    ] as const) {
      expect(await canI(verb, resource, otherNs), `${verb} ${resource} in ${otherNs}`).toBe("no");
    }
  });

  test("manages the watched namespace and leaves the other one untouched", async () => {
    await apply(resources(emulator.baseUrl, "ns-watched-project"), watchedNs);
    await waitAllReady(watchedNs, 2, 300_000);
    // Everything in the other namespace is as the user wrote it: no status, finalizer or annotation of keyward's.
    for (const obj of await keywardObjects(otherNs)) {
      expect(obj.status, `${obj.kind}/${obj.metadata.name}`).toBeUndefined();
      expect(obj.metadata.finalizers ?? []).toEqual([]);
      expect(Object.keys(obj.metadata.annotations ?? {}).filter((k) => k.startsWith("keyward.dev/"))).toEqual([]);
    }
    const creates = (await emulatorRequests(emulator))
      .filter((r) => r.operation === "createProject")
      .map((r) => (r.body as { slug?: string }).slug);
    expect(creates).toEqual(["ns-watched-project"]);
    // And keyward's log shows no attempt that RBAC refused.
    const logs = await kubectl(["-n", systemNs, "logs", `deployment/${release}-keyward`]);
    expect(logs).not.toMatch(/forbidden/i);
  }, 400_000);
});
