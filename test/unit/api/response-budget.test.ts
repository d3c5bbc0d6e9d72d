// One budget for the response bodies of every call in flight (src/api/http.ts): however many
// calls read large bodies at once, the bytes held together never pass it; a body that does not
// fit fails its call with a retryable error, the others are read whole, and the budget is given
// back whatever the outcome. Against a local HTTP server sending 1 MiB bodies, with and without
// content-length, slowly enough that the calls overlap.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  DEFAULT_RESPONSE_BUDGET_BYTES,
  DEFAULT_TENANT_RESPONSE_BYTES,
  closeConnections,
  resetResponseBudgetPeak,
  responseBudget,
  sendRequest,
  serviceBase,
  setResponseBudget,
} from "../../../src/api/http.ts";
import { TransportError } from "../../../src/api/errors.ts";

const MIB = 1024 * 1024;
const CHUNK = 64 * 1024;
let server: Server;
let baseUrl: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url?.includes("cut") === true) {
      // Half of a declared body, then the connection ends.
      res.writeHead(200, { "content-type": "text/plain", "content-length": String(MIB) });
      res.write(Buffer.alloc(MIB / 2, 97), () => res.socket?.destroy());
      return;
    }
    const declared = req.url?.includes("declared") === true;
    res.writeHead(200, declared ? { "content-type": "text/plain", "content-length": String(MIB) } : { "content-type": "text/plain" });
    let sent = 0;
    const next = (): void => {
      if (sent >= MIB) {
        res.end();
        return;
      }
      sent += CHUNK;
      res.write(Buffer.alloc(CHUNK, 97), () => setTimeout(next, 2));
    };
    next();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await closeConnections();
  await new Promise((resolve) => server.close(resolve));
});

afterEach(() => setResponseBudget(DEFAULT_RESPONSE_BUDGET_BYTES, DEFAULT_TENANT_RESPONSE_BYTES));

const call = (path: string) =>
  sendRequest(
    { base: serviceBase(baseUrl), method: "GET", path, headers: {}, timeoutMs: 30_000, maxResponseBytes: 2 * MIB, tenant: "ns" },
    "getThing",
  );

async function concurrently(n: number, path: string) {
  return Promise.allSettled(Array.from({ length: n }, () => call(path)));
}

describe("the process-wide budget of response bodies in flight", () => {
  for (const path of ["/undeclared", "/declared"]) {
    it(`20 concurrent 1 MiB bodies (${path.slice(1)} length) under a 3 MiB budget: never more than 3 MiB held, the rest fail retryably`, async () => {
      // One tenant with all of the budget: what is bounded here is the process-wide sum.
      setResponseBudget(3 * MIB, 3 * MIB);
      resetResponseBudgetPeak();
      const results = await concurrently(20, path);
      const ok = results.filter((r) => r.status === "fulfilled");
      const failed = results.flatMap((r) => (r.status === "rejected" ? [r.reason as unknown] : []));
      expect(responseBudget().peak).toBeLessThanOrEqual(3 * MIB);
      expect(ok.length).toBeGreaterThanOrEqual(1);
      for (const r of ok) expect(r.value.text).toHaveLength(MIB);
      expect(ok.length + failed.length).toBe(20);
      for (const err of failed) {
        expect(err).toBeInstanceOf(TransportError);
        expect((err as TransportError).retryable).toBe(true);
        expect((err as TransportError).code).toBe("KEYWARD_RESPONSE_BUDGET");
      }
      expect(failed.length).toBeGreaterThan(0);
      // Everything is given back: the same calls one after another all succeed.
      expect(responseBudget().inFlight).toBe(0);
      for (let i = 0; i < 3; i++) expect((await call(path)).text).toHaveLength(MIB);
      expect(responseBudget().inFlight).toBe(0);
    });
  }

  it("with room for all, every concurrent body is read whole and the peak is what they held together", async () => {
    setResponseBudget(32 * MIB, 16 * MIB);
    resetResponseBudgetPeak();
    const results = await concurrently(8, "/undeclared");
    expect(results.every((r) => r.status === "fulfilled")).toBe(true);
    expect(responseBudget().peak).toBeLessThanOrEqual(8 * MIB);
    expect(responseBudget().inFlight).toBe(0);
  });

  it("a body cut off before its end fails its call retryably and gives its budget back; whole bodies after it still read", async () => {
    setResponseBudget(32 * MIB, 16 * MIB);
    for (let i = 0; i < 3; i++) {
      const err: unknown = await call("/cut").then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(TransportError);
      expect((err as TransportError).retryable).toBe(true);
      expect(responseBudget().inFlight).toBe(0);
      expect((await call("/declared")).text).toHaveLength(MIB);
    }
  });

  it("refuses a budget that is not a positive integer, and a tenant's share past the budget", () => {
    expect(() => setResponseBudget(0, 1)).toThrow(RangeError);
    expect(() => setResponseBudget(MIB, 0)).toThrow(RangeError);
    expect(() => setResponseBudget(MIB, 2 * MIB)).toThrow(RangeError);
  });
});
