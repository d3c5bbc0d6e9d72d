// The client-side apiserver limit (src/kube/rest.ts): a token bucket of qps and burst shared by
// every kind, fair between kinds, watches exempt. Driven by a fake clock; counts, never time.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { createRequestLimiter, limitRequests, requestKind, withDeadline, type LimiterClock } from "../../../src/kube/rest.ts";
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
