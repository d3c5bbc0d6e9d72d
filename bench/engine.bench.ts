// keyward's reconcile engine at scale: a real kube-apiserver with etcd, the emulator (in a
// worker thread, no rate limit) and keyward in-process. Three measures:
// 1. N Projects (N = 1, 100, 1000) created through the apiserver as fast as it takes them, until
//    all are Ready: wall time, per-object create→Ready latency, API calls per object (service
//    and apiserver) and peak RSS sampled every 100 ms; next to it THE FLOOR: the same N
//    createProject calls made directly by the service client (src/api createApiClient) at
//    keyward's concurrency (4 in flight) against the same emulator thread with its state reset,
//    i.e. the time the service alone needs for N creates, and keyward's time over it;
// 2. steady state over two resync periods: service calls per object per resync (reads; writes
//    must be 0), reconciles, and writes to the objects and apiserver requests by resource;
// 3. memory of keyward's thread before and after the 1000 Projects are Ready.
// Creation runs at keyward's default resync (10 min), so no resync competes with the creates
// for the 4 workers; the steady state restarts keyward with a 10 s resync to see two in 20 s.
// Each N gets its own namespace, its own keyward and a reset emulator, so a run never carries
// the previous run's objects. ENGINE_BENCH_SIZES=1,100 overrides the sizes (the last one is the
// memory and steady state run).
import { performance } from "node:perf_hooks";
import { Writable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { closeConnections, createApiClient, type RateLimit } from "../src/api/index.ts";
import { createLogger } from "../src/log.ts";
import { createOperator, type Operator } from "../src/operator.ts";
import { createKube, type Kube } from "../src/kube/client.ts";
import { getObject } from "../src/kube/objects.ts";
import { desiredSlug, ref as projectRef } from "../src/resources/project.ts";
import { ref as providerConfigRef } from "../src/resources/providerconfig.ts";
import type { Metrics } from "../src/engine/metrics.ts";
import { API_VERSION } from "../src/engine/types.ts";
import { createCustom } from "../test/integration/support/keyward.ts";
import { testApis } from "../test/controlplane/testenv.ts";
import { startCluster, type BenchCluster } from "./support/cluster.ts";
import { startEmulatorThread, type EmulatorThread } from "./support/emulator.ts";
import { watchReady, type ReadyWatch } from "./support/readiness.ts";
import { kb, mb, sampleMemory, samplePeak, type MemorySample, type PeakMemory } from "./support/memory.ts";
import { countConnections } from "./support/connections.ts";
import { countsDelta, parseRequestCounts, type RequestCounts } from "./support/apiserver-metrics.ts";
import { runInFlight } from "./support/in-flight.ts";
import type { RecordedRequest } from "../test/emulator/server.ts";
import { fmtMs, median, percentile, table } from "./stats.ts";

const SIZES = (process.env["ENGINE_BENCH_SIZES"] ?? "1,100,1000").split(",").map(Number).filter((n) => n > 0);
// keyward's default RESYNC_INTERVAL (src/config.ts): what the creation runs use.
const CREATE_RESYNC_MS = 600_000;
// The steady-state run's, so two resyncs fit in 20 s.
const STEADY_RESYNC_MS = 10_000;
// keyward's default CONCURRENCY (src/config.ts), and the floor's calls in flight.
const CONCURRENCY = 4;
// Create requests in flight at once: enough to keep the apiserver busy.
const CREATES_IN_FLIGHT = 32;
const TOKEN = "bench-engine-token";
// The ProviderConfig's client-side limit, at its maximum so the figures are keyward's engine,
// not its limiter; the floor's client gets the same.
const SERVICE_RATE_LIMIT: RateLimit = { requestsPerSecond: 10_000, burst: 10_000 };
const SERVICE_TIMEOUT_MS = 10_000;
// Safety net, not a timing claim.
const readyTimeoutMs = (n: number): number => 60_000 + 300 * n;
// What keyward itself asks of the apiserver (the apiserver's own bookkeeping is left out).
const keywardResources = /projects|providerconfigs|secrets|events/;

type Row = Record<string, string | number>;

interface RunContext {
  cluster: BenchCluster;
  kube: Kube;
  emulator: EmulatorThread;
}

interface Running {
  namespace: string;
  /** Replaced when the steady state restarts keyward with a shorter resync. */
  operator: Operator;
  watch: ReadyWatch;
}

interface Floor {
  ms: number;
  memory: PeakMemory;
}

interface SizeResult {
  timing: Row;
  calls: Row;
  apiserver: Row;
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
  const results: SizeResult[] = [];
  let steadyRows: Row[] = [];
  let memoryRows: Row[] = [];
  try {
    for (const [index, n] of SIZES.entries()) {
      const namespace = `bench-engine-${index + 1}-${n}`;
      const names = Array.from({ length: n }, (_, i) => `${namespace}-${i}`);
      const floor = await measureFloor(ctx, names);
      const running = await startRun(ctx, namespace);
      try {
        if (index < SIZES.length - 1) {
          results.push(await createUntilReady(ctx, running, names, floor));
        } else {
          const measured = await measuredRun(ctx, running, names, floor);
          results.push(measured.create);
          steadyRows = measured.steady;
          memoryRows = measured.memory;
        }
      } finally {
        running.watch.stop();
        await running.operator.stop();
      }
    }
  } finally {
    await emulator.close();
    await cluster.stop();
  }
  console.log(
    `kube-apiserver ${cluster.kubeVersion}; keyward concurrency ${CONCURRENCY}, resync ${CREATE_RESYNC_MS / 60_000} min while creating ` +
      `(its default), ${STEADY_RESYNC_MS / 1000} s for the steady state; ProviderConfig client limit ${SERVICE_RATE_LIMIT.requestsPerSecond} req/s; ` +
      `${CREATES_IN_FLIGHT} creates in flight to the apiserver; emulator in a worker thread, no rate limit, state reset before each measure`,
  );
  console.log("\n### 1. Create N Projects until all Ready, against the floor");
  console.log(
    `floor = the same N createProject calls keyward makes (same names, slugs and bodies), sent directly by the service client ` +
      `(src/api createApiClient, the ProviderConfig's timeout and rate limit) ${CONCURRENCY} in flight (keyward's concurrency) ` +
      "to the same emulator thread with its state reset: the time the service alone needs for N creates; no Kubernetes, no reads.",
  );
  console.log("all Ready = from the first create sent to the apiserver until the bench's watcher saw the last Project Ready; ratio = all Ready / floor;");
  console.log("latency: Ready.lastTransitionTime − creationTimestamp (whole seconds, so up to 1 s high) and − the moment the create was sent");
  console.log(table(results.map((r) => r.timing)));
  console.log("\nAPI calls per object, counted from the first create until keyward's queue is idle after all Ready:");
  console.log("svc = calls to the service (emulator log; the ProviderConfig's listProjects check left out); kube reqs = keyward's requests to the apiserver");
  console.log("(apiserver_request_total for projects, providerconfigs, secrets and events, without the bench's own N creates);");
  console.log("obj writes = watch MODIFIED events; conns = connections opened (kube: incl. this bench's create requests);");
  console.log("peak = max of process.memoryUsage() sampled every 100 ms from the first create until all Ready, no GC forced (+ growth from the start);");
  console.log("RSS is the whole process (keyward, the bench's watcher and the emulator thread), heap is keyward's thread (incl. the watcher)");
  console.log(table(results.map((r) => r.calls)));
  console.log("\nkeyward's apiserver requests per object, by verb and resource:");
  console.log(table(results.map((r) => r.apiserver)));
  console.log(`\n### 2. Steady state (the last run's Projects Ready, keyward restarted with resync ${STEADY_RESYNC_MS / 1000} s, its first pass over)`);
  console.log(table(steadyRows));
  console.log("\n### 3. Memory (median of 3 samples, each after a full GC; heap = keyward's thread incl. this bench's watcher;");
  console.log("object heap = heap without code/bytecode spaces; RSS = whole process incl. the emulator thread)");
  console.log(table(memoryRows));
  console.log(`\nengine bench took ${((Date.now() - startedAt) / 1000).toFixed(0)} s`);
}

// The floor: keyward's create calls without keyward. Same emulator thread, its state reset
// before and after, so neither this nor keyward's run sees the other's projects.
async function measureFloor(ctx: RunContext, names: readonly string[]): Promise<Floor> {
  await ctx.emulator.reset();
  await closeConnections();
  const api = createApiClient({ baseUrl: ctx.emulator.url, token: TOKEN, timeoutMs: SERVICE_TIMEOUT_MS, rateLimit: SERVICE_RATE_LIMIT });
  // keyward's ProviderConfig makes this call before any Project's; here it warms the client
  // and the connection pool the same way, outside the timed part.
  await api.listProjects({});
  await ctx.emulator.clearRequests();
  progress(`floor: ${names.length} createProject calls, ${CONCURRENCY} in flight`);
  const peak = samplePeak();
  const started = performance.now();
  // A Project with an empty spec: the body keyward's create sends (src/resources/project.ts).
  await runInFlight(names, CONCURRENCY, (name) => api.createProject({ projectName: name, slug: desiredSlug({}, { name }) }));
  const ms = performance.now() - started;
  const memory = peak.stop();
  const creates = (await ctx.emulator.requests()).filter((r) => r.operation === "createProject" && r.status === 200).length;
  if (creates !== names.length) throw new Error(`floor: the emulator logged ${creates} successful creates, not ${names.length}`);
  await ctx.emulator.reset();
  await closeConnections();
  return { ms, memory };
}

// A namespace with a token Secret and a ProviderConfig, keyward watching it, and a watcher
// recording when each Project becomes Ready.
async function startRun(ctx: RunContext, namespace: string): Promise<Running> {
  await testApis(ctx.cluster.kc).core.createNamespace({ body: { metadata: { name: namespace } } });
  await installProviderConfig(ctx, namespace);
  const operator = await startOperator(ctx, namespace, CREATE_RESYNC_MS);
  const watch = await watchReady(ctx.kube, projectRef, namespace);
  await waitUntil(async () => ready(await getObject(ctx.kube, providerConfigRef, { namespace, name: "default" })), 60_000, "ProviderConfig Ready");
  return { namespace, operator, watch };
}

async function startOperator(ctx: RunContext, namespace: string, resyncIntervalMs: number): Promise<Operator> {
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
    resyncIntervalMs,
  });
  await operator.start();
  return operator;
}

// The last (largest) run: memory before and after, and the steady state in between.
async function measuredRun(ctx: RunContext, run: Running, names: readonly string[], floor: Floor): Promise<{ create: SizeResult; steady: Row[]; memory: Row[] }> {
  const n = names.length;
  // The previous run's connections linger until their keep-alive timeout (undici: 4 s);
  // the baseline waits them out.
  await sleep(5_000);
  const before = await memoryRow(ctx, "keyward running, 0 Projects");
  let atReady: Awaited<ReturnType<typeof memoryRow>> | undefined;
  const create = await createUntilReady(ctx, run, names, floor, async () => {
    atReady = await memoryRow(ctx, `${n} Projects Ready`);
  });
  const idle = await memoryRow(ctx, `${n} Projects, queue idle`);
  const firstPassMs = await restartForSteadyState(ctx, run, n);
  const steady = [{ measure: "restart: keyward started → first pass over the N Projects done", value: fmtMs(firstPassMs) }, ...(await steadyState(ctx, run, n))];
  // A resync's burst may be under way when the window ends; sample between bursts.
  await settle(run.operator.metrics);
  const afterSteady = await memoryRow(ctx, `${n} Projects, keyward restarted, after 2 resyncs, queue idle`);
  if (!atReady) throw new Error("no memory sample at Ready");
  const memory = [
    before.row,
    atReady.row,
    idle.row,
    afterSteady.row,
    perObjectRow("at Ready", before.sample, atReady.sample, n),
    perObjectRow("restarted, after 2 resyncs, idle", before.sample, afterSteady.sample, n),
  ];
  return { create, steady, memory };
}

// A new keyward on the same namespace with the short resync; waits until its first pass over
// the N Projects (one reconcile each, from the initial list) is over.
async function restartForSteadyState(ctx: RunContext, run: Running, n: number): Promise<number> {
  await run.operator.stop();
  progress(`restarting keyward with resync ${STEADY_RESYNC_MS / 1000} s`);
  const started = Date.now();
  run.operator = await startOperator(ctx, run.namespace, STEADY_RESYNC_MS);
  const metrics = run.operator.metrics;
  await waitUntil(async () => ((await reconcileCount(metrics, "project")) >= n ? true : undefined), readyTimeoutMs(n), "the restarted keyward's first pass");
  const firstPassMs = Date.now() - started;
  progress(`restarted keyward's first pass over ${n} Projects took ${(firstPassMs / 1000).toFixed(1)} s`);
  await settle(metrics);
  return firstPassMs;
}

// Like test/integration/support/keyward.ts installProvider, with the client-side rate limit
// at its maximum so the figures are keyward's engine, not its limiter.
async function installProviderConfig(ctx: RunContext, namespace: string): Promise<void> {
  await testApis(ctx.cluster.kc).core.createNamespacedSecret({ namespace, body: { metadata: { name: "default-token" }, stringData: { token: TOKEN } } });
  await createCustom(ctx.cluster.kc, namespace, "providerconfigs", {
    apiVersion: API_VERSION,
    kind: "ProviderConfig",
    metadata: { name: "default" },
    spec: {
      baseUrl: ctx.emulator.url,
      credentialsSecretRef: { name: "default-token" },
      rateLimit: SERVICE_RATE_LIMIT,
      timeoutSeconds: SERVICE_TIMEOUT_MS / 1000,
    },
  });
}

async function createUntilReady(ctx: RunContext, run: Running, names: readonly string[], floor: Floor, atReady?: () => Promise<void>): Promise<SizeResult> {
  const n = names.length;
  const metrics = run.operator.metrics;
  await ctx.emulator.clearRequests();
  const reconcilesBefore = await reconcileCount(metrics, "project");
  const modifiedBefore = run.watch.modifications();
  const apiBefore = await apiserverRequests(ctx);
  const connections = countConnections();
  const sentAt = new Map<string, number>();
  progress(`creating ${n} Projects in ${run.namespace}`);
  const peak = samplePeak();
  const started = Date.now();
  await runInFlight(names, CREATES_IN_FLIGHT, async (name) => {
    sentAt.set(name, Date.now());
    await testApis(ctx.cluster.kc).custom.createNamespacedCustomObject({
      group: projectRef.group,
      version: projectRef.version,
      namespace: run.namespace,
      plural: projectRef.plural,
      body: { apiVersion: API_VERSION, kind: projectRef.kind, metadata: { name }, spec: {} },
    });
  });
  const created = Date.now();
  await run.watch.waitForReady(n, readyTimeoutMs(n));
  const memory = peak.stop();
  const times = names.map((name) => run.watch.ready.get(name)).filter((t) => t !== undefined);
  const allReady = Math.max(...times.map((t) => t.seenMs));
  const fromCreation = times.map((t) => t.readyMs - t.createdMs);
  const fromSent = names.flatMap((name) => {
    const t = run.watch.ready.get(name);
    const sent = sentAt.get(name);
    return t && sent !== undefined ? [t.readyMs - sent] : [];
  });
  const wallMs = allReady - started;
  progress(`${n} Projects Ready in ${(wallMs / 1000).toFixed(1)} s (floor ${(floor.ms / 1000).toFixed(2)} s)`);
  await atReady?.();
  // keyward's own status writes bring a last reconcile or two: count them too.
  await settle(metrics);
  connections.stop();
  // listProjects is the ProviderConfig's credential check, not a Project's call.
  const calls = splitCalls((await ctx.emulator.requests()).filter((r) => r.operation !== "listProjects"));
  const reconciles = (await reconcileCount(metrics, "project")) - reconcilesBefore;
  const apiDelta = countsDelta(apiBefore, await apiserverRequests(ctx));
  // apiserver_request_total's verb label is the HTTP method (and LIST, WATCH).
  const benchCreates = `POST ${projectRef.plural}`;
  apiDelta.set(benchCreates, (apiDelta.get(benchCreates) ?? 0) - n);
  const keywardRequests = [...apiDelta].filter(([key, count]) => keywardResources.test(key) && count > 0).sort(([a], [b]) => a.localeCompare(b));
  const kubeRequests = keywardRequests.reduce((sum, [, count]) => sum + count, 0);
  const perObject = (count: number): string => (count / n).toFixed(2);
  const growth = (peakBytes: number, startBytes: number): string => `${mb(peakBytes)} (+${mb(peakBytes - startBytes)})`;
  return {
    timing: {
      N: n,
      "creates took": fmtMs(created - started),
      "all Ready": fmtMs(wallMs),
      floor: fmtMs(floor.ms),
      "ratio (all Ready / floor)": `${(wallMs / floor.ms).toFixed(1)}×`,
      "objects/s": (n / (wallMs / 1000)).toFixed(1),
      "floor creates/s": (n / (floor.ms / 1000)).toFixed(1),
      "median (creationTs)": fmtMs(median(fromCreation)),
      "p99 (creationTs)": fmtMs(percentile(fromCreation, 99)),
      "median (sent)": fmtMs(median(fromSent)),
      "p99 (sent)": fmtMs(percentile(fromSent, 99)),
    },
    calls: {
      N: n,
      "reconciles/obj": perObject(reconciles),
      "svc reads/obj": perObject(calls.reads.length),
      "svc writes/obj": perObject(calls.writes.length),
      "kube reqs/obj": perObject(kubeRequests),
      "obj writes/obj": perObject(run.watch.modifications() - modifiedBefore),
      "kube conns/obj": perObject(connections.opened().get("https:") ?? 0),
      "svc conns/obj": perObject(connections.opened().get("http:") ?? 0),
      "peak RSS MB": growth(memory.peakRss, memory.startRss),
      "peak heap MB": growth(memory.peakHeapUsed, memory.startHeapUsed),
      "floor peak RSS MB": growth(floor.memory.peakRss, floor.memory.startRss),
    },
    apiserver: {
      N: n,
      "requests per object": keywardRequests.length === 0 ? "0" : keywardRequests.map(([key, count]) => `${key} ${perObject(count)}`).join(", "),
    },
  };
}

// Two resync periods with nothing changing: what keyward asks of the service and of the
// apiserver just to keep checking.
async function steadyState(ctx: RunContext, run: Running, n: number): Promise<Row[]> {
  progress(`steady state: watching ${n} Projects for ${(2 * STEADY_RESYNC_MS) / 1000} s`);
  const metrics = run.operator.metrics;
  await ctx.emulator.clearRequests();
  const projectBefore = await reconcileCount(metrics, "project");
  const providerBefore = await reconcileCount(metrics, "providerconfig");
  const modifiedBefore = run.watch.modifications();
  const apiBefore = await apiserverRequests(ctx);
  const connections = countConnections();
  const started = Date.now();
  await sleep(2 * STEADY_RESYNC_MS);
  const windowMs = Date.now() - started;
  connections.stop();
  const apiDelta = countsDelta(apiBefore, await apiserverRequests(ctx));
  const calls = splitCalls(await ctx.emulator.requests());
  const reconciles = (await reconcileCount(metrics, "project")) - projectBefore;
  const providerReconciles = (await reconcileCount(metrics, "providerconfig")) - providerBefore;
  const resyncsPerObject = reconciles / n;
  const perObjectPerResync = (count: number): string => (reconciles === 0 ? "n/a" : (count / reconciles).toFixed(2));
  const projectReads = calls.reads.filter((r) => r.operation !== "listProjects");
  const keywardRequests = [...apiDelta].filter(([key]) => keywardResources.test(key));
  return [
    { measure: "window", value: `${(windowMs / 1000).toFixed(1)} s (resync interval ${STEADY_RESYNC_MS / 1000} s)` },
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
