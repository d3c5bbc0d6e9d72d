// Deleting a Project together with the resources that use it (kubectl delete -f dir/, an Argo
// CD prune, the namespace): the service cascades a project's deletion to its syncs, so a
// project deleted first would strand what its SecretSyncs were to remove at the destination.
// The Project waits (InUse) until its dependents have finished their own deletion.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { startEmulator, type Emulator, type RecordedRequest } from "../emulator/server.ts";
import { loadDefaultSeed } from "../emulator/default-seed.ts";
import { createTestNamespace, goneWhen404, kubectl, testKubeConfig, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import {
  condition,
  createCustom,
  dataPlatformSync,
  deleteCustom,
  getCustom,
  installProvider,
  isReady,
  projectObject,
  startKeyward,
  waitForObject,
  type RunningKeyward,
} from "./support/keyward.ts";
import type { KubeObject } from "../../src/engine/types.ts";

const TOKEN = "kw-dependents-token-5c";
let kc: KubeConfig;
let emulator: Emulator;
let keyward: RunningKeyward;
let ns: TestNamespace;
let doomed: TestNamespace;

const ops = (op: string): RecordedRequest[] => emulator.requests().filter((r) => r.operation === op);
const seqOf = (op: string, pathPart: string): number[] =>
  ops(op)
    .filter((r) => r.path.includes(pathPart) && r.status < 300)
    .map((r) => r.seq);

async function ready(namespace: string, plural: string, name: string): Promise<KubeObject> {
  try {
    return await waitForObject(kc, namespace, plural, name, { until: isReady, timeoutMs: 60_000, description: `${plural}/${name} Ready` });
  } catch (err) {
    const last = await getCustom(kc, namespace, plural, name);
    throw new Error(`${(err as Error).message}; its conditions: ${JSON.stringify(last?.status?.conditions)}`, { cause: err });
  }
}

async function gone(namespace: string, plural: string, name: string, timeoutMs = 60_000): Promise<void> {
  await waitFor(async () => ((await getCustom(kc, namespace, plural, name)) ? undefined : true), {
    timeoutMs,
    description: `${plural}/${name} gone`,
  });
}

async function events(namespace: string, name: string): Promise<{ type: string; reason: string; message: string }[]> {
  const res = await kubectl(["get", "events", "-n", namespace, "-o", "json", "--field-selector", `involvedObject.name=${name}`]);
  if (res.code !== 0) throw new Error(res.stderr);
  return (JSON.parse(res.stdout) as { items: { type: string; reason: string; message: string }[] }).items;
}

async function projectAtService(id: string): Promise<number> {
  return (await fetch(`${emulator.url}/api/v1/projects/${id}`, { headers: { authorization: `Bearer ${TOKEN}` } })).status;
}

/** A Project (Delete policy), a SecretSync removing its secrets on delete and a revoking membership, all Ready. */
async function projectWithDependents(
  namespace: string,
  slug: string,
): Promise<{ projectId: string; syncId: string; membershipId: string }> {
  await createCustom(kc, namespace, "projects", projectObject("app", { name: "App", slug, deletionPolicy: "Delete" }));
  const project = await ready(namespace, "projects", "app");
  await createCustom(
    kc,
    namespace,
    "secretsyncs",
    dataPlatformSync("app-sync", {
      projectId: undefined,
      projectRef: { name: "app" },
      environment: "dev",
      deletionPolicy: "RemoveSecrets",
    }),
  );
  await createCustom(kc, namespace, "projectmemberships", {
    apiVersion: "keyward.dev/v1alpha1",
    kind: "ProjectMembership",
    metadata: { name: "alice" },
    spec: { projectRef: { name: "app" }, username: "alice@example.com", roles: [{ role: "admin" }], deletionPolicy: "Revoke" },
  });
  const sync = await ready(namespace, "secretsyncs", "app-sync");
  const membership = await ready(namespace, "projectmemberships", "alice");
  return {
    projectId: String(project.status?.["projectId"]),
    syncId: String(sync.status?.["syncId"]),
    membershipId: String(membership.status?.["membershipId"]),
  };
}

beforeAll(async () => {
  kc = testKubeConfig();
  emulator = await startEmulator({ tokens: [TOKEN], seed: loadDefaultSeed(), jobDelayMs: 300 });
  ns = await createTestNamespace("dependents");
  doomed = await createTestNamespace("dependents-ns");
  await installProvider(kc, ns.name, emulator.url, TOKEN);
  await installProvider(kc, doomed.name, emulator.url, TOKEN);
  keyward = await startKeyward(kc, { namespaces: [ns.name, doomed.name], resyncIntervalMs: 2_000 });
});

afterAll(async () => {
  await keyward?.stop();
  await emulator?.close();
  await ns?.cleanup();
  await doomed?.cleanup().catch(() => undefined);
});

describe("a Project deleted with the resources that use it", () => {
  it("waits, InUse, naming its dependents, and is deleted at the service only after their remove-secrets and revoke", async () => {
    const ids = await projectWithDependents(ns.name, "payments-team");
    // The order kubectl delete -f dir/ may well take: the project first.
    await deleteCustom(kc, ns.name, "projects", "app");
    const waiting = await waitForObject(kc, ns.name, "projects", "app", {
      until: (o) => condition(o, "Ready")?.reason === "InUse",
      timeoutMs: 30_000,
      description: "Project InUse",
    });
    expect(condition(waiting, "Ready")?.status).toBe("False");
    expect(condition(waiting, "Ready")?.message).toContain("SecretSync/app-sync");
    expect(condition(waiting, "Ready")?.message).toContain("ProjectMembership/alice");
    expect(ops("deleteProject")).toHaveLength(0);
    expect(await projectAtService(ids.projectId)).toBe(200);

    await deleteCustom(kc, ns.name, "secretsyncs", "app-sync");
    await deleteCustom(kc, ns.name, "projectmemberships", "alice");
    await gone(ns.name, "projects", "app", 90_000);

    const removed = seqOf("removeSecretSyncSecrets", ids.syncId);
    const revoked = seqOf("updateMembership", ids.membershipId);
    const deleted = seqOf("deleteProject", ids.projectId);
    expect(removed).toHaveLength(1);
    expect(revoked).toHaveLength(1);
    expect(deleted).toHaveLength(1);
    expect(Math.max(...removed, ...revoked)).toBeLessThan(deleted[0] ?? 0);
    expect(await projectAtService(ids.projectId)).toBe(404);
  });

  it("deleting the whole namespace runs each SecretSync's remove-secrets before the project goes", async () => {
    if (!inject("keywardControllerManager")) throw new Error("this test needs kube-controller-manager's namespace controller");
    // A second project of the seed's deferred memberships (alice is admin of any payments-team project).
    const ids = await projectWithDependents(doomed.name, "payments-team");
    await doomed.cleanup();
    const core = kc.makeApiClient(CoreV1Api);
    await waitFor(() => goneWhen404(core.readNamespace({ name: doomed.name })), { timeoutMs: 120_000, description: "namespace gone" });
    const removed = seqOf("removeSecretSyncSecrets", ids.syncId);
    const deleted = seqOf("deleteProject", ids.projectId);
    expect(removed).toHaveLength(1);
    expect(deleted).toHaveLength(1);
    expect(removed[0] ?? Infinity).toBeLessThan(deleted[0] ?? 0);
    expect(seqOf("updateMembership", ids.membershipId).every((s) => s < (deleted[0] ?? 0))).toBe(true);
  });

  it("a SecretSync whose sync vanished at the service says its secrets were not removed, and never claims the removal", async () => {
    await createCustom(kc, ns.name, "secretsyncs", dataPlatformSync("orphan", { deletionPolicy: "RemoveSecrets" }));
    const sync = await ready(ns.name, "secretsyncs", "orphan");
    const id = String(sync.status?.["syncId"]);
    // Deleted behind keyward's back (in the service's UI, or with its project).
    const res = await fetch(`${emulator.url}/api/v1/secret-syncs/data-platform/${id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(res.status).toBe(200);
    await deleteCustom(kc, ns.name, "secretsyncs", "orphan");
    await gone(ns.name, "secretsyncs", "orphan");
    const warning = (await events(ns.name, "orphan")).find((e) => e.reason === "SecretsNotRemoved");
    expect(warning?.type).toBe("Warning");
    expect(warning?.message).toContain(id);
    expect(warning?.message).toContain("not removed");
    expect(seqOf("removeSecretSyncSecrets", id)).toHaveLength(0);
    expect((await events(ns.name, "orphan")).some((e) => e.reason === "SecretsRemoved")).toBe(false);
  });
});
