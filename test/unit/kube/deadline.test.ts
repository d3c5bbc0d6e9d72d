// Issue 16 §4: every apiserver request has a deadline — a request, not a watch's long stream —
// and an informer whose lists keep timing out backs off instead of hammering. Against a loopback
// server that accepts connections and never answers (or answers headers and then nothing).
// Assertions count requests, closed connections and restart attempts, never durations.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { Writable } from "node:stream";
import { afterAll, describe, expect, it } from "vitest";
import { KubeTimeoutError, kubeJson } from "../../../src/kube/rest.ts";
import type { KubeAccess } from "../../../src/kube/kubeconfig.ts";
import { watchOnce } from "../../../src/kube/watch.ts";
import { watchKind } from "../../../src/kube/informer.ts";
import { classifyError } from "../../../src/engine/errors.ts";
import { createLogger } from "../../../src/log.ts";
import { loopbackAccess, serverUrl } from "../../support/loopback-access.ts";

interface Seen {
  path: string;
  closed: boolean;
}

const servers: Server[] = [];

async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const s = { path: req.url ?? "", closed: false };
    seen.push(s);
    res.on("close", () => {
      s.closed = true;
    });
    handler(req, res);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: serverUrl(server), seen };
}

function access(server: string, requestTimeoutMs: number): KubeAccess {
  return loopbackAccess(server, { authorization: "Bearer kube-secret-token-77aa", requestTimeoutMs });
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1000 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!check()) throw new Error(`never happened: ${what}`);
}

afterAll(() => {
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
});

describe("apiserver request deadline", () => {
  it("a request the apiserver never answers fails with KubeTimeoutError and its connection is closed", async () => {
    const { url, seen } = await serve(() => {
      /* never answers */
    });
    const err = await kubeJson(access(url, 200), { path: "/api/v1/namespaces/a/secrets/b" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeTimeoutError);
    expect((err as Error).message).toMatch(/GET \/api\/v1\/namespaces\/a\/secrets\/b: no answer from the apiserver within 200 ms/);
    expect((err as Error).message).not.toContain("kube-secret-token-77aa");
    expect(classifyError(err)).toMatchObject({ reason: "ApiserverTimeout", retryable: true });
    expect(seen).toHaveLength(1);
    await until(() => seen[0]!.closed, "the connection closed");
  });

  it("headers without the rest of the body fail the same way (the deadline covers the body)", async () => {
    const { url, seen } = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"kind":"Secret",');
    });
    const err = await kubeJson(access(url, 200), { path: "/api/v1/namespaces/a/secrets/b" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeTimeoutError);
    await until(() => seen[0]!.closed, "the connection closed");
  });

  it("a caller's own abort is not reported as a timeout", async () => {
    const { url } = await serve(() => {
      /* never answers */
    });
    const stop = new AbortController();
    const pending = kubeJson(access(url, 60_000), { path: "/api/v1/namespaces", signal: stop.signal }).catch((e: unknown) => e);
    stop.abort();
    const err = await pending;
    expect(err).not.toBeInstanceOf(KubeTimeoutError);
    expect((err as Error).name).toBe("AbortError");
  });

  it("a watch whose headers never come times out; a watch stream that stays open longer than the deadline is not cut", async () => {
    const silent = await serve(() => {
      /* never answers */
    });
    const stop = new AbortController();
    const err = await watchOnce({ access: access(silent.url, 200) }, "/api/v1/secrets", {
      resourceVersion: "1",
      timeoutSeconds: 300,
      signal: stop.signal,
      onEvent: () => undefined,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeTimeoutError);

    // The stream: headers at once, one event only after 5 request deadlines have passed, then the end.
    const slow = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.flushHeaders();
      setTimeout(() => {
        res.end(`${JSON.stringify({ type: "ADDED", object: { metadata: { name: "x", namespace: "n", resourceVersion: "2" } } })}\n`);
      }, 1_000);
    });
    const events: string[] = [];
    const ended = await watchOnce({ access: access(slow.url, 200) }, "/api/v1/secrets", {
      resourceVersion: "1",
      timeoutSeconds: 300,
      signal: stop.signal,
      onEvent: (_type, obj) => events.push(obj.metadata.name),
    });
    expect(ended).toEqual({ end: "closed", events: 1 });
    expect(events).toEqual(["x"]);
  });
});

describe("informer against an apiserver that never answers", () => {
  it("each list times out and the relists back off: the attempt count grows and the restarts say why", async () => {
    const { url, seen } = await serve(() => {
      /* never answers */
    });
    const lines: { attempt?: number; reason?: string; msg?: string }[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString("utf8").split("\n")) if (line.trim()) lines.push(JSON.parse(line) as (typeof lines)[number]);
        done();
      },
    });
    const reasons: string[] = [];
    const informer = watchKind(
      { access: access(url, 100) },
      { group: "", version: "v1", plural: "secrets", kind: "Secret" },
      {
        logger: createLogger({ level: "warn" }, sink),
        onEvent: () => undefined,
        onRestart: (reason) => reasons.push(reason),
        restartBackoff: { baseMs: 20, maxMs: 200 },
      },
    );
    const started = informer.start().catch(() => undefined);
    await until(() => reasons.length >= 4, "four restarts");
    informer.stop();
    await started;
    // One list request per restart (plus at most the one in flight): no storm of requests.
    expect(seen.length).toBeGreaterThanOrEqual(4);
    expect(seen.length).toBeLessThanOrEqual(reasons.length + 1);
    expect(reasons[0]).toMatch(/no answer from the apiserver within 100 ms/);
    // The backoff's attempt number grows with each failure in a row (it is not reset).
    const attempts = lines.filter((l) => l.msg === "informer restarting its list/watch").map((l) => l.attempt);
    expect(attempts.slice(0, 4)).toEqual([0, 1, 2, 3]);
    expect(JSON.stringify(lines)).not.toContain("kube-secret-token-77aa");
  });

  it("a server that answers every watch with 410 Gone at once gets relists with a growing backoff, not a storm", async () => {
    const { url, seen } = await serve((req, res) => {
      res.writeHead(req.url?.includes("watch=true") ? 410 : 200, { "content-type": "application/json" });
      res.end(
        req.url?.includes("watch=true")
          ? '{"kind":"Status","code":410,"reason":"Expired"}'
          : '{"metadata":{"resourceVersion":"5"},"items":[]}',
      );
    });
    const lines: { attempt?: number; msg?: string }[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString("utf8").split("\n")) if (line.trim()) lines.push(JSON.parse(line) as (typeof lines)[number]);
        done();
      },
    });
    const informer = watchKind(
      { access: access(url, 1_000) },
      { group: "", version: "v1", plural: "secrets", kind: "Secret" },
      {
        logger: createLogger({ level: "warn" }, sink),
        onEvent: () => undefined,
        restartBackoff: { baseMs: 20, maxMs: 200 },
      },
    );
    await informer.start();
    const restarts = (): number => lines.filter((l) => l.msg === "informer restarting its list/watch").length;
    await until(() => restarts() >= 4, "four relists");
    informer.stop();
    const attempts = lines.filter((l) => l.msg === "informer restarting its list/watch").map((l) => l.attempt);
    expect(attempts.slice(0, 4)).toEqual([0, 1, 2, 3]);
    // A list and a watch per round: the lists are no more than the restarts plus the first.
    const lists = seen.filter((r) => !r.path.includes("watch=true")).length;
    expect(lists).toBeLessThanOrEqual(restarts() + 1);
  });
});
