// Reading a watch stream (src/kube/watch.ts): events split across chunks at any byte, the end of
// the stream, a 410 inside it, a line that is not JSON and a stream cut before its end. Against a
// loopback server writing the chunks the test chooses; each case also checks what happened to the
// connection (a stream left early is closed, not left to drain).
import { getEventListeners } from "node:events";
import { createServer, type Server, type ServerResponse } from "node:http";
import { afterAll, describe, expect, it, vi } from "vitest";
import type { KubeAccess } from "../../../src/kube/kubeconfig.ts";
import { watchOnce, type WatchEventType } from "../../../src/kube/watch.ts";
import { loopbackAccess, serverUrl } from "../../support/loopback-access.ts";

const servers: Server[] = [];

async function serve(write: (res: ServerResponse) => void): Promise<{ access: KubeAccess; closed: () => boolean }> {
  let closed = false;
  const server = createServer((_req, res) => {
    res.on("close", () => {
      closed = true;
    });
    res.writeHead(200, { "content-type": "application/json" });
    write(res);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { access: loopbackAccess(serverUrl(server)), closed: () => closed };
}

afterAll(() => {
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
});

const line = (type: string, name: string, rv: string): string =>
  `${JSON.stringify({ type, object: { metadata: { name, namespace: "n", resourceVersion: rv, annotations: { note: "é✓" } } } })}\n`;

/** Writes `text` in pieces of `size` bytes, one per turn of the event loop, then ends (or not). */
function pieces(res: ServerResponse, text: string, size: number, end = true): void {
  const bytes = Buffer.from(text);
  let at = 0;
  const next = (): void => {
    if (at >= bytes.length) {
      if (end) res.end();
      return;
    }
    res.write(bytes.subarray(at, at + size));
    at += size;
    setImmediate(next);
  };
  next();
}

async function watch(access: KubeAccess): Promise<{ result: unknown; seen: string[] }> {
  const seen: string[] = [];
  const result = await watchOnce({ access }, "/api/v1/configmaps", {
    resourceVersion: "1",
    timeoutSeconds: 30,
    signal: new AbortController().signal,
    onEvent: (type: WatchEventType, obj) => seen.push(`${type} ${obj.metadata.name} ${String(obj.metadata.annotations?.["note"])}`),
  }).catch((err: unknown) => err);
  return { result, seen };
}

describe("watch stream reading", () => {
  it("hands on every event, whole, however the bytes are cut, and reports how many when the server ends it", async () => {
    const text = line("ADDED", "a", "2") + "\n" + line("MODIFIED", "a", "3") + line("DELETED", "b", "4");
    for (const size of [1, 3, 7, 64, text.length]) {
      const { access } = await serve((res) => pieces(res, text, size));
      const { result, seen } = await watch(access);
      expect(result).toEqual({ end: "closed", events: 3 });
      expect(seen).toEqual(["ADDED a é✓", "MODIFIED a é✓", "DELETED b é✓"]);
    }
  });

  it("a 410 inside the stream ends it as gone after the events before it, and closes the connection", async () => {
    const gone = `${JSON.stringify({ type: "ERROR", object: { kind: "Status", code: 410, reason: "Expired" } })}\n`;
    const { access, closed } = await serve((res) => pieces(res, line("ADDED", "a", "2") + gone + line("ADDED", "late", "9"), 5, false));
    const { result, seen } = await watch(access);
    expect(result).toEqual({ end: "gone", events: 1 });
    expect(seen).toEqual(["ADDED a é✓"]);
    await expect.poll(closed).toBe(true);
  });

  it("another ERROR event or a line that is not JSON fails the watch and closes the connection", async () => {
    const forbidden = `${JSON.stringify({ type: "ERROR", object: { kind: "Status", code: 403, reason: "Forbidden", message: "no" } })}\n`;
    const a = await serve((res) => pieces(res, forbidden, 4, false));
    const first = await watch(a.access);
    expect(first.result).toMatchObject({ code: 403, reason: "Forbidden" });
    await expect.poll(a.closed).toBe(true);

    const b = await serve((res) => pieces(res, line("ADDED", "a", "2") + "{not json\n", 6, false));
    const second = await watch(b.access);
    expect(second.result).toBeInstanceOf(SyntaxError);
    expect(second.seen).toEqual(["ADDED a é✓"]);
    await expect.poll(b.closed).toBe(true);
  });

  it("a stream the server cuts before its end fails the watch instead of reading as a clean end", async () => {
    const { access } = await serve((res) => {
      res.write(line("ADDED", "a", "2"));
      setTimeout(() => res.destroy(), 20);
    });
    const { result, seen } = await watch(access);
    expect(result).toBeInstanceOf(Error);
    expect(result).not.toMatchObject({ end: "closed" });
    expect(seen).toEqual(["ADDED a é✓"]);
  });

  it("a watch that ended leaves no abort listener on a signal AbortSignal.any made for it, whichever way it ended", async () => {
    // A composite signal with an abort listener is held by Node (gcPersistentSignals) until one
    // of its sources aborts, and with it all its listener reaches: the request, its stream and
    // its HTTP/2 stream. The headers' deadline signal never aborts once its timer is cleared, so
    // one listener left on it kept every ended watch in memory (soak seed 14: 166 such signals
    // 20 s into a process, 332 two minutes later, 83 of them live watches).
    const any = AbortSignal.any.bind(AbortSignal);
    const made: AbortSignal[] = [];
    const spy = vi.spyOn(AbortSignal, "any").mockImplementation((signals) => {
      const signal = any(signals);
      made.push(signal);
      return signal;
    });
    try {
      const gone = `${JSON.stringify({ type: "ERROR", object: { kind: "Status", code: 410, reason: "Expired" } })}\n`;
      const ends: ((res: ServerResponse) => void)[] = [
        (res) => pieces(res, line("ADDED", "a", "2"), 7),
        (res) => pieces(res, line("ADDED", "a", "2") + gone, 5, false),
        (res) => pieces(res, "{not json\n", 3, false),
      ];
      for (const end of ends) {
        const { access } = await serve(end);
        await watch(access);
      }
      expect(made.length).toBeGreaterThanOrEqual(ends.length);
      const listening = made.filter((s) => !s.aborted && getEventListeners(s, "abort").length > 0);
      expect(listening).toHaveLength(0);
    } finally {
      spy.mockRestore();
    }
  });
});
