// Resources deleted while keyward is in the middle of their pass, its service call held by the
// emulator (a latency fault after handling: the call has landed, the answer is on its way): once
// the objects are gone from the apiserver, nothing of them may outlive them in keyward — no metric
// series on /metrics and no further call to the service for them, however many resyncs pass.
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Emulator } from "../emulator/server.ts";
import type { RecordedRequest } from "../emulator/types.ts";
import { loadDefaultSeed } from "../emulator/default-seed.ts";
import { waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import {
  condition,
  createCustom,
  dataPlatformSync,
  deleteCustom,
  getCustom,
  installProvider,
  mergePatchCustom,
  projectObject,
  startTestEnv,
  waitForObject,
  type KeywardTestEnv,
} from "./support/keyward.ts";

const TOKEN = "kw-deleted-mid-pass-token-5c07e1";
const RESYNC_MS = 1_000;
/** How long the emulator holds each answer: the deletions all land meanwhile. */
const HOLD_MS = 15_000;
const SYNCS = Array.from({ length: 12 }, (_, i) => `ghost-sync-${i}`);
const PROJECTS = Array.from({ length: 6 }, (_, i) => `ghost-project-${i}`);
const slugOf = (name: string): string => `${name}-slug`;
const SYNC_REQUESTED = "keyward.dev/sync-requested-at";
const PROJECT_CONFIG = "projects";

let env: KeywardTestEnv | undefined;
let kc: KubeConfig;
let emulator: Emulator;
let ns: TestNamespace;

beforeAll(async () => {
  env = await startTestEnv({
    prefix: "deleted-mid-pass",
    token: TOKEN,
    // No rate limit: a resync a second of 18 objects reads more than the service's 60 a minute.
    emulator: { seed: loadDefaultSeed(), jobDelayMs: 50, rateLimit: false },
    // A worker for every held call, so all of them are held at once.
    keyward: { resyncIntervalMs: RESYNC_MS, concurrency: 24 },
  });
  ({ kc, emulator, ns } = env);
  // The held answers must not time out: a timeout is another path (the call may have landed).
  // The Projects use a config of their own: another timeout is another connection pool (16
  // connections each), so every call of the test can be held at once.
  await installProvider(kc, ns.name, emulator.url, TOKEN, PROJECT_CONFIG);
  await mergePatchCustom(kc, ns.name, "providerconfigs", "default", { spec: { timeoutSeconds: 30 } });
  await mergePatchCustom(kc, ns.name, "providerconfigs", PROJECT_CONFIG, { spec: { timeoutSeconds: 31 } });
});

afterAll(() => env?.stop());

/** The exposition keyward serves on /metrics. */
const exposition = async (): Promise<string> => (env as KeywardTestEnv).keyward.operator.metrics.registry.metrics();

/** The series on /metrics that name one of `names` in this namespace. */
function seriesOf(text: string, names: readonly string[]): string[] {
  return text
    .split("\n")
    .filter((line) => !line.startsWith("#") && line.includes(`namespace="${ns.name}"`))
    .filter((line) => names.some((name) => line.includes(`name="${name}"`)));
}

const gone = async (plural: string, names: readonly string[]): Promise<true | undefined> => {
  for (const name of names) if (await getCustom(kc, ns.name, plural, name)) return undefined;
  return true;
};

async function serviceState(): Promise<{ projects: Record<string, { id: string; slug: string }> }> {
  return (await (await fetch(`${emulator.url}/_emulator/state`)).json()) as { projects: Record<string, { id: string; slug: string }> };
}

describe("a resource deleted while its service call is held", () => {
  it("leaves no metric series and draws no further call to the service", async () => {
    // SecretSyncs (Retain: no finalizer, gone at once) created, synced once, Ready: their ready
    // series and last-job series exist.
    for (const name of SYNCS) await createCustom(kc, ns.name, "secretsyncs", dataPlatformSync(name, { isAutoSyncEnabled: false }));
    const syncIds = new Map<string, string>();
    for (const name of SYNCS) {
      const obj = await waitForObject(kc, ns.name, "secretsyncs", name, {
        until: (o) => condition(o, "Ready")?.status === "True" && typeof o.status?.syncId === "string",
        timeoutMs: 60_000,
        description: `${name} Ready`,
      });
      syncIds.set(name, String(obj.status?.syncId));
    }
    for (const name of SYNCS) {
      await mergePatchCustom(kc, ns.name, "secretsyncs", name, { metadata: { annotations: { [SYNC_REQUESTED]: "one" } } });
    }
    for (const name of SYNCS) {
      await waitForObject(kc, ns.name, "secretsyncs", name, {
        until: (o) => o.status?.lastHandledSyncRequest === "one" && o.status.syncStatus === "succeeded",
        timeoutMs: 60_000,
        description: `${name} synced once`,
      });
    }
    await waitFor(async () => (seriesOf(await exposition(), SYNCS).length >= SYNCS.length * 2 ? true : undefined), {
      timeoutMs: 30_000,
      description: "a ready and a last-job series per SecretSync",
    });

    // Every second sync call and every project create is held: applied at once, answered late.
    emulator.setFaults({
      match: { method: "POST", pathPattern: "(/sync-secrets|^/api/v2/workspace)$" },
      latencyMs: HOLD_MS,
      latencyWhen: "after-handling",
    });
    for (const name of SYNCS) {
      await mergePatchCustom(kc, ns.name, "secretsyncs", name, { metadata: { annotations: { [SYNC_REQUESTED]: "two" } } });
    }
    for (const name of PROJECTS)
      await createCustom(kc, ns.name, "projects", projectObject(name, { slug: slugOf(name), providerConfigRef: { name: PROJECT_CONFIG } }));
    await waitFor(() => Promise.resolve(emulator.heldRequests() === SYNCS.length + PROJECTS.length ? true : undefined), {
      timeoutMs: HOLD_MS / 2,
      intervalMs: 50,
      description: "every call held",
    });
    for (const name of SYNCS) await deleteCustom(kc, ns.name, "secretsyncs", name);
    for (const name of PROJECTS) await deleteCustom(kc, ns.name, "projects", name);
    // Still held: the objects left while their passes were under way.
    expect(emulator.heldRequests()).toBe(SYNCS.length + PROJECTS.length);

    await waitFor(async () => ((await gone("secretsyncs", SYNCS)) ? gone("projects", PROJECTS) : undefined), {
      timeoutMs: 30_000,
      description: "every object gone from the apiserver",
    });
    const seen = Math.max(0, ...emulator.requests().map((r) => r.seq));
    // The held answers arrive, the passes end, then a few resync periods pass.
    await waitFor(() => Promise.resolve(emulator.heldRequests() === 0 ? true : undefined), {
      timeoutMs: 2 * HOLD_MS,
      description: "answers sent",
    });
    await sleep(5 * RESYNC_MS);
    emulator.setFaults({});
    const after = emulator.requests().filter((r) => r.seq > seen);

    const projectIds = Object.values((await serviceState()).projects)
      .filter((p) => PROJECTS.some((name) => slugOf(name) === p.slug))
      .map((p) => p.id);
    // Every project create landed (after handling): the ids exist for a ghost to call on.
    expect(projectIds).toHaveLength(PROJECTS.length);
    const about = (r: RecordedRequest): boolean =>
      [...syncIds.values()].some((id) => r.path.includes(id)) ||
      projectIds.some((id) => r.path.includes(id)) ||
      PROJECTS.some((name) => r.path.includes(slugOf(name)) || JSON.stringify(r.body ?? "").includes(slugOf(name)));
    const left = {
      calls: after.filter(about).map((r) => `${r.method} ${r.path}`),
      series: seriesOf(await exposition(), [...SYNCS, ...PROJECTS]),
    };
    expect(left).toEqual({ calls: [], series: [] });
  });
});
