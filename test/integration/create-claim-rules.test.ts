// The create rule and the claim rule against the real apiserver and the emulator, each in the
// interleaving that once broke it (docs/architecture.md, "Create once, one holder"):
// - a create whose outcome is unknown stays pending when its retry is refused, so the late commit
//   is found as this resource's and deleted with it;
// - a sync deleted with its Project while its create's outcome is unknown is looked up in the
//   project the create was sent to, and the late commit deleted;
// - two resources adopting one existing project at the same moment: exactly one holds it, and
//   deleting the other deletes nothing;
// - a resource adopting a project another is creating (its answer held) waits for the creator,
//   which records it on the announcement of its slug alone;
// - an id named in metadata alone (a paused resource that never confirmed it) holds nothing
//   against a resource that can confirm it.
// Counted from the emulator's call log, never from timing.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KubeConfig } from "@kubernetes/client-node";
import { GROUP, VERSION } from "../../src/engine/types.ts";
import type { Emulator } from "../emulator/server.ts";
import { loadDefaultSeed } from "../emulator/default-seed.ts";
import { createTestNamespace, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import {
  condition,
  createCustom,
  dataPlatformSync,
  deleteCustom,
  getCustom,
  installProvider,
  isReady,
  mergePatchCustom,
  startKeyward,
  startTestEnv,
  waitForObject,
  type TestEnv,
} from "./support/keyward.ts";
import type { KubeObject } from "../../src/engine/types.ts";
import { idDigest, KEY_CONFIRM_MS, keyDigest, NATURAL_KEY_LABEL } from "../../src/engine/holder.ts";

const TOKEN = "kw-create-claim-token-5e81b2";
const api = `${GROUP}/${VERSION}`;

let env: TestEnv;
let kc: KubeConfig;
let emulator: Emulator;
let a: TestNamespace;
let b: TestNamespace;
let c: TestNamespace;
/** How far keyward's engine clock runs ahead of the system's: a test moves it to reach windows of minutes. */
let clockAheadMs = 0;

beforeAll(async () => {
  env = await startTestEnv({ prefix: "rules-a", token: TOKEN, emulator: { seed: loadDefaultSeed(), jobDelayMs: 50 }, keyward: false });
  ({ kc, emulator, ns: a } = env);
  b = await createTestNamespace("rules-b");
  env.onStop(() => b.cleanup());
  c = await createTestNamespace("rules-c");
  env.onStop(() => c.cleanup());
  await installProvider(kc, b.name, emulator.url, TOKEN);
  await installProvider(kc, c.name, emulator.url, TOKEN);
  const keyward = await startKeyward(kc, {
    namespaces: [a.name, b.name, c.name],
    resyncIntervalMs: 2_000,
    clock: () => new Date(Date.now() + clockAheadMs),
  });
  env.onStop(() => keyward.stop());
});

afterAll(() => env.stop());

const project = (name: string, spec: Record<string, unknown>, annotations?: Record<string, string>): object => ({
  apiVersion: api,
  kind: "Project",
  metadata: { name, ...(annotations ? { annotations } : {}) },
  spec,
});

const ops = (operation: string, since = 0) =>
  emulator
    .requests()
    .slice(since)
    .filter((r) => r.operation === operation);

const gone = (ns: string, plural: string, name: string): Promise<true> =>
  waitFor(async () => ((await getCustom(kc, ns, plural, name)) ? undefined : true), {
    timeoutMs: 60_000,
    description: `${ns}/${name} gone`,
  });

/** A project at the service made with the token, as another tool or a removed resource would leave it. */
async function serviceProject(slug: string): Promise<string> {
  const res = await fetch(`${emulator.url}/api/v2/workspace`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ projectName: slug, slug }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { project: { id: string } }).project.id;
}

interface CreateCase {
  plural: string;
  create: string;
  remove: string;
  pathPattern: string;
  idField: string;
  object: (name: string) => object;
  removePath: (id: string) => string;
}

const createCases: Record<string, CreateCase> = {
  Project: {
    plural: "projects",
    create: "createProject",
    remove: "deleteProject",
    pathPattern: "^/api/v2/workspace$",
    idField: "projectId",
    object: (name) => project(name, { slug: "late-commit", deletionPolicy: "Delete" }),
    removePath: (id) => `/api/v1/projects/${id}`,
  },
  SecretSync: {
    plural: "secretsyncs",
    create: "createSecretSync",
    remove: "deleteSecretSync",
    pathPattern: "^/api/v1/secret-syncs/data-platform$",
    idField: "syncId",
    object: (name) => dataPlatformSync(name, { name: "late-commit", deletionPolicy: "Delete" }),
    removePath: (id) => `/api/v1/secret-syncs/data-platform/${id}`,
  },
};

// A held create is released when the test has seen what must come before its late commit, and
// only once its client has given up: the order is the test's, not a race between a latency and
// a slow machine. The latency is only a cap.
const HOLD_CAP_MS = 120_000;

async function releaseWhen(description: string, seen: () => boolean): Promise<void> {
  await waitFor(() => Promise.resolve(seen() && emulator.heldRequests({ clientGone: true }) > 0 ? true : undefined), {
    timeoutMs: 60_000,
    description,
  });
  expect(emulator.releaseHeld()).toBe(1);
}

/** How many requests of `operation` the emulator logged from index `from` of its log on. */
function opsFrom(operation: string, from: number): number {
  return emulator
    .requests()
    .slice(from)
    .filter((r) => r.operation === operation).length;
}

describe.each(Object.entries(createCases))("the create rule, %s", (kind, k) => {
  it("keeps a create pending when its retry is refused, and finds the late commit as its own", async () => {
    // One attempt times out (1 s) while the service holds it; the retry, meanwhile, is refused
    // with a 429; only then does the held attempt commit. Its outcome is still unknown at the refusal.
    await mergePatchCustom(kc, a.name, "providerconfigs", "default", { spec: { timeoutSeconds: 1 } });
    const match = { method: "POST", pathPattern: k.pathPattern };
    const since = emulator.requests().length;
    const name = `late-${kind.toLowerCase()}`;
    emulator.setFaults({ match, latencyMs: HOLD_CAP_MS, landsWithoutClient: true });
    try {
      await createCustom(kc, a.name, k.plural, k.object(name));
      await waitFor(() => Promise.resolve(emulator.heldRequests() > 0 ? true : undefined), {
        timeoutMs: 30_000,
        description: "the first create held",
      });
      emulator.setFaults({ match, rateLimit: { count: 1, retryAfterSeconds: 8 } });
      await releaseWhen("the retry refused", () => ops(k.create, since).some((r) => r.status === 429));
      await waitFor(() => Promise.resolve(ops(k.create, since).some((r) => r.status === 200) ? true : undefined), {
        timeoutMs: 30_000,
        description: "the first create committed",
      });
    } finally {
      emulator.setFaults({});
      await mergePatchCustom(kc, a.name, "providerconfigs", "default", { spec: { timeoutSeconds: 5 } });
    }
    const creates = ops(k.create, since);
    // The interleaving happened: the refusal came before the held attempt's commit, which landed
    // after its client had given up.
    const refused = creates.findIndex((r) => r.status === 429);
    const committed = creates.findIndex((r) => r.status === 200);
    expect(refused).toBeGreaterThanOrEqual(0);
    expect(refused).toBeLessThan(committed);
    expect(creates[committed]?.fault).toBe("client-gone");

    const ready = await waitForObject(kc, a.name, k.plural, name, {
      until: (o) => isReady(o) || condition(o, "Synced")?.reason === "AlreadyExists",
      timeoutMs: 60_000,
      description: `${name} Ready (or AlreadyExists)`,
    });
    expect(condition(ready, "Synced")?.reason).not.toBe("AlreadyExists");
    expect(isReady(ready)).toBe(true);
    expect(ops(k.create, since).filter((r) => r.status === 200)).toHaveLength(1);

    await deleteCustom(kc, a.name, k.plural, name);
    await gone(a.name, k.plural, name);
    expect(ops(k.remove, since).map((r) => r.path)).toEqual([k.removePath(String(ready.status?.[k.idField]))]);
  });
});

describe("the create rule, being deleted", () => {
  it("waits for a create whose outcome is unknown before it lets the resource go, and deletes the late commit", async () => {
    // The create times out (1 s) while the service holds it; the resource is deleted meanwhile,
    // and a lookup by its slug finds nothing yet; only then does the held create commit.
    await mergePatchCustom(kc, a.name, "providerconfigs", "default", { spec: { timeoutSeconds: 1 } });
    const match = { method: "POST", pathPattern: "^/api/v2/workspace$" };
    const since = emulator.requests().length;
    emulator.setFaults({ match, latencyMs: HOLD_CAP_MS, landsWithoutClient: true });
    try {
      await createCustom(kc, a.name, "projects", project("going", { slug: "late-while-deleting", deletionPolicy: "Delete" }));
      await waitFor(() => Promise.resolve(emulator.heldRequests() > 0 ? true : undefined), {
        timeoutMs: 30_000,
        description: "the create held",
      });
      const deletedFrom = emulator.requests().length;
      await deleteCustom(kc, a.name, "projects", "going");
      await releaseWhen("a lookup by slug after the deletion", () => opsFrom("getProjectBySlug", deletedFrom) > 0);
      await gone(a.name, "projects", "going");
    } finally {
      emulator.setFaults({});
      await mergePatchCustom(kc, a.name, "providerconfigs", "default", { spec: { timeoutSeconds: 5 } });
    }
    const committed = ops("createProject", since).filter((r) => r.status === 200);
    expect(committed.map((r) => r.fault)).toEqual(["client-gone"]);
    // What the late create made was found and deleted before the resource went: nothing is left.
    expect(ops("deleteProject", since)).toHaveLength(1);
    const left = await fetch(`${emulator.url}/api/v1/projects/slug/late-while-deleting`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(left.status).toBe(404);
  });
});

describe("the create rule, being deleted after two attempts", () => {
  it("deletes the first attempt's commit, then waits for and deletes the second's before it lets the resource go", async () => {
    // Both attempts time out (1 s) while the service holds them: the second was sent after a
    // lookup by slug found nothing, since the first had not landed. The resource is deleted; the
    // first commits and the deletion finds and deletes it; only then does the second commit, with
    // the slug free again. Seed 16 of the soak left such a second commit behind.
    await mergePatchCustom(kc, a.name, "providerconfigs", "default", { spec: { timeoutSeconds: 1 } });
    const match = { method: "POST", pathPattern: "^/api/v2/workspace$" };
    const since = emulator.requests().length;
    emulator.setFaults({ match, latencyMs: HOLD_CAP_MS, landsWithoutClient: true });
    try {
      await createCustom(kc, a.name, "projects", project("twice", { slug: "late-twice", deletionPolicy: "Delete" }));
      await waitFor(() => Promise.resolve(emulator.heldRequests({ clientGone: true }) >= 2 ? true : undefined), {
        timeoutMs: 60_000,
        description: "two create attempts held, both given up on",
      });
      await deleteCustom(kc, a.name, "projects", "twice");
      expect(emulator.releaseHeld(1)).toBe(1);
      await waitFor(() => Promise.resolve(opsFrom("deleteProject", since) > 0 ? true : undefined), {
        timeoutMs: 60_000,
        description: "the first attempt's commit found and deleted",
      });
      // The later attempts (one, or two when a third was sent before the deletion).
      expect(emulator.releaseHeld()).toBeGreaterThanOrEqual(1);
      await gone(a.name, "projects", "twice");
    } finally {
      emulator.setFaults({});
      await mergePatchCustom(kc, a.name, "providerconfigs", "default", { spec: { timeoutSeconds: 5 } });
    }
    // Two landed (the slug lets one at a time), and each was deleted: nothing left.
    const committed = ops("createProject", since).filter((r) => r.status === 200);
    expect(committed.map((r) => r.fault)).toEqual(["client-gone", "client-gone"]);
    expect(ops("deleteProject", since)).toHaveLength(committed.length);
    const left = await fetch(`${emulator.url}/api/v1/projects/slug/late-twice`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(left.status).toBe(404);
  });
});

describe("the create rule, being deleted with its project", () => {
  it("looks a late-committed sync up in the project its create was sent to, when that Project resource is gone too", async () => {
    // The Project keeps its project at the service (Retain) and goes at once; the sync's create
    // times out (1 s) while the service holds it, and commits only after the deletion has looked
    // for it once. The deletion can no longer resolve spec.projectRef, so only the project the
    // create was sent to finds the sync.
    await createCustom(kc, a.name, "projects", project("sync-home", { slug: "sync-home", deletionPolicy: "Retain" }));
    const home = await waitForObject(kc, a.name, "projects", "sync-home", {
      until: isReady,
      timeoutMs: 60_000,
      description: "sync-home Ready",
    });
    const projectId = String(home.status?.["projectId"]);
    await mergePatchCustom(kc, a.name, "providerconfigs", "default", { spec: { timeoutSeconds: 1 } });
    const match = { method: "POST", pathPattern: "^/api/v1/secret-syncs/data-platform$" };
    const since = emulator.requests().length;
    emulator.setFaults({ match, latencyMs: HOLD_CAP_MS, landsWithoutClient: true });
    const sync = dataPlatformSync("homeless", { name: "homeless", deletionPolicy: "Delete", environment: "dev" }) as {
      spec: Record<string, unknown>;
    };
    delete sync.spec["projectId"];
    sync.spec["projectRef"] = { name: "sync-home" };
    try {
      await createCustom(kc, a.name, "secretsyncs", sync);
      await waitFor(() => Promise.resolve(emulator.heldRequests() > 0 ? true : undefined), {
        timeoutMs: 30_000,
        description: "the create held",
      });
      const deletedFrom = emulator.requests().length;
      await Promise.all([deleteCustom(kc, a.name, "projects", "sync-home"), deleteCustom(kc, a.name, "secretsyncs", "homeless")]);
      await gone(a.name, "projects", "sync-home");
      await releaseWhen("a lookup of the sync by name after the deletion", () => opsFrom("getSecretSyncByName", deletedFrom) > 0);
      // Longer than the create rule's window (a minute), so that the code before the fix, which
      // waits it out and lets go, fails on what it left rather than on a timeout.
      await waitFor(async () => ((await getCustom(kc, a.name, "secretsyncs", "homeless")) ? undefined : true), {
        timeoutMs: 120_000,
        description: "homeless gone",
      });
    } finally {
      emulator.setFaults({});
      await mergePatchCustom(kc, a.name, "providerconfigs", "default", { spec: { timeoutSeconds: 5 } });
    }
    const creates = ops("createSecretSync", since);
    expect(creates.map((r) => [r.status, r.fault, (r.body as { projectId?: string }).projectId])).toEqual([
      [200, "client-gone", projectId],
    ]);
    // The late commit was found in its project and deleted before the resource went: nothing is left.
    const deletes = ops("deleteSecretSync", since);
    expect(deletes).toHaveLength(1);
    const headers = { authorization: `Bearer ${TOKEN}` };
    const byName = await fetch(`${emulator.url}/api/v1/secret-syncs/data-platform/sync-name/homeless?projectId=${projectId}`, { headers });
    expect(byName.status).toBe(404);
    expect((await fetch(`${emulator.url}${deletes[0]?.path ?? ""}`, { headers })).status).toBe(404);
  });
});

describe("the claim rule", () => {
  it("lets exactly one of two resources adopting one project at once hold it", async () => {
    const rounds = 6;
    for (let round = 0; round < rounds; round++) {
      const slug = `twin-adopt-${round}`;
      const id = await serviceProject(slug);
      const since = emulator.requests().length;
      const spec = { slug, creationPolicy: "CreateOrAdopt", deletionPolicy: "Delete", description: `round ${round}` };
      await Promise.all([a, b].map((ns) => createCustom(kc, ns.name, "projects", project("twin", spec))));
      const settled = await Promise.all(
        [a, b].map((ns) =>
          waitForObject(kc, ns.name, "projects", "twin", {
            until: (o) => isReady(o) || condition(o, "Synced")?.reason === "ExternalIdClaimed",
            timeoutMs: 60_000,
            description: `${ns.name}/twin settled`,
          }),
        ),
      );
      const holders = settled.filter((o) => isReady(o));
      expect(holders, `round ${round}: resources Ready on project ${id}`).toHaveLength(1);
      const holder = holders[0] as KubeObject;
      const other = settled.find((o) => o !== holder) as KubeObject;
      expect(condition(other, "Synced")?.message).toContain(`${holder.metadata.namespace ?? ""}/twin`);

      // The one that does not hold it goes first: nothing is deleted; then the holder deletes it once.
      await deleteCustom(kc, other.metadata.namespace ?? "", "projects", "twin");
      await gone(other.metadata.namespace ?? "", "projects", "twin");
      expect(ops("deleteProject", since)).toHaveLength(0);
      await deleteCustom(kc, holder.metadata.namespace ?? "", "projects", "twin");
      await gone(holder.metadata.namespace ?? "", "projects", "twin");
      expect(ops("deleteProject", since).map((r) => r.path)).toEqual([`/api/v1/projects/${id}`]);
    }
  });

  it("has an adopter wait for a resource creating the same slug, which then holds it on its key's announcement alone", async () => {
    // A's create commits at the service and its answer is held: meanwhile B, adopting by slug,
    // finds the project. Only A's create-started write (its slug's digest label) can tell B.
    const slug = "being-made";
    await mergePatchCustom(kc, a.name, "providerconfigs", "default", { spec: { timeoutSeconds: 60 } });
    const match = { method: "POST", pathPattern: "^/api/v2/workspace$" };
    const since = emulator.requests().length;
    emulator.setFaults({ match, latencyMs: HOLD_CAP_MS, latencyWhen: "after-handling" });
    try {
      await createCustom(kc, a.name, "projects", project("maker", { slug, deletionPolicy: "Delete" }));
      await waitFor(() => Promise.resolve(emulator.heldRequests() > 0 ? true : undefined), {
        timeoutMs: 30_000,
        description: "A's create committed, its answer held",
      });
      await createCustom(kc, b.name, "projects", project("taker", { slug, creationPolicy: "CreateOrAdopt", deletionPolicy: "Delete" }));
      const waiting = await waitForObject(kc, b.name, "projects", "taker", {
        until: (o) => condition(o, "Synced")?.reason === "CreatePending",
        timeoutMs: 30_000,
        description: "B waiting for A",
      });
      expect(condition(waiting, "Synced")?.message).toContain(`${a.name}/maker is creating`);
      expect(waiting.status?.["projectId"]).toBeUndefined();
      expect(emulator.releaseHeld()).toBe(1);
    } finally {
      emulator.setFaults({});
      await mergePatchCustom(kc, a.name, "providerconfigs", "default", { spec: { timeoutSeconds: 5 } });
    }
    const maker = await waitForObject(kc, a.name, "projects", "maker", { until: isReady, timeoutMs: 60_000, description: "A Ready" });
    const id = String(maker.status?.["projectId"]);
    // A recorded its answer in status alone: no id in metadata, its slug's announcement and mark in place.
    expect(maker.metadata.annotations?.["keyward.dev/external-id"]).toBeUndefined();
    expect(maker.metadata.labels?.["keyward.dev/external-id-digest"]).toBeUndefined();
    expect(maker.metadata.labels?.[NATURAL_KEY_LABEL]).toBe(keyDigest(slug));
    expect(maker.metadata.annotations?.["keyward.dev/create-started"]).toContain(maker.metadata.uid ?? "?");
    const taker = await waitForObject(kc, b.name, "projects", "taker", {
      until: (o) => condition(o, "Synced")?.reason === "ExternalIdClaimed",
      timeoutMs: 60_000,
      description: "B claimed by A",
    });
    expect(condition(taker, "Synced")?.message).toContain(`${a.name}/maker`);
    expect(ops("createProject", since)).toHaveLength(1);
    expect(ops("updateProject", since)).toHaveLength(0);

    await deleteCustom(kc, b.name, "projects", "taker");
    await gone(b.name, "projects", "taker");
    expect(ops("deleteProject", since)).toHaveLength(0);
    await deleteCustom(kc, a.name, "projects", "maker");
    await gone(a.name, "projects", "maker");
    expect(ops("deleteProject", since).map((r) => r.path)).toEqual([`/api/v1/projects/${id}`]);
  });

  it("announces the id and reads the lock when its answer comes after its slug's announcement stopped confirming it", async () => {
    // A's create commits and its answer is held; meanwhile 8.5 minutes pass on keyward's clock: A's
    // mark no longer lets it record the answer on its slug's announcement alone (KEY_CONFIRM_MS),
    // though an adopter still waits for it (ANNOUNCEMENT_MS).
    const slug = "answered-late";
    await mergePatchCustom(kc, a.name, "providerconfigs", "default", { spec: { timeoutSeconds: 60 } });
    const since = emulator.requests().length;
    emulator.setFaults({
      match: { method: "POST", pathPattern: "^/api/v2/workspace$" },
      latencyMs: HOLD_CAP_MS,
      latencyWhen: "after-handling",
    });
    try {
      await createCustom(kc, a.name, "projects", project("late", { slug, deletionPolicy: "Delete" }));
      await waitFor(() => Promise.resolve(emulator.heldRequests() > 0 ? true : undefined), {
        timeoutMs: 30_000,
        description: "A's create committed, its answer held",
      });
      clockAheadMs = KEY_CONFIRM_MS + 30_000;
      await createCustom(kc, b.name, "projects", project("late-taker", { slug, creationPolicy: "CreateOrAdopt" }));
      await waitForObject(kc, b.name, "projects", "late-taker", {
        until: (o) => condition(o, "Synced")?.reason === "CreatePending",
        timeoutMs: 30_000,
        description: "B waiting for A",
      });
      expect(emulator.releaseHeld()).toBe(1);
      const late = await waitForObject(kc, a.name, "projects", "late", { until: isReady, timeoutMs: 60_000, description: "A Ready" });
      const id = String(late.status?.["projectId"]);
      // The fallback: the id announced in metadata (then the lock read, which B let go).
      expect(late.metadata.annotations?.["keyward.dev/external-id"]).toBe(id);
      expect(late.metadata.labels?.["keyward.dev/external-id-digest"]).toBe(idDigest(id));
      const taker = await waitForObject(kc, b.name, "projects", "late-taker", {
        until: (o) => condition(o, "Synced")?.reason === "ExternalIdClaimed",
        timeoutMs: 60_000,
        description: "B claimed by A",
      });
      expect(condition(taker, "Synced")?.message).toContain(`${a.name}/late`);
      expect(ops("createProject", since)).toHaveLength(1);
      expect(ops("updateProject", since)).toHaveLength(0);
    } finally {
      clockAheadMs = 0;
      emulator.setFaults({});
      await mergePatchCustom(kc, a.name, "providerconfigs", "default", { spec: { timeoutSeconds: 5 } });
    }
    await deleteCustom(kc, b.name, "projects", "late-taker");
    await gone(b.name, "projects", "late-taker");
    await deleteCustom(kc, a.name, "projects", "late");
    await gone(a.name, "projects", "late");
    expect(ops("deleteProject", since)).toHaveLength(1);
  });

  it("writes the id into metadata once the slug no longer names the project: a slug changed in the spec", async () => {
    await createCustom(kc, a.name, "projects", project("renamed", { slug: "before-rename" }));
    const created = await waitForObject(kc, a.name, "projects", "renamed", { until: isReady, timeoutMs: 60_000, description: "Ready" });
    const id = String(created.status?.["projectId"]);
    expect(created.metadata.annotations?.["keyward.dev/external-id"]).toBeUndefined();
    expect(created.metadata.labels?.[NATURAL_KEY_LABEL]).toBe(keyDigest("before-rename"));
    const since = emulator.requests().length;
    await mergePatchCustom(kc, a.name, "projects", "renamed", { spec: { slug: "after-rename" } });
    const renamed = await waitForObject(kc, a.name, "projects", "renamed", {
      until: (o) => o.status?.["slug"] === "after-rename" && isReady(o),
      timeoutMs: 60_000,
      description: "renamed at the service",
    });
    // An adopter of the new slug could not find this holder by the old slug's label: the id is
    // announced instead, as for a kind without a natural key.
    expect(renamed.metadata.annotations?.["keyward.dev/external-id"]).toBe(id);
    expect(renamed.metadata.labels?.["keyward.dev/external-id-digest"]).toBe(idDigest(id));
    expect(ops("updateProject", since)).toHaveLength(1);
    expect(renamed.status?.["projectId"]).toBe(id);
  });

  it("counts no id named in metadata alone: a paused resource's annotation blocks no one", async () => {
    await createCustom(kc, a.name, "projects", project("victim", { slug: "victim-proj" }));
    const victim = await waitForObject(kc, a.name, "projects", "victim", {
      until: isReady,
      timeoutMs: 60_000,
      description: "victim Ready",
    });
    const id = String(victim.status?.["projectId"]);
    // Another tenant names the victim's id on a paused resource: it never confirms anything.
    await createCustom(
      kc,
      b.name,
      "projects",
      project("ghost", { slug: "ghost-proj" }, { "keyward.dev/external-id": id, "keyward.dev/paused": "true" }),
    );
    await waitForObject(kc, b.name, "projects", "ghost", {
      until: (o) => condition(o, "Synced")?.reason === "ReconcilePaused",
      timeoutMs: 60_000,
      description: "ghost paused",
    });
    // The victim is released (Retain) and restored elsewhere from its export: the restored copy,
    // younger than the ghost, confirms the id (same slug) and holds it.
    await deleteCustom(kc, a.name, "projects", "victim");
    await gone(a.name, "projects", "victim");
    await createCustom(kc, c.name, "projects", project("victim", { slug: "victim-proj" }, { "keyward.dev/external-id": id }));
    const restored = await waitForObject(kc, c.name, "projects", "victim", {
      until: (o) => isReady(o) || condition(o, "Synced")?.reason === "ExternalIdClaimed",
      timeoutMs: 60_000,
      description: "restored victim settled",
    });
    expect(condition(restored, "Synced")?.reason).not.toBe("ExternalIdClaimed");
    expect(restored.status?.["projectId"]).toBe(id);
  });
});
