// SecretSync end to end: a real kube-apiserver, the emulator over HTTP, keyward in-process.
// The bodies the service received are read from the emulator's request log.
import { fileURLToPath } from "node:url";
import { keywardSamples } from "../support/samples.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KubeConfig } from "@kubernetes/client-node";
import { startEmulator, type Emulator } from "../emulator/server.ts";
import type { RecordedRequest } from "../emulator/types.ts";
import { loadDefaultSeed } from "../emulator/default-seed.ts";
import { kubectl, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import {
  condition,
  createCustom,
  deleteCustom,
  exposedTexts,
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
import { connectionAppByDestination, destinations, type Destination } from "../../src/api/index.ts";
import type { KubeObject } from "../../src/engine/types.ts";

const TOKEN = "kw-secretsync-token-5d2e8a41c9";
const SLOW_TOKEN = "kw-secretsync-slow-token-0b7c3f";
const seed = loadDefaultSeed();
const DEMO_PROJECT = "a1b2c3d4-0005-4a00-8000-000000000001";

/** The seeded connection of each destination. */
const connections = Object.fromEntries(
  destinations.map((destination) => {
    const connection = seed.connections?.find((c) => c.app === connectionAppByDestination[destination]);
    if (!connection) throw new Error(`the default seed has no connection for ${destination}`);
    return [destination, connection.id];
  }),
) as Record<Destination, string>;

let env: TestEnv | undefined;
let kc: KubeConfig;
let emulator: Emulator;
/** Jobs that take long, for a trigger that meets a running job. */
let slowEmulator: Emulator;
let ns: TestNamespace;
let keyward: RunningKeyward;
/** Log lines of keyward instances stopped earlier (restarts). */
const earlierLogs: string[] = [];
let paymentsProjectId: string;

type Spec = Record<string, unknown>;
const PLURAL = "secretsyncs";

const secretSync = (name: string, spec: Spec, annotations?: Record<string, string>): object => ({
  apiVersion: "keyward.dev/v1alpha1",
  kind: "SecretSync",
  metadata: { name, ...(annotations ? { annotations } : {}) },
  spec,
});

const baseSpec = (
  destination: Destination,
  destinationConfig: Spec,
  extra: Spec = {},
  project: Spec = { projectId: DEMO_PROJECT },
): Spec => ({
  ...project,
  destination,
  connectionId: connections[destination],
  environment: "dev",
  secretPath: "/app",
  destinationConfig,
  ...extra,
});

const get = (name: string): Promise<KubeObject | undefined> => getCustom(kc, ns.name, PLURAL, name);
const statusOf = (obj: KubeObject | undefined): Record<string, unknown> => obj?.status ?? {};

const waitUntil = (name: string, what: string, until: (obj: KubeObject) => boolean, timeoutMs = 60_000): Promise<KubeObject> =>
  waitForObject(kc, ns.name, PLURAL, name, { until, timeoutMs, description: `SecretSync ${name}: ${what}` });

const readySync = (name: string): Promise<KubeObject> =>
  waitUntil(
    name,
    "Ready at its generation",
    (o) => isReady(o) && condition(o, "Synced")?.observedGeneration === o.metadata.generation && condition(o, "Synced")?.status === "True",
  );

const syncIdOf = (obj: KubeObject): string => {
  const id = statusOf(obj)["syncId"];
  if (typeof id !== "string") throw new Error(`no syncId in status of ${obj.metadata.name}`);
  return id;
};

const logOf = (emu: Emulator, op: string, syncId?: string): RecordedRequest[] =>
  emu.requests().filter((r) => r.operation === op && (syncId === undefined || r.path.includes(syncId)));

async function annotate(name: string, annotations: Record<string, string>): Promise<void> {
  await mergePatchCustom(kc, ns.name, PLURAL, name, { metadata: { annotations } });
}

/** Waits until keyward has read the sync `n` more times: reconciles (resyncs) happened. */
async function passesOver(emu: Emulator, syncId: string, n: number): Promise<void> {
  const before = logOf(emu, "getSecretSync", syncId).length;
  await waitFor(() => Promise.resolve(logOf(emu, "getSecretSync", syncId).length >= before + n ? true : undefined), {
    timeoutMs: 60_000,
    description: `${n} more reads of sync ${syncId}`,
  });
}

async function serviceSync(
  emu: Emulator,
  token: string,
  destination: Destination,
  syncId: string,
): Promise<{ status: number; body: Record<string, unknown> | undefined }> {
  const res = await fetch(`${emu.url}/api/v1/secret-syncs/${destination}/${syncId}`, { headers: { authorization: `Bearer ${token}` } });
  const body = res.status === 200 ? ((await res.json()) as { secretSync: Record<string, unknown> }).secretSync : undefined;
  return { status: res.status, body };
}

async function eventsFor(name: string): Promise<{ type: string; reason: string; message: string }[]> {
  const res = await kubectl(["get", "events", "-n", ns.name, "-o", "json", "--field-selector", `involvedObject.name=${name}`]);
  return (JSON.parse(res.stdout) as { items: { type: string; reason: string; message: string }[] }).items;
}

beforeAll(async () => {
  // A second emulator and its ProviderConfig, and keyward restarted mid-file: keyward is this file's own.
  env = await startTestEnv({ prefix: "secretsync", token: TOKEN, emulator: { seed, jobDelayMs: 300 }, keyward: false });
  ({ kc, emulator, ns } = env);
  const slow = await startEmulator({ tokens: [SLOW_TOKEN], seed, jobDelayMs: 6_000 });
  slowEmulator = slow;
  env.onStop(() => slow.close());
  await installProvider(kc, ns.name, slowEmulator.url, SLOW_TOKEN, "slowjobs");
  keyward = await startKeyward(kc, { namespaces: [ns.name], resyncIntervalMs: 2_000 });
  // Stops the keyward running then, after a restart too.
  env.onStop(() => keyward.stop());
  await createCustom(kc, ns.name, "projects", {
    apiVersion: "keyward.dev/v1alpha1",
    kind: "Project",
    metadata: { name: "payments" },
    spec: { name: "Payments", slug: "payments-team" },
  });
  const project = await waitForObject(kc, ns.name, "projects", "payments", {
    until: isReady,
    timeoutMs: 60_000,
    description: "Project payments Ready",
  });
  paymentsProjectId = (project.status as Record<string, string>)["projectId"] ?? "";
});

afterAll(() => env?.stop());

interface DestinationCase {
  config: Spec;
  updatedConfig: Spec;
  syncOptions?: Spec;
}

const cases: Record<Destination, DestinationCase> = {
  "workflow-engine": {
    config: { scope: "cluster", clusterUUID: "7c1e2a9b-3d4f-4a5b-8c6d-0e1f2a3b4c5d" },
    updatedConfig: { scope: "namespace", clusterUUID: "7c1e2a9b-3d4f-4a5b-8c6d-0e1f2a3b4c5d" },
    syncOptions: { initialSyncBehavior: "overwrite-destination", keySchema: "WF_{{secretKey}}" },
  },
  "code-host": {
    config: { scope: "organization", org: "acme", visibility: "all" },
    updatedConfig: { scope: "organization", org: "acme", visibility: "all", selectedRepositoryIds: [101, 202] },
    syncOptions: { disableSecretDeletion: true },
  },
  "data-platform": { config: { scope: "workspace" }, updatedConfig: { scope: "account" } },
  "cloud-secrets-manager": {
    config: { mappingBehavior: "one-to-one", region: "eu-west-1" },
    updatedConfig: { mappingBehavior: "one-to-one", region: "us-east-2" },
    syncOptions: {
      keySchema: "pay/{{secretKey}}",
      keyId: "alias/payments",
      tags: [{ key: "team", value: "payments" }],
      syncSecretMetadataAsTags: true,
    },
  },
  "app-platform": { config: { appId: "app-1f2e", appName: "shop" }, updatedConfig: { appId: "app-1f2e", appName: "shop-eu" } },
  "git-host": {
    config: { repositorySlug: "shop", environmentId: "env-prod", workspaceSlug: "acme" },
    updatedConfig: { repositorySlug: "shop", environmentId: "env-staging", workspaceSlug: "acme" },
  },
  monitoring: {
    config: { accountId: "4411", accountName: "ops", groupId: "g-77", groupName: "alerts" },
    updatedConfig: { accountId: "4411", accountName: "ops", groupId: "g-78", groupName: "paging" },
  },
};

describe("SecretSync", () => {
  it.each(Object.keys(cases) as Destination[])(
    "creates and updates a %s sync with exactly the bodies the spec says",
    async (destination) => {
      const c = cases[destination];
      const name = `to-${destination}`;
      // workflow-engine goes through a Project resource; the others name a project by id
      const project = destination === "workflow-engine" ? { projectRef: { name: "payments" } } : { projectId: DEMO_PROJECT };
      const spec = baseSpec(
        destination,
        c.config,
        { description: `secrets for ${destination}`, ...(c.syncOptions ? { syncOptions: c.syncOptions } : {}) },
        project,
      );
      await createCustom(kc, ns.name, PLURAL, secretSync(name, spec));
      const created = await readySync(name);
      const id = syncIdOf(created);
      const creates = logOf(emulator, "createSecretSync").filter(
        (r) => r.path === `/api/v1/secret-syncs/${destination}` && (r.body as { name?: string }).name === name,
      );
      expect(creates).toHaveLength(1);
      expect(creates[0]?.body).toEqual({
        name,
        projectId: destination === "workflow-engine" ? paymentsProjectId : DEMO_PROJECT,
        connectionId: connections[destination],
        environment: "dev",
        secretPath: "/app",
        // keyward fills in the initialSyncBehavior the service requires when the spec leaves it out
        syncOptions: { initialSyncBehavior: "overwrite-destination", ...c.syncOptions },
        destinationConfig: c.config,
        description: `secrets for ${destination}`,
      });
      const status = statusOf(created);
      expect(status).toMatchObject({
        syncId: id,
        name,
        destination,
        connection: { app: connectionAppByDestination[destination], id: connections[destination] },
        environment: { slug: "dev" },
        folder: { path: "/app" },
        isAutoSyncEnabled: true,
      });

      await mergePatchCustom(kc, ns.name, PLURAL, name, { spec: { destinationConfig: c.updatedConfig, description: "moved" } });
      await waitUntil(
        name,
        "updated",
        (o) => isReady(o) && condition(o, "Synced")?.observedGeneration === o.metadata.generation && statusOf(o)["description"] === "moved",
      );
      const updates = logOf(emulator, "updateSecretSync", id);
      expect(updates).toHaveLength(1);
      expect(updates[0]?.body).toEqual({ description: "moved", destinationConfig: c.updatedConfig });
      const atService = await serviceSync(emulator, TOKEN, destination, id);
      expect(atService.body?.["destinationConfig"]).toEqual(c.updatedConfig);
      // the auto-sync job the service queued settles and is mirrored
      await waitUntil(name, "sync job succeeded", (o) => statusOf(o)["syncStatus"] === "succeeded");
    },
  );

  it("rejects at apply time a destinationConfig of another destination, a 65-character name and an empty secretPath", async () => {
    const apply = (name: string, spec: Spec) =>
      kubectl(["apply", "-n", ns.name, "-f", "-"], { input: JSON.stringify(secretSync(name, spec)) });
    const wrongShape = await apply("wrong-shape", baseSpec("workflow-engine", { appId: "a", appName: "b" }));
    expect(wrongShape.code).not.toBe(0);
    expect(wrongShape.stderr).toMatch(
      /destination workflow-engine requires destinationConfig\.scope|destinationConfig\.appId is not allowed/,
    );
    const longName = await apply("long-name", baseSpec("data-platform", { scope: "workspace" }, { name: "n".repeat(65) }));
    expect(longName.code).not.toBe(0);
    expect(longName.stderr).toMatch(/spec\.name/);
    const longMetaName = await apply("m".repeat(70), baseSpec("data-platform", { scope: "workspace" }));
    expect(longMetaName.code).not.toBe(0);
    expect(longMetaName.stderr).toMatch(/metadata\.name is longer than 64 characters: set spec\.name/);
    const longMetaNamed = await kubectl(["apply", "--dry-run=server", "-n", ns.name, "-f", "-"], {
      input: JSON.stringify(secretSync("m".repeat(70), baseSpec("data-platform", { scope: "workspace" }, { name: "short-name" }))),
    });
    expect(longMetaNamed.code).toBe(0);
    const emptyPath = await apply("empty-path", baseSpec("data-platform", { scope: "workspace" }, { secretPath: "" }));
    expect(emptyPath.code).not.toBe(0);
    expect(emptyPath.stderr).toMatch(/secretPath/);
    const badKeySchema = await apply(
      "bad-key-schema",
      baseSpec("data-platform", { scope: "workspace" }, { syncOptions: { keySchema: "APP_KEY" } }),
    );
    expect(badKeySchema.code).not.toBe(0);
    expect(badKeySchema.stderr).toMatch(/keySchema/);
    const importOnCodeHost = await apply(
      "import-code-host",
      baseSpec("code-host", cases["code-host"].config, { syncOptions: { initialSyncBehavior: "import-prioritize-source" } }),
    );
    expect(importOnCodeHost.code).not.toBe(0);
    expect(importOnCodeHost.stderr).toMatch(/syncOptions.initialSyncBehavior must be overwrite-destination for destination code-host/);
    const unknownPlaceholder = await apply(
      "bad-placeholder",
      baseSpec("data-platform", { scope: "workspace" }, { syncOptions: { keySchema: "{{project}}_{{secretKey}}" } }),
    );
    expect(unknownPlaceholder.code).not.toBe(0);
    expect(unknownPlaceholder.stderr).toMatch(/keySchema/);
    const withEnvironment = await kubectl(["apply", "--dry-run=server", "-n", ns.name, "-f", "-"], {
      input: JSON.stringify(
        secretSync(
          "env-key",
          baseSpec("workflow-engine", cases["workflow-engine"].config, {
            syncOptions: { initialSyncBehavior: "import-prioritize-source", keySchema: "{{environment}}_{{secretKey}}" },
          }),
        ),
      ),
    });
    expect(withEnvironment.stderr).toBe("");
    expect(withEnvironment.code).toBe(0);
    const bothProjects = await apply(
      "both-projects",
      baseSpec("data-platform", { scope: "workspace" }, { projectRef: { name: "payments" } }),
    );
    expect(bothProjects.code).not.toBe(0);
    expect(bothProjects.stderr).toMatch(/exactly one of projectRef, projectId/);
    for (const name of ["wrong-shape", "long-name", "empty-path", "bad-key-schema", "import-code-host", "bad-placeholder", "both-projects"])
      expect(await get(name)).toBeUndefined();
  });

  it("accepts every sample of config/samples at apply time (server-side dry run)", async () => {
    const samples = (Object.keys(cases) as Destination[]).flatMap((d) => [
      "-f",
      fileURLToPath(new URL(`../../config/samples/secretsync-${d}.yaml`, import.meta.url)),
    ]);
    const result = await kubectl(["apply", "--dry-run=server", "-n", ns.name, ...samples]);
    expect(result.stderr).toBe("");
    expect(result.stdout.trim().split("\n")).toHaveLength(7);
  });

  it("keeps destination immutable", async () => {
    await createCustom(
      kc,
      ns.name,
      PLURAL,
      secretSync("fixed-destination", baseSpec("data-platform", { scope: "workspace" }, { isAutoSyncEnabled: false })),
    );
    // In v1alpha1's shape, through v1alpha1 (a read naming no version is v1beta1's).
    const patched = await kubectl([
      "patch",
      "secretsyncs.v1alpha1.keyward.dev",
      "fixed-destination",
      "-n",
      ns.name,
      "--type",
      "merge",
      "-p",
      JSON.stringify({
        spec: { destination: "monitoring", destinationConfig: cases.monitoring.config, connectionId: connections.monitoring },
      }),
    ]);
    expect(patched.code).not.toBe(0);
    expect(patched.stderr).toMatch(/destination is immutable/);
    // And in v1beta1's: the union member replaced whole.
    const monitoring = keywardSamples("v1beta1", ["secretsync-monitoring.yaml"])[0]?.spec["destination"];
    const replace = [{ op: "replace", path: "/spec/destination", value: monitoring }];
    const replaced = await kubectl([
      ...["patch", "secretsyncs.v1beta1.keyward.dev", "fixed-destination", "-n", ns.name],
      ...["--type", "json", "-p", JSON.stringify(replace)],
    ]);
    expect(replaced.code).not.toBe(0);
    expect(replaced.stderr).toMatch(/destination is immutable/);
  });

  it("asks for spec.name when metadata.name is longer than a sync name may be", async () => {
    // The CRD refuses it at apply time (a root-level CEL rule sees metadata.name); keyward's own
    // check (Synced=False InvalidSpec) stays as the second line for objects stored before.
    const name = `a-very-long-resource-name-${"x".repeat(50)}`;
    const created = createCustom(kc, ns.name, PLURAL, secretSync(name, baseSpec("data-platform", { scope: "workspace" })));
    await expect(created).rejects.toThrow(/set spec\.name/);
    expect(logOf(emulator, "createSecretSync").filter((r) => (r.body as { name?: string }).name === name)).toHaveLength(0);
  });

  it("runs one sync-secrets call per annotation value, across resyncs and a keyward restart", async () => {
    await createCustom(
      kc,
      ns.name,
      PLURAL,
      secretSync("on-demand", baseSpec("data-platform", { scope: "on-demand" }, { isAutoSyncEnabled: false })),
    );
    const id = syncIdOf(await readySync("on-demand"));
    expect(logOf(emulator, "triggerSecretSync", id)).toHaveLength(0);

    await annotate("on-demand", { "keyward.dev/sync-requested-at": "2025-01-01T10:00:00Z" });
    const handled = await waitUntil(
      "on-demand",
      "first request handled",
      (o) => statusOf(o)["lastHandledSyncRequest"] === "2025-01-01T10:00:00Z",
    );
    expect(statusOf(handled)["pendingRequest"]).toBeUndefined();
    expect(logOf(emulator, "triggerSecretSync", id)).toHaveLength(1);
    await waitUntil(
      "on-demand",
      "sync job succeeded",
      (o) => statusOf(o)["syncStatus"] === "succeeded" && typeof statusOf(o)["lastSyncedAt"] === "string",
    );

    await passesOver(emulator, id, 3);
    expect(logOf(emulator, "triggerSecretSync", id)).toHaveLength(1);

    await keyward.stop();
    earlierLogs.push(...keyward.logs);
    keyward = await startKeyward(kc, { namespaces: [ns.name], resyncIntervalMs: 2_000 });
    await passesOver(emulator, id, 3);
    expect(logOf(emulator, "triggerSecretSync", id)).toHaveLength(1);

    await annotate("on-demand", { "keyward.dev/sync-requested-at": "2025-01-01T11:00:00Z" });
    await waitUntil("on-demand", "second request handled", (o) => statusOf(o)["lastHandledSyncRequest"] === "2025-01-01T11:00:00Z");
    await passesOver(emulator, id, 2);
    expect(logOf(emulator, "triggerSecretSync", id).map((r) => r.status)).toEqual([200, 200]);
    const events = await eventsFor("on-demand");
    expect(
      events
        .filter((e) => e.reason === "SyncRequested")
        .map((e) => e.message)
        .join("\n"),
    ).toContain("2025-01-01T11:00:00Z");
  });

  it("runs one remove-secrets call per remove-secrets annotation value", async () => {
    await createCustom(kc, ns.name, PLURAL, secretSync("removable", baseSpec("monitoring", cases.monitoring.config)));
    const id = syncIdOf(await waitUntil("removable", "first sync settled", (o) => isReady(o) && statusOf(o)["syncStatus"] === "succeeded"));
    await annotate("removable", { "keyward.dev/remove-secrets-requested-at": "r1" });
    await waitUntil(
      "removable",
      "removal handled and settled",
      (o) => statusOf(o)["lastHandledRemoveSecretsRequest"] === "r1" && statusOf(o)["removeStatus"] === "succeeded",
    );
    await passesOver(emulator, id, 2);
    expect(logOf(emulator, "removeSecretSyncSecrets", id)).toHaveLength(1);
    expect(logOf(emulator, "triggerSecretSync", id)).toHaveLength(0);
    expect((await eventsFor("removable")).some((e) => e.reason === "RemoveSecretsRequested" && e.message.includes("r1"))).toBe(true);

    // A new value runs; the old one put back (Argo CD's self-heal to the manifest in Git) does not.
    await annotate("removable", { "keyward.dev/remove-secrets-requested-at": "r2" });
    const second = await waitUntil(
      "removable",
      "second removal handled and settled",
      (o) => statusOf(o)["lastHandledRemoveSecretsRequest"] === "r2" && statusOf(o)["removeStatus"] === "succeeded",
    );
    const recent = JSON.parse(second.metadata.annotations?.["handled.keyward.dev/recent"] ?? "null") as unknown;
    expect(recent).toEqual(statusOf(second)["recentRequests"]);
    expect((recent as { remove: string[] }).remove).toHaveLength(2);
    await annotate("removable", { "keyward.dev/remove-secrets-requested-at": "r1" });
    await passesOver(emulator, id, 2);
    expect(logOf(emulator, "removeSecretSyncSecrets", id)).toHaveLength(2);
  });

  it("refuses a request value longer than status can record, before any call", async () => {
    await createCustom(kc, ns.name, PLURAL, secretSync("long-request", baseSpec("monitoring", cases.monitoring.config)));
    const id = syncIdOf(await waitUntil("long-request", "Ready", (o) => isReady(o)));
    await annotate("long-request", { "keyward.dev/sync-requested-at": "x".repeat(1025) });
    const refused = await waitUntil("long-request", "InvalidRequest", (o) => condition(o, "Synced")?.reason === "InvalidRequest");
    expect(condition(refused, "Synced")?.message).toContain("1025 characters");
    expect(logOf(emulator, "triggerSecretSync", id)).toHaveLength(0);
    // A value that fits runs.
    await annotate("long-request", { "keyward.dev/sync-requested-at": "x".repeat(1024) });
    await waitUntil("long-request", "handled", (o) => statusOf(o)["lastHandledSyncRequest"] === "x".repeat(1024));
    expect(logOf(emulator, "triggerSecretSync", id)).toHaveLength(1);
  });

  it("shows a failed job as Ready=False with the service's message, and Ready again after a successful sync", async () => {
    await createCustom(
      kc,
      ns.name,
      PLURAL,
      secretSync("flaky", baseSpec("app-platform", cases["app-platform"].config, { isAutoSyncEnabled: false })),
    );
    const id = syncIdOf(await readySync("flaky"));
    emulator.setJobOutcome({ syncId: id, action: "sync", outcome: "failed", message: "destination refused the write: quota exceeded" });
    await annotate("flaky", { "keyward.dev/sync-requested-at": "f1" });
    const failed = await waitUntil("flaky", "JobFailed", (o) => condition(o, "Ready")?.reason === "JobFailed");
    expect(condition(failed, "Ready")?.status).toBe("False");
    expect(condition(failed, "Ready")?.message).toContain("destination refused the write: quota exceeded");
    expect(statusOf(failed)["lastSyncMessage"]).toBe("destination refused the write: quota exceeded");
    expect((await eventsFor("flaky")).some((e) => e.type === "Warning" && e.reason === "JobFailed")).toBe(true);

    await annotate("flaky", { "keyward.dev/sync-requested-at": "f2" });
    const recovered = await waitUntil(
      "flaky",
      "Ready again",
      (o) => isReady(o) && statusOf(o)["lastHandledSyncRequest"] === "f2" && statusOf(o)["syncStatus"] === "succeeded",
    );
    expect(statusOf(recovered)["lastSyncMessage"]).toBeUndefined();
    expect(logOf(emulator, "triggerSecretSync", id)).toHaveLength(2);
  });

  it("retries a trigger the service refuses because a job is in progress, and sends it once that job settled", async () => {
    const spec = {
      ...baseSpec("git-host", cases["git-host"].config, { isAutoSyncEnabled: false }),
      providerConfigRef: { name: "slowjobs" },
    };
    await createCustom(kc, ns.name, PLURAL, secretSync("busy", spec));
    const id = syncIdOf(await readySync("busy"));
    // keyward's trigger is held before the service handles it; meanwhile another client starts a job
    slowEmulator.setFaults({ match: { method: "POST", pathPattern: `/${id}/sync-secrets$` }, latencyMs: 2_000 });
    await annotate("busy", { "keyward.dev/sync-requested-at": "b1" });
    await waitUntil(
      "busy",
      "request marked pending",
      (o) => (statusOf(o)["pendingRequest"] as { value?: string } | undefined)?.value === "b1",
    );
    const res = await fetch(`${slowEmulator.url}/api/v1/secret-syncs/git-host/${id}/remove-secrets`, {
      method: "POST",
      headers: { authorization: `Bearer ${SLOW_TOKEN}` },
    });
    expect(res.status).toBe(200);
    await waitUntil("busy", "request handled", (o) => statusOf(o)["lastHandledSyncRequest"] === "b1", 90_000);
    slowEmulator.setFaults({});
    const triggers = logOf(slowEmulator, "triggerSecretSync", id);
    expect(triggers.map((r) => r.status)).toEqual([400, 200]);
    // the refused call came while the other job ran; the accepted one after it settled
    const removeSettled = await serviceSync(slowEmulator, SLOW_TOKEN, "git-host", id);
    expect(Date.parse(String(removeSettled.body?.["lastRemovedAt"]))).toBeLessThanOrEqual(Date.parse(triggers[1]?.at ?? ""));
  });

  it("with deletionPolicy Retain (the default) leaves the sync at the service", async () => {
    await createCustom(kc, ns.name, PLURAL, secretSync("kept", baseSpec("data-platform", { scope: "kept" }, { isAutoSyncEnabled: false })));
    const obj = await readySync("kept");
    const id = syncIdOf(obj);
    expect(obj.metadata.finalizers ?? []).toEqual([]);
    await deleteCustom(kc, ns.name, PLURAL, "kept");
    await waitFor(async () => ((await get("kept")) ? undefined : true), { timeoutMs: 30_000, description: "kept deleted" });
    expect((await serviceSync(emulator, TOKEN, "data-platform", id)).status).toBe(200);
    expect(logOf(emulator, "deleteSecretSync", id)).toHaveLength(0);
    expect(logOf(emulator, "removeSecretSyncSecrets", id)).toHaveLength(0);
  });

  it("with deletionPolicy Delete deletes the sync", async () => {
    await createCustom(
      kc,
      ns.name,
      PLURAL,
      secretSync("doomed", baseSpec("data-platform", { scope: "doomed" }, { isAutoSyncEnabled: false, deletionPolicy: "Delete" })),
    );
    const obj = await readySync("doomed");
    const id = syncIdOf(obj);
    expect(obj.metadata.finalizers).toContain("keyward.dev/finalizer");
    await deleteCustom(kc, ns.name, PLURAL, "doomed");
    await waitFor(async () => ((await get("doomed")) ? undefined : true), { timeoutMs: 30_000, description: "doomed deleted" });
    expect(logOf(emulator, "deleteSecretSync", id)).toHaveLength(1);
    expect((await serviceSync(emulator, TOKEN, "data-platform", id)).status).toBe(404);
  });

  it("with deletionPolicy RemoveSecrets switches auto-sync off, removes the synced secrets, waits for the job, then releases", async () => {
    await createCustom(
      kc,
      ns.name,
      PLURAL,
      secretSync("tidy", baseSpec("cloud-secrets-manager", cases["cloud-secrets-manager"].config, { deletionPolicy: "RemoveSecrets" })),
    );
    const obj = await waitUntil("tidy", "first sync settled", (o) => isReady(o) && statusOf(o)["syncStatus"] === "succeeded");
    const id = syncIdOf(obj);
    expect(obj.metadata.finalizers).toContain("keyward.dev/finalizer");
    await deleteCustom(kc, ns.name, PLURAL, "tidy");
    await waitFor(async () => ((await get("tidy")) ? undefined : true), { timeoutMs: 60_000, description: "tidy released" });
    expect(logOf(emulator, "updateSecretSync", id).map((r) => r.body)).toEqual([{ isAutoSyncEnabled: false }]);
    expect(logOf(emulator, "removeSecretSyncSecrets", id)).toHaveLength(1);
    expect(logOf(emulator, "deleteSecretSync", id)).toHaveLength(0);
    const atService = await serviceSync(emulator, TOKEN, "cloud-secrets-manager", id);
    expect(atService.body).toMatchObject({ removeStatus: "succeeded", isAutoSyncEnabled: false });
  });

  it("with deletionPolicy RemoveSecrets keeps the finalizer while the removal fails, with the service's message, and retries", async () => {
    await createCustom(
      kc,
      ns.name,
      PLURAL,
      secretSync("stubborn", baseSpec("git-host", cases["git-host"].config, { isAutoSyncEnabled: false, deletionPolicy: "RemoveSecrets" })),
    );
    const id = syncIdOf(await readySync("stubborn"));
    emulator.setJobOutcome({ syncId: id, action: "remove", outcome: "failed", message: "destination is locked" });
    await deleteCustom(kc, ns.name, PLURAL, "stubborn");
    const blocked = await waitUntil("stubborn", "RemoveSecretsFailed", (o) => condition(o, "Ready")?.reason === "RemoveSecretsFailed");
    expect(condition(blocked, "Ready")?.status).toBe("False");
    expect(condition(blocked, "Ready")?.message).toContain("destination is locked");
    expect(blocked.metadata.finalizers).toContain("keyward.dev/finalizer");
    await waitFor(async () => ((await get("stubborn")) ? undefined : true), {
      timeoutMs: 90_000,
      description: "stubborn released after a retry",
    });
    expect(logOf(emulator, "removeSecretSyncSecrets", id)).toHaveLength(2);
    expect((await serviceSync(emulator, TOKEN, "git-host", id)).body).toMatchObject({ removeStatus: "succeeded" });
  });

  it("makes no write calls and no status writes in steady state", async () => {
    const writes = (): number => emulator.requests().filter((r) => r.method !== "GET" && r.path.startsWith("/api/v1/secret-syncs")).length;
    const before = writes();
    const settled = await readySync("to-monitoring");
    await passesOver(emulator, syncIdOf(settled), 3);
    expect(writes()).toBe(before);
    // nor status writes: the object is as it was
    expect((await get("to-monitoring"))?.metadata.resourceVersion).toBe(settled.metadata.resourceVersion);
  });

  it("prints destination, sync status, last synced, Ready and Age, and Synced and the id with -o wide", async () => {
    const plain = await kubectl(["get", "secretsyncs.keyward.dev", "to-monitoring", "-n", ns.name]);
    expect(plain.stdout.split("\n")[0]?.split(/\s+/).filter(Boolean)).toEqual([
      "NAME",
      "DESTINATION",
      "SYNC-STATUS",
      "LAST-SYNCED",
      "READY",
      "AGE",
    ]);
    // A read naming no version is v1beta1's: its destination type; v1alpha1 prints the service's word.
    expect(plain.stdout.split("\n")[1]).toMatch(/^to-monitoring\s+Monitoring\s+succeeded\s+\S+\s+True\s+/);
    const alpha = await kubectl(["get", "secretsyncs.v1alpha1.keyward.dev", "to-monitoring", "-n", ns.name]);
    expect(alpha.stdout.split("\n")[1]).toMatch(/^to-monitoring\s+monitoring\s+succeeded\s+\S+\s+True\s+/);
    const wide = await kubectl(["get", "secretsyncs.keyward.dev", "to-monitoring", "-n", ns.name, "-o", "wide"]);
    const id = syncIdOf(await readySync("to-monitoring"));
    expect(wide.stdout.split("\n")[0]).toMatch(/SYNCED\s+SYNC-ID/);
    expect(wide.stdout).toContain(id);
  });

  it("never writes a token into logs, events or status", async () => {
    for (const text of (await exposedTexts(ns.name, [...earlierLogs, ...keyward.logs], "secretsyncs,providerconfigs")).all) {
      expect(text).not.toContain(TOKEN);
      expect(text).not.toContain(SLOW_TOKEN);
    }
  });
});
