// keyward's Prometheus registry. Metric names and labels follow controller-runtime's
// (pkg/internal/controller/metrics and its workqueue provider) so dashboards built for Go
// operators read keyward too. Each call makes a fresh registry: nothing global, so tests
// can create as many as they like.
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { QueueObserver } from "./queue.ts";

export type ReconcileResult = "success" | "error" | "requeue" | "requeue_after";

export interface Metrics {
  registry: Registry;
  reconcileTotal: Counter<"controller" | "result">;
  reconcileErrors: Counter<"controller">;
  terminalReconcileErrors: Counter<"controller">;
  reconcileTime: Histogram<"controller">;
  activeWorkers: Gauge<"controller">;
  maxConcurrentReconciles: Gauge<"controller">;
  workqueueDepth: Gauge<"name">;
  workqueueAdds: Counter<"name">;
  workqueueRetries: Counter<"name">;
  workqueueQueueDuration: Histogram<"name">;
  workqueueWorkDuration: Histogram<"name">;
  informerRestarts: Counter<"kind">;
  /** apiserver requests that waited before being sent: for the client-side rate, or behind a 429's Retry-After. */
  kubeApiWaits: Counter<"reason">;
  /** The apiserver's 429 answers (each holds keyward's requests back for its Retry-After). */
  kubeApiThrottled: Counter;
  /** Per controller, its number of busy workers, read at scrape time (trackActiveWorkers). */
  activeWorkerReaders: LiveReaders;
  /** Per queue name, its depth, read at scrape time (queueObserver). */
  queueDepthReaders: LiveReaders;
}

/**
 * Label value -> the gauge's current value. A gauge that moves on every queue add and every pass
 * is read when scraped, as client-go's and controller-runtime's are kept in plain integers: a
 * prom-client set() per change hashes and checks its labels each time (prom-client was 2.6% of
 * keyward's CPU while creating, bench/RESULTS.md).
 */
export type LiveReaders = Map<string, () => number>;

function liveGauge<L extends string>(registry: Registry, name: string, help: string, labelName: L, readers: LiveReaders): Gauge<L> {
  return new Gauge<L>({
    name,
    help,
    labelNames: [labelName],
    registers: [registry],
    collect() {
      for (const [value, read] of readers) this.set({ [labelName]: value } as Record<L, string>, read());
    },
  });
}

// controller-runtime's reconcile_time_seconds buckets.
const reconcileBuckets = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5,
  4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];
// client-go workqueue: ExponentialBuckets(10e-9, 10, 12).
const queueBuckets = Array.from({ length: 12 }, (_, i) => 1e-8 * 10 ** i);

function counter<L extends string>(registry: Registry, name: string, help: string, labelNames: L[]): Counter<L> {
  return new Counter({ name, help, labelNames, registers: [registry] });
}

function gauge<L extends string>(registry: Registry, name: string, help: string, labelNames: L[]): Gauge<L> {
  return new Gauge({ name, help, labelNames, registers: [registry] });
}

function histogram<L extends string>(registry: Registry, name: string, help: string, labelNames: L[], buckets: number[]): Histogram<L> {
  return new Histogram({ name, help, labelNames, buckets, registers: [registry] });
}

export function createMetrics(): Metrics {
  const r = new Registry();
  const activeWorkerReaders: LiveReaders = new Map();
  const queueDepthReaders: LiveReaders = new Map();
  return {
    registry: r,
    reconcileTotal: counter(r, "controller_runtime_reconcile_total", "Total number of reconciliations per controller", [
      "controller",
      "result",
    ]),
    reconcileErrors: counter(r, "controller_runtime_reconcile_errors_total", "Total number of reconciliation errors per controller", [
      "controller",
    ]),
    terminalReconcileErrors: counter(
      r,
      "controller_runtime_terminal_reconcile_errors_total",
      "Total number of terminal reconciliation errors per controller",
      ["controller"],
    ),
    reconcileTime: histogram(
      r,
      "controller_runtime_reconcile_time_seconds",
      "Length of time per reconciliation per controller",
      ["controller"],
      reconcileBuckets,
    ),
    activeWorkers: liveGauge(
      r,
      "controller_runtime_active_workers",
      "Number of currently used workers per controller",
      "controller",
      activeWorkerReaders,
    ),
    maxConcurrentReconciles: gauge(
      r,
      "controller_runtime_max_concurrent_reconciles",
      "Maximum number of concurrent reconciles per controller",
      ["controller"],
    ),
    workqueueDepth: liveGauge(r, "workqueue_depth", "Current depth of workqueue", "name", queueDepthReaders),
    workqueueAdds: counter(r, "workqueue_adds_total", "Total number of adds handled by workqueue", ["name"]),
    workqueueRetries: counter(r, "workqueue_retries_total", "Total number of retries handled by workqueue", ["name"]),
    workqueueQueueDuration: histogram(
      r,
      "workqueue_queue_duration_seconds",
      "How long in seconds an item stays in workqueue before being requested",
      ["name"],
      queueBuckets,
    ),
    workqueueWorkDuration: histogram(
      r,
      "workqueue_work_duration_seconds",
      "How long in seconds processing an item from workqueue takes",
      ["name"],
      queueBuckets,
    ),
    informerRestarts: counter(
      r,
      "keyward_informer_restarts_total",
      "Times an informer's list/watch was restarted after an error or an expired resourceVersion",
      ["kind"],
    ),
    kubeApiWaits: counter(
      r,
      "keyward_kube_api_request_waits_total",
      "apiserver requests that waited before being sent, by reason: client_limit (--kube-api-qps) or retry_after (an apiserver 429)",
      ["reason"],
    ),
    kubeApiThrottled: counter(
      r,
      "keyward_kube_api_throttled_total",
      "apiserver answers 429 Too Many Requests (API Priority and Fairness or max-in-flight)",
      [],
    ),
    activeWorkerReaders,
    queueDepthReaders,
  };
}

/** The work queue's hooks, writing to the workqueue_* metrics under one queue name. */
export function queueObserver(metrics: Metrics, name: string): QueueObserver {
  const labels = { name };
  let depth = 0;
  metrics.queueDepthReaders.set(name, () => depth);
  return {
    depth: (n) => {
      depth = n;
    },
    added: () => metrics.workqueueAdds.inc(labels),
    retried: () => metrics.workqueueRetries.inc(labels),
    queueDuration: (s) => metrics.workqueueQueueDuration.observe(labels, s),
    workDuration: (s) => metrics.workqueueWorkDuration.observe(labels, s),
  };
}

/**
 * The busy workers of controller `name`, kept in a plain integer and read at scrape time. A
 * controller of the same name started later (a new leader term) reports in its place.
 */
export function trackActiveWorkers(metrics: Metrics, name: string): { inc(): void; dec(): void } {
  let active = 0;
  metrics.activeWorkerReaders.set(name, () => active);
  return {
    inc: () => {
      active += 1;
    },
    dec: () => {
      active -= 1;
    },
  };
}

/**
 * A gauge of a kind's own per-object series on keyward's registry. Asking twice for the same
 * name returns the gauge already registered, so a registry shared by several operators (tests)
 * never sees a duplicate registration.
 */
export function kindGauge<L extends string>(metrics: Metrics, config: { name: string; help: string; labelNames: readonly L[] }): Gauge<L> {
  const existing = metrics.registry.getSingleMetric(config.name);
  if (existing) {
    if (!(existing instanceof Gauge)) throw new Error(`metric ${config.name} is registered, but not as a gauge`);
    return existing;
  }
  return new Gauge({ name: config.name, help: config.help, labelNames: config.labelNames, registers: [metrics.registry] });
}
