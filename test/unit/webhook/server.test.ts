// The conversion webhook's HTTPS server on loopback (src/webhook/server.ts): answers POST /convert,
// refuses other paths, methods and media types, bounds a body in bytes and in time, and serves a
// swapped certificate from the next connection on without a restart.
import { Agent, request } from "node:https";
import type { TLSSocket } from "node:tls";
import { X509Certificate } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWebhookServer, type WebhookServer } from "../../../src/webhook/server.ts";
import { issuer } from "../../../src/webhook/issue.ts";
import { SECRET_KEYS, renewTls } from "../../../src/webhook/keeper.ts";
import { createLogger } from "../../../src/log.ts";

const names = { dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"] };
const first = renewTls({}, Date.now(), names, issuer);
const second = renewTls({}, Date.now(), names, issuer);
const pair = (d: typeof first) => ({ cert: d[SECRET_KEYS.cert] ?? "", key: d[SECRET_KEYS.key] ?? "" });
const MAX = 64 * 1024;

interface Answer {
  status: number;
  body: string;
  peer: string;
  connection: string | undefined;
}

function call(
  server: WebhookServer,
  opts: {
    method?: string;
    path?: string;
    type?: string;
    body?: string | Buffer;
    ca?: string;
    stall?: boolean;
    chunked?: boolean;
    agent?: Agent;
  },
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port: server.port,
        method: opts.method ?? "POST",
        path: opts.path ?? "/convert",
        ca: opts.ca ?? first[SECRET_KEYS.bundle],
        agent: opts.agent ?? false,
        headers: { "content-type": opts.type ?? "application/json", ...(opts.chunked ? { "transfer-encoding": "chunked" } : {}) },
      },
      (res) => {
        const peer = (res.socket as TLSSocket).getPeerCertificate().fingerprint256;
        let body = "";
        res.on("data", (c: Buffer) => (body += c.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body, peer, connection: res.headers.connection }));
      },
    );
    req.on("error", reject);
    if (opts.stall) {
      req.flushHeaders();
      req.write("{");
      return;
    }
    req.end(opts.body ?? "");
  });
}

const review = JSON.stringify({
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "ConversionReview",
  request: {
    uid: "u-1",
    desiredAPIVersion: "keyward.dev/v1beta1",
    objects: [
      { apiVersion: "keyward.dev/v1alpha1", kind: "AccessToken", metadata: { name: "t" }, spec: { identityId: "i", secretName: "s" } },
    ],
  },
});

describe("the conversion webhook server", () => {
  let server: WebhookServer;
  beforeAll(async () => {
    server = await startWebhookServer({
      port: 0,
      bindAddress: "127.0.0.1",
      certificate: pair(first),
      log: createLogger({ level: "fatal" }),
      maxBodyBytes: MAX,
      timeoutMs: 1_000,
    });
  });
  afterAll(() => server.close());

  it("answers a ConversionReview", async () => {
    const answer = await call(server, { body: review });
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({
      response: {
        uid: "u-1",
        result: { status: "Success" },
        convertedObjects: [{ apiVersion: "keyward.dev/v1beta1", spec: { identityID: "i" } }],
      },
    });
  });

  it.each([
    ["another path", { path: "/mutate" }, 404],
    ["another method", { method: "GET" }, 405],
    ["another media type", { type: "text/plain" }, 415],
    ["a body that is not JSON", { body: "{nope" }, 400],
    ["JSON that is not a review", { body: "[]" }, 400],
  ])("refuses %s", async (_what, opts, status) => {
    expect((await call(server, { body: review, ...opts })).status).toBe(status);
  });

  it("refuses a body over the bound, declared or streamed", async () => {
    const big = Buffer.alloc(MAX + 1, 0x20);
    expect((await call(server, { body: big })).status).toBe(413);
    expect((await call(server, { body: big, chunked: true })).status).toBe(413);
    // at the bound it is read (and refused only as not a review)
    expect((await call(server, { body: Buffer.alloc(MAX, 0x20) })).status).toBe(400);
  });

  it("cuts off a body that never ends", async () => {
    const answer = await call(server, { stall: true }).catch((err: unknown) => ({ status: -1, body: String(err), peer: "" }));
    // Node answers 408 and closes, or closes first (a reset): either way the request ended unanswered
    expect([408, -1]).toContain(answer.status);
  });

  it("serves a new certificate from the next connection on", async () => {
    const before = await call(server, { body: review });
    expect(before.peer).toBe(new X509Certificate(first[SECRET_KEYS.cert] ?? "").fingerprint256);
    server.setCertificate(pair(second));
    const after = await call(server, { body: review, ca: second[SECRET_KEYS.bundle] });
    expect(after.status).toBe(200);
    expect(after.peer).toBe(new X509Certificate(second[SECRET_KEYS.cert] ?? "").fingerprint256);
    // the old CA no longer verifies it
    await expect(call(server, { body: review, ca: first[SECRET_KEYS.bundle] })).rejects.toThrow();
  });
});

describe("a draining server (a stopping webhook pod)", () => {
  it("keeps connections alive until drain(), then closes each after its answer", async () => {
    const server = await startWebhookServer({
      port: 0,
      bindAddress: "127.0.0.1",
      certificate: pair(first),
      log: createLogger({ level: "fatal" }),
    });
    const agent = new Agent({ keepAlive: true });
    try {
      const before = await call(server, { body: review, agent });
      expect([before.status, before.connection]).toEqual([200, "keep-alive"]);
      server.drain();
      const after = await call(server, { body: review, agent });
      expect([after.status, after.connection]).toEqual([200, "close"]);
    } finally {
      agent.destroy();
      await server.close();
    }
  });
});
