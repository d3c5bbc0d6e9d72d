// What the work queue does after a pass: a pass that found its object gone drops the requeue an
// earlier pass of the key asked for, so no timer outlives the object; a plain done keeps it.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { settle } from "../../../src/engine/controller.ts";
import { createMetrics } from "../../../src/engine/metrics.ts";
import { createWorkQueue } from "../../../src/engine/queue.ts";
import { done, gone, retryable } from "../../../src/engine/types.ts";

const labels = { controller: "widgets" };

describe("settle", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("drops a waiting requeue when the object is gone, and keeps it after a plain done", () => {
    const metrics = createMetrics();
    const q = createWorkQueue({ now: () => Date.now() });
    q.addAfter("ns/gone", 1000);
    q.addAfter("ns/live", 1000);
    expect(settle(q, metrics, labels, "ns/gone", gone())).toBe("success");
    expect(settle(q, metrics, labels, "ns/live", done())).toBe("success");
    vi.advanceTimersByTime(5_000);
    expect(q.len()).toBe(1);
  });

  it("drops a retry's backoff timer and its failure count when the object is gone", () => {
    const metrics = createMetrics();
    const q = createWorkQueue({ now: () => Date.now(), backoff: { baseMs: 1000, maxMs: 1000, jitter: "none" } });
    settle(q, metrics, labels, "ns/a", retryable(new Error("the status write found no object")));
    expect(q.numRequeues("ns/a")).toBe(1);
    settle(q, metrics, labels, "ns/a", gone());
    expect(q.numRequeues("ns/a")).toBe(0);
    vi.advanceTimersByTime(5_000);
    expect(q.len()).toBe(0);
  });
});
