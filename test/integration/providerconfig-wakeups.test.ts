// Write amplification: a ProviderConfig's own status writes that change nothing its users read
// (the token schedule, say) wake none of them; a change they depend on (its spec) wakes each once.
// Counted with controller_runtime_reconcile_total{controller="project"}, never timed.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KubeConfig } from "@kubernetes/client-node";
import { loadDefaultSeed } from "../emulator/default-seed.ts";
import { kubectl, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import { condition, getCustom, mergePatchCustom, startTestEnv, type KeywardTestEnv } from "./support/keyward.ts";
import { GROUP, VERSION } from "../../src/engine/types.ts";

const TOKEN = "kw-wakeups-token-7c41d0";
const N = 200;
const K = 5;

let env: KeywardTestEnv | undefined;
let kc: KubeConfig;
let ns: TestNamespace;

beforeAll(async () => {
  env = await startTestEnv({
    prefix: "pc-wakeups",
    token: TOKEN,
    emulator: { seed: loadDefaultSeed() },
    // No resync within the test: every reconcile counted comes from an event.
    keyward: { resyncIntervalMs: 3_600_000 },
  });
  ({ kc, ns } = env);
}, 60_000);

afterAll(() => env?.stop());

async function sample(name: string, labels: Record<string, string>): Promise<number> {
  const metric = env?.keyward.operator.metrics.registry.getSingleMetric(name);
  if (!metric) return 0;
  return (await metric.get()).values
    .filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))
    .reduce((sum, v) => sum + v.value, 0);
}

const projectReconciles = (): Promise<number> => sample("controller_runtime_reconcile_total", { controller: "project" });

/** Waits until the project controller has nothing queued and nothing running. */
async function projectsIdle(): Promise<void> {
  await waitFor(
    async () =>
      (await sample("workqueue_depth", { name: "project" })) === 0 &&
      (await sample("controller_runtime_active_workers", { controller: "project" })) === 0
        ? true
        : undefined,
    { timeoutMs: 120_000, description: "the project queue drained" },
  );
}

async function statusPatch(name: string, patch: object): Promise<void> {
  const result = await kubectl([
    "patch",
    "providerconfigs.keyward.dev",
    name,
    "-n",
    ns.name,
    "--subresource=status",
    "--type=merge",
    "-p",
    JSON.stringify(patch),
  ]);
  if (result.code !== 0) throw new Error(`status patch failed: ${result.stderr}`);
}

describe("ProviderConfig wake-ups", () => {
  it(`status-only writes on a ProviderConfig with ${String(N)} Projects wake none; a spec change wakes each once`, async () => {
    const items = Array.from({ length: N }, (_, i) => ({
      apiVersion: `${GROUP}/${VERSION}`,
      kind: "Project",
      metadata: { name: `p-${String(i)}` },
      spec: { slug: `wake-${String(i)}`, providerConfigRef: { name: "default" } },
    }));
    const applied = await kubectl(["apply", "-n", ns.name, "-f", "-"], {
      input: JSON.stringify({ apiVersion: "v1", kind: "List", items }),
    });
    expect(applied.code, applied.stderr).toBe(0);
    await waitFor(
      async () => {
        const list = await kubectl(["get", "projects.keyward.dev", "-n", ns.name, "-o", "json"]);
        const objs = (JSON.parse(list.stdout) as { items: Parameters<typeof condition>[0][] }).items;
        return objs.length === N && objs.every((o) => condition(o, "Ready")?.status === "True") ? true : undefined;
      },
      { timeoutMs: 240_000, description: `${String(N)} Projects Ready` },
    );
    await projectsIdle();
    const before = await projectReconciles();

    // K status writes of fields keyward's users do not read (the token schedule). Between them,
    // a short wait for the wake-ups they would cause, so none is merged with the next in the queue.
    for (let i = 0; i < K; i++) {
      const at = new Date(Date.UTC(2030, 0, 1 + i)).toISOString().replace(/\.\d+Z$/, "Z");
      await statusPatch("default", { status: { tokenRenewAt: at, tokenExpiresAt: at } });
      const base = await projectReconciles();
      await waitFor(async () => ((await projectReconciles()) >= base + N ? true : undefined), {
        timeoutMs: 3_000,
        description: "wake-ups of a status write",
      }).catch(() => undefined);
    }

    // A spec change (a new generation) matters to every user: each wakes once. The watch delivers
    // the ProviderConfig's events in order, so once these wake-ups are done the status writes'
    // are too.
    await mergePatchCustom(kc, ns.name, "providerconfigs", "default", { spec: { timeoutSeconds: 6 } });
    await waitFor(async () => ((await projectReconciles()) >= before + N ? true : undefined), {
      timeoutMs: 120_000,
      description: "every Project woken by the spec change",
    });
    await projectsIdle();
    const pc = await getCustom(kc, ns.name, "providerconfigs", "default");
    expect(pc?.metadata.generation).toBe(2);
    const extra = (await projectReconciles()) - before;
    // Today's code: every status write wakes all N, (K+1)·N in all.
    expect(extra).toBeGreaterThanOrEqual(N);
    expect(extra).toBeLessThan(N + N / 2);
  }, 600_000);
});
