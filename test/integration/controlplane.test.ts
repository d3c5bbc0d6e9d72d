// Proves the harness: the cluster the integration project runs against is a real
// kube-apiserver (with etcd, RBAC, server-side validation and, when it runs, the controller
// manager's garbage collector and namespace controller).
import { request, type RequestOptions } from "node:https";
import { ApiException, CoreV1Api, V1ConfigMap, V1ObjectMeta, V1OwnerReference, VersionApi } from "@kubernetes/client-node";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { kubernetesVersion } from "../controlplane/binaries.ts";
import { applyYaml, createTestNamespace, kubectl, testKubeConfig, waitFor, type TestNamespace } from "../controlplane/testenv.ts";

const usesBuiltBinaries = !process.env.KEYWARD_E2E_KUBECONFIG && !process.env.KUBEBUILDER_ASSETS;

/** A GET as the admin, optionally impersonating someone; resolves with the HTTP status. */
async function statusOf(path: string, headers: Record<string, string> = {}): Promise<number> {
  const kc = testKubeConfig();
  const server = kc.getCurrentCluster()?.server;
  if (server === undefined) throw new Error("the test kubeconfig names no cluster");
  const options: RequestOptions = { method: "GET", headers: { ...headers } };
  await kc.applyToHTTPSOptions(options);
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, server), options, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
    req.end();
  });
}

// client-node's models are classes; build instances rather than passing object literals.
function configMap(name: string, fields: { data?: Record<string, string>; ownerReferences?: V1OwnerReference[] } = {}): V1ConfigMap {
  const metadata = Object.assign(new V1ObjectMeta(), { name, ownerReferences: fields.ownerReferences });
  return Object.assign(new V1ConfigMap(), { metadata, data: fields.data });
}

async function readConfigMap(core: CoreV1Api, namespace: string, name: string): Promise<V1ConfigMap | "gone"> {
  try {
    return await core.readNamespacedConfigMap({ namespace, name });
  } catch (error) {
    if (error instanceof ApiException && error.code === 404) return "gone";
    throw error;
  }
}

describe("local control plane", () => {
  let ns: TestNamespace;
  let core: CoreV1Api;

  beforeEach(async () => {
    ns = await createTestNamespace("controlplane");
    core = testKubeConfig().makeApiClient(CoreV1Api);
  });
  afterEach(async () => {
    await ns.cleanup();
  });

  it("reports the Kubernetes version it was built from", async () => {
    const version = await testKubeConfig().makeApiClient(VersionApi).getCode();
    if (usesBuiltBinaries) expect(version.gitVersion).toBe(kubernetesVersion());
    else expect(version.gitVersion).toMatch(/^v1\.\d+\.\d+/);
  });

  it("stores and returns a ConfigMap", async () => {
    await core.createNamespacedConfigMap({ namespace: ns.name, body: configMap("round-trip", { data: { greeting: "hello" } }) });
    const read = await core.readNamespacedConfigMap({ namespace: ns.name, name: "round-trip" });
    expect(read.data).toEqual({ greeting: "hello" });
    expect(read.metadata?.uid).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("validates on the server with kubectl apply --dry-run=server", async () => {
    const good = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dry-run-only\ndata:\n  a: b\n";
    const accepted = await applyYaml(good, ns.name, { extraArgs: ["--dry-run=server"] });
    expect(accepted.stdout).toContain("configmap/dry-run-only created (server dry run)");
    expect(await readConfigMap(core, ns.name, "dry-run-only")).toBe("gone");

    const bad = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Not_A_Valid_Name\n";
    const rejected = await applyYaml(bad, ns.name, { extraArgs: ["--dry-run=server"], allowFailure: true });
    expect(rejected.code).not.toBe(0);
    expect(rejected.stderr).toContain("Invalid value");
  });

  it("enforces RBAC: an impersonated user needs a role to list secrets", async () => {
    const secrets = `/api/v1/namespaces/${ns.name}/secrets`;
    const asAlice = { "Impersonate-User": "alice@example.test" };
    expect(await statusOf(secrets)).toBe(200);
    expect(await statusOf(secrets, asAlice)).toBe(403);
    const denied = await kubectl(["get", "secrets", "--namespace", ns.name, "--as", "alice@example.test"]);
    expect(denied.code).not.toBe(0);
    expect(denied.stderr).toContain("Forbidden");

    await applyYaml(
      [
        "apiVersion: rbac.authorization.k8s.io/v1",
        "kind: Role",
        "metadata: {name: secret-reader}",
        "rules: [{apiGroups: [''], resources: [secrets], verbs: [list]}]",
        "---",
        "apiVersion: rbac.authorization.k8s.io/v1",
        "kind: RoleBinding",
        "metadata: {name: alice-reads-secrets}",
        "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: secret-reader}",
        "subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice@example.test}]",
      ].join("\n"),
      ns.name,
    );
    // RBAC reads roles from an informer cache, so the grant takes effect shortly after the write.
    await waitFor(async () => ((await statusOf(secrets, asAlice)) === 200 ? true : undefined), {
      timeoutMs: 30_000,
      description: "alice's RoleBinding to allow listing secrets",
    });
  });

  it("garbage-collects an owned object after its owner is deleted", async () => {
    expect(inject("keywardControllerManager"), "this test needs kube-controller-manager (garbage collector, namespace controller)").toBe(
      true,
    );
    const owner = await core.createNamespacedConfigMap({ namespace: ns.name, body: configMap("owner") });
    const ownerRef = Object.assign(new V1OwnerReference(), {
      apiVersion: "v1",
      kind: "ConfigMap",
      name: "owner",
      uid: owner.metadata?.uid ?? "",
    });
    await core.createNamespacedConfigMap({ namespace: ns.name, body: configMap("owned", { ownerReferences: [ownerRef] }) });
    await core.deleteNamespacedConfigMap({ namespace: ns.name, name: "owner", propagationPolicy: "Background" });
    const gone = await waitFor(async () => ((await readConfigMap(core, ns.name, "owned")) === "gone" ? "gone" : undefined), {
      timeoutMs: 90_000,
      intervalMs: 500,
      description: `ConfigMap ${ns.name}/owned to be garbage-collected after its owner's deletion`,
    });
    expect(gone).toBe("gone");
  });

  it("finishes deleting a namespace and what it holds", async () => {
    expect(inject("keywardControllerManager"), "this test needs kube-controller-manager (garbage collector, namespace controller)").toBe(
      true,
    );
    const doomed = await createTestNamespace("doomed");
    await core.createNamespacedConfigMap({ namespace: doomed.name, body: configMap("inside") });
    await doomed.cleanup();
    const gone = await waitFor(
      async () => {
        try {
          await core.readNamespace({ name: doomed.name });
          return undefined;
        } catch (error) {
          if (error instanceof ApiException && error.code === 404) return "gone";
          throw error;
        }
      },
      { timeoutMs: 90_000, intervalMs: 500, description: `namespace ${doomed.name} to be deleted by the namespace controller` },
    );
    expect(gone).toBe("gone");
  });
});
