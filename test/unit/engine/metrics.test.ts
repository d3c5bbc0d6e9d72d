import { describe, expect, it } from "vitest";
import { createMetrics, queueObserver, trackActiveWorkers, type Metrics } from "../../../src/engine/metrics.ts";
import { createWorkQueue } from "../../../src/engine/queue.ts";

async function value(metrics: Metrics, name: string, labels: Record<string, string>): Promise<number | undefined> {
  const metric = metrics.registry.getSingleMetric(name);
  const values = (await metric?.get())?.values ?? [];
  return values.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))?.value;
}

describe("gauges read at scrape time", () => {
  it("report each controller's busy workers as they are when scraped", async () => {
    const metrics = createMetrics();
    const a = trackActiveWorkers(metrics, "a");
    const b = trackActiveWorkers(metrics, "b");
    a.inc();
    a.inc();
    b.inc();
    expect(await value(metrics, "controller_runtime_active_workers", { controller: "a" })).toBe(2);
    expect(await value(metrics, "controller_runtime_active_workers", { controller: "b" })).toBe(1);
    a.dec();
    b.dec();
    expect(await value(metrics, "controller_runtime_active_workers", { controller: "a" })).toBe(1);
    expect(await value(metrics, "controller_runtime_active_workers", { controller: "b" })).toBe(0);
    expect(await metrics.registry.metrics()).toContain('controller_runtime_active_workers{controller="a"} 1');
  });

  it("report a queue's depth as it is when scraped, and a later controller of the same name in its place", async () => {
    const metrics = createMetrics();
    const queue = createWorkQueue({ observer: queueObserver(metrics, "widgets") });
    queue.add("ns/a");
    queue.add("ns/b");
    queue.add("ns/b");
    expect(await value(metrics, "workqueue_depth", { name: "widgets" })).toBe(2);
    const key = await queue.get();
    expect(key).toBe("ns/a");
    expect(await value(metrics, "workqueue_depth", { name: "widgets" })).toBe(1);
    queue.shutDown();

    const again = trackActiveWorkers(metrics, "widgets");
    const first = trackActiveWorkers(metrics, "other");
    first.inc();
    again.inc();
    const next = trackActiveWorkers(metrics, "widgets");
    expect(await value(metrics, "controller_runtime_active_workers", { controller: "widgets" })).toBe(0);
    next.inc();
    expect(await value(metrics, "controller_runtime_active_workers", { controller: "widgets" })).toBe(1);
  });
});
