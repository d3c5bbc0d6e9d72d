// keyward as a child process, started the way a Deployment starts it (`node src/main.ts` or
// `node dist/main.js` with flags), so its RSS and CPU are its own: read from /proc/<pid>, and
// its reconcile counts from its own /metrics endpoint.
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream } from "node:fs";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { repoRoot } from "../../test/controlplane/binaries.ts";
import { freePort } from "../../test/controlplane/controlplane.ts";

export type Entry = "src" | "dist";

// On Ctrl-C or SIGTERM, exit through process.exit so the "exit" hooks below kill keyward too.
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => process.exit(130));

export interface KeywardOptions {
  /** --concurrency (workers per kind); keyward's default when absent. */
  concurrency?: number;
  entry: Entry;
  /** Another entry point than `entry`'s (the soak's patched copy of src/main.ts). */
  script?: string;
  kubeconfigPath: string;
  /** --namespaces (one, or a comma-separated list). */
  namespace: string;
  /** More flags (sharding, leader election). */
  extraArgs?: readonly string[];
  resyncInterval: string;
  /** keyward's stdout and stderr go here (appended). */
  logPath: string;
  /**
   * With ENGINE_BENCH_CPU_PROF=<dir>: keyward runs with `--cpu-prof`, and its profile (written
   * when it exits) is `<dir>/<profileLabel>-<time>.cpuprofile`. Summarise with
   * `node bench/support/cpuprofile.ts <file>`.
   */
  profileLabel?: string;
}

export interface KeywardProcess {
  pid: number;
  /** When spawn() was called (Date.now()). */
  spawnedAt: number;
  /** keyward's /metrics text. */
  metrics(): Promise<string>;
  /** Sum of controller_runtime_reconcile_total for one controller, by result. */
  reconciles(controller: string): Promise<Map<string, number>>;
  /** Resolves when /readyz answers 200 (the operator started: informers synced). */
  waitReady(timeoutMs: number): Promise<void>;
  /** SIGTERM, then SIGKILL after graceMs; resolves when the process has exited. */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILL at once (a crash); resolves when the process has exited. */
  kill(): Promise<void>;
  /** Whether the process has exited (by itself or stopped). */
  hasExited(): boolean;
}

/** The directory keyward's `dist` entry runs from: ENGINE_BENCH_DIST, else dist/. */
export function distDir(): string {
  const dir = process.env["ENGINE_BENCH_DIST"];
  return dir !== undefined && dir !== "" ? resolve(repoRoot, dir) : join(repoRoot, "dist");
}

export async function startKeyward(opts: KeywardOptions): Promise<KeywardProcess> {
  const metricsPort = await freePort();
  const healthPort = await freePort();
  // ENGINE_BENCH_DIST: another build's directory (say, a copy of dist/ from an earlier commit,
  // next to a node_modules symlink so its imports resolve) for a before/after comparison.
  const script = opts.script ?? (opts.entry === "dist" ? join(distDir(), "main.js") : join(repoRoot, "src", "main.ts"));
  // ENGINE_BENCH_NODE_FLAGS: V8 flags for keyward's process alone (e.g. --max-semi-space-size=2).
  const nodeFlags = (process.env["ENGINE_BENCH_NODE_FLAGS"] ?? "").split(/\s+/).filter((f) => f !== "");
  const profileDir = process.env["ENGINE_BENCH_CPU_PROF"];
  if (profileDir !== undefined && profileDir !== "") {
    const name = `${opts.profileLabel ?? "keyward"}-${new Date().toISOString().replace(/[:.]/g, "")}.cpuprofile`;
    nodeFlags.push("--cpu-prof", `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${name}`);
  }
  const args = [
    ...nodeFlags,
    script,
    "--kubeconfig",
    opts.kubeconfigPath,
    "--namespaces",
    opts.namespace,
    "--resync-interval",
    opts.resyncInterval,
    "--metrics-port",
    String(metricsPort),
    "--health-port",
    String(healthPort),
    "--bind-address",
    "127.0.0.1",
    // The bench reads /metrics without a token: loopback only, as the flag says.
    "--metrics-auth",
    "localhost",
    "--log-level",
    "warn",
    ...(opts.concurrency !== undefined ? ["--concurrency", String(opts.concurrency)] : []),
    ...(opts.extraArgs ?? []),
  ];
  const log = createWriteStream(opts.logPath, { flags: "a" });
  const spawnedAt = Date.now();
  // process.execPath: the Node 24 that runs the bench (npm puts the node devDependency first).
  // The image's environment: at most two malloc arenas and a fixed mmap threshold (Dockerfile),
  // unless the caller says otherwise.
  const env = {
    ...process.env,
    MALLOC_ARENA_MAX: process.env["MALLOC_ARENA_MAX"] ?? "2",
    MALLOC_MMAP_THRESHOLD_: process.env["MALLOC_MMAP_THRESHOLD_"] ?? "131072",
  };
  const child: ChildProcess = spawn(process.execPath, args, { cwd: repoRoot, stdio: ["ignore", "pipe", "pipe"], env });
  child.stdout?.pipe(log, { end: false });
  child.stderr?.pipe(log, { end: false });
  // A bench stopped midway (Ctrl-C, SIGTERM) must not leave keyward running on its own.
  const killOnExit = (): void => {
    child.kill("SIGKILL");
  };
  process.once("exit", killOnExit);
  const exited = new Promise<void>((resolve) =>
    child.once("exit", () => {
      process.off("exit", killOnExit);
      resolve();
    }),
  );
  let hasExited = false;
  void exited.then(() => {
    hasExited = true;
  });
  if (child.pid === undefined) throw new Error(`could not start keyward (${script})`);
  const pid = child.pid;

  const get = async (port: number, path: string): Promise<Response> =>
    fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(10_000) });
  const metrics = async (): Promise<string> => {
    const response = await get(metricsPort, "/metrics");
    if (!response.ok) throw new Error(`keyward /metrics: HTTP ${response.status}`);
    return response.text();
  };
  return {
    pid,
    spawnedAt,
    metrics,
    reconciles: async (controller) => parseReconciles(await metrics(), controller),
    waitReady: async (timeoutMs) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        if (hasExited) throw new Error(`keyward exited before it was ready; see ${opts.logPath}`);
        try {
          const response = await get(healthPort, "/readyz");
          await response.body?.cancel();
          if (response.ok) return;
        } catch {
          // not listening yet
        }
        if (Date.now() > deadline) throw new Error(`keyward not ready after ${timeoutMs} ms; see ${opts.logPath}`);
        await sleep(50);
      }
    },
    stop: async (graceMs = 30_000) => {
      if (!hasExited) child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
      await exited;
      clearTimeout(timer);
      log.end();
    },
    kill: async () => {
      child.kill("SIGKILL");
      await exited;
      log.end();
    },
    hasExited: () => hasExited,
  };
}

const sample = /^controller_runtime_reconcile_total\{([^}]*)\}\s+(\S+)$/;

/** controller_runtime_reconcile_total{controller=…} by result label. */
export function parseReconciles(text: string, controller: string): Map<string, number> {
  const byResult = new Map<string, number>();
  for (const line of text.split("\n")) {
    const m = sample.exec(line);
    if (!m) continue;
    const labels = new Map([...(m[1] ?? "").matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1] ?? "", l[2] ?? ""]));
    if (labels.get("controller") !== controller) continue;
    const result = labels.get("result") ?? "?";
    byResult.set(result, (byResult.get(result) ?? 0) + Number(m[2]));
  }
  return byResult;
}

/** _sum and _count of a histogram for the series whose `label` is `value`. */
export function parseHistogram(text: string, metric: string, label: string, value: string): { sum: number; count: number } {
  const out = { sum: 0, count: 0 };
  const re = new RegExp(`^${metric}_(sum|count)\\{([^}]*)\\}\\s+(\\S+)$`);
  for (const line of text.split("\n")) {
    const m = re.exec(line);
    if (!m || !(m[2] ?? "").includes(`${label}="${value}"`)) continue;
    out[m[1] as "sum" | "count"] += Number(m[3]);
  }
  return out;
}

export const total = (counts: ReadonlyMap<string, number>): number => [...counts.values()].reduce((a, b) => a + b, 0);
