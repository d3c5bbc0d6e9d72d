// npm run bench -- fairness: how long one change in namespace B waits behind a backlog of
// namespace A (issue 16 §3), with the work queue handing out keys in arrival order (FIFO, the
// queue before) and in turn by namespace (fair, the queue now).
//
// The real work queue (src/engine/queue.ts) and workers shaped like the controller's (get →
// reconcile → done, CONCURRENCY of them); a reconcile is one real service read over loopback HTTP
// through keyward's client, against the emulator in a worker thread (so the service's work does
// not share keyward's event loop). A's KEYS keys are queued, the workers start, and once they
// are busy B's one key is added: the figure is the time from that add until a worker takes B's
// key, and how many keys were taken before it. Medians of RUNS runs per order.
//
// FAIRNESS_BENCH_KEYS (default 10000), FAIRNESS_BENCH_RUNS (default 3),
// FAIRNESS_BENCH_CONCURRENCY (default 4, keyward's default).
import { closeConnections, createApiClient } from "../src/api/index.ts";
import { createWorkQueue } from "../src/engine/queue.ts";
import { startEmulatorThread } from "./support/emulator.ts";
import { fmtMs, median, table } from "./stats.ts";

const KEYS = Number(process.env["FAIRNESS_BENCH_KEYS"] ?? 10_000);
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

async function run(order: "fifo" | "fair", reconcile: () => Promise<void>): Promise<RunResult> {
  const queue = createWorkQueue({ order });
  for (let i = 0; i < KEYS; i++) queue.add(`team-a/project-${i}`);
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

export default async function bench(): Promise<void> {
  const token = "bench-fairness-token";
  const emulator = await startEmulatorThread(token);
  const api = createApiClient({ baseUrl: emulator.url, token, rateLimit: { requestsPerSecond: 1e6, burst: 1e6 } });
  const project = await api.createProject({ projectName: "fairness", slug: "fairness-bench" });
  const reconcile = async (): Promise<void> => {
    await api.getProject(project.id);
  };
  console.log(`A's backlog: ${KEYS} keys; ${CONCURRENCY} workers; one service read per reconcile; ${RUNS} runs per order`);
  const rows: Array<Record<string, string | number>> = [];
  for (const order of ["fifo", "fair"] as const) {
    const results: RunResult[] = [];
    for (let i = 0; i < RUNS; i++) results.push(await run(order, reconcile));
    rows.push({
      queue: order === "fifo" ? "FIFO (before)" : "fair by namespace (now)",
      "B waited (median)": fmtMs(median(results.map((r) => r.waitMs))),
      "B waited (max)": fmtMs(Math.max(...results.map((r) => r.waitMs))),
      "keys taken before B (median)": median(results.map((r) => r.takenBefore)),
      "reconcile (median)": fmtMs(median(results.map((r) => r.reconcileMs))),
    });
  }
  console.log(table(rows));
  await closeConnections();
  await emulator.close();
}
