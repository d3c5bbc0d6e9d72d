// keyward's reconcile engine at scale: a real kube-apiserver with etcd, the emulator (in a
// worker thread, no rate limit) and keyward in-process. Three measures:
// 1. N Projects (N = 1, 100, 500) created through the apiserver as fast as it takes them, until
//    all are Ready: per-object create→Ready latency (the Ready condition's lastTransitionTime
//    minus creationTimestamp, and minus the moment the create was sent), wall time, objects/s;
// 2. steady state over two resync periods: service calls per object per resync (reads; writes
//    must be 0), reconciles, and writes to the objects and apiserver requests by resource;
// 3. memory of keyward's thread before and after the 500 Projects are Ready.
// Each N gets its own namespace and its own keyward, so a run never carries the previous run's
// objects. ENGINE_BENCH_SIZES=1,100 overrides the sizes (the last one is the memory and steady
// state run).
import { Writable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { createLogger } from "../src/log.ts";
import { createOperator, type Operator } from "../src/operator.ts";
import { createKube, type Kube } from "../src/kube/client.ts";
import { getObject } from "../src/kube/objects.ts";
import { ref as projectRef } from "../src/resources/project.ts";
import { ref as providerConfigRef } from "../src/resources/providerconfig.ts";
import type { Metrics } from "../src/engine/metrics.ts";
import { API_VERSION } from "../src/engine/types.ts";
import { createCustom } from "../test/integration/support/keyward.ts";
import { startCluster, type BenchCluster } from "./support/cluster.ts";
import { startEmulatorThread, type EmulatorThread } from "./support/emulator.ts";
import { watchReady, type ReadyWatch } from "./support/readiness.ts";
import { kb, mb, sampleMemory, type MemorySample } from "./support/memory.ts";
import { countConnections } from "./support/connections.ts";
import { countsDelta, parseRequestCounts, type RequestCounts } from "./support/apiserver-metrics.ts";
import type { RecordedRequest } from "../test/emulator/server.ts";
import { fmtMs, median, percentile, table } from "./stats.ts";

const SIZES = (process.env["ENGINE_BENCH_SIZES"] ?? "1,100,500").split(",").map(Number).filter((n) => n > 0);
const RESYNC_MS = 10_000;
// keyward's default CONCURRENCY (src/config.ts).
const CONCURRENCY = 4;
// Create requests in flight at once: enough to keep the apiserver busy.
const CREATES_IN_FLIGHT = 32;
const TOKEN = "bench-engine-token";
// Safety net, not a timing claim.
const READY_TIMEOUT_MS = 240_000;

type Row = Record<string, string | number>;

interface RunContext {
  cluster: BenchCluster;
  kube: Kube;
  emulator: EmulatorThread;
}

interface Running {
  namespace: string;
  operator: Operator;
  watch: ReadyWatch;
  stop(): Promise<void>;
}

const progress = (line: string): void => {
  process.stderr.write(`[engine.bench] ${line}\n`);
};

export default async function bench(): Promise<void> {
  const startedAt = Date.now();
  const cluster = await startCluster(progress);
  const emulator = await startEmulatorThread(TOKEN).catch(async (error: unknown) => {
    await cluster.stop();
    throw error;
  });
  const ctx: RunContext = { cluster, kube: createKube(cluster.kc), emulator };
  const createRows: Row[] = [];
  let steadyRows: Row[] = [];
  let memoryRows: Row[] = [];
  try {
    for (const [index, n] of SIZES.entries()) {
      const running = await startRun(ctx, `bench-engine-${index + 1}-${n}`);
      try {
        if (index < SIZES.length - 1) {
          createRows.push(await createUntilReady(ctx, running, n));
        } else {
          const measured = await measuredRun(ctx, running, n);
          createRows.push(measured.create);
          steadyRows = measured.steady;
          memoryRows = measured.memory;
        }
      } finally {
        await running.stop();
      }
    }
  } finally {
    await emulator.close();
    await cluster.stop();
  }
  console.log(
    `kube-apiserver ${cluster.kubeVersion}; keyward concurrency ${CONCURRENCY}, resync ${RESYNC_MS / 1000} s, ` +
      `ProviderConfig client limit 10000 req/s; ${CREATES_IN_FLIGHT} creates in flight; emulator in a worker thread, no rate limit`,
  );
  console.log("\n### 1. Create N Projects until all Ready");
  console.log("latency: Ready.lastTransitionTime − creationTimestamp (whole seconds, so up to 1 s high) and − the moment the create was sent;");
  console.log("svc = calls to the service (emulator log); obj writes = watch MODIFIED events; conns = connections opened (kube: incl. this bench's create request)");
  console.log(table(createRows));
  console.log("\n### 2. Steady state (after the last run's Projects are Ready)");
  console.log(table(steadyRows));
  console.log("\n### 3. Memory (median of 3 samples, each after a full GC; heap = keyward's thread incl. this bench's watcher;");
  console.log("object heap = heap without code/bytecode spaces; RSS = whole process incl. the emulator thread)");
  console.log(table(memoryRows));
  console.log(`\nengine bench took ${((Date.now() - startedAt) / 1000).toFixed(0)} s`);
}

// A namespace with a token Secret and a ProviderConfig, keyward watching it, and a watcher
// recording when each Project becomes Ready.
async function startRun(ctx: RunContext, namespace: string): Promise<Running> {
  await ctx.kube.core.createNamespace({ body: { metadata: { name: namespace } } });
  await installProviderConfig(ctx, namespace);
  const nullSink = new Writable({
    write(_chunk, _encoding, callback) {
      callback();
    },
  });
  const operator = createOperator({
    kc: ctx.cluster.kc,
    log: createLogger({ level: "warn" }, nullSink),
    namespaces: [namespace],
    concurrency: CONCURRENCY,
    resyncIntervalMs: RESYNC_MS,
  });
  await operator.start();
  const watch = await watchReady(ctx.kube, projectRef, namespace);
  await waitUntil(async () => ready(await getObject(ctx.kube, providerConfigRef, { namespace, name: "default" })), 60_000, "ProviderConfig Ready");
  return {
    namespace,
    operator,
    watch,
    stop: async () => {
      watch.stop();
      await operator.stop();
    },
  };
}

// The last (largest) run: memory before and after, and the steady state in between.
async function measuredRun(ctx: RunContext, run: Running, n: number): Promise<{ create: Row; steady: Row[]; memory: Row[] }> {
  // The previous run's connections linger until their keep-alive timeout (undici: 4 s);
  // the baseline waits them out.
  await sleep(5_000);
  const before = await memoryRow(ctx, "keyward running, 0 Projects");
  const create = await createUntilReady(ctx, run, n);
  const atReady = await memoryRow(ctx, `${n} Projects Ready`);
  await settle(run.operator.metrics);
  const idle = await memoryRow(ctx, `${n} Projects, queue idle`);
  const steady = await steadyState(ctx, run, n);
  // A resync's burst may be under way when the window ends; sample between bursts.
  await settle(run.operator.metrics);
  const afterSteady = await memoryRow(ctx, `${n} Projects, after 2 resyncs, queue idle`);
  const memory = [
    before.row,
    atReady.row,
    idle.row,
    afterSteady.row,
    perObjectRow("at Ready", before.sample, atReady.sample, n),
    perObjectRow("after 2 resyncs, idle", before.sample, afterSteady.sample, n),
  ];
  return { create, steady, memory };
}

// Like test/integration/support/keyward.ts installProvider, with the client-side rate limit
// at its maximum so the figures are keyward's engine, not its limiter.
async function installProviderConfig(ctx: RunContext, namespace: string): Promise<void> {
  await ctx.kube.core.createNamespacedSecret({ namespace, body: { metadata: { name: "default-token" }, stringData: { token: TOKEN } } });
  await createCustom(ctx.cluster.kc, namespace, "providerconfigs", {
    apiVersion: API_VERSION,
    kind: "ProviderConfig",
    metadata: { name: "default" },
    spec: {
      baseUrl: ctx.emulator.url,
      credentialsSecretRef: { name: "default-token" },
      rateLimit: { requestsPerSecond: 10_000, burst: 10_000 },
      timeoutSeconds: 10,
    },
  });
}

async function createUntilReady(ctx: RunContext, run: Running, n: number): Promise<Row> {
  await ctx.emulator.clearRequests();
  const reconcilesBefore = await reconcileCount(run.operator.metrics, "project");
  const modifiedBefore = run.watch.modifications();
  const connections = countConnections();
  const sentAt = new Map<string, number>();
  const names = Array.from({ length: n }, (_, i) => `${run.namespace}-${i}`);
  progress(`creating ${n} Projects in ${run.namespace}`);
  const started = Date.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(CREATES_IN_FLIGHT, n) }, async () => {
      while (next < names.length) {
        const name = names[next++] as string;
        sentAt.set(name, Date.now());
        await ctx.kube.custom.createNamespacedCustomObject({
          group: projectRef.group,
          version: projectRef.version,
          namespace: run.namespace,
          plural: projectRef.plural,
          body: { apiVersion: API_VERSION, kind: projectRef.kind, metadata: { name }, spec: {} },
        });
      }
    }),
  );
  const created = Date.now();
  await run.watch.waitForReady(n, READY_TIMEOUT_MS);
  const times = names.map((name) => run.watch.ready.get(name)).filter((t) => t !== undefined);
  const allReady = Math.max(...times.map((t) => t.seenMs));
  const fromCreation = times.map((t) => t.readyMs - t.createdMs);
  const fromSent = names.flatMap((name) => {
    const t = run.watch.ready.get(name);
    const sent = sentAt.get(name);
    return t && sent !== undefined ? [t.readyMs - sent] : [];
  });
  // listProjects is the ProviderConfig's credential check, not a Project's call.
  const calls = splitCalls((await ctx.emulator.requests()).filter((r) => r.operation !== "listProjects"));
  const reconciles = (await reconcileCount(run.operator.metrics, "project")) - reconcilesBefore;
  connections.stop();
  const wallSeconds = (allReady - started) / 1000;
  progress(`${n} Projects Ready in ${wallSeconds.toFixed(1)} s`);
  return {
    N: n,
    "creates took": fmtMs(created - started),
    "all Ready": fmtMs(allReady - started),
    "objects/s": (n / wallSeconds).toFixed(1),
    "median (creationTs)": fmtMs(median(fromCreation)),
    "p99 (creationTs)": fmtMs(percentile(fromCreation, 99)),
    "median (sent)": fmtMs(median(fromSent)),
    "p99 (sent)": fmtMs(percentile(fromSent, 99)),
    "reconciles/obj": (reconciles / n).toFixed(2),
    "svc reads/obj": (calls.reads.length / n).toFixed(2),
    "svc writes/obj": (calls.writes.length / n).toFixed(2),
    "obj writes/obj": ((run.watch.modifications() - modifiedBefore) / n).toFixed(2),
    "kube conns/obj": ((connections.opened().get("https:") ?? 0) / n).toFixed(2),
    "svc conns/obj": ((connections.opened().get("http:") ?? 0) / n).toFixed(2),
  };
}

// Two resync periods with nothing changing: what keyward asks of the service and of the
// apiserver just to keep checking.
async function steadyState(ctx: RunContext, run: Running, n: number): Promise<Row[]> {
  progress(`steady state: watching ${n} Projects for ${(2 * RESYNC_MS) / 1000} s`);
  await ctx.emulator.clearRequests();
  const projectBefore = await reconcileCount(run.operator.metrics, "project");
  const providerBefore = await reconcileCount(run.operator.metrics, "providerconfig");
  const modifiedBefore = run.watch.modifications();
  const apiBefore = await apiserverRequests(ctx);
  const connections = countConnections();
  const started = Date.now();
  await sleep(2 * RESYNC_MS);
  const windowMs = Date.now() - started;
  connections.stop();
  const apiDelta = countsDelta(apiBefore, await apiserverRequests(ctx));
  const calls = splitCalls(await ctx.emulator.requests());
  const reconciles = (await reconcileCount(run.operator.metrics, "project")) - projectBefore;
  const providerReconciles = (await reconcileCount(run.operator.metrics, "providerconfig")) - providerBefore;
  const resyncsPerObject = reconciles / n;
  const perObjectPerResync = (count: number): string => (reconciles === 0 ? "n/a" : (count / reconciles).toFixed(2));
  const projectReads = calls.reads.filter((r) => r.operation !== "listProjects");
  const keywardRequests = [...apiDelta].filter(([key]) => /projects|providerconfigs|secrets|events/.test(key));
  return [
    { measure: "window", value: `${(windowMs / 1000).toFixed(1)} s (resync interval ${RESYNC_MS / 1000} s)` },
    { measure: "Projects", value: n },
    { measure: "project reconciles", value: reconciles },
    { measure: "resyncs per object (reconciles / N)", value: resyncsPerObject.toFixed(2) },
    { measure: "providerconfig reconciles", value: providerReconciles },
    { measure: "service reads, all", value: `${calls.reads.length} (${byOperation(calls.reads)})` },
    { measure: "service reads per object per resync", value: perObjectPerResync(projectReads.length) },
    { measure: "service writes", value: `${calls.writes.length}${calls.writes.length > 0 ? ` (${byOperation(calls.writes)})` : ""}` },
    { measure: "Project writes seen (watch MODIFIED)", value: run.watch.modifications() - modifiedBefore },
    {
      measure: "connections opened per object per resync",
      value: `apiserver ${perObjectPerResync(connections.opened().get("https:") ?? 0)}, service ${perObjectPerResync(connections.opened().get("http:") ?? 0)}`,
    },
    {
      measure: "apiserver requests per object per resync",
      value: keywardRequests.length === 0 ? "0" : keywardRequests.map(([key, count]) => `${key} ${perObjectPerResync(count)}`).join(", "),
    },
  ];
}

async function memoryRow(ctx: RunContext, label: string): Promise<{ sample: MemorySample; row: Row }> {
  const sample = await sampleMemory();
  return {
    sample,
    row: {
      when: label,
      "RSS MB": mb(sample.rss),
      "heap used MB": mb(sample.heapUsed),
      "object heap MB": mb(sample.objectHeap),
      "open sockets": openSockets(),
      "emulator heap MB": mb(await ctx.emulator.heapUsed()),
    },
  };
}

function perObjectRow(label: string, before: MemorySample, after: MemorySample, n: number): Row {
  const perObject = (pick: (s: MemorySample) => number): string => `${kb((pick(after) - pick(before)) / n)} KB`;
  return {
    when: `per Project, ${label}`,
    "RSS MB": perObject((s) => s.rss),
    "heap used MB": perObject((s) => s.heapUsed),
    "object heap MB": perObject((s) => s.objectHeap),
    "open sockets": "",
    "emulator heap MB": "",
  };
}

// Sockets open on this thread: keyward's and the watcher's connections (the emulator's server
// side lives in its own thread).
function openSockets(): number {
  const all = process.getActiveResourcesInfo();
  return all.filter((r) => r === "TLSWrap" || r === "TCPSocketWrap").length;
}

function splitCalls(requests: RecordedRequest[]): { reads: RecordedRequest[]; writes: RecordedRequest[] } {
  return { reads: requests.filter((r) => r.method === "GET"), writes: requests.filter((r) => r.method !== "GET") };
}

function byOperation(requests: RecordedRequest[]): string {
  const counts = new Map<string, number>();
  for (const r of requests) counts.set(r.operation, (counts.get(r.operation) ?? 0) + 1);
  return [...counts].map(([op, count]) => `${op} ${count}`).join(", ");
}

async function reconcileCount(metrics: Metrics, controller: string): Promise<number> {
  const metric = await metrics.reconcileTotal.get();
  return metric.values.filter((v) => v.labels.controller === controller).reduce((sum, v) => sum + v.value, 0);
}

// Waits until the project controller has had nothing to do for two seconds: the reconciles
// triggered by keyward's own last status writes are over.
async function settle(metrics: Metrics): Promise<void> {
  let last = await reconcileCount(metrics, "project");
  for (let quiet = 0, waited = 0; quiet < 4 && waited < 30; waited++) {
    await sleep(500);
    const now = await reconcileCount(metrics, "project");
    quiet = now === last ? quiet + 1 : 0;
    last = now;
  }
}

async function apiserverRequests(ctx: RunContext): Promise<RequestCounts> {
  return parseRequestCounts(await ctx.cluster.kubectl(["get", "--raw", "/metrics"]));
}

function ready(obj: { metadata: { generation?: number }; status?: { conditions?: Array<{ type: string; status: string; observedGeneration?: number }> } } | undefined): true | undefined {
  const c = obj?.status?.conditions?.find((x) => x.type === "Ready");
  return c?.status === "True" && c.observedGeneration === obj?.metadata.generation ? true : undefined;
}

async function waitUntil(check: () => Promise<true | undefined>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await check()) === undefined) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}
