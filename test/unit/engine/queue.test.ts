import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createWorkQueue, defaultMaxInFlightPerNamespace, retryDelay, type QueueObserver } from "../../../src/engine/queue.ts";
import { MAX_RETRY_AFTER_MS } from "../../../src/lib/backoff.ts";
import { parseRetryAfter } from "../../../src/api/retry.ts";

// Resolves a pending get() if it settles within the current macrotask, else "pending".
async function settled<T>(promise: Promise<T>): Promise<T | "pending"> {
  return Promise.race([promise, new Promise<"pending">((resolve) => setImmediate(() => resolve("pending")))]);
}

describe("work queue", () => {
  it("collapses repeated adds of a waiting key and hands keys out in order", async () => {
    const q = createWorkQueue();
    q.add("ns/a");
    q.add("ns/b");
    q.add("ns/a");
    q.add("ns/a");
    expect(q.len()).toBe(2);
    expect(await q.get()).toBe("ns/a");
    expect(await q.get()).toBe("ns/b");
    expect(q.len()).toBe(0);
  });

  it("never hands a key in flight to a second worker; an add meanwhile re-runs it once after done", async () => {
    const q = createWorkQueue();
    q.add("ns/a");
    const first = await q.get();
    expect(first).toBe("ns/a");
    q.add("ns/a");
    q.add("ns/a");
    expect(q.len()).toBe(0);
    const second = q.get();
    expect(await settled(second)).toBe("pending");
    q.done("ns/a");
    expect(await second).toBe("ns/a");
    q.done("ns/a");
    expect(q.len()).toBe(0);
    expect(await settled(q.get())).toBe("pending");
  });

  it("serves other keys while one is in flight", async () => {
    const q = createWorkQueue();
    q.add("ns/a");
    await q.get();
    q.add("ns/a");
    q.add("ns/b");
    expect(await q.get()).toBe("ns/b");
    expect(q.inFlight()).toBe(2);
  });

  it("done of a key not in flight changes nothing", () => {
    const q = createWorkQueue();
    q.add("ns/a");
    q.done("ns/a");
    q.done("ns/zzz");
    expect(q.len()).toBe(1);
  });

  it("a waiting get() is woken by a later add", async () => {
    const q = createWorkQueue();
    const next = q.get();
    expect(await settled(next)).toBe("pending");
    q.add("ns/x");
    expect(await next).toBe("ns/x");
  });
});

describe("work queue delays", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("addAfter adds the key once the delay passes", () => {
    const q = createWorkQueue({ now: () => Date.now() });
    q.addAfter("ns/a", 1000);
    expect(q.len()).toBe(0);
    vi.advanceTimersByTime(999);
    expect(q.len()).toBe(0);
    vi.advanceTimersByTime(1);
    expect(q.len()).toBe(1);
  });

  it("cancelDelayed drops a key's waiting add (a key let go), and a later addAfter still works", () => {
    const q = createWorkQueue({ now: () => Date.now() });
    q.addAfter("ns/a", 1000);
    q.cancelDelayed("ns/a");
    vi.advanceTimersByTime(5_000);
    expect(q.len()).toBe(0);
    q.addAfter("ns/a", 1000);
    vi.advanceTimersByTime(1000);
    expect(q.len()).toBe(1);
  });

  // Found by client-decoding.property.test.ts: a Retry-After of 30 days (or a requeue that long)
  // became a timer past 2^31-1 ms, which Node fires after 1 ms: a hot loop where the service
  // asked for quiet. Delays are clamped to the longest a timer waits.
  it("addAfter past the longest timer (2^31-1 ms) waits that long instead of firing at once", () => {
    const q = createWorkQueue({ now: () => Date.now() });
    q.addAfter("ns/a", 30 * 24 * 3_600_000);
    q.addAfter("ns/b", Number.POSITIVE_INFINITY);
    vi.advanceTimersByTime(60_000);
    expect(q.len()).toBe(0);
    vi.advanceTimersByTime(2 ** 31 - 1);
    expect(q.len()).toBe(2);
  });

  it("of two pending delays for one key the earlier wins, and the key is added once", () => {
    const q = createWorkQueue({ now: () => Date.now() });
    q.addAfter("ns/a", 1000);
    q.addAfter("ns/a", 100);
    q.addAfter("ns/a", 5000);
    vi.advanceTimersByTime(100);
    expect(q.len()).toBe(1);
    vi.advanceTimersByTime(10_000);
    expect(q.len()).toBe(1);
  });

  it("addAfter with no delay adds at once", () => {
    const q = createWorkQueue();
    q.addAfter("ns/a", 0);
    expect(q.len()).toBe(1);
  });

  it("addRateLimited backs off exponentially per key until forget", async () => {
    const q = createWorkQueue({ backoff: { baseMs: 10, maxMs: 50, jitter: "none" }, now: () => Date.now() });
    const delayOf = async (key: string): Promise<number> => {
      q.addRateLimited(key);
      let waited = 0;
      while (q.len() === 0 && waited < 1000) {
        vi.advanceTimersByTime(1);
        waited += 1;
      }
      q.done((await q.get()) as string);
      return waited;
    };
    expect(await delayOf("ns/a")).toBe(10);
    expect(await delayOf("ns/a")).toBe(20);
    expect(await delayOf("ns/a")).toBe(40);
    expect(await delayOf("ns/a")).toBe(50);
    expect(q.numRequeues("ns/a")).toBe(4);
    expect(await delayOf("ns/b")).toBe(10);
    q.forget("ns/a");
    expect(q.numRequeues("ns/a")).toBe(0);
    expect(await delayOf("ns/a")).toBe(10);
  });
});

describe("fair queuing across namespaces", () => {
  it("with 10,000 keys of namespace A queued, B's one key is handed out second, not 10,001st", async () => {
    const q = createWorkQueue();
    for (let i = 0; i < 10_000; i++) q.add(`a/k${i}`);
    q.add("b/only");
    expect(q.len()).toBe(10_001);
    const order: string[] = [];
    for (let i = 0; i < 5; i++) order.push((await q.get()) as string);
    expect(order.indexOf("b/only")).toBeLessThanOrEqual(1);
    expect(order.filter((k) => k.startsWith("a/"))).toEqual(["a/k0", "a/k1", "a/k2", "a/k3"]);
  });

  it("a key of B added while A's backlog is being worked comes next, whatever A's depth", async () => {
    const q = createWorkQueue();
    for (let i = 0; i < 10_000; i++) q.add(`a/k${i}`);
    for (let i = 0; i < 100; i++) q.done((await q.get()) as string);
    q.add("b/late");
    const next = [(await q.get()) as string, (await q.get()) as string];
    expect(next).toContain("b/late");
  });

  it("takes namespaces in turn, each in its own arrival order", async () => {
    const q = createWorkQueue();
    for (const key of ["a/1", "a/2", "a/3", "b/1", "c/1", "c/2", "/cluster-scoped"]) q.add(key);
    const order: string[] = [];
    while (q.len() > 0) order.push((await q.get()) as string);
    expect(order).toEqual(["a/1", "b/1", "c/1", "/cluster-scoped", "a/2", "c/2", "a/3"]);
  });

  it("keeps dedupe and in-flight semantics per key: never twice at once, re-run once after done, behind its namespace's turn", async () => {
    const q = createWorkQueue();
    q.add("a/1");
    q.add("a/2");
    q.add("b/1");
    expect(await q.get()).toBe("a/1");
    q.add("a/1");
    q.add("a/1");
    expect(q.len()).toBe(2);
    expect(await q.get()).toBe("b/1");
    q.done("a/1");
    expect(q.len()).toBe(2);
    expect(await q.get()).toBe("a/2");
    expect(await q.get()).toBe("a/1");
    expect(q.len()).toBe(0);
    expect(await settled(q.get())).toBe("pending");
  });

  it("order fifo is the plain arrival order (kept for the benchmark's before/after)", async () => {
    const q = createWorkQueue({ order: "fifo" });
    for (let i = 0; i < 1000; i++) q.add(`a/k${i}`);
    q.add("b/only");
    const order: string[] = [];
    while (q.len() > 0) order.push((await q.get()) as string);
    expect(order.indexOf("b/only")).toBe(1000);
  });
});

describe("a cap on the keys one namespace has in flight", () => {
  // Four workers, as keyward's default: each get() is a worker asking for its next key.
  const workers = (q: ReturnType<typeof createWorkQueue>, n: number) => Array.from({ length: n }, () => q.get());

  it("A's backlog takes at most its cap of the workers: the rest wait for B, and B's keys go out while A's are all in flight", async () => {
    const q = createWorkQueue({ maxInFlightPerNamespace: 2 });
    for (let i = 0; i < 20; i++) q.add(`a/k${i}`);
    const four = workers(q, 4);
    expect(await settled(four[0] as Promise<string>)).toBe("a/k0");
    expect(await settled(four[1] as Promise<string>)).toBe("a/k1");
    // A holds 2 (hung on its service, say): the other two workers stay free, though A has 18 waiting.
    expect(await settled(four[2] as Promise<string>)).toBe("pending");
    expect(q.inFlight()).toBe(2);
    for (let i = 0; i < 5; i++) q.add(`b/k${i}`);
    expect(await four[2]).toBe("b/k0");
    expect(await four[3]).toBe("b/k1");
    // B's five all go through the two free workers while A's two never finish.
    const seen = ["b/k0", "b/k1"];
    q.done("b/k0");
    q.done("b/k1");
    for (let i = 0; i < 3; i++) {
      const key = (await q.get()) as string;
      seen.push(key);
      q.done(key);
    }
    expect(seen).toEqual(["b/k0", "b/k1", "b/k2", "b/k3", "b/k4"]);
    expect(q.len()).toBe(18);
    // One of A's finishes: A gets a worker again, in its arrival order.
    const next = q.get();
    expect(await settled(next)).toBe("pending");
    q.done("a/k0");
    expect(await next).toBe("a/k2");
  });

  it("counts per namespace: a namespace at its cap does not hold back one below it, and a cluster-scoped key is a namespace of its own", async () => {
    const q = createWorkQueue({ maxInFlightPerNamespace: 1 });
    for (const key of ["a/1", "a/2", "b/1", "b/2", "/c1", "/c2"]) q.add(key);
    const got = await Promise.all(workers(q, 3));
    expect(got).toEqual(["a/1", "b/1", "/c1"]);
    const fourth = q.get();
    expect(await settled(fourth)).toBe("pending");
    q.done("b/1");
    expect(await fourth).toBe("b/2");
  });

  it("keeps a re-added key's semantics: dirty in flight, back after done, still under the cap", async () => {
    const q = createWorkQueue({ maxInFlightPerNamespace: 1 });
    q.add("a/1");
    q.add("a/2");
    expect(await q.get()).toBe("a/1");
    q.add("a/1");
    const next = q.get();
    expect(await settled(next)).toBe("pending");
    q.done("a/1");
    expect(await next).toBe("a/2");
    const after = q.get();
    expect(await settled(after)).toBe("pending");
    q.done("a/2");
    expect(await after).toBe("a/1");
    expect(q.inFlight()).toBe(1);
  });

  it("without a cap (undefined or 0) one namespace may take every worker, as before", async () => {
    for (const cap of [undefined, 0]) {
      const q = createWorkQueue(cap === undefined ? {} : { maxInFlightPerNamespace: cap });
      for (let i = 0; i < 10; i++) q.add(`a/k${i}`);
      expect(await Promise.all(workers(q, 4))).toEqual(["a/k0", "a/k1", "a/k2", "a/k3"]);
    }
  });

  it("shutdown still drains: keys held back by the cap go out as their namespace's keys finish, then get() ends", async () => {
    const q = createWorkQueue({ maxInFlightPerNamespace: 1 });
    q.add("a/1");
    q.add("a/2");
    expect(await q.get()).toBe("a/1");
    q.shutDown();
    const next = q.get();
    expect(await settled(next)).toBe("pending");
    q.done("a/1");
    expect(await next).toBe("a/2");
    q.done("a/2");
    expect(await q.get()).toBeUndefined();
  });

  it("defaults to half the workers, rounded up, and to all of them when one namespace is watched", () => {
    expect(defaultMaxInFlightPerNamespace(4)).toBe(2);
    expect(defaultMaxInFlightPerNamespace(5)).toBe(3);
    expect(defaultMaxInFlightPerNamespace(1)).toBe(1);
    expect(defaultMaxInFlightPerNamespace(4, ["a", "b"])).toBe(2);
    expect(defaultMaxInFlightPerNamespace(4, ["only"])).toBe(4);
  });
});

describe("retry delay: Retry-After is a floor on the backoff, never a replacement", () => {
  const policy = { baseMs: 1000, maxMs: 300_000, jitter: "none" as const };
  const now = Date.parse("2030-01-01T00:00:00Z");

  it("without Retry-After: the backoff", () => {
    expect([0, 1, 2, 3].map((attempt) => retryDelay(attempt, policy, undefined))).toEqual([1000, 2000, 4000, 8000]);
  });

  it("a Retry-After of 0, a date in the past or garbage cannot shorten the backoff (no hot loop)", () => {
    const zero = parseRetryAfter("0", now);
    const past = parseRetryAfter("Wed, 01 Jan 2020 00:00:00 GMT", now);
    const garbage = parseRetryAfter("soon, promise", now);
    expect([zero, past, garbage]).toEqual([0, 0, undefined]);
    for (const retryAfterMs of [zero, past, garbage, -5, Number.NaN, Number.NEGATIVE_INFINITY]) {
      expect([0, 1, 2].map((attempt) => retryDelay(attempt, policy, retryAfterMs))).toEqual([1000, 2000, 4000]);
    }
  });

  it("a Retry-After above the backoff is waited for", () => {
    expect(retryDelay(0, policy, 30_000)).toBe(30_000);
    expect(retryDelay(6, policy, 30_000)).toBe(64_000);
    expect(retryDelay(0, policy, parseRetryAfter("Tue, 01 Jan 2030 00:00:45 GMT", now))).toBe(45_000);
  });

  it("a huge or infinite Retry-After is capped, so it cannot park a key for ever", () => {
    expect(retryDelay(0, policy, 1e15)).toBe(MAX_RETRY_AFTER_MS);
    expect(retryDelay(0, policy, Number.POSITIVE_INFINITY)).toBe(1000);
  });

  it("the jitter still applies to the backoff under the floor", () => {
    const equal = { ...policy, jitter: "equal" as const };
    expect(retryDelay(2, equal, 0, () => 0)).toBe(2000);
    expect(retryDelay(2, equal, 0, () => 1)).toBe(4000);
    expect(retryDelay(2, equal, 3000, () => 0)).toBe(3000);
  });
});

describe("work queue retries with Retry-After", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("a key failing again and again with Retry-After 0 backs off like any failure and counts its requeues", async () => {
    const q = createWorkQueue({ backoff: { baseMs: 10, maxMs: 50, jitter: "none" }, now: () => Date.now() });
    const delayOf = async (retryAfterMs: number): Promise<number> => {
      q.addRateLimited("ns/a", retryAfterMs);
      let waited = 0;
      while (q.len() === 0 && waited < 1000) {
        vi.advanceTimersByTime(1);
        waited += 1;
      }
      q.done((await q.get()) as string);
      return waited;
    };
    expect([await delayOf(0), await delayOf(0), await delayOf(0)]).toEqual([10, 20, 40]);
    expect(await delayOf(300)).toBe(300);
    expect(q.numRequeues("ns/a")).toBe(4);
  });
});

describe("work queue shutdown", () => {
  it("stops accepting adds, drains what is queued, then resolves undefined", async () => {
    const q = createWorkQueue();
    q.add("ns/a");
    q.add("ns/b");
    q.addAfter("ns/later", 60_000);
    q.shutDown();
    q.add("ns/c");
    expect(q.isShuttingDown()).toBe(true);
    expect(q.len()).toBe(2);
    expect(await q.get()).toBe("ns/a");
    expect(await q.get()).toBe("ns/b");
    expect(await q.get()).toBeUndefined();
    expect(await q.get()).toBeUndefined();
  });

  it("releases workers already waiting", async () => {
    const q = createWorkQueue();
    const waiting = [q.get(), q.get()];
    q.shutDown();
    expect(await Promise.all(waiting)).toEqual([undefined, undefined]);
  });

  it("still re-runs a key that was dirty before shutdown, once", async () => {
    const q = createWorkQueue();
    q.add("ns/a");
    await q.get();
    q.add("ns/a");
    q.shutDown();
    q.done("ns/a");
    expect(await q.get()).toBe("ns/a");
    q.done("ns/a");
    expect(await q.get()).toBeUndefined();
  });
});

describe("work queue observer", () => {
  it("reports adds, retries, depth and durations", async () => {
    const seen = { adds: 0, retries: 0, depth: [] as number[], queued: 0, worked: 0 };
    const observer: QueueObserver = {
      added: () => {
        seen.adds += 1;
      },
      retried: () => {
        seen.retries += 1;
      },
      depth: (n) => {
        seen.depth.push(n);
      },
      queueDuration: () => {
        seen.queued += 1;
      },
      workDuration: () => {
        seen.worked += 1;
      },
    };
    const q = createWorkQueue({ observer });
    q.add("ns/a");
    q.add("ns/a");
    q.add("ns/b");
    q.addRateLimited("ns/c");
    const key = await q.get();
    q.done(key as string);
    expect(seen.adds).toBe(2);
    expect(seen.retries).toBe(1);
    expect(seen.depth).toEqual([1, 2, 1]);
    expect(seen.queued).toBe(1);
    expect(seen.worked).toBe(1);
    q.shutDown();
  });
});
