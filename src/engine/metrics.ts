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
}

// controller-runtime's reconcile_time_seconds buckets.
const reconcileBuckets = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75,
  2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];
// client-go workqueue: ExponentialBuckets(10e-9, 10, 12).
const queueBuckets = Array.from({ length: 12 }, (_, i) => 1e-8 * 10 ** i);

export function createMetrics(): Metrics {
  const registry = new Registry();
  const registers = [registry];
  return {
    registry,
    reconcileTotal: new Counter({
      name: "controller_runtime_reconcile_total",
      help: "Total number of reconciliations per controller",
      labelNames: ["controller", "result"],
      registers,
    }),
    reconcileErrors: new Counter({
      name: "controller_runtime_reconcile_errors_total",
      help: "Total number of reconciliation errors per controller",
      labelNames: ["controller"],
      registers,
    }),
    terminalReconcileErrors: new Counter({
      name: "controller_runtime_terminal_reconcile_errors_total",
      help: "Total number of terminal reconciliation errors per controller",
      labelNames: ["controller"],
      registers,
    }),
    reconcileTime: new Histogram({
      name: "controller_runtime_reconcile_time_seconds",
      help: "Length of time per reconciliation per controller",
      labelNames: ["controller"],
      buckets: reconcileBuckets,
      registers,
    }),
    activeWorkers: new Gauge({
      name: "controller_runtime_active_workers",
      help: "Number of currently used workers per controller",
      labelNames: ["controller"],
      registers,
    }),
    maxConcurrentReconciles: new Gauge({
      name: "controller_runtime_max_concurrent_reconciles",
      help: "Maximum number of concurrent reconciles per controller",
      labelNames: ["controller"],
      registers,
    }),
    workqueueDepth: new Gauge({
      name: "workqueue_depth",
      help: "Current depth of workqueue",
      labelNames: ["name"],
      registers,
    }),
    workqueueAdds: new Counter({
      name: "workqueue_adds_total",
      help: "Total number of adds handled by workqueue",
      labelNames: ["name"],
      registers,
    }),
    workqueueRetries: new Counter({
      name: "workqueue_retries_total",
      help: "Total number of retries handled by workqueue",
      labelNames: ["name"],
      registers,
    }),
    workqueueQueueDuration: new Histogram({
      name: "workqueue_queue_duration_seconds",
      help: "How long in seconds an item stays in workqueue before being requested",
      labelNames: ["name"],
      buckets: queueBuckets,
      registers,
    }),
    workqueueWorkDuration: new Histogram({
      name: "workqueue_work_duration_seconds",
      help: "How long in seconds processing an item from workqueue takes",
      labelNames: ["name"],
      buckets: queueBuckets,
      registers,
    }),
    informerRestarts: new Counter({
      name: "keyward_informer_restarts_total",
      help: "Times an informer's list/watch was restarted after an error or an expired resourceVersion",
      labelNames: ["kind"],
      registers,
    }),
  };
}

/** The work queue's hooks, writing to the workqueue_* metrics under one queue name. */
export function queueObserver(metrics: Metrics, name: string): QueueObserver {
  const labels = { name };
  return {
    depth: (n) => metrics.workqueueDepth.set(labels, n),
    added: () => metrics.workqueueAdds.inc(labels),
    retried: () => metrics.workqueueRetries.inc(labels),
    queueDuration: (s) => metrics.workqueueQueueDuration.observe(labels, s),
    workDuration: (s) => metrics.workqueueWorkDuration.observe(labels, s),
  };
}
