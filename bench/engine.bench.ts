// keyward's engine at scale, measured from outside: a real kube-apiserver with etcd, the
// emulator in a worker thread (no rate limit), and keyward as a CHILD PROCESS started like a
// Deployment starts it (`node src/main.ts …`, or `node dist/main.js` with
// ENGINE_BENCH_ENTRY=dist), so its RSS and CPU (from /proc/<pid>) are its alone. Its environment
// has the image's MALLOC_ARENA_MAX=2 unless MALLOC_ARENA_MAX is set.
//
// For each N (ENGINE_BENCH_SIZES, default 100,1000,10000), ENGINE_BENCH_REPEATS runs (default 3
// for N < 10000, 1 for 10000), each in a fresh namespace with a reset emulator:
// 1. idle: keyward started (resync ENGINE_BENCH_CREATE_RESYNC, 1h) on the namespace (a ProviderConfig, no Projects), /readyz up and
//    the ProviderConfig Ready: RSS then;
// 2. create: N Projects created through the apiserver (32 in flight) until the bench's watcher
//    sees all Ready: wall time; keyward's and the apiserver's CPU until a second after all Ready
//    (the peers' window); then, once keyward's reconcile count has stopped moving, apiserver
//    requests by verb and resource (apiserver_request_total), service requests (the emulator's
//    log), reconciles (keyward's /metrics) and peak RSS;
// 3. restart: SIGTERM keyward, start a new one with a short resync: time from spawn until its
//    project reconcile count reaches N (its first pass over the cached objects);
// 4. steady state: ENGINE_BENCH_STEADY_RESYNCS (3) resync periods of ENGINE_BENCH_RESYNC (10s)
//    with nothing changing: apiserver and service requests per object per resync.
// The floor (first run of each N up to ENGINE_BENCH_FLOOR_MAX, 1000): the same N createProject calls sent straight to the same
// emulator, 4 in flight (keyward's concurrency): what the service alone needs for N creates.
// ENGINE_BENCH_GO=1: in every run (N up to ENGINE_BENCH_GO_MAX, default ENGINE_BENCH_FLOOR_MAX), the same N Projects by the Go
// controller-runtime operator of bench/go-operator, without and with keyward's create guard:
// all-Ready ratios, apiserver requests, its CPU and the apiserver's CPU per object, each a
// median over the runs, beside the machine's load average at each run's start and end. keyward
// runs after the peers in odd runs and before them in even ones.
// ENGINE_BENCH_NODE_PEER=1: the same with bench/node-peer (the Go peer's logic on Node and undici
// alone, under keyward's V8 flags): what the runtime itself costs for these requests.
// ENGINE_BENCH_DIST=<dir>: keyward from another build than dist/ (a before/after comparison).
// Its imports must find node_modules: put it next to a node_modules symlink (/tmp/kwb/base with
// /tmp/kwb/node_modules -> the repository's), not inside the repository (lint would read it).
// ENGINE_BENCH_CPU_PROF=<dir>: each keyward runs with `--cpu-prof`; the create process writes
// <dir>/<namespace>-create-*.cpuprofile (idle start-up + the creates), the restarted one
// <dir>/<namespace>-restart-steady-*.cpuprofile (first pass + steady state). Summarise with
// `node bench/support/cpuprofile.ts <file>`. The profiler adds CPU: read its proportions.
// A benchmark: it prints medians and never asserts on timing.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, writeFile } from "node:fs/promises";
import { stripTypeScriptTypes } from "node:module";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import { parseFlagDuration } from "../src/lib/duration.ts";
import { createKube, loadKubeConfig, resourcePath, type KindRef, type Kube } from "../src/kube/client.ts";
import { errorSummary, kubeJson, MERGE_PATCH } from "../src/kube/rest.ts";
import { eventKind } from "../src/kube/events.ts";
import { repoRoot } from "../test/controlplane/binaries.ts";
import { startCluster, type BenchCluster, type BenchContext } from "./support/cluster.ts";
import { startEmulatorThread, serviceDelta, type ServiceCounts } from "./support/emulator.ts";
import { distDir, parseHistogram, parseReconciles, startKeyward, total, type Entry, type KeywardProcess } from "./support/keyward.ts";
import { watchReady } from "./support/readiness.ts";
import { countsDelta, parseRequestCounts, type RequestCounts } from "./support/apiserver-metrics.ts";
import { runInFlight } from "./support/in-flight.ts";
import { emptyNamespace, setUpNamespace as setUpBenchNamespace } from "./support/namespace.ts";
import { cpuSeconds, peakRssBytes, residentSplit, rssBytes, sampleRss, type ResidentSplit } from "./support/proc.ts";
import { median, percentile, table } from "./stats.ts";

const GROUP = "keyward.dev";
const VERSION = "v1alpha1";
const projects = { group: GROUP, version: VERSION, plural: "projects" };
const projectRef: KindRef = { ...projects, kind: "Project" };

const env = process.env;
const SIZES = (env["ENGINE_BENCH_SIZES"] ?? "100,1000,10000")
  .split(",")
  .map(Number)
  .filter((n) => n > 0);
const repeatsFor = (n: number): number => Number(env["ENGINE_BENCH_REPEATS"] ?? (n >= 10_000 ? 1 : 3));
const ENTRY: Entry = env["ENGINE_BENCH_ENTRY"] === "dist" ? "dist" : "src";
// An hour while creating, so no resync competes with the creates (keyward's default, 10 min,
// fired in the middle of a 20-minute N = 10000 run on a loaded machine).
const CREATE_RESYNC = env["ENGINE_BENCH_CREATE_RESYNC"] ?? "1h";
const STEADY_RESYNC = env["ENGINE_BENCH_RESYNC"] ?? "10s";
const STEADY_RESYNCS = Number(env["ENGINE_BENCH_STEADY_RESYNCS"] ?? 3);
// keyward's workers (its default, 4, unless ENGINE_BENCH_CONCURRENCY), and the floors' calls in flight.
const CONCURRENCY = Number(env["ENGINE_BENCH_CONCURRENCY"] ?? 4);
// keyward's client-side apiserver limit (--kube-api-qps, --kube-api-burst): unset, its defaults
// (the chart's: auto, 600); ENGINE_BENCH_KUBE_API_QPS=300 for a fixed cap whatever the apiserver
// shows, 1000 with ENGINE_BENCH_KUBE_API_BURST=2000 for the Go peer's.
const KUBE_API_QPS = env["ENGINE_BENCH_KUBE_API_QPS"];
const KUBE_API_BURST = env["ENGINE_BENCH_KUBE_API_BURST"];
const KUBE_API_ARGS: readonly string[] = [
  ...(KUBE_API_QPS ? ["--kube-api-qps", KUBE_API_QPS] : []),
  ...(KUBE_API_BURST ? ["--kube-api-burst", KUBE_API_BURST] : []),
];
const CREATES_IN_FLIGHT = 32;
const TOKEN = "bench-engine-token";
// The ProviderConfig's client-side limit at its maximum: the figures are the engine's, not its limiter's.
// The floor is skipped above this N: the emulator's createProject scans every project role
// (findProjectRole, 5 roles per project), so N straight creates take O(N²) there (~15 minutes
// at 10,000) and say more about the emulator than about keyward.
const FLOOR_MAX_N = Number(env["ENGINE_BENCH_FLOOR_MAX"] ?? 1000);
const readyTimeoutMs = (n: number): number => 120_000 + 300 * n;
// keyward's resources at the apiserver, namespaced requests only (the bench's watch is across
// namespaces). Leases are two things: kube-apiserver's own heartbeat (its identity Lease, a GET
// and a PUT every 10 s) and keyward's claim locks (a GET per create, a POST per adoption; keyward
// runs without leader election here, so it PUTs none). The totals count keyward's: the GETs
// beyond the PUTs, and every POST and DELETE.
const keywardKey = /^\S+ (projects|providerconfigs|secrets|events|leases)(\/\S+)?$/;
const isLease = (key: string): boolean => / leases/.test(key);
const claimLockRequests = (counts: ReadonlyMap<string, number>, writesOnly = false): number => {
  const n = (verb: string): number => counts.get(`${verb} leases`) ?? 0;
  return (writesOnly ? 0 : Math.max(0, n("GET") - n("PUT"))) + n("POST") + n("DELETE");
};

const progress = (line: string): void => {
  process.stderr.write(`[engine.bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
};

interface Window {
  ms: number;
  /** keyward's namespaced requests (the bench's creates taken out). */
  api: RequestCounts;
  svc: ServiceCounts;
  reconciles: number;
  reconcileResults: Map<string, number>;
  /** Mean seconds per project reconcile, and mean wait in the work queue before it. */
  reconcileSeconds: number;
  queueSeconds: number;
  /** apiserver requests keyward held back: by its own client-side limit, and for a 429's Retry-After; and the 429s. */
  heldByLimit: number;
  heldByRetryAfter: number;
  throttled: number;
  cpuS: number;
  apiserverCpuS: number;
}

interface RunResult {
  n: number;
  idleRss: number;
  startupCpuS: number;
  createsSentMs: number;
  allReadyMs: number;
  /** create sent → seen Ready, per object. */
  latencies: number[];
  /** Requests and reconciles from the first create until keyward is quiet. */
  create: Window;
  /** keyward's and the apiserver's CPU from the first create until a second after all Ready (the peers' window). */
  createCpu: { cpuS: number; apiserverCpuS: number };
  objectWrites: number;
  peakRss: number;
  peakRssSampled: number;
  /** The resident set once keyward is quiet after creating, anonymous and file-backed. */
  rssCreated: ResidentSplit;
  restartMs: number;
  /** Spawn → /readyz answering 200. */
  restartReadyMs: number;
  restart: Window;
  steady: Window;
  steadyPeakRss: number;
  floorMs?: number;
  requestsFloorMs?: number;
  /** ENGINE_BENCH_GO=1: the Go operator without and with the create guard, on the same N. */
  go?: PeerRun;
  goGuard?: PeerRun;
  /** ENGINE_BENCH_NODE_PEER=1: the minimal Node operator, the same two ways. */
  node?: PeerRun;
  nodeGuard?: PeerRun;
  /** The machine's 1-minute load average when the run started and when it ended. */
  load: [number, number];
  logPath: string;
}

type Ctx = BenchContext;

const kubes = new WeakMap<Ctx, Kube>();
/** keyward's own apiserver client, for the bench's clean-up between contenders. */
function benchKube(ctx: Ctx): Kube {
  let kube = kubes.get(ctx);
  if (!kube) {
    const { access } = createKube(loadKubeConfig({ kubeconfigPath: ctx.cluster.kubeconfigPath }));
    // Deleting 10,000 Projects as one collection takes the apiserver longer than keyward's 30 s.
    kube = { access: { ...access, requestTimeoutMs: 600_000 } };
    kubes.set(ctx, kube);
  }
  return kube;
}

/**
 * A contender's namespace emptied and deleted, so the next contender meets an apiserver without
 * its objects. A failure is reported, not thrown: the run it follows has been measured.
 */
async function removeNamespace(ctx: Ctx, namespace: string): Promise<void> {
  try {
    await emptyNamespace(benchKube(ctx), namespace);
    await ctx.core.deleteNamespace({ name: namespace });
  } catch (err) {
    progress(`could not empty namespace ${namespace}; the next runs meet its objects: ${errorSummary(err)}`);
  }
}

export default async function bench(): Promise<void> {
  const startedAt = Date.now();
  const cluster = await startCluster(progress);
  const emulator = await startEmulatorThread(TOKEN).catch(async (error: unknown) => {
    await cluster.stop();
    throw error;
  });
  const ctx: Ctx = {
    cluster,
    emulator,
    core: cluster.kc.makeApiClient(CoreV1Api),
    custom: cluster.kc.makeApiClient(CustomObjectsApi),
    logDir: await mkdtemp(join(tmpdir(), "engine-bench-")),
  };
  progress(`keyward logs in ${ctx.logDir}`);
  const idle: Array<{ entry: Entry; rss: number }> = [];
  const results = new Map<number, RunResult[]>();
  try {
    for (const entry of ["src", "dist"] as const) {
      if (entry === "dist" && !existsSync(join(distDir(), "main.js"))) continue;
      idle.push({ entry, rss: await measureIdle(ctx, entry) });
    }
    for (const n of SIZES) {
      const runs: RunResult[] = [];
      results.set(n, runs);
      for (let rep = 1; rep <= repeatsFor(n); rep++) {
        try {
          runs.push(await runOnce(ctx, n, rep));
        } catch (error) {
          progress(`N=${n} run ${rep} failed: ${error instanceof Error ? error.message : String(error)}`);
        }
      }
    }
  } finally {
    await emulator.close();
    await cluster.stop();
  }
  report(cluster, idle, results);
  console.log(`\nengine bench took ${((Date.now() - startedAt) / 1000).toFixed(0)} s; keyward logs in ${ctx.logDir}`);
}

// ---------------------------------------------------------------------------------------------
// One run

const setUpNamespace = (ctx: Ctx, namespace: string): Promise<void> =>
  setUpBenchNamespace(ctx, namespace, { url: ctx.emulator.url, token: TOKEN });

async function providerConfigReady(ctx: Ctx, namespace: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const pc = (await ctx.custom.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: "providerconfigs",
      name: "default",
    })) as {
      metadata: { generation?: number };
      status?: { conditions?: Array<{ type: string; status: string; observedGeneration?: number }> };
    };
    const c = pc.status?.conditions?.find((x) => x.type === "Ready");
    if (c?.status === "True" && c.observedGeneration === pc.metadata.generation) return;
    if (Date.now() > deadline) throw new Error(`ProviderConfig in ${namespace} not Ready after 60 s`);
    await sleep(100);
  }
}

/** keyward on a namespace with a ProviderConfig and no Projects, everything started and quiet. */
async function startIdle(
  ctx: Ctx,
  namespace: string,
  entry: Entry,
  logPath: string,
  profileLabel: string,
): Promise<{ keyward: KeywardProcess; rss: number }> {
  const keyward = await startKeyward({
    entry,
    profileLabel,
    kubeconfigPath: ctx.cluster.kubeconfigPath,
    concurrency: CONCURRENCY,
    namespace,
    resyncInterval: CREATE_RESYNC,
    logPath,
    extraArgs: KUBE_API_ARGS,
  });
  try {
    await keyward.waitReady(60_000);
    await providerConfigReady(ctx, namespace);
    await sleep(2_000);
    return { keyward, rss: rssBytes(keyward.pid) };
  } catch (error) {
    await keyward.stop();
    throw error;
  }
}

async function measureIdle(ctx: Ctx, entry: Entry): Promise<number> {
  const namespace = `kb-idle-${entry}`;
  progress(`idle RSS, keyward from ${entry}/`);
  await ctx.emulator.reset();
  await setUpNamespace(ctx, namespace);
  const { keyward, rss } = await startIdle(ctx, namespace, entry, join(ctx.logDir, `${namespace}.log`), `${namespace}-idle`);
  await keyward.stop();
  return rss;
}

async function runOnce(ctx: Ctx, n: number, rep: number): Promise<RunResult> {
  const namespace = `kb-${n}-${rep}`;
  // Names of 5–36 characters: the slug is the name (src/resources/project.ts desiredSlug).
  const names = Array.from({ length: n }, (_, i) => `${namespace}-${i}`);
  await ctx.emulator.reset();
  const floorMs = rep === 1 && n <= FLOOR_MAX_N ? await measureFloor(ctx, names) : undefined;
  const requestsFloorMs = rep === 1 && n <= FLOOR_MAX_N ? await measureRequestsFloor(ctx, names) : undefined;
  const loadAtStart = loadavg()[0] ?? Number.NaN;
  // The control plane keeps some history of every run (etcd's revisions, the apiserver's heap),
  // so whoever runs later pays a little more: keyward runs after the peers in odd runs and
  // before them in even ones.
  const peersFirst = rep % 2 === 1;
  const peersBefore = peersFirst ? await runPeers(ctx, n, rep) : undefined;
  const own = await runKeyward(ctx, { n, rep, namespace, names });
  const peers = peersBefore ?? (await runPeers(ctx, n, rep));
  return {
    ...own,
    ...peers,
    ...(floorMs !== undefined ? { floorMs } : {}),
    ...(requestsFloorMs !== undefined ? { requestsFloorMs } : {}),
    load: [loadAtStart, loadavg()[0] ?? Number.NaN],
  };
}

type PeerRuns = Pick<RunResult, "go" | "goGuard" | "node" | "nodeGuard">;
type KeywardRun = Omit<RunResult, keyof PeerRuns | "floorMs" | "requestsFloorMs" | "load">;

/** The peers asked for (ENGINE_BENCH_GO, ENGINE_BENCH_NODE_PEER), each without and with the guard. */
async function runPeers(ctx: Ctx, n: number, rep: number): Promise<PeerRuns> {
  const goPeer = GO_COMPARE && n <= GO_MAX_N ? await goOperator() : undefined;
  const go = goPeer === undefined ? undefined : await runPeer(ctx, goPeer, n, rep, false);
  const goGuard = goPeer === undefined ? undefined : await runPeer(ctx, goPeer, n, rep, true);
  const nodePeer = NODE_PEER_COMPARE && n <= GO_MAX_N ? await nodeOperator(ctx) : undefined;
  const node = nodePeer === undefined ? undefined : await runPeer(ctx, nodePeer, n, rep, false);
  const nodeGuard = nodePeer === undefined ? undefined : await runPeer(ctx, nodePeer, n, rep, true);
  return {
    ...(go !== undefined ? { go } : {}),
    ...(goGuard !== undefined ? { goGuard } : {}),
    ...(node !== undefined ? { node } : {}),
    ...(nodeGuard !== undefined ? { nodeGuard } : {}),
  };
}

/** keyward's run on `names` in `namespace`: idle start, the creates, a restart, steady state. */
async function runKeyward(
  ctx: Ctx,
  { n, rep, namespace, names }: { n: number; rep: number; namespace: string; names: readonly string[] },
): Promise<KeywardRun> {
  const logPath = join(ctx.logDir, `${namespace}.log`);
  // keyward meets the service as the peers do, empty: the provider config's check lists
  // every project, and the emulator's create scans every project's roles.
  await ctx.emulator.reset();
  await setUpNamespace(ctx, namespace);
  progress(`N=${n} run ${rep}: starting keyward (${ENTRY}/)`);
  const idleStart = await startIdle(ctx, namespace, ENTRY, logPath, `${namespace}-create`);
  const idleRss = idleStart.rss;
  let keyward = idleStart.keyward;
  const startupCpuS = cpuSeconds(keyward.pid);
  const watch = await watchReady(ctx.cluster.kc, projects, namespace);
  try {
    // 2. create until all Ready
    const before = await snapshot(ctx, keyward);
    const modifiedBefore = watch.modifications();
    const sampler = sampleRss(keyward.pid);
    const sentAt = new Map<string, number>();
    // The offset lets a profile (ENGINE_BENCH_CPU_PROF) be cut to the create phase (cpuprofile.ts --from).
    progress(`N=${n} run ${rep}: creating ${n} Projects (${((Date.now() - keyward.spawnedAt) / 1000).toFixed(1)} s after keyward's spawn)`);
    const started = Date.now();
    await runInFlight(names, CREATES_IN_FLIGHT, async (name) => {
      sentAt.set(name, Date.now());
      await ctx.custom.createNamespacedCustomObject({
        ...projects,
        namespace,
        body: { apiVersion: `${GROUP}/${VERSION}`, kind: "Project", metadata: { name }, spec: {} },
      });
    });
    const createsSentMs = Date.now() - started;
    await watch.waitForReady(n, readyTimeoutMs(n));
    const lastReady = Math.max(...watch.ready.values());
    const allReadyMs = lastReady - started;
    progress(`N=${n} run ${rep}: all Ready in ${(allReadyMs / 1000).toFixed(1)} s`);
    // CPU over the peers' window (until a second after all Ready), so that no contender is
    // charged for more of the control plane's idle time than another.
    await sleep(1_000);
    const atReady = await snapshot(ctx, keyward);
    // keyward's own writes may bring a last reconcile or two: count them too.
    await settle(keyward);
    const create = windowBetween(before, await snapshot(ctx, keyward));
    const createCpu = windowBetween(before, atReady);
    // The bench's own creates.
    create.api.set("POST projects", (create.api.get("POST projects") ?? 0) - n);
    if ((create.api.get("POST projects") ?? 0) <= 0) create.api.delete("POST projects");
    const peakRssSampled = sampler.stop();
    const peakRss = peakRssBytes(keyward.pid);
    const rssCreated = residentSplit(keyward.pid);
    const objectWrites = watch.modifications() - modifiedBefore;
    const latencies = names.flatMap((name) => {
      const seen = watch.ready.get(name);
      const sent = sentAt.get(name);
      return seen !== undefined && sent !== undefined ? [seen - sent] : [];
    });

    // 3. restart until the first pass is done
    progress(`N=${n} run ${rep}: restarting keyward (resync ${STEADY_RESYNC})`);
    await keyward.stop();
    const beforeRestart = await snapshot(ctx, undefined);
    keyward = await startKeyward({
      entry: ENTRY,
      profileLabel: `${namespace}-restart-steady`,
      kubeconfigPath: ctx.cluster.kubeconfigPath,
      concurrency: CONCURRENCY,
      namespace,
      resyncInterval: STEADY_RESYNC,
      logPath,
      extraArgs: KUBE_API_ARGS,
    });
    const restarted = keyward;
    const [restartReadyMs, restartMs] = await Promise.all([
      restarted.waitReady(60_000).then(() => Date.now() - restarted.spawnedAt),
      firstPass(keyward, n, readyTimeoutMs(n)),
    ]);
    await settle(keyward);
    const restart = windowBetween(beforeRestart, await snapshot(ctx, keyward));
    progress(`N=${n} run ${rep}: restart → first pass ${(restartMs / 1000).toFixed(1)} s`);

    // 4. steady state
    const resyncMs = parseFlagDuration(STEADY_RESYNC);
    progress(`N=${n} run ${rep}: steady state for ${STEADY_RESYNCS} × ${STEADY_RESYNC}`);
    const beforeSteady = await snapshot(ctx, keyward);
    await sleep(STEADY_RESYNCS * resyncMs);
    const steady = windowBetween(beforeSteady, await snapshot(ctx, keyward));
    const steadyPeakRss = peakRssBytes(keyward.pid);
    return {
      n,
      idleRss,
      startupCpuS,
      createsSentMs,
      allReadyMs,
      latencies,
      create,
      objectWrites,
      peakRss,
      peakRssSampled,
      rssCreated,
      restartMs,
      restartReadyMs,
      restart,
      steady,
      steadyPeakRss,
      createCpu: { cpuS: createCpu.cpuS, apiserverCpuS: createCpu.apiserverCpuS },
      logPath,
    };
  } finally {
    watch.stop();
    await keyward.stop();
    await removeNamespace(ctx, namespace);
  }
}

// The floor: keyward's N createProject calls without keyward, straight to the same emulator,
// 4 in flight; the emulator's state is reset after, so keyward's run sees none of them.
async function measureFloor(ctx: Ctx, names: readonly string[]): Promise<number> {
  progress(`floor: ${names.length} createProject calls, ${CONCURRENCY} in flight`);
  const create = async (name: string): Promise<void> => {
    const response = await fetch(`${ctx.emulator.url}/api/v2/workspace`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ projectName: name, slug: name }),
    });
    await response.body?.cancel();
    if (!response.ok) throw new Error(`floor: createProject ${name}: HTTP ${response.status}`);
  };
  await create("kb-floor-warmup");
  const started = performance.now();
  await runInFlight(names, CONCURRENCY, create);
  const ms = performance.now() - started;
  await ctx.emulator.reset();
  return ms;
}

// The requests floor: the very requests keyward makes per Project (a slug lookup at the service,
// the create-started mark with the finalizer, createProject, the status write with the id, an
// Event), sent by a bare loop with CONCURRENCY workers while the bench's N creates go in as in a
// keyward run (32 in flight; a worker takes each name once its create is accepted), in a namespace
// no keyward watches. What the apiserver and the service need for N creates; keyward's time over
// it is keyward's own (its engine, its queue, its waits).
async function measureRequestsFloor(ctx: Ctx, names: readonly string[]): Promise<number> {
  const namespace = `kb-floor-${names.length}`;
  progress(`requests floor: ${names.length} Projects, ${CONCURRENCY} workers`);
  await ctx.core.createNamespace({ body: { metadata: { name: namespace } } });
  const kube = createKube(loadKubeConfig({ kubeconfigPath: ctx.cluster.kubeconfigPath }));
  const path = (name: string, sub?: string): string => resourcePath(projectRef, namespace, name, sub);
  const patch = (name: string, body: unknown, sub?: string): Promise<unknown> =>
    kubeJson(kube.access, { method: "PATCH", path: path(name, sub), body, contentType: MERGE_PATCH });
  const reconcile = async (name: string): Promise<void> => {
    const slug = await fetch(`${ctx.emulator.url}/api/v1/projects/slug/${name}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    await slug.body?.cancel();
    const at = new Date().toISOString();
    await patch(name, { metadata: { annotations: { "keyward.dev/create-started": at }, finalizers: ["keyward.dev/finalizer"] } });
    const created = await fetch(`${ctx.emulator.url}/api/v2/workspace`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ projectName: name, slug: name }),
    });
    const { project } = (await created.json()) as { project: { id: string } };
    const ready = { type: "Ready", status: "True", reason: "Available", message: "available", lastTransitionTime: at };
    await patch(name, { status: { projectId: project.id, conditions: [ready] } }, "status");
    await kubeJson(kube.access, {
      method: "POST",
      path: resourcePath(eventKind, namespace),
      body: {
        metadata: { generateName: `${name}.` },
        involvedObject: { apiVersion: `${GROUP}/${VERSION}`, kind: "Project", namespace, name },
        reason: "Created",
        message: "created the external object",
        type: "Normal",
      },
    });
  };
  const accepted: string[] = [];
  const waiting = new Set<() => void>();
  const wake = (): void => {
    for (const w of waiting) w();
    waiting.clear();
  };
  let creating = true;
  const started = performance.now();
  const creates = runInFlight(names, CREATES_IN_FLIGHT, async (name) => {
    await ctx.custom.createNamespacedCustomObject({
      ...projects,
      namespace,
      body: { apiVersion: `${GROUP}/${VERSION}`, kind: "Project", metadata: { name }, spec: {} },
    });
    accepted.push(name);
    wake();
  }).finally(() => {
    creating = false;
    wake();
  });
  const worker = async (): Promise<void> => {
    for (;;) {
      const name = accepted.shift();
      if (name !== undefined) await reconcile(name);
      else if (!creating) return;
      else await new Promise<void>((resolve) => waiting.add(resolve));
    }
  };
  await Promise.all([creates, ...Array.from({ length: CONCURRENCY }, worker)]);
  const ms = performance.now() - started;
  await removeNamespace(ctx, namespace);
  await ctx.emulator.reset();
  return ms;
}

// ENGINE_BENCH_GO=1: the same N Projects handled by a minimal Go controller-runtime operator
// (bench/go-operator: cache reads, lookup by slug, create, one status patch with keyward's Project status, one Event), built
// here with the machine's Go, on the same apiserver and emulator with the same workers, in every
// run (up to ENGINE_BENCH_FLOOR_MAX): once without a create guard (2 apiserver writes per
// create), once with keyward's (--create-guard: the create-started mark before the create, the
// id in metadata after it; 4 writes, as keyward). Its apiserver requests, its CPU and the
// apiserver's CPU are measured as keyward's are.
const GO_COMPARE = env["ENGINE_BENCH_GO"] === "1";
// ENGINE_BENCH_NODE_PEER=1: the same two runs with bench/node-peer, the Go peer's logic written
// for Node with undici and nothing else, under keyward's V8 flags and malloc settings: the
// runtime's floor for these requests, so keyward's distance to the Go peer splits into the
// runtime's share and keyward's own.
const NODE_PEER_COMPARE = env["ENGINE_BENCH_NODE_PEER"] === "1";
// The peers run up to this N (default: the floors' ENGINE_BENCH_FLOOR_MAX), so N = 10,000 can be
// compared without the floors' O(N²) emulator creates.
const GO_MAX_N = Number(env["ENGINE_BENCH_GO_MAX"] ?? FLOOR_MAX_N);

interface PeerRun {
  allReadyMs: number;
  peakRssBytes: number;
  /** Its resident set a second after all Ready, anonymous and file-backed. */
  rss: ResidentSplit;
  cpuS: number;
  /** Its namespaced requests (the bench's N creates taken out). */
  api: RequestCounts;
  apiserverCpuS: number;
}

/** A peer operator: how to start it (its own flags follow: --namespace, --base-url, …). */
interface Peer {
  name: "go" | "node";
  label: string;
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
}

let goBuilt: Promise<Peer> | undefined;

function goOperator(): Promise<Peer> {
  goBuilt ??= (async () => {
    const dir = join(repoRoot, "bench", "go-operator");
    const out = join(tmpdir(), "keyward-bench-go-operator");
    progress("building bench/go-operator (go build)");
    await new Promise<void>((resolve, reject) => {
      const child = spawn("go", ["build", "-o", out, "."], {
        cwd: dir,
        env: { ...process.env, GOWORK: "off", CGO_ENABLED: "0" },
        stdio: "inherit",
      });
      child.on("error", reject);
      child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`go build exited with ${String(code)}`))));
    });
    return { name: "go", label: "Go operator", command: out, args: [], env: process.env };
  })();
  return goBuilt;
}

let nodeBuilt: Promise<Peer> | undefined;

/**
 * bench/node-peer as JavaScript (its types stripped, as keyward runs from dist/), written under
 * node_modules/.cache so that its `undici` import resolves, and the apiserver's address and
 * credentials from the bench's kubeconfig in a JSON file beside it (mode 0600).
 */
function nodeOperator(ctx: Ctx): Promise<Peer> {
  nodeBuilt ??= (async () => {
    const dir = join(repoRoot, "node_modules", ".cache", "keyward-bench");
    await mkdir(dir, { recursive: true });
    const source = await readFile(join(repoRoot, "bench", "node-peer", "operator.ts"), "utf8");
    const script = join(dir, "node-peer.mjs");
    await writeFile(script, stripTypeScriptTypes(source));
    const kc = ctx.cluster.kc;
    const tls: { ca?: unknown; cert?: unknown; key?: unknown } = {};
    await kc.applyToHTTPSOptions(tls);
    const pem = (v: unknown): string | undefined => (Buffer.isBuffer(v) ? v.toString("utf8") : typeof v === "string" ? v : undefined);
    const accessPath = join(dir, "node-peer-access.json");
    const access = {
      server: kc.getCurrentCluster()?.server,
      ca: pem(tls.ca),
      cert: pem(tls.cert),
      key: pem(tls.key),
      token: kc.getCurrentUser()?.token,
    };
    await writeFile(accessPath, JSON.stringify(access), { mode: 0o600 });
    const flags = (env["ENGINE_BENCH_NODE_FLAGS"] ?? "").split(/\s+/).filter((f) => f !== "");
    return {
      name: "node",
      label: "Node operator",
      command: process.execPath,
      args: [...flags, script],
      env: {
        ...process.env,
        NODE_PEER_ACCESS: accessPath,
        MALLOC_ARENA_MAX: env["MALLOC_ARENA_MAX"] ?? "2",
        MALLOC_MMAP_THRESHOLD_: env["MALLOC_MMAP_THRESHOLD_"] ?? "131072",
      },
    } satisfies Peer;
  })();
  return nodeBuilt;
}

/** Resolves once `child` has exited (at once if it has). */
function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}

async function runPeer(ctx: Ctx, peer: Peer, n: number, rep: number, guard: boolean): Promise<PeerRun> {
  const namespace = `kb-${peer.name}${guard ? "-guard" : ""}-${n}-${rep}`;
  const label = guard ? `${peer.label} + create guard` : peer.label;
  const names = Array.from({ length: n }, (_, i) => `${namespace}-${i}`);
  await ctx.emulator.reset();
  await ctx.core.createNamespace({ body: { metadata: { name: namespace } } });
  const args = [...peer.args, "--namespace", namespace, "--base-url", ctx.emulator.url, "--concurrency", String(CONCURRENCY)];
  const child = spawn(peer.command, guard ? [...args, "--create-guard"] : args, {
    cwd: repoRoot,
    env: { ...peer.env, KUBECONFIG: ctx.cluster.kubeconfigPath, SERVICE_TOKEN: TOKEN },
    // The Node peer's stderr shows why it stopped, if it does; the Go peer's is controller-runtime's chatter.
    stdio: ["ignore", "ignore", peer.name === "node" ? "inherit" : "ignore"],
  });
  const pid = child.pid ?? 0;
  try {
    // Its cache syncs an empty namespace within a second; the creates come after.
    await sleep(3_000);
    const watch = await watchReady(ctx.cluster.kc, projects, namespace);
    try {
      const before = await snapshot(ctx, undefined);
      const cpuBefore = cpuSeconds(pid);
      progress(`${label}: creating ${n} Projects`);
      const started = Date.now();
      await runInFlight(names, CREATES_IN_FLIGHT, (name) =>
        ctx.custom.createNamespacedCustomObject({
          ...projects,
          namespace,
          body: { apiVersion: `${GROUP}/${VERSION}`, kind: "Project", metadata: { name }, spec: {} },
        }),
      );
      await watch.waitForReady(n, readyTimeoutMs(n));
      const allReadyMs = Math.max(...watch.ready.values()) - started;
      progress(`${label}: all Ready in ${(allReadyMs / 1000).toFixed(1)} s`);
      // Its last Events go out just after the last status write.
      await sleep(1_000);
      const window = windowBetween(before, await snapshot(ctx, undefined));
      window.api.set("POST projects", (window.api.get("POST projects") ?? 0) - n);
      if ((window.api.get("POST projects") ?? 0) <= 0) window.api.delete("POST projects");
      return {
        allReadyMs,
        peakRssBytes: peakRssBytes(pid),
        rss: residentSplit(pid),
        cpuS: cpuSeconds(pid) - cpuBefore,
        api: window.api,
        apiserverCpuS: window.apiserverCpuS,
      };
    } finally {
      watch.stop();
    }
  } finally {
    child.kill("SIGTERM");
    await exited(child);
    await removeNamespace(ctx, namespace);
  }
}

interface Snapshot {
  at: number;
  api: RequestCounts;
  svc: ServiceCounts;
  reconciles: Map<string, number>;
  reconcileTime: { sum: number; count: number };
  queueTime: { sum: number; count: number };
  waits: { clientLimit: number; retryAfter: number; throttled: number };
  cpuS: number;
  apiserverCpuS: number;
}

async function snapshot(ctx: Ctx, keyward: KeywardProcess | undefined): Promise<Snapshot> {
  const [metrics, svc, own] = await Promise.all([
    ctx.cluster.kubectl(["get", "--raw", "/metrics"]),
    ctx.emulator.counts(),
    keyward ? keyward.metrics() : Promise.resolve(""),
  ]);
  const pid = ctx.cluster.apiserverPid;
  return {
    at: Date.now(),
    api: parseRequestCounts(metrics),
    svc,
    reconciles: parseReconciles(own, "project"),
    reconcileTime: parseHistogram(own, "controller_runtime_reconcile_time_seconds", "controller", "project"),
    queueTime: parseHistogram(own, "workqueue_queue_duration_seconds", "name", "project"),
    waits: {
      clientLimit: metricValue(own, "keyward_kube_api_request_waits_total", 'reason="client_limit"'),
      retryAfter: metricValue(own, "keyward_kube_api_request_waits_total", 'reason="retry_after"'),
      throttled: metricValue(own, "keyward_kube_api_throttled_total"),
    },
    cpuS: keyward ? cpuSeconds(keyward.pid) : 0,
    apiserverCpuS: pid === undefined ? Number.NaN : cpuSeconds(pid),
  };
}

function windowBetween(a: Snapshot, b: Snapshot): Window {
  const api = new Map([...countsDelta(a.api, b.api)].filter(([key]) => keywardKey.test(key)));
  const reconcileResults = new Map([...b.reconciles].map(([k, v]) => [k, v - (a.reconciles.get(k) ?? 0)]));
  return {
    ms: b.at - a.at,
    api,
    svc: serviceDelta(a.svc, b.svc),
    reconciles: total(reconcileResults),
    reconcileResults,
    reconcileSeconds: meanBetween(a.reconcileTime, b.reconcileTime),
    queueSeconds: meanBetween(a.queueTime, b.queueTime),
    heldByLimit: b.waits.clientLimit - a.waits.clientLimit,
    heldByRetryAfter: b.waits.retryAfter - a.waits.retryAfter,
    throttled: b.waits.throttled - a.waits.throttled,
    cpuS: b.cpuS - a.cpuS,
    apiserverCpuS: b.apiserverCpuS - a.apiserverCpuS,
  };
}

/** One counter's value in a Prometheus text (0 when absent), the sample whose labels contain `labels`. */
function metricValue(text: string, name: string, labels = ""): number {
  for (const line of text.split("\n")) {
    if (!line.startsWith(name) || !line.includes(labels)) continue;
    const rest = line.slice(name.length);
    if (rest.startsWith("{") || rest.startsWith(" ")) return Number(line.slice(line.lastIndexOf(" ") + 1)) || 0;
  }
  return 0;
}

const meanBetween = (a: { sum: number; count: number }, b: { sum: number; count: number }): number =>
  b.count === a.count ? Number.NaN : (b.sum - a.sum) / (b.count - a.count);

/** Time from spawn until keyward's project reconcile count reaches n. */
async function firstPass(keyward: KeywardProcess, n: number, timeoutMs: number): Promise<number> {
  for (;;) {
    try {
      if (total(await keyward.reconciles("project")) >= n) return Date.now() - keyward.spawnedAt;
    } catch {
      // not listening yet
    }
    if (Date.now() - keyward.spawnedAt > timeoutMs) throw new Error(`first pass over ${n} Projects not done after ${timeoutMs} ms`);
    await sleep(100);
  }
}

// Until the project controller has had nothing to do for two seconds.
async function settle(keyward: KeywardProcess): Promise<void> {
  let last = total(await keyward.reconciles("project"));
  for (let quiet = 0, waited = 0; quiet < 4 && waited < 120; waited++) {
    await sleep(500);
    const now = total(await keyward.reconciles("project"));
    quiet = now === last ? quiet + 1 : 0;
    last = now;
  }
}

// ---------------------------------------------------------------------------------------------
// Report

const mb = (bytes: number): string => (bytes / (1024 * 1024)).toFixed(0);
const isRead = (key: string): boolean => key.startsWith("GET ");
const isWrite = (key: string): boolean => !key.startsWith("GET ") && !key.startsWith("LIST ") && !key.startsWith("WATCH ");
const sumWhere = (counts: ReadonlyMap<string, number>, pick: (key: string) => boolean): number =>
  [...counts].filter(([key]) => pick(key)).reduce((sum, [, v]) => sum + v, 0);
const apiTotal = (w: Window): number => sumWhere(w.api, (k) => !isLease(k)) + claimLockRequests(w.api);
const apiWrites = (w: Window): number => sumWhere(w.api, (k) => !isLease(k) && isWrite(k)) + claimLockRequests(w.api, true);
/** Steady-state figures per object per resync: divided by the project reconciles in the window. */
const perResync = (count: number, w: Window): number => (w.reconciles === 0 ? Number.NaN : count / w.reconciles);

/** "median (min–max)" over the runs, or the one value. */
function spread(values: number[], fmt: (v: number) => string): string {
  const ok = values.filter((v) => Number.isFinite(v));
  if (ok.length === 0) return "n/a";
  if (ok.length === 1) return fmt(ok[0] ?? Number.NaN);
  return `${fmt(median(ok))} (${fmt(Math.min(...ok))}–${fmt(Math.max(...ok))})`;
}
const med = (values: number[], fmt: (v: number) => string): string => {
  const ok = values.filter((v) => Number.isFinite(v));
  return ok.length === 0 ? "n/a" : fmt(median(ok));
};

/** Medians of resident sets, "anonymous + file-backed MB". */
function residentCell(splits: ResidentSplit[]): string {
  const anon = med(
    splits.map((r) => r.anon),
    mb,
  );
  const file = med(
    splits.map((r) => r.file),
    mb,
  );
  return `${anon} + ${file} MB`;
}

const f2 = (v: number): string => v.toFixed(2);
const f3 = (v: number): string => (v === 0 ? "0" : v < 0.01 ? v.toFixed(4) : v.toFixed(3));
const sec = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

function report(cluster: BenchCluster, idle: Array<{ entry: Entry; rss: number }>, results: Map<number, RunResult[]>): void {
  const sizes = [...results.keys()].filter((n) => (results.get(n) ?? []).length > 0);
  const col = (n: number): string => `N=${n} (${(results.get(n) ?? []).length} run${(results.get(n) ?? []).length === 1 ? "" : "s"})`;
  const row = (measure: string, cell: (runs: RunResult[], n: number) => string): Record<string, string> =>
    Object.fromEntries([["measure", measure], ...sizes.map((n): [string, string] => [col(n), cell(results.get(n) ?? [], n)])]);
  const each = (runs: RunResult[], pick: (r: RunResult) => number): number[] => runs.map(pick);

  console.log(
    `kube-apiserver ${cluster.kubeVersion}; keyward from ${ENTRY}/ as a child process (node ${process.version}), concurrency ${CONCURRENCY}, ` +
      `apiserver limit --kube-api-qps ${KUBE_API_QPS || "auto (default)"} --kube-api-burst ${KUBE_API_BURST || "600 (default)"}, ` +
      `no leader election, resync ${CREATE_RESYNC} while creating and ${STEADY_RESYNC} after the restart; ${CREATES_IN_FLIGHT} creates in flight; ` +
      `emulator in a worker thread of the bench, no rate limit, reset before each run.`,
  );
  console.log("\n### Summary (median over the runs, min–max in brackets)");
  console.log(
    table([
      row("time until all Ready", (runs) =>
        spread(
          each(runs, (r) => r.allReadyMs),
          sec,
        ),
      ),
      row("  the bench's N creates accepted by the apiserver in", (runs) =>
        spread(
          each(runs, (r) => r.createsSentMs),
          sec,
        ),
      ),
      row("  objects Ready per second", (runs) =>
        med(
          each(runs, (r) => r.n / (r.allReadyMs / 1000)),
          (v) => v.toFixed(0),
        ),
      ),
      row(
        "  create sent → seen Ready, p50 / p99",
        (runs) =>
          `${med(
            runs.map((r) => median(r.latencies)),
            sec,
          )} / ${med(
            runs.map((r) => percentile(r.latencies, 99)),
            sec,
          )}`,
      ),
      row("  floor: N creates straight to the service", (runs) =>
        med(
          runs.flatMap((r) => (r.floorMs === undefined ? [] : [r.floorMs])),
          sec,
        ),
      ),
      row("  requests floor: keyward's requests, bare, same workers", (runs) =>
        med(
          runs.flatMap((r) => (r.requestsFloorMs === undefined ? [] : [r.requestsFloorMs])),
          sec,
        ),
      ),
      ...peerRows(row),
      row("  all Ready / requests floor", (runs) => {
        const ratios = runs.flatMap((r) => (r.requestsFloorMs === undefined ? [] : [r.allReadyMs / r.requestsFloorMs]));
        return ratios.length === 0 ? "—" : `${median(ratios).toFixed(2)}×`;
      }),
      row("apiserver requests / object while creating", (runs) =>
        spread(
          each(runs, (r) => apiTotal(r.create) / r.n),
          f2,
        ),
      ),
      row("  of which writes", (runs) =>
        med(
          each(runs, (r) => apiWrites(r.create) / r.n),
          f2,
        ),
      ),
      row("  Project writes seen by a watch / object", (runs) =>
        med(
          each(runs, (r) => r.objectWrites / r.n),
          f2,
        ),
      ),
      row("reconciles / object while creating", (runs) =>
        spread(
          each(runs, (r) => r.create.reconciles / r.n),
          f2,
        ),
      ),
      row(
        "  mean reconcile time / queue wait, creating",
        (runs) =>
          `${med(
            each(runs, (r) => 1000 * r.create.reconcileSeconds),
            (v) => `${v.toFixed(0)} ms`,
          )} / ${med(
            each(runs, (r) => 1000 * r.create.queueSeconds),
            sec,
          )}`,
      ),
      row(
        "  apiserver requests held by keyward's own limit / for a 429 (429s), creating",
        (runs) =>
          [
            med(
              each(runs, (r) => r.create.heldByLimit),
              (v) => v.toFixed(0),
            ),
            med(
              each(runs, (r) => r.create.heldByRetryAfter),
              (v) => v.toFixed(0),
            ),
          ].join(" / ") +
          ` (${med(
            each(runs, (r) => r.create.throttled),
            (v) => v.toFixed(0),
          )})`,
      ),
      row("service reads / object while creating", (runs) =>
        med(
          each(runs, (r) => sumWhere(r.create.svc, isRead) / r.n),
          f2,
        ),
      ),
      row("service writes / object while creating", (runs) =>
        med(
          each(runs, (r) => sumWhere(r.create.svc, (k) => !isRead(k)) / r.n),
          f2,
        ),
      ),
      row("steady: resyncs seen per object", (runs) =>
        med(
          each(runs, (r) => r.steady.reconciles / r.n),
          f2,
        ),
      ),
      row("steady: apiserver requests / object / resync", (runs) =>
        spread(
          each(runs, (r) => perResync(apiTotal(r.steady), r.steady)),
          f3,
        ),
      ),
      row("steady: service reads / object / resync", (runs) =>
        spread(
          each(runs, (r) => perResync(sumWhere(r.steady.svc, isRead), r.steady)),
          f3,
        ),
      ),
      row("steady: service writes in the window", (runs) =>
        med(
          each(runs, (r) => sumWhere(r.steady.svc, (k) => !isRead(k))),
          (v) => v.toFixed(0),
        ),
      ),
      row(
        "keyward peak RSS, creating (VmHWM)",
        (runs) =>
          spread(
            each(runs, (r) => r.peakRss),
            mb,
          ) + " MB",
      ),
      row("keyward RSS after creating: anonymous + file-backed", (runs) => residentCell(runs.map((r) => r.rssCreated))),
      row(
        "keyward peak RSS, restarted + steady (VmHWM)",
        (runs) =>
          spread(
            each(runs, (r) => r.steadyPeakRss),
            mb,
          ) + " MB",
      ),
      row(
        "keyward idle RSS (0 Projects, informers synced)",
        (runs) =>
          med(
            each(runs, (r) => r.idleRss),
            mb,
          ) + " MB",
      ),
      row("keyward CPU while creating", (runs) =>
        med(
          each(runs, (r) => r.createCpu.cpuS),
          (v) => `${v.toFixed(1)} s`,
        ),
      ),
      row("  per object", (runs) =>
        med(
          each(runs, (r) => (1000 * r.createCpu.cpuS) / r.n),
          (v) => `${v.toFixed(1)} ms`,
        ),
      ),
      row("  then until quiet (not in the CPU figures)", (runs) =>
        med(
          each(runs, (r) => r.create.cpuS - r.createCpu.cpuS),
          (v) => `${v.toFixed(2)} s`,
        ),
      ),
      row("  keyward CPU at start-up (to idle)", (runs) =>
        med(
          each(runs, (r) => r.startupCpuS),
          (v) => `${v.toFixed(1)} s`,
        ),
      ),
      row("kube-apiserver CPU / object while creating", (runs) =>
        med(
          each(runs, (r) => (1000 * r.createCpu.apiserverCpuS) / r.n),
          (v) => `${v.toFixed(1)} ms`,
        ),
      ),
      row("machine load average (1 min) at the run's start / end", (runs) =>
        runs.map((r) => `${r.load[0].toFixed(1)}/${r.load[1].toFixed(1)}`).join(", "),
      ),
      row("keyward CPU / object / resync, steady", (runs) =>
        med(
          each(runs, (r) => 1000 * perResync(r.steady.cpuS, r.steady)),
          (v) => `${v.toFixed(2)} ms`,
        ),
      ),
      row("restart → first pass over N done", (runs) =>
        spread(
          each(runs, (r) => r.restartMs),
          sec,
        ),
      ),
      row("  restart → /readyz (start-up, informers synced)", (runs) =>
        med(
          each(runs, (r) => r.restartReadyMs),
          sec,
        ),
      ),
      row("  restart: service reads / object", (runs) =>
        med(
          each(runs, (r) => sumWhere(r.restart.svc, isRead) / r.n),
          f2,
        ),
      ),
      row("  restart: apiserver requests / object", (runs) =>
        med(
          each(runs, (r) => apiTotal(r.restart) / r.n),
          f3,
        ),
      ),
    ]),
  );

  console.log("\n### apiserver requests per object, by verb and resource (median over the runs)");
  console.log("creating: from the first create until keyward is quiet after all Ready, the bench's N creates taken out;");
  console.log("restart: from the old keyward's exit until the new one's first pass is over; steady: per object per resync.");
  console.log(
    breakdown(
      sizes,
      results,
      (r) => [r.create.api, r.n],
      (r) => [r.restart.api, r.n],
      (r) => [r.steady.api, r.steady.reconciles],
    ),
  );

  if ([...results.values()].some((runs) => runs.some((r) => r.go !== undefined))) {
    console.log("\n### The Go operator's apiserver requests per object while creating, without / with the create guard (median)");
    const none = new Map<string, number>();
    console.log(
      breakdown(
        sizes,
        results,
        (r) => [r.go?.api ?? none, r.n],
        (r) => [r.goGuard?.api ?? none, r.n],
      ).replaceAll(/creating N=|restart N=/g, (m) => (m.startsWith("creating") ? "no guard N=" : "guard N=")),
    );
  }

  console.log("\n### Service requests per object, by method and operation (emulator log; same windows)");
  console.log(
    breakdown(
      sizes,
      results,
      (r) => [r.create.svc, r.n],
      (r) => [r.restart.svc, r.n],
      (r) => [r.steady.svc, r.steady.reconciles],
    ),
  );

  console.log('\n### Reconcile results (controller_runtime_reconcile_total{controller="project"}, per object, median)');
  console.log(
    breakdown(
      sizes,
      results,
      (r) => [r.create.reconcileResults, r.n],
      (r) => [r.restart.reconcileResults, r.n],
      (r) => [r.steady.reconcileResults, r.steady.reconciles],
    ),
  );

  if (idle.length > 0) {
    console.log("\n### Idle keyward (a ProviderConfig, no Projects; /readyz up, ProviderConfig Ready, 2 s quiet)");
    console.log(table(idle.map((i) => ({ entry: `node ${i.entry === "src" ? "src/main.ts" : "dist/main.js"}`, "RSS MB": mb(i.rss) }))));
  }
  console.log(`
Legend: every figure is keyward's alone. RSS from /proc/<keyward pid>/status: VmHWM = the peak since
the process started (the figure a memory limit must allow), VmRSS = now, split into RssAnon (heap,
malloc, stacks) and RssFile (the runtime's binary and libraries paged in; a Go binary pages in far
less). CPU = utime + stime from /proc/<pid>/stat. apiserver requests = the kube-apiserver's
apiserver_request_total for projects, providerconfigs, secrets, events and leases, namespaced requests
only (the bench's watch runs across namespaces; its creates are subtracted); of the leases, the
totals count keyward's claim locks (the GETs beyond kube-apiserver's heartbeat PUTs, every POST and
DELETE), not the heartbeat. Service requests = the emulator's log (GET = read).
"Per object per resync" divides by the project reconciles in the window (one per object per resync when
the engine wakes on resync only). The floor is what the service alone needs for N creates, 4 in flight.
kube-apiserver CPU is its whole process: it includes serving the bench's N creates and its watch.
CPU figures (keyward's, the peers', the apiserver's) run from the first create until a second after
all Ready, for every contender alike; request counts run until keyward is quiet.
The machine is shared: figures are noisy, read medians.`);
}

type RowFn = (measure: string, cell: (runs: RunResult[], n: number) => string) => Record<string, string>;

/**
 * ENGINE_BENCH_GO=1 (and ENGINE_BENCH_NODE_PEER=1): keyward against the Go controller-runtime
 * operator (and the minimal Node one) without and with the create guard, each a median over the
 * runs of the per-run figure (ratios taken within a run).
 */
function peerRows(row: RowFn): Record<string, string>[] {
  const variants: Array<[string, (r: RunResult) => PeerRun | undefined]> = [
    ["Go, no guard", (r) => r.go],
    ["Go + create guard", (r) => r.goGuard],
    // Its rows only when it ran: most runs leave it out.
    ...(NODE_PEER_COMPARE
      ? ([
          ["Node, no guard", (r) => r.node],
          ["Node + create guard", (r) => r.nodeGuard],
        ] as Array<[string, (r: RunResult) => PeerRun | undefined]>)
      : []),
  ];
  const x = (v: number): string => `${v.toFixed(2)}×`;
  const ms = (v: number): string => `${v.toFixed(1)} ms`;
  // A process's CPU per object in the Go peer's run, then keyward's run's over it (median of each).
  const cpuAndRatio = (pairs: Array<[RunResult, PeerRun]>, field: "cpuS" | "apiserverCpuS"): string =>
    `${med(
      pairs.map(([r, g]) => (1000 * g[field]) / r.n),
      ms,
    )}; ${med(
      pairs.map(([r, g]) => r.createCpu[field] / g[field]),
      x,
    )}`;
  return variants.flatMap(([name, pick]) => {
    const runsWith = (runs: RunResult[]): Array<[RunResult, PeerRun]> =>
      runs.flatMap((r): Array<[RunResult, PeerRun]> => {
        const go = pick(r);
        return go === undefined ? [] : [[r, go]];
      });
    return [
      row(`  ${name}: all Ready (ENGINE_BENCH_${name.startsWith("Go") ? "GO" : "NODE_PEER"}=1)`, (runs) =>
        spread(
          runsWith(runs).map(([, g]) => g.allReadyMs),
          sec,
        ),
      ),
      row(`    keyward all Ready / ${name}`, (runs) =>
        med(
          runsWith(runs).map(([r, g]) => r.allReadyMs / g.allReadyMs),
          x,
        ),
      ),
      row(`    ${name}: apiserver requests / object (keyward's in the row below)`, (runs) =>
        med(
          runsWith(runs).map(([r, g]) => (sumWhere(g.api, (k) => !isLease(k)) + claimLockRequests(g.api)) / r.n),
          f2,
        ),
      ),
      row(`    ${name}: its CPU / object; keyward's / its`, (runs) => cpuAndRatio(runsWith(runs), "cpuS")),
      row(`    ${name}: kube-apiserver CPU / object; keyward's run / its`, (runs) => cpuAndRatio(runsWith(runs), "apiserverCpuS")),
      row(
        `    ${name}: peak RSS`,
        (runs) =>
          med(
            runsWith(runs).map(([, g]) => g.peakRssBytes),
            mb,
          ) + " MB",
      ),
      row(`    ${name}: RSS at all Ready + 1 s: anonymous + file-backed`, (runs) => residentCell(runsWith(runs).map(([, g]) => g.rss))),
    ];
  });
}

/** Rows: verb/operation keys; columns: phase × N. */
function breakdown(
  sizes: number[],
  results: Map<number, RunResult[]>,
  ...phases: Array<(r: RunResult) => [ReadonlyMap<string, number>, number]>
): string {
  const names = ["creating", "restart", "steady/resync"];
  const keys = new Set<string>();
  for (const runs of results.values())
    for (const r of runs) for (const phase of phases) for (const key of phase(r)[0].keys()) keys.add(key);
  const rows = [...keys].sort().map((key) => {
    const cells: Array<[string, string]> = [["", key]];
    phases.forEach((phase, i) => {
      for (const n of sizes) {
        const values = (results.get(n) ?? []).map((r) => {
          const [counts, per] = phase(r);
          return per === 0 ? Number.NaN : (counts.get(key) ?? 0) / per;
        });
        cells.push([`${names[i] ?? ""} N=${n}`, med(values, f3)]);
      }
    });
    return Object.fromEntries(cells);
  });
  return rows.length === 0 ? "(none)" : table(rows);
}
