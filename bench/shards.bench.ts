// Sharding at scale (issue 18, docs/sharding.md): N Projects spread over many namespaces, served
// by 1, 2 and 4 keyward replicas as processes (`--sharding`, each with its own identity) on one
// real kube-apiserver, the emulator (no rate limit) in a worker thread. For each replica count:
// time until all Ready, peak RSS and cached Projects per replica, apiserver requests per object
// (keyward's, shard labels and Lease renewals included), and the time from SIGKILLing a replica
// (not the leader) until the survivors have reconciled its share again.
//
//   SHARDS_BENCH_N=10000 SHARDS_BENCH_REPLICAS=1,2,4 SHARDS_BENCH_NAMESPACES=40 npm run bench -- shards
//
// keyward runs from dist/ (npm run build first) with the image's V8 flags unless
// ENGINE_BENCH_NODE_FLAGS says otherwise. A benchmark: it prints figures and asserts nothing.
import { mkdtemp } from "node:fs/promises";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import { repoRoot } from "../test/controlplane/binaries.ts";
import { startCluster, type BenchCluster, type BenchContext } from "./support/cluster.ts";
import { startEmulatorThread } from "./support/emulator.ts";
import { parseReconciles, startKeyward, total, type KeywardProcess } from "./support/keyward.ts";
import { watchReady, type ReadyWatch } from "./support/readiness.ts";
import { countsDelta, parseRequestCounts } from "./support/apiserver-metrics.ts";
import { runInFlight } from "./support/in-flight.ts";
import { setUpNamespace } from "./support/namespace.ts";
import { peakRssBytes, residentSplit, type ResidentSplit } from "./support/proc.ts";
import { table } from "./stats.ts";

const GROUP = "keyward.dev";
const VERSION = "v1alpha1";
const projects = { group: GROUP, version: VERSION, plural: "projects" };
const TOKEN = "bench-shards-token";
const SHARD_LABEL = "shard.keyward.dev/owner";
const env = process.env;
const N = Number(env["SHARDS_BENCH_N"] ?? 10_000);
const REPLICAS = (env["SHARDS_BENCH_REPLICAS"] ?? "1,2,4")
  .split(",")
  .map(Number)
  .filter((r) => r > 0);
const NAMESPACES = Number(env["SHARDS_BENCH_NAMESPACES"] ?? 40);
const CREATES_IN_FLIGHT = 32;
const LEASE = { duration: "15s", renewDeadline: "10s", retryPeriod: "2s" };
env["ENGINE_BENCH_NODE_FLAGS"] ??= "--max-semi-space-size=1 --max-old-space-size=160";

type Ctx = BenchContext;

interface Run {
  replicas: number;
  allReadyMs: number;
  peakRssMb: number[];
  /** Each replica's resident set 2 s after all Ready: anonymous, and file-backed (the runtime's pages). */
  residentMb: ResidentSplit[];
  cachedProjects: number[];
  apiRequestsPerObject: number;
  /** The same requests by verb and resource, per object (the bench's creates taken off `POST projects`). */
  apiRequestsByKind: [string, number][];
  killToReconciledMs?: number;
  killedShare?: number;
  /** From the killed replica's restart until it has reconciled every Project of its share again. */
  restartToReconciledMs?: number;
  /** VmHWM of every replica after the kill, the survivors' takeover and the restart (survivors first, the restarted last). */
  peakRssAfterMb?: number[];
}

const progress = (line: string): void => console.error(`[shards.bench ${new Date().toISOString().slice(11, 19)}] ${line}`);

export default async function shardsBench(): Promise<void> {
  if (!existsSync(join(repoRoot, "dist", "main.js"))) throw new Error("shards bench runs keyward from dist/: npm run build first");
  const startedAt = Date.now();
  const cluster = await startCluster(progress);
  const emulator = await startEmulatorThread(TOKEN);
  const ctx: Ctx = {
    cluster,
    emulator,
    core: cluster.kc.makeApiClient(CoreV1Api),
    custom: cluster.kc.makeApiClient(CustomObjectsApi),
    logDir: await mkdtemp(join(tmpdir(), "shards-bench-")),
  };
  const runs: Run[] = [];
  try {
    for (const replicas of REPLICAS) runs.push(await runOnce(ctx, replicas));
  } finally {
    await emulator.close();
    await cluster.stop();
  }
  report(cluster, runs);
  console.log(`\nshards bench took ${((Date.now() - startedAt) / 1000).toFixed(0)} s; keyward logs in ${ctx.logDir}`);
}

async function apiCounts(ctx: Ctx): Promise<Map<string, number>> {
  return parseRequestCounts(await ctx.cluster.kubectl(["get", "--raw", "/metrics"]));
}

async function runOnce(ctx: Ctx, replicas: number): Promise<Run> {
  await ctx.emulator.reset();
  const prefix = `ks-${replicas}`;
  const namespaces = Array.from({ length: NAMESPACES }, (_, i) => `${prefix}-${i}`);
  const leaseNamespace = `${prefix}-leases`;
  progress(`${replicas} replica(s): ${NAMESPACES} namespaces`);
  for (const ns of namespaces) await setUpNamespace(ctx, ns, { url: ctx.emulator.url, token: TOKEN });
  await ctx.core.createNamespace({ body: { metadata: { name: leaseNamespace } } });
  const identities = Array.from({ length: replicas }, (_, i) => `kw-${replicas}-${i}`);
  const start = (identity: string, logName = identity): Promise<KeywardProcess> =>
    startKeyward({
      entry: "dist",
      kubeconfigPath: ctx.cluster.kubeconfigPath,
      namespace: namespaces.join(","),
      resyncInterval: "1h",
      logPath: join(ctx.logDir, `${logName}.log`),
      extraArgs: [
        ...["--sharding", "true", "--leader-elect", "true", "--leader-election-namespace", leaseNamespace, "--identity", identity],
        ...["--lease-duration", LEASE.duration, "--renew-deadline", LEASE.renewDeadline, "--retry-period", LEASE.retryPeriod],
      ],
    });
  const keywards = await Promise.all(identities.map((identity) => start(identity)));
  const watches: ReadyWatch[] = [];
  try {
    // Ready: the informers have listed, so the CRDs' storage answers the bench's watches too.
    await Promise.all(keywards.map((k) => k.waitReady(120_000)));
    watches.push(...(await Promise.all(namespaces.map((ns) => watchReady(ctx.cluster.kc, projects, ns)))));
    const before = await apiCounts(ctx);
    const names = Array.from({ length: N }, (_, i) => ({ ns: namespaces[i % NAMESPACES] ?? "", name: `${prefix}-p${i}` }));
    progress(`${replicas} replica(s): creating ${N} Projects`);
    const started = Date.now();
    await runInFlight(names, CREATES_IN_FLIGHT, (p) =>
      ctx.custom.createNamespacedCustomObject({
        ...projects,
        namespace: p.ns,
        body: { apiVersion: `${GROUP}/${VERSION}`, kind: "Project", metadata: { name: p.name }, spec: {} },
      }),
    );
    await waitAllReady(watches, N);
    const allReadyMs = Math.max(...watches.flatMap((w) => [...w.ready.values()])) - started;
    progress(`${replicas} replica(s): all Ready in ${(allReadyMs / 1000).toFixed(1)} s`);
    await sleep(2_000);
    const delta = countsDelta(before, await apiCounts(ctx));
    // keyward's own: namespaced requests, less the bench's N creates.
    const namespaced = [...delta.entries()].filter(([k]) => !k.endsWith("(all namespaces)"));
    const keywardRequests = namespaced.reduce((s, [, v]) => s + v, 0) - N;
    const apiRequestsByKind = namespaced
      .map(([k, v]): [string, number] => [k, (k === "POST projects" ? v - N : v) / N])
      .filter(([, perObject]) => perObject > 0)
      .sort((a, b) => b[1] - a[1]);
    const cachedProjects = await Promise.all(keywards.map(async (k) => cachedOf(await k.metrics())));
    const run: Run = {
      replicas,
      allReadyMs,
      peakRssMb: keywards.map((k) => peakRssBytes(k.pid) / 2 ** 20),
      residentMb: keywards.map((k) => {
        const { anon, file } = residentSplit(k.pid);
        return { anon: anon / 2 ** 20, file: file / 2 ** 20 };
      }),
      cachedProjects,
      apiRequestsPerObject: keywardRequests / N,
      apiRequestsByKind,
    };
    if (replicas > 1) {
      const { victimId, ...killed } = await killOne(ctx, keywards, identities, leaseNamespace);
      Object.assign(run, killed);
      // The victim back under its identity, as the kubelet restarts a pod: it lists its share
      // again while the survivors hand it over.
      const restarted = await start(victimId, `${victimId}-restarted`);
      keywards.push(restarted);
      run.restartToReconciledMs = await reconciledAfterRestart(restarted);
      run.peakRssAfterMb = keywards.filter((k) => !k.hasExited()).map((k) => peakRssBytes(k.pid) / 2 ** 20);
    }
    return run;
  } finally {
    for (const w of watches) w.stop();
    await Promise.all(keywards.filter((k) => !k.hasExited()).map((k) => k.stop(10_000)));
  }
}

function cachedOf(metrics: string): number {
  return Number(/^keyward_informer_cached_objects\{kind="Project"\} (\d+)$/m.exec(metrics)?.[1] ?? NaN);
}

async function waitAllReady(watches: readonly ReadyWatch[], n: number): Promise<void> {
  const deadline = Date.now() + Math.max(300_000, n * 100);
  while (watches.reduce((s, w) => s + w.ready.size, 0) < n) {
    if (Date.now() > deadline) throw new Error(`not all ${n} Projects Ready in time`);
    await sleep(200);
  }
}

/**
 * SIGKILLs one replica that is not the leader, and measures until the survivors' Project
 * reconciles have grown by its share: the Lease expiry, the sharder's relabelling and the new
 * owners' first passes.
 */
async function killOne(
  ctx: Ctx,
  keywards: readonly KeywardProcess[],
  identities: readonly string[],
  leaseNamespace: string,
): Promise<{ killToReconciledMs: number; killedShare: number; victimId: string }> {
  const leader = (
    await ctx.cluster.kubectl(["get", "lease", "keyward-leader", "-n", leaseNamespace, "-o", "jsonpath={.spec.holderIdentity}"])
  ).trim();
  const victim = identities.findIndex((id) => id !== leader);
  const victimId = identities[victim] ?? "";
  const share = (
    await ctx.cluster.kubectl(["get", `projects.${VERSION}.${GROUP}`, "-A", "-l", `${SHARD_LABEL}=${victimId}`, "--no-headers"])
  )
    .split("\n")
    .filter((l) => l.trim() !== "").length;
  const survivors = keywards.filter((_, i) => i !== victim);
  const reconciled = async (): Promise<number> =>
    (await Promise.all(survivors.map(async (k) => total(parseReconciles(await k.metrics(), "project"))))).reduce((a, b) => a + b, 0);
  const before = await reconciled();
  progress(`killing ${victimId} (${share} Projects; leader ${leader})`);
  const killedAt = Date.now();
  await keywards[victim]?.kill();
  const deadline = killedAt + 300_000;
  while ((await reconciled()) - before < share) {
    if (Date.now() > deadline) throw new Error(`the survivors did not take over ${victimId}'s ${share} Projects in time`);
    await sleep(250);
  }
  const ms = Date.now() - killedAt;
  progress(`${victimId}'s share reconciled again ${(ms / 1000).toFixed(1)} s after the kill`);
  return { killToReconciledMs: ms, killedShare: share, victimId };
}

/**
 * Waits until a restarted replica has reconciled every Project it caches, and what it caches has
 * stopped growing (its share handed back); the time from its start.
 */
async function reconciledAfterRestart(restarted: KeywardProcess): Promise<number> {
  const startedAt = Date.now();
  await restarted.waitReady(120_000);
  const deadline = startedAt + 300_000;
  let previous = -1;
  for (;;) {
    const metrics = await restarted.metrics();
    const cached = cachedOf(metrics);
    const reconciled = total(parseReconciles(metrics, "project"));
    if (cached > 0 && cached === previous && reconciled >= cached) break;
    if (Date.now() > deadline) throw new Error(`the restarted replica did not take back its share in time (${reconciled} of ${cached})`);
    previous = cached;
    await sleep(2_000);
  }
  const ms = Date.now() - startedAt;
  progress(`restarted replica reconciled its share (${String(previous)}) ${(ms / 1000).toFixed(1)} s after its start`);
  return ms;
}

function report(cluster: BenchCluster, runs: readonly Run[]): void {
  const s = (ms: number | undefined): string => (ms === undefined ? "—" : `${(ms / 1000).toFixed(1)} s`);
  console.log(
    `kube-apiserver ${cluster.kubeVersion}; keyward from dist/ (node ${process.version}, ${env["ENGINE_BENCH_NODE_FLAGS"] ?? ""}), ` +
      `${N} Projects over ${NAMESPACES} namespaces, ${CREATES_IN_FLIGHT} creates in flight; Leases ${LEASE.duration} / renew ${LEASE.renewDeadline} / retry ${LEASE.retryPeriod}.\n`,
  );
  console.log(
    table(
      runs.map((r) => ({
        replicas: r.replicas,
        "all Ready": s(r.allReadyMs),
        "Projects/s": Math.round((N / r.allReadyMs) * 1000),
        "peak RSS per replica (MB)": r.peakRssMb.map((m) => m.toFixed(0)).join(" / "),
        "then anonymous + file-backed (MB)": r.residentMb.map((m) => `${m.anon.toFixed(0)} + ${m.file.toFixed(0)}`).join(" / "),
        "cached Projects per replica": r.cachedProjects.join(" / "),
        "apiserver requests / object": r.apiRequestsPerObject.toFixed(2),
        "kill → its share reconciled": r.killToReconciledMs === undefined ? "—" : `${s(r.killToReconciledMs)} (${r.killedShare ?? 0})`,
        "restart → its share reconciled": s(r.restartToReconciledMs),
        "peak RSS after kill and restart (MB)": r.peakRssAfterMb?.map((m) => m.toFixed(0)).join(" / ") ?? "—",
      })),
    ),
  );
  console.log(
    "peak RSS: VmHWM of each keyward process; then its resident set 2 s after all Ready, split into RssAnon (heap, malloc) and RssFile\n" +
      "(the node binary's and libraries' pages). apiserver requests: keyward's namespaced requests while creating (less the bench's creates),\n" +
      "shard labels and Lease renewals included. kill: SIGKILL of a replica that is not the leader, until the survivors' Project reconciles\n" +
      "have grown by its share (Lease expiry + relabelling + first passes). restart: the killed replica started again under its identity,\n" +
      "until it has reconciled every Project it caches and that count is steady; then every replica's VmHWM (the restarted one last).",
  );
  for (const r of runs) {
    console.log(`\n${r.replicas} replica(s), apiserver requests per object by verb and resource:`);
    for (const [kind, perObject] of r.apiRequestsByKind) console.log(`  ${perObject.toFixed(3).padStart(7)}  ${kind}`);
  }
}
