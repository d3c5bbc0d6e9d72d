// npm run bench -- fairness: how long one change in namespace B waits behind a backlog of
// namespace A (issue 16 §3), with the work queue handing out keys in arrival order (FIFO, the
// queue before) and in turn by namespace (fair, the queue now).
//
// The real work queue (src/engine/queue.ts) and workers shaped like the controller's (get →
// reconcile → done, CONCURRENCY of them); a reconcile is one real service read over loopback HTTP
// through keyward's client, against the emulator in a worker thread (so the service's work does
// not share keyward's event loop). A's keys are queued, the workers start, and once they are
// busy B's one key is added: the figure is the time from that add until a worker takes B's key,
// and how many keys were taken before it. Medians of RUNS runs per order.
//
// Two scenarios: 10,000 A keys with the emulator answering at once (a read takes well under a
// millisecond on loopback), and 2,000 A keys with the emulator holding every answer 20 ms (the
// emulator's latency fault), closer to a real pass: a service across a network plus apiserver
// writes. FAIRNESS_BENCH_KEYS and FAIRNESS_BENCH_SERVICE_MS run one scenario of your own instead;
// FAIRNESS_BENCH_RUNS (default 3), FAIRNESS_BENCH_CONCURRENCY (default 4, keyward's default).
import { closeConnections, createApiClient } from "../src/api/index.ts";
import { createWorkQueue } from "../src/engine/queue.ts";
import { startEmulatorThread } from "./support/emulator.ts";
import { fmtMs, median, table } from "./stats.ts";

const SCENARIOS: Array<{ keys: number; serviceMs: number }> =
  process.env["FAIRNESS_BENCH_KEYS"] !== undefined || process.env["FAIRNESS_BENCH_SERVICE_MS"] !== undefined
    ? [{ keys: Number(process.env["FAIRNESS_BENCH_KEYS"] ?? 10_000), serviceMs: Number(process.env["FAIRNESS_BENCH_SERVICE_MS"] ?? 0) }]
    : [
        { keys: 10_000, serviceMs: 0 },
        { keys: 2_000, serviceMs: 20 },
      ];
const RUNS = Number(process.env["FAIRNESS_BENCH_RUNS"] ?? 3);
const CONCURRENCY = Number(process.env["FAIRNESS_BENCH_CONCURRENCY"] ?? 4);
const B_KEY = "team-b/the-change";

interface RunResult {
  /** ms from add(B) until a worker took B's key. */
  waitMs: number;
  /** Keys taken after B was added and before B. */
  takenBefore: number;
  /** Median reconcile (one service read), ms. */
  reconcileMs: number;
}

async function run(order: "fifo" | "fair", keys: number, reconcile: () => Promise<void>): Promise<RunResult> {
  const queue = createWorkQueue({ order });
  for (let i = 0; i < keys; i++) queue.add(`team-a/project-${i}`);
  // When B's key was added; set once the workers are busy.
  const b: { addedAt?: number } = {};
  let takenSinceAdd = 0;
  let result: { waitMs: number; takenBefore: number } | undefined;
  const durations: number[] = [];
  const worker = async (): Promise<void> => {
    for (;;) {
      const key = await queue.get();
      if (key === undefined) return;
      if (key === B_KEY && b.addedAt !== undefined) {
        result = { waitMs: performance.now() - b.addedAt, takenBefore: takenSinceAdd };
        // Measured: stop here rather than drain A's backlog (shutDown lets the taken keys finish).
        queue.shutDown();
      } else if (b.addedAt !== undefined) {
        takenSinceAdd += 1;
      }
      const started = performance.now();
      try {
        await reconcile();
      } finally {
        durations.push(performance.now() - started);
        queue.done(key);
      }
      if (result && queue.isShuttingDown()) return;
    }
  };
  const workers = Array.from({ length: CONCURRENCY }, () => worker());
  // B's change arrives once the workers are busy with A's backlog.
  while (durations.length < CONCURRENCY * 4) await new Promise((resolve) => setImmediate(resolve));
  b.addedAt = performance.now();
  queue.add(B_KEY);
  await Promise.all(workers);
  if (!result) throw new Error(`B's key was never taken (${order})`);
  return { ...result, reconcileMs: median(durations) };
}

/** Every answer of the emulator held `ms` (its latency fault, over its admin API). */
async function setLatency(url: string, ms: number): Promise<void> {
  const response = await fetch(`${url}/_emulator/faults`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(ms > 0 ? { latencyMs: ms } : {}),
  });
  if (!response.ok) throw new Error(`emulator faults: HTTP ${response.status}`);
  await response.body?.cancel();
}

export default async function bench(): Promise<void> {
  const token = "bench-fairness-token";
  const emulator = await startEmulatorThread(token);
  const api = createApiClient({ baseUrl: emulator.url, token, rateLimit: { requestsPerSecond: 1e6, burst: 1e6 } });
  const project = await api.createProject({ projectName: "fairness", slug: "fairness-bench" });
  const reconcile = async (): Promise<void> => {
    await api.getProject(project.id);
  };
  console.log(`${CONCURRENCY} workers; one service read per reconcile; ${RUNS} runs per order`);
  const rows: Array<Record<string, string | number>> = [];
  for (const { keys, serviceMs } of SCENARIOS) {
    await setLatency(emulator.url, serviceMs);
    for (const order of ["fifo", "fair"] as const) {
      const results: RunResult[] = [];
      for (let i = 0; i < RUNS; i++) results.push(await run(order, keys, reconcile));
      rows.push({
        "A's backlog": keys,
        "service answers after": `${serviceMs} ms`,
        queue: order === "fifo" ? "FIFO (before)" : "fair by namespace (now)",
        "B waited (median)": fmtMs(median(results.map((r) => r.waitMs))),
        "B waited (max)": fmtMs(Math.max(...results.map((r) => r.waitMs))),
        "keys taken before B (median)": median(results.map((r) => r.takenBefore)),
        "reconcile (median)": fmtMs(median(results.map((r) => r.reconcileMs))),
      });
    }
  }
  await setLatency(emulator.url, 0);
  console.log(table(rows));
  await closeConnections();
  await emulator.close();
}
