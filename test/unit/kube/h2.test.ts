// The apiserver connection (src/kube/h2.ts) against loopback TLS servers: Node's HTTP/2 server,
// a TCP relay in front of it that can stop passing bytes (a half-open connection), and an
// HTTPS server that speaks only HTTP/1.1. The real apiserver's side is in
// test/integration/kube/transport.test.ts.
import { once } from "node:events";
import http2, { type Http2SecureServer, type ServerHttp2Session } from "node:http2";
import { createServer as createHttpsServer, type Server as HttpsServer } from "node:https";
import { createServer as createTlsServer, type Server as TlsServer } from "node:tls";
import { createServer as createTcpServer, connect as tcpConnect, type AddressInfo, type Server as TcpServer, type Socket } from "node:net";
import { Agent } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createH2Dispatcher, refusedH2, type KubeDispatcher } from "../../../src/kube/h2.ts";
import { hasOpenssl, makeCertificates } from "../../support/tls.ts";

const available = hasOpenssl();
let certs: ReturnType<typeof makeCertificates>;
let h2server: Http2SecureServer;
let h2origin: string;
const sessions: ServerHttp2Session[] = [];
let relay: TcpServer;
let relayOrigin: string;
const relayed: { client: Socket; frozen: boolean }[] = [];
let narrow: Http2SecureServer;
let narrowOrigin: string;
const narrowSessions: ServerHttp2Session[] = [];
let h1server: HttpsServer;
let h1origin: string;
let noAlpn: TlsServer;
let noAlpnOrigin: string;

const port = (server: { address(): unknown }): number => (server.address() as AddressInfo).port;

beforeAll(async () => {
  if (!available) return;
  certs = makeCertificates();
  h2server = http2.createSecureServer({ cert: certs.certPem, key: certs.keyPem });
  h2server.on("session", (session) => sessions.push(session));
  h2server.on("stream", (stream, headers) => {
    const path = headers[":path"];
    if (path === "/hold") {
      // Headers now, the body never: a watch with nothing to say.
      stream.respond({ ":status": 200 });
      stream.write('{"type":"BOOKMARK"}\n');
      return;
    }
    stream.respond({ ":status": 200, "content-type": "application/json" });
    stream.end(JSON.stringify({ path, method: headers[":method"] }));
    if (path === "/bye") stream.session?.close();
  });
  h2server.listen(0, "127.0.0.1");
  await once(h2server, "listening");
  h2origin = `https://127.0.0.1:${String(port(h2server))}`;

  // Two streams at once per session, as a server's SETTINGS may say (the apiserver's: 100).
  narrow = http2.createSecureServer({ cert: certs.certPem, key: certs.keyPem, settings: { maxConcurrentStreams: 2 } });
  narrow.on("session", (session) => narrowSessions.push(session));
  narrow.on("stream", (stream, headers) => {
    stream.respond({ ":status": 200 });
    if (headers[":path"] === "/hold") stream.write("held\n");
    else stream.end("done");
  });
  narrow.listen(0, "127.0.0.1");
  await once(narrow, "listening");
  narrowOrigin = `https://127.0.0.1:${String(port(narrow))}`;

  relay = createTcpServer((client) => {
    const entry = { client, frozen: false };
    relayed.push(entry);
    const upstream = tcpConnect(port(h2server), "127.0.0.1");
    client.on("data", (chunk) => entry.frozen || upstream.write(chunk));
    upstream.on("data", (chunk) => entry.frozen || client.write(chunk));
    const end = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on("close", end).on("error", end);
    upstream.on("close", end).on("error", end);
  });
  relay.listen(0, "127.0.0.1");
  await once(relay, "listening");
  relayOrigin = `https://127.0.0.1:${String(port(relay))}`;

  h1server = createHttpsServer({ cert: certs.certPem, key: certs.keyPem }, (req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ path: req.url, protocol: req.httpVersion }));
  });
  h1server.listen(0, "127.0.0.1");
  await once(h1server, "listening");
  h1origin = `https://127.0.0.1:${String(port(h1server))}`;

  // TLS without ALPN at all (a server that ignores the client's protocols), speaking HTTP/1.1.
  noAlpn = createTlsServer({ cert: certs.certPem, key: certs.keyPem }, (socket) => {
    socket.on("error", () => undefined);
    socket.on("data", (chunk: Buffer) => {
      if (!chunk.toString("latin1").startsWith("GET ")) return;
      socket.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 15\r\n\r\n{"plain":"1.1"}');
    });
  });
  noAlpn.listen(0, "127.0.0.1");
  await once(noAlpn, "listening");
  noAlpnOrigin = `https://127.0.0.1:${String(port(noAlpn))}`;
});

afterAll(async () => {
  if (!available) return;
  for (const s of [...sessions, ...narrowSessions]) s.destroy();
  for (const r of relayed) r.client.destroy();
  h1server.closeAllConnections();
  await Promise.all([
    new Promise((resolve) => h2server.close(resolve)),
    new Promise((resolve) => narrow.close(resolve)),
    new Promise((resolve) => relay.close(resolve)),
    new Promise((resolve) => h1server.close(resolve)),
    new Promise((resolve) => noAlpn.close(resolve)),
  ]);
});

const newDispatcher = (
  origin: string,
  opts: { pingIntervalMs?: number; pingTimeoutMs?: number } = {},
): { dispatcher: KubeDispatcher; fallbacks: () => number } => {
  let made = 0;
  const connect = { ca: Buffer.from(certs.caPem) };
  const dispatcher = createH2Dispatcher(origin, {
    tls: connect,
    fallback: () => {
      made += 1;
      return new Agent({ connect });
    },
    ...opts,
  });
  return { dispatcher, fallbacks: () => made };
};

const get = (dispatcher: KubeDispatcher, path: string, signal: AbortSignal | null = null) =>
  dispatcher.request({ origin: "ignored", path, method: "GET", headers: { accept: "application/json" }, body: null, signal });

describe.skipIf(!available)("the apiserver's HTTP/2 connection", () => {
  it("carries concurrent requests, a body sent and a stream held open on one session", async () => {
    const before = sessions.length;
    const { dispatcher, fallbacks } = newDispatcher(h2origin);
    const held = await get(dispatcher, "/hold");
    const answers = await Promise.all([
      ...["/a", "/b", "/c"].map(async (path) => (await get(dispatcher, path)).body.text()),
      dispatcher
        .request({ origin: "", path: "/p", method: "PATCH", headers: { "content-type": "application/json" }, body: "{}", signal: null })
        .then((r) => r.body.text()),
    ]);
    expect(answers.map((a) => JSON.parse(a) as unknown)).toEqual([
      { path: "/a", method: "GET" },
      { path: "/b", method: "GET" },
      { path: "/c", method: "GET" },
      { path: "/p", method: "PATCH" },
    ]);
    expect(held.statusCode).toBe(200);
    await held.body.dump();
    expect(sessions.length - before).toBe(1);
    expect(fallbacks()).toBe(0);
  });

  it("opens another session when the server's stream limit is reached, and closes it when done", async () => {
    const { dispatcher } = newDispatcher(narrowOrigin);
    // Two watches fill the first session; a request beyond them must not wait behind them.
    const held = [await get(dispatcher, "/hold"), await get(dispatcher, "/hold")];
    expect(await (await get(dispatcher, "/more")).body.text()).toBe("done");
    expect(narrowSessions).toHaveLength(2);
    const extra = narrowSessions[1] as ServerHttp2Session;
    await held[0]?.body.dump();
    // A slot free on the first session again: the next request goes there, and the extra one is closed.
    expect(await (await get(dispatcher, "/again")).body.text()).toBe("done");
    if (!extra.closed) await once(extra, "close");
    expect(narrowSessions).toHaveLength(2);
    await held[1]?.body.dump();
  });

  it("opens a new session after the server's GOAWAY", async () => {
    const before = sessions.length;
    const { dispatcher } = newDispatcher(h2origin);
    expect(JSON.parse(await (await get(dispatcher, "/bye")).body.text())).toEqual({ path: "/bye", method: "GET" });
    // The client has the GOAWAY once the server's session ends.
    const first = sessions[sessions.length - 1] as ServerHttp2Session;
    if (!first.closed) await once(first, "close");
    expect(JSON.parse(await (await get(dispatcher, "/after")).body.text())).toEqual({ path: "/after", method: "GET" });
    expect(sessions.length - before).toBe(2);
  });

  it("ends the streams of a session that no longer answers a ping, and the next request opens another", async () => {
    const { dispatcher } = newDispatcher(relayOrigin, { pingIntervalMs: 50, pingTimeoutMs: 200 });
    const held = await get(dispatcher, "/hold");
    const text = held.body.text();
    const connection = relayed[relayed.length - 1];
    if (!connection) throw new Error("no relayed connection");
    connection.frozen = true;
    await expect(text).rejects.toThrow(/no answer to an HTTP\/2 ping within 200 ms/);
    const connections = relayed.length;
    expect(JSON.parse(await (await get(dispatcher, "/again")).body.text())).toEqual({ path: "/again", method: "GET" });
    expect(relayed.length).toBe(connections + 1);
  });

  it("an aborted request ends its stream only; the session serves the next", async () => {
    const before = sessions.length;
    const { dispatcher } = newDispatcher(h2origin);
    const abort = new AbortController();
    const held = await get(dispatcher, "/hold", abort.signal);
    const text = held.body.text();
    abort.abort(new Error("deadline"));
    await expect(text).rejects.toThrow();
    expect(JSON.parse(await (await get(dispatcher, "/next")).body.text())).toEqual({ path: "/next", method: "GET" });
    expect(sessions.length - before).toBe(1);
  });

  it("serves a server without HTTP/2 over HTTP/1.1, from its first request on", async () => {
    const { dispatcher, fallbacks } = newDispatcher(h1origin);
    const first = await dispatcher.request({ origin: h1origin, path: "/one", method: "GET", headers: {}, body: null, signal: null });
    expect(JSON.parse(await first.body.text())).toEqual({ path: "/one", protocol: "1.1" });
    const second = await dispatcher.request({ origin: h1origin, path: "/two", method: "GET", headers: {}, body: null, signal: null });
    expect(JSON.parse(await second.body.text())).toEqual({ path: "/two", protocol: "1.1" });
    expect(fallbacks()).toBe(1);
  });

  it("serves a server that ignores ALPN over HTTP/1.1 too", async () => {
    const { dispatcher, fallbacks } = newDispatcher(noAlpnOrigin);
    const first = await dispatcher.request({ origin: noAlpnOrigin, path: "/one", method: "GET", headers: {}, body: null, signal: null });
    expect(JSON.parse(await first.body.text())).toEqual({ plain: "1.1" });
    expect(fallbacks()).toBe(1);
  });

  it("does not take a certificate error for a server without HTTP/2", async () => {
    const dispatcher = createH2Dispatcher(h2origin, { tls: {}, fallback: () => new Agent() });
    const err = await get(dispatcher, "/x").then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(Error);
    expect(refusedH2(err)).toBe(false);
    expect((err as Error).message).toMatch(/certificate/i);
  });
});
