// Where one replica's memory goes at a replica's share of a large install: N Projects (default
// 12,500: 50,000 over 4 replicas) served by one keyward process from dist/ with the chart's V8
// flags (read from charts/keyward/values.yaml) and the image's malloc settings, sharding and leader
// election on, so the process holds what a sharded leader holds (its share's caches, the claim
// view, the sharder's metadata of every object). Peak RSS once all are Ready, then SIGKILL and a
// restart: peak RSS once its first pass over all of them is done. With MEMORY_BENCH_SNAPSHOTS=<dir>
// a heap snapshot is written at each point (after the RSS is read: writing one costs memory of its
// own) and summarised by constructor and owner (bench/support/heapsnapshot.ts). With
// MEMORY_BENCH_COMPARE=<dir of another build's dist/> that build is restarted on the same objects
// too (a before/after of the restart without creating them twice).
//
//   MEMORY_BENCH_N=12500 MEMORY_BENCH_SNAPSHOTS=/tmp/snaps npm run bench -- memory
//
// Leases of 60 s (renew deadline 40 s): a restart's first pass on a loaded machine can hold a
// renewal past the default 10 s, and the process would exit. A benchmark: it asserts nothing.
import { mkdir, mkdtemp, readdir, readFile, stat } from "node:fs/promises";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import { repoRoot } from "../test/controlplane/binaries.ts";
import { startCluster } from "./support/cluster.ts";
import { startEmulatorThread } from "./support/emulator.ts";
import { distDir, parseReconciles, startKeyward, total, type KeywardProcess } from "./support/keyward.ts";
import { watchReady, type ReadyWatch } from "./support/readiness.ts";
import { runInFlight } from "./support/in-flight.ts";
import { setUpNamespace } from "./support/namespace.ts";
import { peakRssBytes, residentSplit } from "./support/proc.ts";
import { summarise, type HeapSummary, type Snapshot } from "./support/heapsnapshot.ts";

const GROUP = "keyward.dev";
const VERSION = "v1alpha1";
const projects = { group: GROUP, version: VERSION, plural: "projects" };
const TOKEN = "bench-memory-token";
const env = process.env;
const N = Number(env["MEMORY_BENCH_N"] ?? 12_500);
const NAMESPACES = Number(env["MEMORY_BENCH_NAMESPACES"] ?? 40);
const SNAPSHOTS = env["MEMORY_BENCH_SNAPSHOTS"];
const COMPARE = env["MEMORY_BENCH_COMPARE"];
const CREATES_IN_FLIGHT = 32;

const progress = (line: string): void => console.error(`[memory.bench ${new Date().toISOString().slice(11, 19)}] ${line}`);

/** The chart's default NODE_OPTIONS, as the Deployment sets them. */
async function chartNodeOptions(): Promise<string> {
  const values = await readFile(join(repoRoot, "charts", "keyward", "values.yaml"), "utf8");
  const m = /^nodeOptions:\s*"([^"]*)"/m.exec(values);
  if (!m?.[1]) throw new Error("charts/keyward/values.yaml has no nodeOptions");
  return m[1];
}

interface Point {
  label: string;
  peakRssMb: number;
  anonMb: number;
  fileMb: number;
  heap?: HeapSummary;
}

export default async function memoryBench(): Promise<void> {
  if (!existsSync(join(distDir(), "main.js"))) throw new Error("memory bench runs keyward from dist/: npm run build first");
  const flags = await chartNodeOptions();
  env["ENGINE_BENCH_NODE_FLAGS"] = [flags, ...(SNAPSHOTS ? ["--heapsnapshot-signal=SIGUSR2", `--diagnostic-dir=${SNAPSHOTS}`] : [])].join(
    " ",
  );
  if (SNAPSHOTS) await mkdir(SNAPSHOTS, { recursive: true });
  const cluster = await startCluster(progress);
  const emulator = await startEmulatorThread(TOKEN);
  const core = cluster.kc.makeApiClient(CoreV1Api);
  const custom = cluster.kc.makeApiClient(CustomObjectsApi);
  const logDir = await mkdtemp(join(tmpdir(), "memory-bench-"));
  const namespaces = Array.from({ length: NAMESPACES }, (_, i) => `km-${i}`);
  const leaseNamespace = "km-leases";
  const points: Point[] = [];
  const watches: ReadyWatch[] = [];
  let keyward: KeywardProcess | undefined;
  const start = async (identity: string, dist?: string): Promise<KeywardProcess> => {
    if (dist !== undefined) env["ENGINE_BENCH_DIST"] = dist;
    const k = await startKeyward({
      entry: "dist",
      kubeconfigPath: cluster.kubeconfigPath,
      namespace: namespaces.join(","),
      resyncInterval: "1h",
      logPath: join(logDir, `${identity}.log`),
      extraArgs: [
        ...["--sharding", "true", "--leader-elect", "true", "--leader-election-namespace", leaseNamespace, "--identity", identity],
        ...["--lease-duration", "60s", "--renew-deadline", "40s", "--retry-period", "5s"],
      ],
    });
    await k.waitReady(300_000);
    return k;
  };
  try {
    for (const ns of namespaces) await setUpNamespace({ core, custom }, ns, { url: emulator.url, token: TOKEN });
    await core.createNamespace({ body: { metadata: { name: leaseNamespace } } });
    keyward = await start("km-0");
    watches.push(...(await Promise.all(namespaces.map((ns) => watchReady(cluster.kc, projects, ns)))));
    progress(`creating ${N} Projects over ${NAMESPACES} namespaces`);
    const started = Date.now();
    await runInFlight(
      Array.from({ length: N }, (_, i) => ({ ns: namespaces[i % NAMESPACES] ?? "", name: `p${i}` })),
      CREATES_IN_FLIGHT,
      (p) =>
        custom.createNamespacedCustomObject({
          ...projects,
          namespace: p.ns,
          body: { apiVersion: `${GROUP}/${VERSION}`, kind: "Project", metadata: { name: p.name }, spec: {} },
        }),
    );
    while (watches.reduce((s, w) => s + w.ready.size, 0) < N) await sleep(500);
    progress(`all Ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    await sleep(5_000);
    points.push(await measure("all Ready", keyward));
    const builds = [distDir(), ...(COMPARE ? [COMPARE] : [])];
    for (const dist of builds) {
      await keyward.kill();
      // The same identity: its objects stay labelled for it, so a restart relabels nothing.
      keyward = await start("km-0", dist);
      // The restart's first pass: one reconcile of every Project.
      while ((await reconciled(keyward)) < N) await sleep(500);
      await sleep(5_000);
      points.push(await measure(`${dist}: after a restart, first pass done`, keyward));
    }
  } finally {
    for (const w of watches) w.stop();
    await keyward?.stop(10_000);
    await emulator.close();
    await cluster.stop();
  }
  console.log(
    `\nkube-apiserver ${cluster.kubeVersion}; keyward from ${distDir()} (node ${process.version}, ${env["ENGINE_BENCH_NODE_FLAGS"]}),`,
  );
  console.log(`${N} Projects over ${NAMESPACES} namespaces, one replica (sharding and leader election on); logs in ${logDir}\n`);
  for (const p of points) {
    console.log(
      `${p.label}: peak RSS ${p.peakRssMb.toFixed(1)} MB; resident ${p.anonMb.toFixed(1)} anonymous + ${p.fileMb.toFixed(1)} file-backed MB`,
    );
    if (p.heap) console.log(formatHeap(p.heap));
  }
}

/** Project reconciles so far; 0 while /metrics does not answer (a restart's first pass on a loaded machine can reset it). */
async function reconciled(k: KeywardProcess): Promise<number> {
  if (k.hasExited()) throw new Error("keyward exited during its first pass; see its log");
  try {
    return total(parseReconciles(await k.metrics(), "project"));
  } catch {
    return 0;
  }
}

async function measure(label: string, k: KeywardProcess): Promise<Point> {
  const { anon, file } = residentSplit(k.pid);
  const point: Point = { label, peakRssMb: peakRssBytes(k.pid) / 2 ** 20, anonMb: anon / 2 ** 20, fileMb: file / 2 ** 20 };
  progress(`${label}: peak RSS ${point.peakRssMb.toFixed(1)} MB`);
  if (SNAPSHOTS) {
    const file = await snapshot(k.pid);
    progress(`${label}: heap snapshot ${file}`);
    point.heap = summarise(JSON.parse(await readFile(file, "utf8")) as Snapshot);
  }
  return point;
}

/** SIGUSR2 (--heapsnapshot-signal), then the new file once its size stops changing. */
async function snapshot(pid: number): Promise<string> {
  const dir = SNAPSHOTS ?? "";
  const before = new Set(await readdir(dir));
  process.kill(pid, "SIGUSR2");
  for (let last = -1; ;) {
    await sleep(2_000);
    const fresh = (await readdir(dir)).filter((f) => !before.has(f) && f.endsWith(".heapsnapshot") && f.includes(`.${pid}.`));
    if (fresh.length === 0) continue;
    const file = join(dir, fresh[0] ?? "");
    const size = (await stat(file)).size;
    if (size === last && size > 0) return file;
    last = size;
  }
}

function formatHeap(h: HeapSummary): string {
  const mb = (b: number): string => (b / 2 ** 20).toFixed(2);
  const lines = [`  heap in the snapshot ${mb(h.totalBytes)} MB in ${h.nodes} objects; by constructor (self size), top 10:`];
  for (const c of h.byConstructor.slice(0, 10))
    lines.push(`    ${c.name.padEnd(40)} ${mb(c.bytes).padStart(8)} MB ${String(c.count).padStart(9)}`);
  lines.push("  retained by owner:");
  for (const o of h.owners) lines.push(`    ${o.name.padEnd(40)} ${mb(o.bytes).padStart(8)} MB`);
  return lines.join("\n");
}
