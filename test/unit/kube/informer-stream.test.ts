// The informer's current state taken from a watch's initial events (sendInitialEvents), at the
// edges a real apiserver does not produce on demand: a deletion among the initial events, a
// stream cut before its end bookmark, and a later re-stream that misses objects the cache holds.
// Against a loopback stand-in that speaks the watch-list protocol; the happy path and the
// refusal of a real kube-apiserver are in test/integration/kube/informer-watchlist.test.ts.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { afterAll, describe, expect, it } from "vitest";
import { watchKind, type Informer } from "../../../src/kube/informer.ts";
import { endsInitialEvents, isWatchListRefusal } from "../../../src/kube/watch.ts";
import { KubeApiError } from "../../../src/kube/rest.ts";
import type { KubeObject } from "../../../src/kube/types.ts";
import { createLogger } from "../../../src/log.ts";
import { loopbackAccess, serverUrl } from "../../support/loopback-access.ts";

const servers: Server[] = [];
const informers: Informer[] = [];
afterAll(() => {
  for (const i of informers) i.stop();
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
});

const widget = (name: string, resourceVersion: string): KubeObject => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, namespace: "a", resourceVersion },
  spec: {},
});
const line = (type: string, object: unknown): string => `${JSON.stringify({ type, object })}\n`;
const end = (resourceVersion: string): string =>
  line("BOOKMARK", { metadata: { resourceVersion, annotations: { "k8s.io/initial-events-end": "true" } } });

/** Each request gets the next of `answers` (the last one repeats); records the request URLs. */
async function standIn(answers: ((req: IncomingMessage, res: ServerResponse) => void)[]): Promise<{ url: string; seen: string[] }> {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    seen.push(req.url ?? "");
    const answer = answers[Math.min(seen.length - 1, answers.length - 1)];
    answer?.(req, res);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: serverUrl(server), seen };
}

function start(url: string, initialEventsQuietMs?: number): { informer: Informer; events: string[]; restarts: string[]; logged: string[] } {
  const events: string[] = [];
  const restarts: string[] = [];
  const logged: string[] = [];
  const logger = createLogger({ level: "info" }, { write: (l: string) => void logged.push(l) });
  const informer = watchKind(
    { access: loopbackAccess(url) },
    { group: "", version: "v1", plural: "configmaps", kind: "ConfigMap" },
    {
      namespaces: ["a"],
      logger,
      restartBackoff: { baseMs: 10, maxMs: 50 },
      onEvent: (type, obj) => events.push(`${type} ${obj.metadata.name}`),
      onRestart: (reason) => restarts.push(reason),
      ...(initialEventsQuietMs === undefined ? {} : { initialEventsQuietMs }),
    },
  );
  informers.push(informer);
  return { informer, events, restarts, logged };
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1000 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!check()) throw new Error(`never happened: ${what}`);
}

const open = (res: ServerResponse): void => void res.writeHead(200, { "content-type": "application/json" });
type Answer = (req: IncomingMessage, res: ServerResponse) => void;
/** A list of `items` at `resourceVersion`. */
const listAnswer =
  (resourceVersion: string, items: KubeObject[]): Answer =>
  (_req, res) => {
    open(res);
    res.end(JSON.stringify({ metadata: { resourceVersion }, items }));
  };
/** A watch held open with nothing on it. */
const heldOpen: Answer = (_req, res) => open(res);
/** 410 Gone: the resourceVersion is too old. */
const gone: Answer = (_req, res) => {
  res.writeHead(410, { "content-type": "application/json" });
  res.end(JSON.stringify({ kind: "Status", code: 410, reason: "Expired" }));
};
/** A watch answered 200, then one ERROR event (500) with `message`. */
const errorEvent =
  (message: string): Answer =>
  (_req, res) => {
    open(res);
    res.end(line("ERROR", { kind: "Status", code: 500, reason: "InternalError", message }));
  };

describe("informer: the current state from a watch's initial events", () => {
  it("takes the state at the end bookmark: an object deleted among the initial events is never reported", async () => {
    const { url, seen } = await standIn([
      (_req, res) => {
        open(res);
        res.write(line("ADDED", widget("x", "1")) + line("ADDED", widget("y", "2")) + line("ADDED", widget("z", "3")));
        res.write(line("DELETED", widget("y", "4")) + end("4"));
      },
    ]);
    const { informer, events, restarts } = start(url);
    await informer.start();
    expect(events.sort()).toEqual(["add x", "add z"]);
    expect(
      informer
        .list()
        .map((o) => o.metadata.name)
        .sort(),
    ).toEqual(["x", "z"]);
    expect(restarts).toEqual([]);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toContain("sendInitialEvents=true");
    expect(seen[0]).toContain("resourceVersionMatch=NotOlderThan");
    expect(seen[0]).not.toContain("resourceVersion=");
  });

  it("a stream cut before its end bookmark is no sync: it restarts and streams again, and never lists", async () => {
    const { url, seen } = await standIn([
      (_req, res) => {
        open(res);
        res.write(line("ADDED", widget("x", "1")), () => res.socket?.destroy());
      },
      (_req, res) => {
        open(res);
        res.write(line("ADDED", widget("x", "1")) + line("ADDED", widget("w", "2")) + end("2"));
      },
    ]);
    const { informer, events, restarts } = start(url);
    await informer.start();
    expect(restarts).toHaveLength(1);
    expect(events.sort()).toEqual(["add w", "add x"]);
    expect(seen.every((u) => u.includes("watch=true") && u.includes("sendInitialEvents=true"))).toBe(true);
  });

  it("a server that ends the watch cleanly after objects but no end bookmark is listed from then on", async () => {
    const { url, seen } = await standIn([
      (_req, res) => {
        open(res);
        res.end(line("ADDED", widget("x", "1")));
      },
      listAnswer("3", [widget("x", "1"), widget("v", "3")]),
      heldOpen, // the watch from the list's resourceVersion
    ]);
    const { informer, events, restarts } = start(url);
    await informer.start();
    expect(events.sort()).toEqual(["add v", "add x"]);
    expect(restarts).toEqual([]);
    expect(seen[1]).not.toContain("watch=true");
    await until(() => seen.length >= 3, "the watch after the list");
    expect(seen[2]).toContain("resourceVersion=3");
    expect(seen[2]).not.toContain("sendInitialEvents");
  });

  it("a server that opens the stream and goes quiet before the end bookmark is listed from then on", async () => {
    const listed = listAnswer("7", [widget("x", "1"), widget("u", "7")]);
    // Objects, then silence on an open stream: the stream is never ended by the server.
    const afterObjects = await standIn([
      (_req, res) => {
        open(res);
        res.write(line("ADDED", widget("x", "1")));
      },
      listed,
      heldOpen,
    ]);
    // Nothing at all: an empty namespace behind a server that ignored sendInitialEvents.
    const nothing = await standIn([
      (_req, res) => {
        open(res);
        res.flushHeaders();
      },
      listed,
      heldOpen,
    ]);
    for (const { url, seen } of [afterObjects, nothing]) {
      const { informer, events, restarts, logged } = start(url, 200);
      await informer.start();
      expect(events.sort()).toEqual(["add u", "add x"]);
      expect(restarts).toEqual([]);
      expect(seen[0]).toContain("sendInitialEvents=true");
      expect(seen[1]).not.toContain("watch=true");
      await until(() => seen.length >= 3, "the watch after the list");
      expect(seen[2]).toContain("resourceVersion=7");
      expect(seen[2]).not.toContain("sendInitialEvents");
      const lines = logged.filter((l) => l.includes("listing instead"));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain("no bookmark ending the watch's initial events within 0.2 s of the stream's opening or its last object");
    }
  });

  it("only objects hold the quiet limit off: plain bookmarks and changes before the end bookmark do not", async () => {
    // A server watching from now: an object, then a plain bookmark every 50 ms, never the end.
    const { url, seen } = await standIn([
      (_req, res) => {
        open(res);
        res.write(line("ADDED", widget("x", "1")));
        const tick = setInterval(() => {
          if (res.destroyed) clearInterval(tick);
          else res.write(line("BOOKMARK", { metadata: { resourceVersion: "2" } }) + line("MODIFIED", widget("x", "2")));
        }, 50);
        res.on("close", () => clearInterval(tick));
      },
      listAnswer("7", [widget("x", "2")]),
      heldOpen,
    ]);
    const { informer, events, logged } = start(url, 300);
    await informer.start();
    expect(events).toEqual(["add x"]);
    expect(seen[1]).not.toContain("watch=true");
    expect(logged.filter((l) => l.includes("listing instead"))).toHaveLength(1);
  });

  it("an apiserver whose storage cannot report watch progress (200, then an ERROR event) is listed from then on", async () => {
    const { url, seen } = await standIn([
      errorEvent("a watch stream was requested by the client but the required storage feature RequestWatchProgress is disabled"),
      listAnswer("5", [widget("x", "1")]),
      heldOpen,
    ]);
    const { informer, events, restarts, logged } = start(url);
    await informer.start();
    expect(events).toEqual(["add x"]);
    expect(restarts).toEqual([]);
    expect(seen[1]).not.toContain("watch=true");
    expect(logged.filter((l) => l.includes("listing instead"))).toHaveLength(1);
  });

  it("any other server error before the state is in makes the next try a list, once: the informer syncs", async () => {
    const { url, seen } = await standIn([
      errorEvent("something new went wrong"),
      listAnswer("5", [widget("x", "1")]),
      // The watch from the list's resourceVersion is gone at once: the next start streams again.
      gone,
      (_req, res) => {
        open(res);
        res.write(line("ADDED", widget("x", "1")) + end("9"));
      },
    ]);
    const { informer, events, restarts, logged } = start(url);
    await informer.start();
    expect(events).toEqual(["add x"]);
    expect(restarts).toHaveLength(1);
    expect(restarts[0]).toContain("something new went wrong");
    expect(seen[1]).not.toContain("watch=true");
    await until(() => seen.length >= 4, "the streamed start after the 410");
    expect(seen[3]).toContain("sendInitialEvents=true");
    expect(logged.filter((l) => l.includes("listing instead"))).toEqual([]);
  });

  it("the quiet limit counts from the stream's opening, not from the request, and is off once the state is in", async () => {
    // The headers come only after the limit has run out since the request; then the objects and
    // the end bookmark in the same write. Counted from the request, the limit would have listed.
    // (Only the wait before the headers is timed, and waiting longer only makes the case stronger.)
    let requested: () => void = () => undefined;
    const asked = new Promise<void>((resolve) => (requested = resolve));
    let answer: () => void = () => undefined;
    const { url, seen } = await standIn([
      (_req, res) => {
        answer = () => {
          open(res);
          res.write([...Array(30).keys()].map((n) => line("ADDED", widget(`o${n}`, String(n)))).join("") + end("30"));
        };
        requested();
      },
    ]);
    const { informer, events, restarts, logged } = start(url, 1000);
    const started = informer.start();
    await asked;
    await new Promise((r) => setTimeout(r, 1500));
    answer();
    await started;
    expect(events).toHaveLength(30);
    // Off once the state is in: nothing more happens after the limit would have run out again.
    await new Promise((r) => setTimeout(r, 1500));
    expect(seen).toHaveLength(1);
    expect(restarts).toEqual([]);
    expect(logged.filter((l) => l.includes("listing instead"))).toEqual([]);
  });

  it("a re-stream after 410 reports what vanished meanwhile as deleted, as a relist does", async () => {
    const { url, seen } = await standIn([
      (_req, res) => {
        open(res);
        res.end(line("ADDED", widget("x", "1")) + line("ADDED", widget("y", "2")) + end("2"));
      },
      // The resumed watch, from resourceVersion 2, is too old.
      gone,
      (_req, res) => {
        open(res);
        res.write(line("ADDED", widget("x", "1")) + end("9"));
      },
    ]);
    const { informer, events } = start(url);
    await informer.start();
    await until(() => events.includes("delete y"), "the delete of y");
    expect(events).toEqual(["add x", "add y", "delete y"]);
    expect(seen[1]).toContain("resourceVersion=2");
    expect(seen[1]).not.toContain("sendInitialEvents");
    expect(seen[2]).toContain("sendInitialEvents=true");
  });
});

describe("watch-list helpers", () => {
  it("knows the end bookmark by its annotation", () => {
    const bookmark = (annotations?: Record<string, string>): KubeObject => ({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "", namespace: "", resourceVersion: "5", ...(annotations ? { annotations } : {}) },
      spec: {},
    });
    expect(endsInitialEvents("BOOKMARK", bookmark({ "k8s.io/initial-events-end": "true" }))).toBe(true);
    expect(endsInitialEvents("BOOKMARK", bookmark())).toBe(false);
    expect(endsInitialEvents("ADDED", bookmark({ "k8s.io/initial-events-end": "true" }))).toBe(false);
  });

  it("reads 400 and 422, and a 5xx about initial events, as a refusal; nothing else", () => {
    expect(
      isWatchListRefusal(
        new KubeApiError(422, "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled", "Invalid"),
      ),
    ).toBe(true);
    expect(isWatchListRefusal(new KubeApiError(400, "resourceVersionMatch is forbidden for watch", "BadRequest"))).toBe(true);
    expect(isWatchListRefusal(new KubeApiError(500, "sendInitialEvents is not supported", "InternalError"))).toBe(true);
    expect(isWatchListRefusal(new KubeApiError(500, "etcd unavailable", "InternalError"))).toBe(false);
    expect(isWatchListRefusal(new KubeApiError(403, "forbidden", "Forbidden"))).toBe(false);
    expect(isWatchListRefusal(new Error("sendInitialEvents"))).toBe(false);
  });
});
