// The per-object gauges the chart's alerts read: keyward_resource_ready, the SecretSync's last job
// outcome and an AccessToken's expiry and renewal times, each set from what keyward observed and
// removed with the object.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Emulator } from "../emulator/server.ts";
import { loadDefaultSeed, seedIds } from "../emulator/default-seed.ts";
import { waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import {
  condition,
  createCustom,
  dataPlatformSync,
  deleteCustom,
  mergePatchCustom,
  projectObject,
  startTestEnv,
  waitForObject,
  type KeywardTestEnv,
} from "./support/keyward.ts";

const TOKEN = "kw-metrics-token-51aa0c";

let env: KeywardTestEnv | undefined;
let kc: KubeConfig;
let emulator: Emulator;
let ns: TestNamespace;

beforeAll(async () => {
  env = await startTestEnv({
    prefix: "metrics",
    token: TOKEN,
    emulator: { seed: loadDefaultSeed(), jobDelayMs: 50 },
    keyward: { resyncIntervalMs: 60_000 },
  });
  ({ kc, emulator, ns } = env);
});

afterAll(() => env?.stop());

async function sample(name: string, labels: Record<string, string>): Promise<number | undefined> {
  const metric = env?.keyward.operator.metrics.registry.getSingleMetric(name);
  if (!metric) return undefined;
  const values = (await metric.get()).values;
  return values.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))?.value;
}

describe("per-object gauges", () => {
  it("keyward_resource_ready follows Ready and goes with the object", async () => {
    await createCustom(kc, ns.name, "projects", projectObject("gauged", { slug: "gauged-slug" }));
    await waitForObject(kc, ns.name, "projects", "gauged", {
      until: (o) => condition(o, "Ready")?.status === "True",
      timeoutMs: 60_000,
      description: "Ready",
    });
    const series = { kind: "Project", namespace: ns.name, name: "gauged" };
    await waitFor(async () => ((await sample("keyward_resource_ready", series)) === 1 ? true : undefined), {
      timeoutMs: 10_000,
      description: "ready gauge 1",
    });
    await deleteCustom(kc, ns.name, "projects", "gauged");
    await waitFor(async () => ((await sample("keyward_resource_ready", series)) === undefined ? true : undefined), {
      timeoutMs: 30_000,
      description: "series removed",
    });
  });

  it("keyward_secretsync_last_job_failed is 1 after a failed sync job and 0 after a good one", async () => {
    await createCustom(kc, ns.name, "secretsyncs", dataPlatformSync("gauged-sync", { isAutoSyncEnabled: false }));
    const created = await waitForObject(kc, ns.name, "secretsyncs", "gauged-sync", {
      until: (o) => typeof (o.status as { syncId?: string } | undefined)?.syncId === "string",
      timeoutMs: 60_000,
      description: "created",
    });
    const syncId = String((created.status as { syncId?: string }).syncId);
    emulator.setJobOutcome({ syncId, action: "sync", outcome: "failed", message: "destination refused" });
    await mergePatchCustom(kc, ns.name, "secretsyncs", "gauged-sync", {
      metadata: { annotations: { "keyward.dev/sync-requested-at": "one" } },
    });
    const series = { namespace: ns.name, name: "gauged-sync", action: "sync" };
    await waitFor(async () => ((await sample("keyward_secretsync_last_job_failed", series)) === 1 ? true : undefined), {
      timeoutMs: 30_000,
      description: "failed gauge 1",
    });
    await mergePatchCustom(kc, ns.name, "secretsyncs", "gauged-sync", {
      metadata: { annotations: { "keyward.dev/sync-requested-at": "two" } },
    });
    await waitFor(async () => ((await sample("keyward_secretsync_last_job_failed", series)) === 0 ? true : undefined), {
      timeoutMs: 30_000,
      description: "failed gauge 0",
    });
  });

  it("an AccessToken's expiry and renewal gauges equal its status times", async () => {
    await createCustom(kc, ns.name, "accesstokens", {
      apiVersion: "keyward.dev/v1alpha1",
      kind: "AccessToken",
      metadata: { name: "gauged-token" },
      spec: { identityId: seedIds.identity, secretName: "gauged-token" },
    });
    const ready = await waitForObject(kc, ns.name, "accesstokens", "gauged-token", {
      until: (o) => condition(o, "Ready")?.status === "True" && typeof (o.status as { renewAt?: string } | undefined)?.renewAt === "string",
      timeoutMs: 60_000,
      description: "Ready with a renewal time",
    });
    const status = ready.status as { expiresAt: string; renewAt: string };
    const series = { kind: "AccessToken", namespace: ns.name, name: "gauged-token" };
    await waitFor(
      async () =>
        (await sample("keyward_token_renewal_due_timestamp_seconds", series)) === Date.parse(status.renewAt) / 1000 ? true : undefined,
      { timeoutMs: 10_000, description: "renewal gauge" },
    );
    expect(await sample("keyward_token_expiry_timestamp_seconds", series)).toBe(Date.parse(status.expiresAt) / 1000);
  });
});
