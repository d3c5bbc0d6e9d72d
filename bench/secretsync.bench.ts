// SecretSync: latency from a `keyward.dev/sync-requested-at` annotation to keyward's sync-secrets
// call at the service, against a real kube-apiserver (test/controlplane) and the emulator.
// Measured from just before the annotation patch is sent to the emulator's request-log time of
// the call (the emulator runs in this process: one clock). One sync at a time (each round a
// different sync, so no job of an earlier round is still running), then 500 syncs annotated at
// once, for keyward's default concurrency (4 workers) and for 16. Each measurement starts once
// the service has been quiet for 2 s (keyward's start-up pass over all 500 objects is over).
import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import { promisify } from "node:util";
import { CoreV1Api, CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { closeConnections } from "../src/api/index.ts";
import { createLogger } from "../src/log.ts";
import { createOperator, type Operator } from "../src/operator.ts";
import { GROUP, VERSION } from "../src/engine/types.ts";
import { ensureBinaries, repoRoot } from "../test/controlplane/binaries.ts";
import { startControlPlane } from "../test/controlplane/controlplane.ts";
import { startEmulator, type Emulator } from "../test/emulator/server.ts";
import type { Seed } from "../test/emulator/types.ts";
import { fmtMs, median, percentile, table } from "./stats.ts";
import { waitForCrdsEstablished } from "../test/controlplane/crds-established.ts";

const run = promisify(execFile);
const TOKEN = "bench-secretsync-token";
const NAMESPACE = "bench";
const SYNCS = 500;
const SINGLE_ROUNDS = 20;
const DEMO_PROJECT = "a1b2c3d4-0005-4a00-8000-000000000001";
const DATA_PLATFORM_CONNECTION = "a1b2c3d4-0004-4a00-8000-000000000003";
const ANNOTATION = "keyward.dev/sync-requested-at";

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `fn` over `items` with at most `limit` in flight. */
async function inBatches<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const item = items[next++];
        if (item !== undefined) await fn(item);
      }
    }),
  );
}

async function setUp(kc: KubeConfig, kubectl: string, kubeconfigPath: string, emulator: Emulator): Promise<void> {
  const crds = readdirSync(join(repoRoot, "crds"))
    .filter((f) => f.endsWith(".yaml"))
    .flatMap((f) => ["-f", join(repoRoot, "crds", f)]);
  await run(kubectl, ["--kubeconfig", kubeconfigPath, "apply", "--server-side", ...crds]);
  await waitForCrdsEstablished(async (args) => (await run(kubectl, ["--kubeconfig", kubeconfigPath, ...args])).stdout, crds);
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: NAMESPACE } } });
  await core.createNamespacedSecret({
    namespace: NAMESPACE,
    body: {
      metadata: {
        name: "token",
        labels: { "keyward.dev/credentials": "true" },
        annotations: { "keyward.dev/allowed-base-urls": emulator.url },
      },
      stringData: { token: TOKEN },
    },
  });
  const custom = kc.makeApiClient(CustomObjectsApi);
  const create = (plural: string, body: object) =>
    custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: NAMESPACE, plural, body });
  await create("providerconfigs", {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: "ProviderConfig",
    metadata: { name: "default" },
    spec: {
      baseUrl: emulator.url,
      credentialsSecretRef: { name: "token" },
      timeoutSeconds: 30,
      rateLimit: { requestsPerSecond: 5000, burst: 5000 },
    },
  });
  const names = Array.from({ length: SYNCS }, (_, i) => `sync-${String(i).padStart(3, "0")}`);
  await inBatches(names, 32, async (name) => {
    await create("secretsyncs", {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: "SecretSync",
      metadata: { name },
      spec: {
        projectId: DEMO_PROJECT,
        destination: "data-platform",
        connectionId: DATA_PLATFORM_CONNECTION,
        environment: "dev",
        secretPath: "/",
        destinationConfig: { scope: name },
        isAutoSyncEnabled: false,
      },
    });
  });
}

async function syncIds(kc: KubeConfig): Promise<Map<string, string>> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const list = (await custom.listNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace: NAMESPACE,
    plural: "secretsyncs",
  })) as {
    items: { metadata: { name: string }; status?: { syncId?: string } }[];
  };
  return new Map(list.items.flatMap((o) => (o.status?.syncId ? [[o.metadata.name, o.status.syncId] as const] : [])));
}

/** Waits until the service has seen no request for `quietMs`: keyward's start-up pass over every object is over. */
async function quiesce(emulator: Emulator, quietMs = 2_000): Promise<void> {
  let seen = emulator.requests().length;
  let quietSince = Date.now();
  while (Date.now() - quietSince < quietMs) {
    await sleep(100);
    const now = emulator.requests().length;
    if (now !== seen) {
      seen = now;
      quietSince = Date.now();
    }
  }
}

function startKeyward(kc: KubeConfig, concurrency: number): Promise<Operator> {
  const quiet = new Writable({ write: (_chunk, _enc, cb) => cb() });
  const operator = createOperator({
    kc,
    log: createLogger({ level: "warn" }, quiet),
    namespaces: [NAMESPACE],
    concurrency,
    resyncIntervalMs: 600_000,
  });
  return operator.start().then(() => operator);
}

/** Annotates each sync once; returns each one's latency (patch sent → call logged) and the wall time of the whole batch. */
async function measure(
  kc: KubeConfig,
  emulator: Emulator,
  ids: Map<string, string>,
  names: readonly string[],
  value: string,
  patchConcurrency: number,
): Promise<{ latencies: number[]; wallMs: number }> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const sentAt = new Map<string, number>();
  const from = emulator.requests().length;
  const started = Date.now();
  await inBatches(names, patchConcurrency, async (name) => {
    sentAt.set(name, Date.now());
    await custom.patchNamespacedCustomObject(
      {
        group: GROUP,
        version: VERSION,
        namespace: NAMESPACE,
        plural: "secretsyncs",
        name,
        body: { metadata: { annotations: { [ANNOTATION]: value } } },
      },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
  });
  const wanted = new Map(names.map((n) => [ids.get(n) ?? "", n]));
  const calledAt = new Map<string, number>();
  while (calledAt.size < wanted.size) {
    for (const r of emulator.requests().slice(from)) {
      if (r.operation !== "triggerSecretSync" || r.status !== 200) continue;
      const name = wanted.get(r.path.split("/")[5] ?? "");
      if (name !== undefined && !calledAt.has(name)) calledAt.set(name, Date.parse(r.at));
    }
    if (calledAt.size < wanted.size) await sleep(20);
  }
  const latencies = names.map((n) => (calledAt.get(n) ?? Number.NaN) - (sentAt.get(n) ?? Number.NaN));
  return { latencies, wallMs: Math.max(...calledAt.values()) - started };
}

export default async function bench(): Promise<void> {
  const binaries = await ensureBinaries({ log: () => undefined });
  const plane = await startControlPlane({ binaries, withControllerManager: false });
  const seed = JSON.parse(readFileSync(join(repoRoot, "test/emulator/seed.default.json"), "utf8")) as Seed;
  const emulator = await startEmulator({ tokens: [TOKEN], seed, jobDelayMs: 50 });
  const kc = new KubeConfig();
  kc.loadFromFile(plane.kubeconfigPath);
  try {
    await setUp(kc, binaries.kubectl ?? "kubectl", plane.kubeconfigPath, emulator);
    const rows: Array<Record<string, string | number>> = [];
    let round = 0;
    for (const concurrency of [4, 16]) {
      const keyward = await startKeyward(kc, concurrency);
      let ids = await syncIds(kc);
      while (ids.size < SYNCS) {
        await sleep(500);
        ids = await syncIds(kc);
      }
      const names = [...ids.keys()].sort();
      await quiesce(emulator);
      const single: number[] = [];
      for (let i = 0; i < SINGLE_ROUNDS; i++) {
        const name = names[i];
        if (name === undefined) break;
        const { latencies } = await measure(kc, emulator, ids, [name], `single-${String(++round)}`, 1);
        single.push(...latencies);
      }
      rows.push({
        syncs: 1,
        workers: concurrency,
        samples: single.length,
        median: fmtMs(median(single)),
        p99: fmtMs(percentile(single, 99)),
        "all called after": "-",
      });
      // let the single rounds' jobs settle and their passes end, so no annotation waits for one
      await quiesce(emulator);
      const many = await measure(kc, emulator, ids, names, `batch-${String(++round)}`, 64);
      rows.push({
        syncs: SYNCS,
        workers: concurrency,
        samples: many.latencies.length,
        median: fmtMs(median(many.latencies)),
        p99: fmtMs(percentile(many.latencies, 99)),
        "all called after": fmtMs(many.wallMs),
      });
      await keyward.stop();
      await sleep(500);
    }
    console.log("annotation keyward.dev/sync-requested-at → sync-secrets call at the service (patch sent → call logged)");
    console.log(table(rows));
  } finally {
    await closeConnections();
    await emulator.close();
    await plane.stop();
  }
}
