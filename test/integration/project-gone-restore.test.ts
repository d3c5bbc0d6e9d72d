// A ProjectMembership (deletionPolicy Revoke) and a SecretSync (deletionPolicy RemoveSecrets)
// restored the way Velero restores them — name, namespace, labels, annotations, finalizers and
// spec, no status, a new UID — without their Project (deletionPolicy Retain: the project stays at
// the service, the Project resource is not there to tell its id), then deleted. Their cleanup at
// the service is still owed: the project they live in comes from their own metadata. Metadata is
// anyone's to write: a membership whose metadata names the project of another namespace's Project
// must not act there.
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { Watch, type KubeConfig } from "@kubernetes/client-node";
import type { KubeObject } from "../../src/engine/types.ts";
import type { Emulator } from "../emulator/server.ts";
import { connectionIds, loadDefaultSeed, seedIds } from "../emulator/default-seed.ts";
import { createTestNamespace, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import {
  createCustom,
  deleteCustom,
  getCustom,
  installProvider,
  isReady,
  mergePatchCustom,
  startKeyward,
  startTestEnv,
  waitForObject,
  type RunningKeyward,
  type TestEnv,
} from "./support/keyward.ts";

const TOKEN = "kw-project-gone-restore-token-9b17";
const api = "keyward.dev/v1alpha1";

let env: TestEnv | undefined;
let kc: KubeConfig;
let emulator: Emulator;
let ns: TestNamespace;
let other: TestNamespace | undefined;
let keyward: RunningKeyward | undefined;

const start = async (): Promise<void> => {
  keyward = await startKeyward(kc, { namespaces: [ns.name, other?.name ?? ""], resyncIntervalMs: 600_000 });
};
const stop = async (): Promise<void> => {
  await keyward?.stop();
  keyward = undefined;
};

beforeAll(async () => {
  env = await startTestEnv({ prefix: "project-gone-restore", token: TOKEN, emulator: { seed: loadDefaultSeed() }, keyward: false });
  ({ kc, emulator, ns } = env);
  other = await createTestNamespace("project-gone-other");
  await installProvider(kc, other.name, emulator.url, TOKEN);
});

// Every case adopts the one seeded project: a Project a failed case left would hold it (the claim rule).
afterEach(async () => {
  await stop();
  for (const [namespace, name] of [
    [ns.name, "demo"],
    [ns.name, "demo-sync"],
    [other?.name ?? "", "theirs"],
  ] as const) {
    if (await getCustom(kc, namespace, "projects", name)) await lose(namespace, "projects", name);
  }
});

afterAll(async () => {
  await stop();
  await other?.cleanup();
  await env?.stop();
});

const gone = (namespace: string, plural: string, name: string) => async () =>
  (await getCustom(kc, namespace, plural, name)) === undefined ? true : undefined;

const project = (name: string): object => ({
  apiVersion: api,
  kind: "Project",
  metadata: { name },
  spec: { slug: "demo-project", creationPolicy: "Adopt" },
});

const membership = (name: string, projectName: string): object => ({
  apiVersion: api,
  kind: "ProjectMembership",
  metadata: { name },
  spec: { projectRef: { name: projectName }, username: seedIds.bob, roles: [{ role: "member" }], deletionPolicy: "Revoke" },
});

/**
 * The writes keyward makes to one object (its watch's MODIFIED events) from its creation until it
 * is Ready and its deletion's cleanup is what it needs, settled: the cost of recording the project.
 */
async function createCountingWrites(
  plural: string,
  body: KubeObject,
  ready: (o: KubeObject) => boolean,
): Promise<{ obj: KubeObject; writes: number }> {
  const name = body.metadata.name;
  let writes = 0;
  const watch = await new Watch(kc).watch(
    `/apis/${api}/namespaces/${ns.name}/${plural}`,
    { fieldSelector: `metadata.name=${name}` },
    (type: string) => (writes += type === "MODIFIED" ? 1 : 0),
    () => undefined,
  );
  try {
    await createCustom(kc, ns.name, plural, body);
    await waitForObject(kc, ns.name, plural, name, { until: ready, timeoutMs: 60_000, description: `${plural}/${name} Ready` });
    // A write after Ready (none is expected) would be counted too.
    await new Promise((r) => setTimeout(r, 3_000));
    const obj = await getCustom(kc, ns.name, plural, name);
    if (!obj) throw new Error(`${plural}/${name} is gone`);
    return { obj, writes };
  } finally {
    watch.abort();
  }
}

/** What a backup keeps of an object and a restore applies again: no status, no UID. */
function restorable(o: KubeObject): KubeObject {
  const { name, namespace, labels, annotations, finalizers } = o.metadata;
  return { apiVersion: o.apiVersion, kind: o.kind, metadata: { name, namespace, labels, annotations, finalizers }, spec: o.spec };
}

/** The cluster is lost: the object goes without keyward (stopped) hearing of it. */
async function lose(namespace: string, plural: string, name: string): Promise<void> {
  await mergePatchCustom(kc, namespace, plural, name, { metadata: { finalizers: null } });
  await deleteCustom(kc, namespace, plural, name);
  await waitFor(gone(namespace, plural, name), { timeoutMs: 30_000, description: `${plural}/${name} gone` });
}

/** Backed up, lost with its Project, restored without it (keyward stopped throughout), then deleted. */
async function restoreWithoutProject(plural: string, obj: KubeObject, projectName: string): Promise<void> {
  await stop();
  const backup = restorable(obj);
  await lose(ns.name, plural, obj.metadata.name);
  await lose(ns.name, "projects", projectName);
  await createCustom(kc, ns.name, plural, backup);
  const restored = await getCustom(kc, ns.name, plural, obj.metadata.name);
  expect(restored?.status).toBeUndefined();
  expect(restored?.metadata.uid).not.toBe(obj.metadata.uid);
  await deleteCustom(kc, ns.name, plural, obj.metadata.name);
}

async function bobRoles(projectId: string): Promise<string[]> {
  const res = await fetch(`${emulator.url}/api/v1/projects/${projectId}/memberships`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const body = (await res.json()) as { memberships: Array<{ user: { username: string }; roles: Array<{ role: string }> }> };
  return (body.memberships.find((m) => m.user.username === seedIds.bob)?.roles ?? []).map((r) => r.role);
}

const roleWrites = (since: number): unknown[] =>
  emulator
    .requests()
    .slice(since)
    .filter((r) => r.operation === "updateMembership")
    .map((r) => r.body);

it("revokes a restored membership deleted with its Project gone", async () => {
  await start();
  await createCustom(kc, ns.name, "projects", project("demo"));
  await waitForObject(kc, ns.name, "projects", "demo", { until: isReady, timeoutMs: 60_000, description: "Project Ready" });
  const { obj: member, writes } = await createCountingWrites("projectmemberships", membership("bob", "demo") as KubeObject, isReady);
  // The project rides in the finalizer's write: the finalizer, then the status (2 before it was recorded).
  expect(writes).toBe(2);
  expect(member.metadata.annotations?.["keyward.dev/project-id"]).toBe(seedIds.demoProject);
  expect(member.status?.["projectId"]).toBe(seedIds.demoProject);
  expect(await bobRoles(seedIds.demoProject)).toEqual(["member"]);
  await restoreWithoutProject("projectmemberships", member, "demo");

  const since = emulator.requests().length;
  await start();
  await waitFor(gone(ns.name, "projectmemberships", "bob"), { timeoutMs: 60_000, description: "membership released" });
  expect(roleWrites(since)).toEqual([{ roles: [{ role: "no-access", isTemporary: false }] }]);
  expect(await bobRoles(seedIds.demoProject)).toEqual(["no-access"]);
  await stop();
});

it("removes the secrets of a restored SecretSync deleted with its Project gone", async () => {
  await start();
  await createCustom(kc, ns.name, "projects", project("demo-sync"));
  await waitForObject(kc, ns.name, "projects", "demo-sync", { until: isReady, timeoutMs: 60_000, description: "Project Ready" });
  const { obj: sync, writes } = await createCountingWrites(
    "secretsyncs",
    {
      apiVersion: api,
      kind: "SecretSync",
      metadata: { name: "orders", namespace: ns.name },
      spec: {
        projectRef: { name: "demo-sync" },
        destination: "data-platform",
        connectionId: connectionIds["data-platform"],
        environment: "prod",
        secretPath: "/",
        destinationConfig: { scope: "workspace" },
        deletionPolicy: "RemoveSecrets",
      },
    },
    (o) => isReady(o) && typeof o.status?.["syncId"] === "string",
  );
  // The project rides in the create-started mark's write (with the finalizer): 4 before it was recorded.
  expect(writes).toBe(4);
  expect(sync.metadata.annotations?.["keyward.dev/project-id"]).toBe(seedIds.demoProject);
  const syncId = sync.status?.["syncId"] as string;
  await restoreWithoutProject("secretsyncs", sync, "demo-sync");

  const since = emulator.requests().length;
  await start();
  await waitFor(gone(ns.name, "secretsyncs", "orders"), { timeoutMs: 90_000, description: "SecretSync released" });
  const removes = emulator
    .requests()
    .slice(since)
    .filter((r) => r.operation === "removeSecretSyncSecrets");
  expect(removes.map((r) => r.path)).toEqual([`/api/v1/secret-syncs/data-platform/${syncId}/remove-secrets`]);
  await stop();
});

it("does not act on another namespace's project that a membership's metadata names", async () => {
  if (!other) throw new Error("no second namespace");
  await start();
  // Team B's Project holds the project; team A's membership names it in metadata only.
  await createCustom(kc, other.name, "projects", project("theirs"));
  const theirs = await waitForObject(kc, other.name, "projects", "theirs", {
    until: isReady,
    timeoutMs: 60_000,
    description: "B's Project",
  });
  expect(theirs.status?.["projectId"]).toBe(seedIds.demoProject);
  const before = await bobRoles(seedIds.demoProject);
  const since = emulator.requests().length;
  const forged = membership("forged", "gone") as KubeObject;
  forged.metadata = {
    ...forged.metadata,
    annotations: { "keyward.dev/project-id": seedIds.demoProject },
    finalizers: ["keyward.dev/finalizer"],
  };
  await createCustom(kc, ns.name, "projectmemberships", forged);
  await deleteCustom(kc, ns.name, "projectmemberships", "forged");
  await waitFor(gone(ns.name, "projectmemberships", "forged"), { timeoutMs: 60_000, description: "forged membership released" });
  expect(roleWrites(since)).toEqual([]);
  expect(await bobRoles(seedIds.demoProject)).toEqual(before);
  await stop();
});

it("does not act on another namespace's project that it created, named by a membership's metadata", async () => {
  if (!other) throw new Error("no second namespace");
  await start();
  // Team B's Project creates its project: its slug and create-started mark name it in metadata, and
  // its status records the id (no keyward.dev/external-id: the claim rule finds it by that record).
  await createCustom(kc, other.name, "projects", {
    apiVersion: api,
    kind: "Project",
    metadata: { name: "theirs-created" },
    spec: { slug: "theirs-created" },
  });
  const theirs = await waitForObject(kc, other.name, "projects", "theirs-created", {
    until: isReady,
    timeoutMs: 60_000,
    description: "B's created Project",
  });
  const projectId = String(theirs.status?.["projectId"]);
  expect(theirs.metadata.annotations?.["keyward.dev/external-id"]).toBeUndefined();
  // Bob is a member there, added at the service by hand: no resource manages (or locks) his roles.
  emulator.addMember({ projectId, username: seedIds.bob, roles: [{ role: "member" }] });
  expect(await bobRoles(projectId)).toEqual(["member"]);

  const since = emulator.requests().length;
  const forged = membership("forged-created", "gone") as KubeObject;
  forged.metadata = { ...forged.metadata, annotations: { "keyward.dev/project-id": projectId }, finalizers: ["keyward.dev/finalizer"] };
  await createCustom(kc, ns.name, "projectmemberships", forged);
  await deleteCustom(kc, ns.name, "projectmemberships", "forged-created");
  await waitFor(gone(ns.name, "projectmemberships", "forged-created"), { timeoutMs: 60_000, description: "forged membership released" });
  const membershipCalls = emulator
    .requests()
    .slice(since)
    .filter((r) => r.method !== "GET" && r.operation.toLowerCase().includes("membership"));
  expect(membershipCalls.map((r) => r.operation)).toEqual([]);
  expect(await bobRoles(projectId)).toEqual(["member"]);
  await stop();
  await lose(other.name, "projects", "theirs-created");
});
