// Issue 16 §4: a response body is bounded in size and in time. A real loopback HTTP server sends
// bodies that are too large (declared, or streamed without a length), endless, or trickling; the
// client stops reading at the limit, closes the connection (the server sees it) and fails with a
// typed error. Every figure is a count of bytes or requests, never a duration.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { closeConnections, createApiClient, isTransportError, ResponseTooLargeError, type ApiClient } from "../../../src/api/index.ts";
import { classifyError } from "../../../src/engine/errors.ts";
import { createConnector } from "../../../src/resources/provider/connector.ts";
import { createLogger } from "../../../src/log.ts";
import type { KubeObject } from "../../../src/engine/types.ts";
import { rejectionOf } from "./emulator-fixture.ts";

const TOKEN = "kw-bounds-token-5f2c9a71d3";
const LIMIT = 64 * 1024;

interface Served {
  url: string;
  /** Bytes of body the server managed to write per request, and whether the client closed it. */
  sent: { bytes: number; closed: boolean }[];
  close(): Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse, record: { bytes: number; closed: boolean }) => void;

const servers: Server[] = [];

async function serve(handler: Handler): Promise<Served> {
  const sent: Served["sent"] = [];
  const server = createServer((req, res) => {
    const record = { bytes: 0, closed: false };
    sent.push(record);
    res.on("close", () => {
      record.closed = true;
    });
    req.resume();
    handler(req, res, record);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    sent,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Writes `chunk` for as long as the client reads (respecting backpressure) until `total` bytes or the connection closes. */
function pump(res: ServerResponse, record: { bytes: number; closed: boolean }, chunk: Buffer, total = Number.POSITIVE_INFINITY): void {
  const more = (): void => {
    while (!record.closed && record.bytes < total) {
      record.bytes += chunk.length;
      if (!res.write(chunk)) {
        res.once("drain", more);
        return;
      }
    }
    if (!record.closed) res.end();
  };
  more();
}

/** An endless JSON-looking body: `[` then `"xxxx…",` forever. */
const endlessItem = Buffer.from(`"${"x".repeat(4094)}",`);

function client(url: string, over: Record<string, unknown> = {}): ApiClient {
  return createApiClient({ baseUrl: url, token: TOKEN, retry: { maxAttempts: 1 }, maxResponseBytes: LIMIT, timeoutMs: 5_000, ...over });
}

/** Waits until the server has seen the client close the connection (a count of events, not a time). */
async function closedByClient(s: Served, index = 0): Promise<void> {
  for (let i = 0; i < 500 && !s.sent[index]?.closed; i++) await new Promise((r) => setTimeout(r, 10));
  expect(s.sent[index]?.closed).toBe(true);
}

afterEach(async () => {
  await closeConnections();
});
afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
});

describe("response size limit", () => {
  it("fails a body declared larger than the limit without reading it", async () => {
    const s = await serve((_req, res, record) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": String(512 * 1024 * 1024) });
      pump(res, record, endlessItem, 512 * 1024 * 1024);
    });
    const err = await rejectionOf(client(s.url).listProjects({}));
    expect(err).toBeInstanceOf(ResponseTooLargeError);
    const e = err as ResponseTooLargeError;
    expect(e.limitBytes).toBe(LIMIT);
    expect(e.retryable).toBe(false);
    expect(e.message).toContain("listProjects");
    expect(e.message).toContain(String(LIMIT));
    await closedByClient(s);
    // What the kernel's socket buffers take before backpressure stops the server: far below the 512 MiB declared.
    expect(s.sent[0]!.bytes).toBeLessThan(16 * 1024 * 1024);
    await s.close();
  });

  it("stops reading an endless chunked body at the limit and closes the connection", async () => {
    const s = await serve((_req, res, record) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write("[");
      pump(res, record, endlessItem);
    });
    const err = await rejectionOf(client(s.url).listProjects({}));
    expect(err).toBeInstanceOf(ResponseTooLargeError);
    await closedByClient(s);
    expect(s.sent[0]!.bytes).toBeLessThan(16 * 1024 * 1024);
    expect(s.sent).toHaveLength(1); // not retried: the same request would get the same body
    await s.close();
  });

  it("bounds error bodies (non-2xx) the same way", async () => {
    const s = await serve((_req, res, record) => {
      res.writeHead(500, { "content-type": "application/json" });
      res.write(`{"message":"`);
      pump(res, record, Buffer.from("y".repeat(4096)));
    });
    const err = await rejectionOf(client(s.url).listProjects({}));
    expect(err).toBeInstanceOf(ResponseTooLargeError);
    await closedByClient(s);
    await s.close();
  });

  it("accepts a body of exactly the limit and refuses one byte more", async () => {
    const body = (n: number): string => {
      const head = `{"projects":[],"pad":"`;
      return `${head}${"p".repeat(n - head.length - 2)}"}`;
    };
    let size = LIMIT;
    const s = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(body(size));
    });
    const c = client(s.url);
    await expect(c.listProjects({})).resolves.toEqual([]);
    size = LIMIT + 1;
    expect(await rejectionOf(c.listProjects({}))).toBeInstanceOf(ResponseTooLargeError);
    await s.close();
  });

  it("counts bytes, not characters: multi-byte UTF-8 past the limit is refused", async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      // LIMIT/2 characters of 3 bytes each: 1.5 × the limit in bytes.
      res.end(`{"projects":[],"pad":"${"€".repeat(LIMIT / 2)}"}`);
    });
    expect(await rejectionOf(client(s.url).listProjects({}))).toBeInstanceOf(ResponseTooLargeError);
    await s.close();
  });

  it("never names the token, and becomes the condition reason ResponseTooLarge (terminal)", async () => {
    const s = await serve((_req, res, record) => {
      res.writeHead(200, { "content-type": "application/json" });
      pump(res, record, Buffer.from(TOKEN.repeat(100)));
    });
    const err = await rejectionOf(client(s.url).listProjects({}));
    expect(String(err)).not.toContain(TOKEN);
    expect(JSON.stringify(err)).not.toContain(TOKEN);
    const c = classifyError(err);
    expect(c).toMatchObject({ reason: "ResponseTooLarge", retryable: false });
    expect(c.message).not.toContain(TOKEN);
    await s.close();
  });

  it("is the ProviderConfig connector's setting (passed to every client it makes)", async () => {
    const s = await serve((_req, res, record) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write("[");
      pump(res, record, endlessItem);
    });
    const connector = createConnector({ log: createLogger({ level: "silent" }), maxResponseBytes: LIMIT, allowedBaseUrls: ["*"] });
    const secret: KubeObject = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "creds", namespace: "ns", labels: { "keyward.dev/credentials": "true" } },
      spec: {},
      data: { token: Buffer.from(TOKEN).toString("base64") },
    } as KubeObject;
    const api = await connector.connect(
      "ProviderConfig/ns/pc",
      { baseUrl: s.url, credentialsSecretRef: { name: "creds" } },
      () => Promise.resolve(secret),
      { secretNamespace: "ns", tenant: "ns" },
    );
    const err = await rejectionOf(api.listProjects({}));
    expect(err).toBeInstanceOf(ResponseTooLargeError);
    expect((err as ResponseTooLargeError).limitBytes).toBe(LIMIT);
    await s.close();
  });
});

describe("the request timeout covers the body", () => {
  it("a body that trickles a byte at a time (never idle long enough for undici's body timeout) hits the deadline", async () => {
    const timers: NodeJS.Timeout[] = [];
    const s = await serve((_req, res, record) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write("[");
      const t = setInterval(() => {
        if (record.closed) return;
        record.bytes += 1;
        res.write(" ");
      }, 20);
      timers.push(t);
      res.on("close", () => clearInterval(t));
    });
    const err = await rejectionOf(client(s.url, { timeoutMs: 400 }).listProjects({}));
    expect(isTransportError(err)).toBe(true);
    expect(err).toMatchObject({ kind: "timeout", retryable: true });
    await closedByClient(s);
    expect(s.sent).toHaveLength(1);
    for (const t of timers) clearInterval(t);
    await s.close();
  });

  it("headers then silence hits the deadline too", async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write("[");
    });
    const err = await rejectionOf(client(s.url, { timeoutMs: 300 }).listProjects({}));
    expect(err).toMatchObject({ name: "TransportError", kind: "timeout" });
    await closedByClient(s);
    await s.close();
  });
});
