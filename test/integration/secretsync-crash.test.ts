// SecretSync when keyward dies at the worst moment: keyward runs as a child process and is
// SIGKILLed while the emulator holds the answer to a call it has already applied (a latency
// fault after handling). The next keyward must find what the dead one did, not do it again.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Emulator } from "../emulator/server.ts";
import type { RecordedRequest } from "../emulator/types.ts";
import { loadDefaultSeed } from "../emulator/default-seed.ts";
import { kubectl, testKubeconfigPath, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import {
  condition,
  createCustom,
  deleteCustom,
  exposedTexts,
  getCustom,
  isReady,
  mergePatchCustom,
  startTestEnv,
  waitForObject,
  type TestEnv,
} from "./support/keyward.ts";
import { keywardProcesses, type KeywardProcess } from "./support/keyward-process.ts";
import type { KubeObject } from "../../src/engine/types.ts";
import { ANNOTATION_PENDING_ACTION } from "../../src/resources/secretsync.ts";
import { LATE_APPLY_WINDOW_MS } from "../../src/resources/secretsync.ts";

const TOKEN = "kw-secretsync-crash-token-93be17";
const seed = loadDefaultSeed();
const DEMO_PROJECT = "a1b2c3d4-0005-4a00-8000-000000000001";
const DATA_PLATFORM_CONNECTION = "a1b2c3d4-0004-4a00-8000-000000000003";
const PLURAL = "secretsyncs";

let env: TestEnv | undefined;
let kc: KubeConfig;
let emulator: Emulator;
let ns: TestNamespace;
// No periodic resync: every pass comes from keyward's own requeues or a change to the object.
const keywards = keywardProcesses(testKubeconfigPath, () => ns.name, { resyncIntervalMs: 600_000 });
const startChild = (): Promise<KeywardProcess> => keywards.start();

const statusOf = (obj: KubeObject | undefined): Record<string, unknown> => obj?.status ?? {};
const logOf = (op: string, pathPart?: string): RecordedRequest[] =>
  emulator.requests().filter((r) => r.operation === op && (pathPart === undefined || r.path.includes(pathPart)));

const waitUntil = (name: string, what: string, until: (obj: KubeObject) => boolean): Promise<KubeObject> =>
  waitForObject(kc, ns.name, PLURAL, name, { until, timeoutMs: 60_000, description: `SecretSync ${name}: ${what}` });

async function syncsNamed(name: string): Promise<{ id: string; name: string }[]> {
  const state = (await (await fetch(`${emulator.url}/_emulator/state`)).json()) as { syncs: Record<string, { id: string; name: string }> };
  return Object.values(state.syncs).filter((s) => s.name === name);
}

beforeAll(async () => {
  env = await startTestEnv({ prefix: "secretsync-crash", token: TOKEN, emulator: { seed, jobDelayMs: 300 }, keyward: false });
  ({ kc, emulator, ns } = env);
  env.onStop(() => keywards.stopAll());
});

afterAll(() => env?.stop());

describe("SecretSync across a killed keyward", () => {
  it("creates no second sync when keyward is killed between the create and the status write", async () => {
    const first = await startChild();
    // The service applies the create, then holds its answer until keyward is dead.
    emulator.setFaults({
      match: { method: "POST", pathPattern: "^/api/v1/secret-syncs/data-platform$" },
      latencyMs: 120_000,
      latencyWhen: "after-handling",
    });
    await createCustom(kc, ns.name, PLURAL, {
      apiVersion: "keyward.dev/v1alpha1",
      kind: "SecretSync",
      metadata: { name: "crashy" },
      spec: {
        projectId: DEMO_PROJECT,
        destination: "data-platform",
        connectionId: DATA_PLATFORM_CONNECTION,
        environment: "prod",
        secretPath: "/",
        destinationConfig: { scope: "workspace" },
      },
    });
    await waitFor(() => Promise.resolve(logOf("createSecretSync").length > 0 ? true : undefined), {
      timeoutMs: 60_000,
      intervalMs: 20,
      description: "the create to reach the service",
    });
    expect(await first.kill()).toBe("SIGKILL");
    emulator.setFaults({});

    // Killed in the window: the sync exists at the service, the resource does not know its id.
    const orphaned = await getCustom(kc, ns.name, PLURAL, "crashy");
    expect(statusOf(orphaned)["syncId"]).toBeUndefined();
    expect(orphaned?.metadata.annotations?.["keyward.dev/create-started"]).toBeDefined();
    expect(await syncsNamed("crashy")).toHaveLength(1);

    await startChild();
    const adopted = await waitUntil(
      "crashy",
      "Ready with an id",
      (o) => condition(o, "Ready")?.status === "True" && typeof statusOf(o)["syncId"] === "string",
    );
    expect(logOf("createSecretSync")).toHaveLength(1);
    const atService = await syncsNamed("crashy");
    expect(atService).toHaveLength(1);
    expect(statusOf(adopted)["syncId"]).toBe(atService[0]?.id);
  });

  it("makes no second sync-secrets call when keyward is killed between the call and the status write", async () => {
    const settled = await waitUntil("crashy", "first sync settled", (o) => statusOf(o)["syncStatus"] === "succeeded");
    const id = String(statusOf(settled)["syncId"]);
    const running = keywards.latest();
    if (!running) throw new Error("no keyward running");
    emulator.setFaults({
      match: { method: "POST", pathPattern: `/${id}/sync-secrets$` },
      latencyMs: 120_000,
      latencyWhen: "after-handling",
    });
    await mergePatchCustom(kc, ns.name, PLURAL, "crashy", {
      metadata: { annotations: { "keyward.dev/sync-requested-at": "2025-02-02T02:02:02Z" } },
    });
    await waitFor(() => Promise.resolve(logOf("triggerSecretSync", id).length > 0 ? true : undefined), {
      timeoutMs: 60_000,
      intervalMs: 20,
      description: "the trigger to reach the service",
    });
    expect(await running.kill()).toBe("SIGKILL");
    emulator.setFaults({});

    const interrupted = await getCustom(kc, ns.name, PLURAL, "crashy");
    expect(statusOf(interrupted)["lastHandledSyncRequest"]).toBeUndefined();
    expect(statusOf(interrupted)["pendingRequest"]).toMatchObject({ action: "sync", value: "2025-02-02T02:02:02Z" });

    await startChild();
    const handled = await waitUntil("crashy", "request recorded", (o) => statusOf(o)["lastHandledSyncRequest"] === "2025-02-02T02:02:02Z");
    expect(statusOf(handled)["pendingRequest"]).toBeUndefined();
    // a few more passes (each forced by a label change): still the one call
    for (const n of [1, 2, 3]) {
      const reads = logOf("getSecretSync", id).length;
      await mergePatchCustom(kc, ns.name, PLURAL, "crashy", { metadata: { labels: { "keyward.dev/test-pass": String(n) } } });
      await waitFor(() => Promise.resolve(logOf("getSecretSync", id).length > reads ? true : undefined), {
        timeoutMs: 60_000,
        description: `pass ${String(n)}`,
      });
    }
    expect(logOf("triggerSecretSync", id)).toHaveLength(1);
    const events = await kubectl(["get", "events", "-n", ns.name, "-o", "json", "--field-selector", "involvedObject.name=crashy"]);
    expect(events.stdout).toContain("recorded after an interruption");
  });

  it("makes the call again when keyward was killed after marking a request but before sending it", { timeout: 240_000 }, async () => {
    const obj = await waitUntil("crashy", "sync settled", (o) => statusOf(o)["syncStatus"] === "succeeded");
    const id = String(statusOf(obj)["syncId"]);
    const running = keywards.latest();
    if (!running) throw new Error("no keyward running");
    // the trigger is held before handling: it never reaches the service before keyward dies
    emulator.setFaults({ match: { method: "POST", pathPattern: `/${id}/sync-secrets$` }, latencyMs: 120_000 });
    await mergePatchCustom(kc, ns.name, PLURAL, "crashy", {
      metadata: { annotations: { "keyward.dev/sync-requested-at": "2025-03-03T03:03:03Z" } },
    });
    await waitUntil(
      "crashy",
      "request marked",
      (o) => (statusOf(o)["pendingRequest"] as { value?: string } | undefined)?.value === "2025-03-03T03:03:03Z",
    );
    expect(await running.kill()).toBe("SIGKILL");
    emulator.setFaults({});
    const before = logOf("triggerSecretSync", id).filter((r) => r.status === 200).length;

    await startChild();
    // Not before the mark is LATE_APPLY_WINDOW_MS old: a call held that long could still have been applied.
    await waitForObject(kc, ns.name, PLURAL, "crashy", {
      until: (o) => statusOf(o)["lastHandledSyncRequest"] === "2025-03-03T03:03:03Z",
      timeoutMs: LATE_APPLY_WINDOW_MS + 60_000,
      description: "SecretSync crashy: request handled",
    });
    expect(logOf("triggerSecretSync", id).filter((r) => r.status === 200).length).toBe(before + 1);
  });

  it("follows the job an update queued until it settles, with no resync to rely on", async () => {
    const before = await waitUntil("crashy", "sync settled", (o) => statusOf(o)["syncStatus"] === "succeeded");
    const id = String(statusOf(before)["syncId"]);
    await mergePatchCustom(kc, ns.name, PLURAL, "crashy", { spec: { description: "now with a description" } });
    await waitFor(() => Promise.resolve(logOf("updateSecretSync", id).length > 0 ? true : undefined), {
      timeoutMs: 60_000,
      description: "the update",
    });
    const atService = (await (
      await fetch(`${emulator.url}/api/v1/secret-syncs/data-platform/${id}`, { headers: { authorization: `Bearer ${TOKEN}` } })
    ).json()) as {
      secretSync: { lastSyncJobId: string };
    };
    expect(atService.secretSync.lastSyncJobId).not.toBe(statusOf(before)["lastSyncJobId"]);
    await waitUntil(
      "crashy",
      "the update's job mirrored as settled",
      (o) => statusOf(o)["lastSyncJobId"] === atService.secretSync.lastSyncJobId && statusOf(o)["syncStatus"] === "succeeded",
    );
  });

  it("makes no second sync-secrets call after a restore from a backup taken while the call was in flight", async () => {
    const settled = await waitUntil("crashy", "sync settled", (o) => statusOf(o)["syncStatus"] === "succeeded");
    const id = String(statusOf(settled)["syncId"]);
    const running = keywards.latest();
    if (!running) throw new Error("no keyward running");
    const value = "2025-04-04T04:04:04Z";
    const earlier = logOf("triggerSecretSync", id).length;
    emulator.setFaults({
      match: { method: "POST", pathPattern: `/${id}/sync-secrets$` },
      latencyMs: 120_000,
      latencyWhen: "after-handling",
    });
    await mergePatchCustom(kc, ns.name, PLURAL, "crashy", { metadata: { annotations: { "keyward.dev/sync-requested-at": value } } });
    await waitFor(() => Promise.resolve(logOf("triggerSecretSync", id).length > earlier ? true : undefined), {
      timeoutMs: 60_000,
      intervalMs: 20,
      description: "the trigger to reach the service",
    });
    // The backup: metadata and spec as Velero keeps them, no status, no UID.
    const inFlight = await getCustom(kc, ns.name, PLURAL, "crashy");
    if (!inFlight) throw new Error("crashy is gone");
    expect(JSON.parse(inFlight.metadata.annotations?.[ANNOTATION_PENDING_ACTION] ?? "{}")).toMatchObject({ action: "sync", value });
    const { name, labels, annotations, finalizers } = inFlight.metadata;
    const backup = {
      apiVersion: inFlight.apiVersion,
      kind: inFlight.kind,
      metadata: { name, labels, annotations, finalizers },
      spec: inFlight.spec,
    };
    expect(await running.kill()).toBe("SIGKILL");
    emulator.setFaults({});
    const calls = logOf("triggerSecretSync", id).length;
    // The cluster is lost and restored from the backup.
    await mergePatchCustom(kc, ns.name, PLURAL, "crashy", { metadata: { finalizers: null } });
    await deleteCustom(kc, ns.name, PLURAL, "crashy");
    await waitFor(async () => ((await getCustom(kc, ns.name, PLURAL, "crashy")) ? undefined : true), {
      timeoutMs: 30_000,
      description: "crashy gone",
    });
    await createCustom(kc, ns.name, PLURAL, backup);

    await startChild();
    const handled = await waitUntil("crashy", "request recorded", (o) => statusOf(o)["lastHandledSyncRequest"] === value && isReady(o));
    expect(statusOf(handled)["syncId"]).toBe(id);
    expect(handled.metadata.annotations?.[ANNOTATION_PENDING_ACTION]).toBeUndefined();
    expect(logOf("triggerSecretSync", id)).toHaveLength(calls);
  });

  it("never writes the token into the logs of any keyward, events or status", async () => {
    const logs = keywards.all().flatMap((p) => p.logs);
    expect(logs.join("\n")).toContain("keyward started");
    for (const text of (await exposedTexts(ns.name, logs, "secretsyncs,providerconfigs")).all) expect(text).not.toContain(TOKEN);
  });
});
