import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadDefaultSeed } from "./default-seed.ts";
import { call, eventually, ids, start } from "./helpers.ts";
import type { Emulator } from "./server.ts";

type Sync = Record<string, unknown> & { id: string; name: string; version: number; syncStatus?: string };

const configs: Record<string, Record<string, unknown>> = {
  "workflow-engine": { scope: "cluster", clusterUUID: "c-1" },
  "code-host": { scope: "organization", org: "acme", visibility: "all", selectedRepositoryIds: [1, 2] },
  "data-platform": { scope: "workspace" },
  "cloud-secrets-manager": { mappingBehavior: "one-to-one", region: "eu-west-1" },
  "app-platform": { appId: "app-1", appName: "web" },
  "git-host": { repositorySlug: "repo", environmentId: "env-1", workspaceSlug: "ws" },
  monitoring: { accountId: "a", accountName: "acct", groupId: "g", groupName: "grp" },
};

let emu: Emulator;
let counter = 0;
beforeAll(async () => {
  emu = await start({ seed: loadDefaultSeed(), jobDelayMs: 40 });
});
afterAll(() => emu.close());

function body(destination: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  counter += 1;
  return {
    name: `sync-${counter}`,
    projectId: ids.project,
    connectionId: ids.connections[destination],
    environment: "dev",
    secretPath: "/app",
    syncOptions: { initialSyncBehavior: "overwrite-destination", keySchema: "APP_{{secretKey}}" },
    destinationConfig: configs[destination],
    ...extra,
  };
}

async function create(destination: string, extra: Record<string, unknown> = {}): Promise<Sync> {
  const res = await call<{ secretSync: Sync }>(emu, "POST", `/api/v1/secret-syncs/${destination}`, { body: body(destination, extra) });
  expect(res.status).toBe(200);
  return res.body.secretSync;
}

const settled = (destination: string, id: string, field: "syncStatus" | "removeStatus" = "syncStatus") =>
  eventually(async () => {
    const res = await call<{ secretSync: Sync }>(emu, "GET", `/api/v1/secret-syncs/${destination}/${id}`);
    const status = res.body.secretSync[field];
    return status === "succeeded" || status === "failed" ? res.body.secretSync : undefined;
  });

describe("create", () => {
  it.each(Object.keys(configs))("creates a %s sync with the full record", async (destination) => {
    const sync = await create(destination, { description: null });
    expect(sync).toMatchObject({
      destination,
      version: 1,
      isAutoSyncEnabled: true,
      description: null,
      projectId: ids.project,
      syncStatus: "pending",
      destinationConfig: configs[destination],
      connection: { id: ids.connections[destination] },
      environment: { slug: "dev", name: "Development" },
      folder: { path: "/app" },
    });
    expect(sync["folderId"]).toBe((sync["folder"] as { id: string }).id);
    expect(typeof sync["lastSyncJobId"]).toBe("string");
    // Fields of jobs that never ran are sent as null, not left out.
    for (const key of [
      "importStatus",
      "removeStatus",
      "lastImportJobId",
      "lastRemoveJobId",
      "lastSyncMessage",
      "lastImportMessage",
      "lastRemoveMessage",
      "lastSyncedAt",
      "lastImportedAt",
      "lastRemovedAt",
    ]) {
      expect(sync[key], key).toBeNull();
    }
    expect(sync["syncOptions"]).toMatchObject({ initialSyncBehavior: "overwrite-destination", disableSecretDeletion: false });
  });

  it("keeps the cloud-secrets-manager extras and strips them elsewhere", async () => {
    const extras = { keyId: "k", tags: [{ key: "team", value: "a" }], syncSecretMetadataAsTags: true };
    const cloud = await create("cloud-secrets-manager", { syncOptions: { initialSyncBehavior: "import-prioritize-source", ...extras } });
    expect(cloud["syncOptions"]).toMatchObject(extras);
    expect(cloud["importStatus"]).toBe("pending");
    const other = await create("monitoring", { syncOptions: { initialSyncBehavior: "overwrite-destination", ...extras } });
    expect("keyId" in (other["syncOptions"] as object)).toBe(false);
  });

  it("does not queue a job when auto-sync is off", async () => {
    const sync = await create("git-host", { isAutoSyncEnabled: false });
    expect(sync.syncStatus).toBeNull();
  });

  it.each([
    ["name too long", { name: "n".repeat(65) }],
    ["empty environment", { environment: "" }],
    ["environment too long", { environment: "e".repeat(65) }],
    ["empty secretPath", { secretPath: "" }],
    ["description too long", { description: "d".repeat(257) }],
    ["connectionId not a uuid", { connectionId: "nope" }],
    ["keySchema without {{secretKey}}", { syncOptions: { initialSyncBehavior: "overwrite-destination", keySchema: "APP_KEY" } }],
    ["unknown initialSyncBehavior", { syncOptions: { initialSyncBehavior: "merge" } }],
    ["visibility other than all", { destinationConfig: { ...configs["code-host"], visibility: "private" } }],
  ])("answers 422 for %s", async (_label, extra) => {
    const res = await call(emu, "POST", "/api/v1/secret-syncs/code-host", { body: body("code-host", extra) });
    expect(res.status).toBe(422);
    expect(res.body["error"]).toBe("ValidationFailure");
  });

  it("answers 404 for an unknown destination, project, connection or environment", async () => {
    expect((await call(emu, "POST", "/api/v1/secret-syncs/ftp-server", { body: body("monitoring") })).status).toBe(404);
    expect((await call(emu, "POST", "/api/v1/secret-syncs/monitoring", { body: body("monitoring", { projectId: "nope" }) })).status).toBe(
      404,
    );
    expect(
      (
        await call(emu, "POST", "/api/v1/secret-syncs/monitoring", {
          body: body("monitoring", { connectionId: "00000000-0000-4000-8000-000000000000" }),
        })
      ).status,
    ).toBe(404);
    expect((await call(emu, "POST", "/api/v1/secret-syncs/monitoring", { body: body("monitoring", { environment: "qa" }) })).status).toBe(
      404,
    );
  });

  it("answers 400 for a connection of another kind and for a duplicate name", async () => {
    const wrong = await call(emu, "POST", "/api/v1/secret-syncs/monitoring", {
      body: body("monitoring", { connectionId: ids.connections["git-host"] }),
    });
    expect(wrong.status).toBe(400);
    const first = await create("data-platform");
    const dup = await call(emu, "POST", "/api/v1/secret-syncs/monitoring", { body: body("monitoring", { name: first.name }) });
    expect(dup.status).toBe(400);
  });
});

describe("jobs", () => {
  it("moves pending → running → succeeded and fills the last-sync fields", async () => {
    const sync = await create("monitoring");
    const running = await eventually(async () => {
      const res = await call<{ secretSync: Sync }>(emu, "GET", `/api/v1/secret-syncs/monitoring/${sync.id}`);
      return res.body.secretSync.syncStatus === "pending" ? undefined : res.body.secretSync;
    });
    expect(["running", "succeeded"]).toContain(running.syncStatus);
    const done = await settled("monitoring", sync.id);
    expect(done).toMatchObject({ syncStatus: "succeeded", lastSyncJobId: sync["lastSyncJobId"], lastSyncMessage: null });
    expect(typeof done["lastSyncedAt"]).toBe("string");
  });

  it("refuses a trigger or remove while a job is in progress (400)", async () => {
    // A long job delay keeps the job pending for the whole test, whatever the machine's load.
    const slow = await start({ seed: loadDefaultSeed(), jobDelayMs: 60_000 });
    try {
      const created = await call<{ secretSync: Sync }>(slow, "POST", "/api/v1/secret-syncs/app-platform", { body: body("app-platform") });
      const id = created.body.secretSync.id;
      const busy = await call(slow, "POST", `/api/v1/secret-syncs/app-platform/${id}/sync-secrets`);
      expect(busy.status).toBe(400);
      expect(String(busy.body["message"])).toMatch(/already in progress/);
      expect((await call(slow, "POST", `/api/v1/secret-syncs/app-platform/${id}/remove-secrets`)).status).toBe(400);
    } finally {
      await slow.close();
    }
  });

  it("accepts a trigger once the previous job settled, with a new job id", async () => {
    const sync = await create("app-platform");
    await settled("app-platform", sync.id);
    const triggered = await call<{ secretSync: Sync }>(emu, "POST", `/api/v1/secret-syncs/app-platform/${sync.id}/sync-secrets`);
    expect(triggered.status).toBe(200);
    expect(triggered.body.secretSync.syncStatus).toBe("pending");
    expect(triggered.body.secretSync["lastSyncJobId"]).not.toBe(sync["lastSyncJobId"]);
  });

  it("fails a job with the message set through setJobOutcome", async () => {
    const sync = await create("workflow-engine", { isAutoSyncEnabled: false });
    emu.setJobOutcome({ syncId: sync.id, action: "remove", outcome: "failed", message: "destination unreachable" });
    const removed = await call<{ secretSync: Sync }>(emu, "POST", `/api/v1/secret-syncs/workflow-engine/${sync.id}/remove-secrets`);
    expect(removed.body.secretSync["removeStatus"]).toBe("pending");
    const done = await settled("workflow-engine", sync.id, "removeStatus");
    expect(done).toMatchObject({ removeStatus: "failed", lastRemoveMessage: "destination unreachable" });
    await call(emu, "POST", `/api/v1/secret-syncs/workflow-engine/${sync.id}/remove-secrets`);
    expect(await settled("workflow-engine", sync.id, "removeStatus")).toMatchObject({ removeStatus: "succeeded" });
  });
});

describe("update, get, find, delete", () => {
  it("updates given fields, bumps the version and moves the folder", async () => {
    const sync = await create("code-host", { isAutoSyncEnabled: false });
    const res = await call<{ secretSync: Sync }>(emu, "PATCH", `/api/v1/secret-syncs/code-host/${sync.id}`, {
      body: { environment: "prod", secretPath: "/other", description: "moved" },
    });
    expect(res.status).toBe(200);
    expect(res.body.secretSync).toMatchObject({
      version: 2,
      description: "moved",
      environment: { slug: "prod" },
      folder: { path: "/other" },
      name: sync.name,
    });
    expect(res.body.secretSync.syncStatus).toBeNull();
    expect((await call(emu, "PATCH", `/api/v1/secret-syncs/code-host/${sync.id}`, { body: { name: "" } })).status).toBe(422);
    expect((await call(emu, "PATCH", "/api/v1/secret-syncs/code-host/not-a-uuid", { body: {} })).status).toBe(422);
  });

  it("accepts the alternative destinationConfig shapes on update only", async () => {
    const gh = await create("code-host", { isAutoSyncEnabled: false });
    const repo = { scope: "repository", owner: "acme", repo: "api" };
    const res = await call<{ secretSync: Sync }>(emu, "PATCH", `/api/v1/secret-syncs/code-host/${gh.id}`, {
      body: { destinationConfig: repo },
    });
    expect(res.body.secretSync["destinationConfig"]).toEqual(repo);
    const aws = await create("cloud-secrets-manager", { isAutoSyncEnabled: false });
    const manyToOne = { mappingBehavior: "many-to-one", region: "us-east-1", secretName: "all" };
    const res2 = await call<{ secretSync: Sync }>(emu, "PATCH", `/api/v1/secret-syncs/cloud-secrets-manager/${aws.id}`, {
      body: { destinationConfig: manyToOne },
    });
    expect(res2.body.secretSync["destinationConfig"]).toEqual(manyToOne);
    expect(
      (await call(emu, "PATCH", `/api/v1/secret-syncs/cloud-secrets-manager/${aws.id}`, { body: { destinationConfig: { region: "x" } } }))
        .status,
    ).toBe(422);
  });

  it("queues a sync on update when auto-sync is on", async () => {
    const sync = await create("data-platform", { isAutoSyncEnabled: false });
    const res = await call<{ secretSync: Sync }>(emu, "PATCH", `/api/v1/secret-syncs/data-platform/${sync.id}`, {
      body: { isAutoSyncEnabled: true },
    });
    expect(res.body.secretSync.syncStatus).toBe("pending");
  });

  it("gets by id (404 under another destination), finds by name and deletes", async () => {
    const sync = await create("git-host", { isAutoSyncEnabled: false });
    expect((await call(emu, "GET", `/api/v1/secret-syncs/monitoring/${sync.id}`)).status).toBe(404);
    const found = await call<{ secretSync: Sync }>(emu, "GET", `/api/v1/secret-syncs/git-host/sync-name/${sync.name}`, {
      query: { projectId: ids.project },
    });
    expect(found.body.secretSync.id).toBe(sync.id);
    expect((await call(emu, "GET", `/api/v1/secret-syncs/git-host/sync-name/${sync.name}`)).status).toBe(422);
    expect((await call(emu, "DELETE", `/api/v1/secret-syncs/git-host/${sync.id}`, { query: { removeSecrets: "maybe" } })).status).toBe(422);
    const deleted = await call<{ secretSync: Sync }>(emu, "DELETE", `/api/v1/secret-syncs/git-host/${sync.id}`);
    expect(deleted.body.secretSync.id).toBe(sync.id);
    expect((await call(emu, "GET", `/api/v1/secret-syncs/git-host/${sync.id}`)).status).toBe(404);
  });

  it("with removeSecrets=true keeps the sync until its remove job succeeds", async () => {
    const sync = await create("monitoring", { isAutoSyncEnabled: false });
    const res = await call<{ secretSync: Sync }>(emu, "DELETE", `/api/v1/secret-syncs/monitoring/${sync.id}`, {
      query: { removeSecrets: "true" },
    });
    expect(res.body.secretSync["removeStatus"]).toBe("pending");
    const gone = await eventually(async () => {
      const reply = await call(emu, "GET", `/api/v1/secret-syncs/monitoring/${sync.id}`);
      return reply.status === 404 ? reply : undefined;
    });
    expect(gone.status).toBe(404);
  });
});
