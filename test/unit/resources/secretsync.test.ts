// SecretSync's pure parts: the spec schema (per destination), the diff that becomes an update
// body, the status mirrored from the service's record, Ready, and the pending-mark check.
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { keywardSamples } from "../../support/samples.ts";
import { connectionAppByDestination, destinations, KEY_SCHEMA_PATTERN, type SecretSync } from "../../../src/api/index.ts";
import { crdFromSources } from "../../../src/crd/crd.ts";
import {
  activeJob,
  createBody,
  crdSource,
  folderPath,
  jobSince,
  readiness,
  specSchema,
  statusFrom,
  syncDiff,
  syncName,
  type SecretSyncSpec,
} from "../../../src/resources/secretsync.ts";

const connectionId = "a1b2c3d4-0004-4a00-8000-000000000003";

const spec = (extra: Record<string, unknown> = {}): SecretSyncSpec =>
  specSchema.parse({
    projectId: "p1",
    destination: "data-platform",
    connectionId,
    environment: "dev",
    secretPath: "/app",
    destinationConfig: { scope: "workspace" },
    ...extra,
  });

function record(over: Partial<SecretSync> = {}): SecretSync {
  return {
    id: "5d1c7a52-93c1-4bd1-9a5e-0c6f4f1e2a10",
    name: "orders",
    description: null,
    isAutoSyncEnabled: true,
    version: 1,
    projectId: "p1",
    folderId: "f1",
    connectionId,
    createdAt: "2025-01-01T00:00:00.000Z",
    updatedAt: "2025-01-01T00:00:00.000Z",
    syncStatus: null,
    importStatus: null,
    removeStatus: null,
    lastSyncJobId: null,
    lastImportJobId: null,
    lastRemoveJobId: null,
    lastSyncMessage: null,
    lastImportMessage: null,
    lastRemoveMessage: null,
    lastSyncedAt: null,
    lastImportedAt: null,
    lastRemovedAt: null,
    syncOptions: { initialSyncBehavior: "overwrite-destination", disableSecretDeletion: false },
    connection: { app: "data-platform", name: "dp", id: connectionId },
    environment: { slug: "dev", name: "Development", id: "e1" },
    folder: { id: "f1", path: "/app" },
    destination: "data-platform",
    destinationConfig: { scope: "workspace" },
    ...over,
  };
}

describe("SecretSync spec", () => {
  it("accepts each destination with its own destinationConfig and rejects another's", () => {
    expect(
      spec({ destination: "monitoring", destinationConfig: { accountId: "1", accountName: "a", groupId: "g", groupName: "n" } })
        .destination,
    ).toBe("monitoring");
    expect(() => spec({ destination: "workflow-engine", destinationConfig: { appId: "a", appName: "b" } })).toThrow();
    expect(() => spec({ destination: "code-host", destinationConfig: { scope: "repository", org: "acme", visibility: "all" } })).toThrow();
  });

  it("keeps the cloud-secrets-manager sync options to that destination", () => {
    const tags = [{ key: "team", value: "payments" }];
    expect(
      spec({
        destination: "cloud-secrets-manager",
        destinationConfig: { mappingBehavior: "one-to-one", region: "eu-west-1" },
        syncOptions: { tags },
      }).syncOptions,
    ).toEqual({ tags });
    expect(() => spec({ syncOptions: { tags } })).toThrow();
  });

  it("enforces the service's limits", () => {
    expect(() => spec({ name: "n".repeat(65) })).toThrow();
    expect(() => spec({ secretPath: "" })).toThrow();
    expect(() => spec({ environment: "e".repeat(65) })).toThrow();
    expect(() => spec({ description: "d".repeat(257) })).toThrow();
    expect(() => spec({ connectionId: "not-a-uuid" })).toThrow();
    expect(() => spec({ syncOptions: { keySchema: "NO_PLACEHOLDER" } })).toThrow();
    expect(() => spec({ deletionPolicy: "Orphan" })).toThrow();
    expect(spec({ syncOptions: { keySchema: "APP_{{secretKey}}" } }).syncOptions?.keySchema).toBe("APP_{{secretKey}}");
  });

  it("generates a CRD that carries the limits, the per-destination rules and the project rule", () => {
    const schema = crdFromSources(crdSource).spec.versions[0]?.schema.openAPIV3Schema;
    const specNode = schema?.properties?.["spec"];
    expect(specNode?.properties?.["name"]).toMatchObject({ minLength: 1, maxLength: 64 });
    expect(specNode?.properties?.["secretPath"]).toMatchObject({ minLength: 1 });
    expect(specNode?.properties?.["syncOptions"]?.properties?.["keySchema"]?.pattern).toBe(KEY_SCHEMA_PATTERN.source);
    const rules = (specNode?.["x-kubernetes-validations"] ?? []).map((r) => r.message);
    expect(rules).toContain("destinationConfig.appId is not allowed for destination workflow-engine");
    expect(rules).toContain("exactly one of projectRef, projectId must be set");
    expect(rules.filter((m) => m?.startsWith("syncOptions.initialSyncBehavior"))).toHaveLength(4);
    expect(specNode?.properties?.["destination"]?.["x-kubernetes-validations"]?.[0]?.rule).toBe("self == oldSelf");
  });
});

describe("syncName", () => {
  it("defaults to metadata.name and asks for spec.name when that is too long", () => {
    expect(syncName({}, { name: "orders" })).toBe("orders");
    expect(syncName({ name: "Orders sync" }, { name: "x".repeat(80) })).toBe("Orders sync");
    expect(() => syncName({}, { name: "x".repeat(65) })).toThrow(/set spec.name/);
  });
});

describe("createBody and syncDiff", () => {
  it("creates with every spec field, and initialSyncBehavior overwrite-destination when the spec leaves it out", () => {
    expect(createBody(spec({ description: "d", isAutoSyncEnabled: false }), "orders", "p1")).toEqual({
      name: "orders",
      projectId: "p1",
      connectionId,
      environment: "dev",
      secretPath: "/app",
      syncOptions: { initialSyncBehavior: "overwrite-destination" },
      destinationConfig: { scope: "workspace" },
      description: "d",
      isAutoSyncEnabled: false,
    });
  });

  it("treats a trailing slash as the same folder (the service stores paths without one)", () => {
    expect(folderPath("/app/")).toBe("/app");
    expect(folderPath("/")).toBe("/");
    const path = record().folder?.path ?? "/";
    expect(
      syncDiff(spec({ secretPath: `${path === "/" ? "" : path}/`, syncOptions: { disableSecretDeletion: false } }), "orders", record()),
    ).toEqual({});
  });

  it("is empty when the record matches, service defaults included", () => {
    expect(syncDiff(spec({ syncOptions: { disableSecretDeletion: false } }), "orders", record())).toEqual({});
  });

  it("names only what differs, sending syncOptions and destinationConfig whole", () => {
    const s = spec({
      description: "new",
      isAutoSyncEnabled: false,
      syncOptions: { keySchema: "K_{{secretKey}}" },
      destinationConfig: { scope: "account" },
      environment: "prod",
      secretPath: "/",
    });
    expect(syncDiff(s, "renamed", record())).toEqual({
      name: "renamed",
      description: "new",
      environment: "prod",
      secretPath: "/",
      isAutoSyncEnabled: false,
      syncOptions: { keySchema: "K_{{secretKey}}", initialSyncBehavior: record().syncOptions.initialSyncBehavior },
      destinationConfig: { scope: "account" },
    });
  });

  it("keeps the sync's initialSyncBehavior in an update unless the spec sets one", () => {
    const imported = record({ syncOptions: { initialSyncBehavior: "import-prioritize-source", disableSecretDeletion: false } });
    expect(syncDiff(spec({ syncOptions: { disableSecretDeletion: true } }), "orders", imported).syncOptions).toEqual({
      disableSecretDeletion: true,
      initialSyncBehavior: "import-prioritize-source",
    });
    expect(syncDiff(spec({ syncOptions: { initialSyncBehavior: "overwrite-destination" } }), "orders", imported).syncOptions).toEqual({
      initialSyncBehavior: "overwrite-destination",
    });
    expect(syncDiff(spec(), "orders", imported)).toEqual({});
  });

  it("leaves alone what the spec does not set", () => {
    expect(syncDiff(spec(), "orders", record({ description: "set elsewhere", isAutoSyncEnabled: false }))).toEqual({});
  });
});

describe("status from the record", () => {
  it("mirrors the record, with null for what the service left empty", () => {
    const status = statusFrom(record({ syncStatus: "succeeded", lastSyncJobId: "j1", lastSyncedAt: "2025-01-01T00:01:00.000Z" }));
    expect(status).toMatchObject({
      syncId: record().id,
      syncStatus: "succeeded",
      lastSyncJobId: "j1",
      lastSyncMessage: null,
      folder: { id: "f1", path: "/app" },
    });
  });

  it("is Ready until the last settled job failed, with the service's message", () => {
    expect(readiness(statusFrom(record())).ready).toBe(true);
    const failed = statusFrom(
      record({ syncStatus: "failed", lastSyncMessage: "quota exceeded", lastSyncedAt: "2025-01-01T00:01:00.000Z" }),
    );
    expect(readiness(failed)).toMatchObject({ ready: false, reason: "JobFailed" });
    expect(readiness(failed).message).toContain("quota exceeded");
    // a later successful removal is the last job: Ready again
    const removedLater = { ...failed, removeStatus: "succeeded", lastRemovedAt: "2025-01-01T00:02:00.000Z" };
    expect(readiness(removedLater).ready).toBe(true);
    // a running job does not change the verdict of the settled ones
    expect(readiness({ ...failed, importStatus: "running" })).toMatchObject({ ready: false, reason: "JobFailed" });
    expect(activeJob({ ...failed, importStatus: "running" })).toBe("import");
  });
});

describe("jobSince (did a marked call land?)", () => {
  const settled = statusFrom(record({ syncStatus: "succeeded", lastSyncJobId: "j1", lastSyncedAt: "2025-01-01T00:01:00.000Z" }));
  const mark = { lastJobId: "j1", lastJobAt: "2025-01-01T00:01:00.000Z", lastJobStatus: "succeeded" };

  it("is false while the record is as it was at the mark", () => {
    expect(jobSince(mark, settled, "sync")).toBe(false);
  });

  it("is true for a new job id, a new job time, or a job of that action pending", () => {
    expect(jobSince(mark, { ...settled, lastSyncJobId: "j2" }, "sync")).toBe(true);
    expect(jobSince(mark, { ...settled, lastSyncedAt: "2025-01-01T00:05:00.000Z" }, "sync")).toBe(true);
    expect(jobSince(mark, { ...settled, syncStatus: "pending" }, "sync")).toBe(true);
  });

  it("ignores jobs of the other actions", () => {
    expect(jobSince(mark, { ...settled, removeStatus: "running", lastRemoveJobId: "r1" }, "sync")).toBe(false);
  });

  it("sees the first job of a sync that had none", () => {
    expect(jobSince({}, statusFrom(record()), "remove")).toBe(false);
    expect(jobSince({}, { ...statusFrom(record()), lastRemoveJobId: "r1", removeStatus: "pending" }, "remove")).toBe(true);
  });
});

describe("the samples", () => {
  const samplesDir = fileURLToPath(new URL("../../../config/samples/", import.meta.url));
  const seed = JSON.parse(readFileSync(fileURLToPath(new URL("../../emulator/seed.default.json", import.meta.url)), "utf8")) as {
    connections: { id: string; app: string }[];
  };
  const files = readdirSync(samplesDir).filter((f) => f.startsWith("secretsync-") && f.endsWith(".yaml"));

  it("cover all seven destinations", () => {
    expect(files.map((f) => f.replace(/^secretsync-|\.yaml$/g, "")).sort()).toEqual([...destinations].sort());
  });

  it.each(files)("%s is a valid spec naming the Project payments and a seeded connection of its kind", (file) => {
    // In v1alpha1, the version specSchema is: the samples are v1beta1.
    const [doc] = keywardSamples("v1alpha1", [file]);
    if (!doc) throw new Error(`${file} holds no keyward object`);
    expect(doc.kind).toBe("SecretSync");
    const parsed = specSchema.parse(doc.spec);
    expect(parsed.projectRef).toEqual({ name: "payments" });
    expect(seed.connections.find((c) => c.id === parsed.connectionId)?.app).toBe(connectionAppByDestination[parsed.destination]);
  });
});
