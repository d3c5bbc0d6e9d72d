// https with a private CA: a TLS front (node:https, a certificate from a throwaway CA made with
// the openssl CLI) forwards to the emulator. With caBundle the client trusts it; without, the
// handshake fails before anything is sent.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeConnections, createApiClient, isTransportError, type RequestInfo } from "../../../src/api/index.ts";
import { fastRetry, rejectionOf, seedIds, startHarness, TOKEN, type Harness } from "./emulator-fixture.ts";

function hasOpenssl(): boolean {
  try {
    execFileSync("openssl", ["version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

function makeCertificates(): { caPem: string; certPem: string; keyPem: string } {
  const dir = mkdtempSync(join(tmpdir(), "kw-tls-"));
  const run = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "ignore" });
  run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "1", "-subj", "/CN=keyward test CA");
  run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1");
  writeFileSync(join(dir, "ext.cnf"), "subjectAltName=IP:127.0.0.1\n");
  run(
    "x509",
    "-req",
    "-in",
    "server.csr",
    "-CA",
    "ca.pem",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    "server.pem",
    "-days",
    "1",
    "-extfile",
    "ext.cnf",
  );
  const read = (f: string) => readFileSync(join(dir, f), "utf8");
  return { caPem: read("ca.pem"), certPem: read("server.pem"), keyPem: read("server.key") };
}

const available = hasOpenssl();
let h: Harness;
let front: Server;
let frontUrl: string;
let caPem: string;

beforeAll(async () => {
  if (!available) return;
  h = await startHarness();
  const certs = makeCertificates();
  caPem = certs.caPem;
  const target = new URL(h.em.url);
  front = createServer({ cert: certs.certPem, key: certs.keyPem }, (req, res) => {
    const upstream = httpRequest(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
  frontUrl = `https://127.0.0.1:${(front.address() as AddressInfo).port}`;
});
afterAll(async () => {
  if (!available) return;
  front.closeAllConnections();
  await new Promise<void>((resolve) => front.close(() => resolve()));
  await h.em.close();
  await closeConnections();
});

describe("https with a private CA", () => {
  // openssl makes the throwaway CA; .ci/run installs it. Missing, this fails rather than skips.
  it("has openssl to make a CA", () => {
    expect(available, "the openssl CLI is needed (apt-get install openssl)").toBe(true);
  });

  it("works with caBundle", async () => {
    const api = createApiClient({ baseUrl: frontUrl, token: TOKEN, caBundle: caPem, retry: fastRetry });
    expect((await api.getProject(seedIds.demoProject)).id).toBe(seedIds.demoProject);
  });

  it("without it the handshake fails: not retried, nothing sent", async () => {
    h.em.clearRequests();
    const attempts: RequestInfo[] = [];
    const api = createApiClient({ baseUrl: frontUrl, token: TOKEN, retry: fastRetry, onRequest: (i) => attempts.push(i) });
    const err = await rejectionOf(api.createProject({ projectName: "untrusted" }));
    expect(isTransportError(err) && err).toMatchObject({ kind: "tls", retryable: false, mayHaveLanded: false });
    expect(attempts).toHaveLength(1);
    expect(h.em.requests()).toEqual([]);
  });
});
