// The client-side apiserver limit (src/kube/rest.ts): a token bucket of qps and burst shared by
// every kind, fair between kinds, watches exempt. Driven by a fake clock; counts, never time.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import {
  createRequestLimiter,
  limitRequests,
  MAX_HOLD_MS,
  requestKind,
  retryAfterHoldMs,
  withDeadline,
  type LimiterClock,
} from "../../../src/kube/rest.ts";
import type { KubeAccess } from "../../../src/kube/kubeconfig.ts";

function fakeClock(): LimiterClock & { advance(ms: number): Promise<void> } {
  let now = 0;
  let timers: { at: number; fn: () => void }[] = [];
  return {
    now: () => now,
    after(ms, fn) {
      const timer = { at: now + ms, fn };
      timers.push(timer);
      return () => {
        timers = timers.filter((t) => t !== timer);
      };
    },
    async advance(ms) {
      const end = now + ms;
      for (;;) {
        const next = timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at)[0];
        if (!next) break;
        timers = timers.filter((t) => t !== next);
        now = next.at;
        next.fn();
        await flush();
      }
      now = end;
      await flush();
    },
  };
}

const flush = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

/** Starts `n` acquisitions of `kind` and returns the order in which they were granted. */
function start(limiter: ReturnType<typeof createRequestLimiter>, kind: string, n: number, granted: string[], signal?: AbortSignal): void {
  void Promise.all(
    Array.from({ length: n }, (_, i) =>
      limiter.acquire(kind, signal).then(
        () => granted.push(`${kind}${String(i)}`),
        () => undefined,
      ),
    ),
  );
}

describe("request limiter", () => {
  it("lets a burst go at once, then qps a second", async () => {
    const clock = fakeClock();
    const limiter = createRequestLimiter({ qps: 10, burst: 5 }, clock);
    const granted: string[] = [];
    start(limiter, "a", 25, granted);
    await flush();
    expect(granted).toHaveLength(5);
    await clock.advance(1000);
    expect(granted).toHaveLength(15);
    await clock.advance(1000);
    expect(granted).toHaveLength(25);
    expect(limiter.waiting()).toEqual({});
  });

  it("refills up to the burst only", async () => {
    const clock = fakeClock();
    const limiter = createRequestLimiter({ qps: 10, burst: 3 }, clock);
    const granted: string[] = [];
    await clock.advance(60_000);
    start(limiter, "a", 10, granted);
    await flush();
    expect(granted).toHaveLength(3);
  });

  it("is fair between kinds: a backlog of one kind does not starve another", async () => {
    const clock = fakeClock();
    const limiter = createRequestLimiter({ qps: 10, burst: 1 }, clock);
    const granted: string[] = [];
    start(limiter, "projects", 1, granted);
    await flush();
    start(limiter, "projects", 100, granted);
    start(limiter, "leases", 2, granted);
    await flush();
    expect(limiter.waiting()).toEqual({ projects: 100, leases: 2 });
    // Four more tokens: the two kinds take turns.
    await clock.advance(400);
    expect(granted.slice(1)).toEqual(["projects0", "leases0", "projects1", "leases1"]);
    expect(limiter.waiting()).toEqual({ projects: 98 });
  });

  it("an aborted wait leaves the queue and rejects", async () => {
    const clock = fakeClock();
    const limiter = createRequestLimiter({ qps: 1, burst: 1 }, clock);
    await limiter.acquire("a");
    const abort = new AbortController();
    const waiting = limiter.acquire("a", abort.signal);
    await flush();
    expect(limiter.waiting()).toEqual({ a: 1 });
    abort.abort(new Error("stopped"));
    await expect(waiting).rejects.toThrow("stopped");
    expect(limiter.waiting()).toEqual({});
  });

  it("qps 0 is no limit", async () => {
    const limiter = createRequestLimiter({ qps: 0, burst: 1 }, fakeClock());
    const granted: string[] = [];
    start(limiter, "a", 1000, granted);
    await flush();
    expect(granted).toHaveLength(1000);
  });

  it("names a request's kind by group and plural", () => {
    expect(requestKind("/api/v1/namespaces/ns/secrets/x")).toBe("/secrets");
    expect(requestKind("/api/v1/namespaces")).toBe("/namespaces");
    expect(requestKind("/api/v1/namespaces/ns")).toBe("/namespaces");
    expect(requestKind("/apis/keyward.dev/v1alpha1/namespaces/ns/projects/p/status")).toBe("keyward.dev/projects");
    expect(requestKind("/apis/keyward.dev/v1alpha1/clusterproviderconfigs/c")).toBe("keyward.dev/clusterproviderconfigs");
    expect(requestKind("/apis/coordination.k8s.io/v1/namespaces/ns/leases/l")).toBe("coordination.k8s.io/leases");
    expect(requestKind("/apis/keyward.dev/v1alpha1/namespaces/ns/projects?watch=true")).toBe("keyward.dev/projects");
    expect(requestKind("//api//v1/namespaces//ns/secrets")).toBe("/secrets");
    expect(requestKind("/healthz")).toBe("/healthz");
  });

  it("names the kind as splitting the whole path would, for any path", () => {
    // The obvious form, kept here as the reference the per-request one must agree with.
    const reference = (path: string): string => {
      const parts = (path.split("?")[0] ?? "").split("/").filter((p) => p !== "");
      let group = "";
      let rest: string[];
      if (parts[0] === "api") rest = parts.slice(2);
      else if (parts[0] === "apis") {
        group = parts[1] ?? "";
        rest = parts.slice(3);
      } else return path;
      const plural = rest[0] === "namespaces" && rest.length >= 3 ? rest[2] : rest[0];
      return `${group}/${plural ?? ""}`;
    };
    const segment = fc.oneof(
      fc.constantFrom("api", "apis", "v1", "namespaces", "ns", "projects", "", "?", "a?b"),
      fc.string({ maxLength: 6 }),
    );
    fc.assert(
      fc.property(fc.array(segment, { maxLength: 10 }), (segments) => {
        const path = `/${segments.join("/")}`;
        expect(requestKind(path)).toBe(reference(path));
      }),
      { numRuns: 2000 },
    );
  });

  it("withDeadline waits its turn for lists and writes, never for a watch", async () => {
    const clock = fakeClock();
    const access = {
      server: "https://x",
      authorization: () => Promise.resolve(undefined),
      requestTimeoutMs: 60_000,
    } as unknown as KubeAccess;
    limitRequests(access, createRequestLimiter({ qps: 1, burst: 2 }, clock));
    let sent = 0;
    const send = (query?: Record<string, string | boolean>): Promise<void> =>
      withDeadline(access, { path: "/api/v1/namespaces/ns/secrets", ...(query ? { query } : {}) }, () => {
        sent += 1;
        return Promise.resolve();
      });
    void send();
    void send();
    void send();
    void send({ watch: true });
    void send({ watch: "true" });
    await flush();
    await flush();
    // Two of the burst, and the two watches: the third list waits.
    expect(sent).toBe(4);
    await clock.advance(1000);
    await flush();
    expect(sent).toBe(5);
    limitRequests(access, undefined);
  });
});

const APF = { "x-kubernetes-pf-flowschema-uid": "f", "x-kubernetes-pf-prioritylevel-uid": "p" };

describe("request limiter: auto follows the apiserver", () => {
  it("no bucket while the answers show API Priority and Fairness, counting no wait", async () => {
    const limiter = createRequestLimiter({ qps: "auto", burst: 5 }, fakeClock());
    limiter.observe(200, APF);
    const granted: string[] = [];
    start(limiter, "a", 1000, granted);
    await flush();
    expect(granted).toHaveLength(1000);
    expect(limiter.stats()).toMatchObject({ limitWaits: 0, priorityAndFairness: true });
  });

  it("the fallback rate where they do not, and before the first answer", async () => {
    const clock = fakeClock();
    const limiter = createRequestLimiter({ qps: "auto", burst: 5 }, clock);
    const granted: string[] = [];
    start(limiter, "a", 10, granted);
    await flush();
    expect(granted).toHaveLength(5);
    expect(limiter.stats()).toMatchObject({ limitWaits: 5, priorityAndFairness: undefined });
    limiter.observe(200, {});
    await clock.advance(10);
    // 300 a second: about 3 more in 10 ms, not the other 5.
    expect(granted.length).toBeGreaterThanOrEqual(7);
    expect(granted.length).toBeLessThanOrEqual(8);
    expect(limiter.stats().priorityAndFairness).toBe(false);
  });

  it("an answer showing it releases the requests waiting for a token at once", async () => {
    const limiter = createRequestLimiter({ qps: "auto", burst: 2 }, fakeClock());
    const granted: string[] = [];
    start(limiter, "a", 50, granted);
    await flush();
    expect(granted).toHaveLength(2);
    limiter.observe(404, APF);
    await flush();
    expect(granted).toHaveLength(50);
  });

  it("a 401 or a proxy's 5xx without the headers says nothing about the apiserver", () => {
    const limiter = createRequestLimiter({ qps: "auto", burst: 2 }, fakeClock());
    limiter.observe(200, APF);
    limiter.observe(401, {});
    limiter.observe(502, {});
    expect(limiter.stats().priorityAndFairness).toBe(true);
    limiter.observe(200, {});
    expect(limiter.stats().priorityAndFairness).toBe(false);
  });

  it("a number is kept whatever the apiserver shows", async () => {
    const limiter = createRequestLimiter({ qps: 10, burst: 2 }, fakeClock());
    limiter.observe(200, APF);
    const granted: string[] = [];
    start(limiter, "a", 5, granted);
    await flush();
    expect(granted).toHaveLength(2);
    expect(limiter.stats().limitWaits).toBe(3);
  });
});

describe("request limiter: a 429 holds every request back for its Retry-After", () => {
  it("Retry-After: whole seconds, at least 1 s, at most MAX_HOLD_MS, garbage the 1 s default", () => {
    expect(retryAfterHoldMs("3")).toBe(3000);
    expect(retryAfterHoldMs(["2", "9"])).toBe(2000);
    for (const garbage of [undefined, "", "0", "-5", "1.5", "soon", "Wed, 21 Oct 2015 07:28:00 GMT", "1e9"])
      expect(retryAfterHoldMs(garbage)).toBe(1000);
    expect(retryAfterHoldMs("86400")).toBe(MAX_HOLD_MS);
    expect(retryAfterHoldMs("999999999")).toBe(MAX_HOLD_MS);
  });

  it("holds the requests of that moment and later ones together, then lets them go spread over the hold, in order", async () => {
    const clock = fakeClock();
    const hooks = { waits: [] as string[], throttled: [] as number[] };
    const limiter = createRequestLimiter({ qps: "auto", burst: 5 }, clock, {
      onWait: (reason) => hooks.waits.push(reason),
      onThrottled: (ms) => hooks.throttled.push(ms),
    });
    limiter.observe(429, { ...APF, "retry-after": "2" });
    const granted: string[] = [];
    start(limiter, "a", 10, granted);
    await clock.advance(1000);
    start(limiter, "b", 10, granted);
    await clock.advance(999);
    expect(granted).toEqual([]);
    await clock.advance(1);
    // The first at the end of the hold; the twenty over the next second (2 s hold, a second at most).
    expect(granted).toEqual(["a0"]);
    await clock.advance(500);
    expect(granted).toHaveLength(11); // one every 50 ms
    await clock.advance(500);
    expect(granted).toEqual([
      ...Array.from({ length: 10 }, (_, i) => `a${String(i)}`),
      ...Array.from({ length: 10 }, (_, i) => `b${String(i)}`),
    ]);
    expect(limiter.stats()).toMatchObject({ throttled: 1, retryAfterWaits: 20, limitWaits: 0 });
    expect(hooks).toEqual({ waits: Array<string>(20).fill("retry_after"), throttled: [2000] });
  });

  it("a hostile Retry-After holds for MAX_HOLD_MS, not longer", async () => {
    const clock = fakeClock();
    const limiter = createRequestLimiter({ qps: 0, burst: 1 }, clock);
    limiter.observe(429, { "retry-after": "31536000" });
    const granted: string[] = [];
    start(limiter, "a", 1, granted);
    await clock.advance(MAX_HOLD_MS - 1);
    expect(granted).toEqual([]);
    await clock.advance(1);
    expect(granted).toEqual(["a0"]);
  });

  it("a request released into a new hold waits again; an aborted one leaves", async () => {
    const clock = fakeClock();
    const limiter = createRequestLimiter({ qps: 0, burst: 1 }, clock);
    limiter.observe(429, { "retry-after": "1" });
    const granted: string[] = [];
    const abort = new AbortController();
    start(limiter, "a", 4, granted);
    const leaving = limiter.acquire("b", abort.signal);
    await clock.advance(500);
    abort.abort(new Error("stopped"));
    await expect(leaving).rejects.toThrow("stopped");
    await clock.advance(500);
    expect(granted).toEqual(["a0"]);
    limiter.observe(429, { "retry-after": "1" });
    await clock.advance(2000);
    expect(granted).toEqual(["a0", "a1", "a2", "a3"]);
    expect(limiter.stats().retryAfterWaits).toBe(8);
  });
});
