// No tenant can take the response budget from another (src/api/http.ts): a body's bytes count
// as they arrive, not as its server declares them, and one tenant (the namespace of a
// ProviderConfig; a ClusterProviderConfig is its own) holds at most its share of the budget,
// whatever its server does. Tenant A's server is hostile and raw (it declares the largest body
// allowed and then trickles, or sends all but a byte and stalls, on many calls at once); tenant
// B calls the emulator meanwhile, and tenant C reads a body of the largest size allowed.
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { closeConnections, createApiClient, isTransportError } from "../../../src/api/index.ts";
import {
  DEFAULT_RESPONSE_BUDGET_BYTES,
  DEFAULT_TENANT_RESPONSE_BYTES,
  resetResponseBudgetPeak,
  responseBudget,
  sendRequest,
  serviceBase,
  setResponseBudget,
} from "../../../src/api/http.ts";
import { eventually, seedIds, startHarness, type Harness } from "./emulator-fixture.ts";

const MIB = 1024 * 1024;
/** maxResponseBytes of every client here, and each tenant's share; the budget is twice it. */
const M = MIB;
const CALLS = 5;

let h: Harness;
let hostile: Server;
let hostileUrl: string;
/** Requests the hostile server has answered. */
let answered = 0;
/** What the hostile server does after its headers: trickle a byte every 20 ms, or send all but a byte and stall. */
let hostileMode: "trickle" | "hold" = "trickle";

function trickle(res: ServerResponse): void {
  const timer = setInterval(() => res.write(" "), 20);
  res.on("close", () => clearInterval(timer));
}

beforeAll(async () => {
  h = await startHarness();
  hostile = createServer((req, res) => {
    req.resume();
    answered += 1;
    const url = new URL(req.url ?? "/", "http://x");
    if (url.pathname === "/whole") {
      // An honest body of exactly the largest size allowed.
      res.writeHead(200, { "content-type": "text/plain", "content-length": String(M) }).end(Buffer.alloc(M, 97));
      return;
    }
    res.writeHead(200, { "content-type": "application/json", "content-length": String(M) });
    if (hostileMode === "hold") res.write(Buffer.alloc(M - 1, 32));
    else {
      res.write("[");
      trickle(res);
    }
  });
  await new Promise<void>((resolve) => hostile.listen(0, "127.0.0.1", resolve));
  hostileUrl = `http://127.0.0.1:${(hostile.address() as AddressInfo).port}`;
});

afterAll(async () => {
  hostile.closeAllConnections();
  await new Promise((resolve) => hostile.close(resolve));
  await h.em.close();
  await closeConnections();
});

afterEach(() => {
  hostile.closeAllConnections();
  setResponseBudget(DEFAULT_RESPONSE_BUDGET_BYTES, DEFAULT_TENANT_RESPONSE_BYTES);
});

const tenantA = () =>
  createApiClient({ baseUrl: hostileUrl, token: "tenant-a-token", maxResponseBytes: M, timeoutMs: 60_000, tenant: "ns-a" });
const tenantB = () => h.client({ maxResponseBytes: M, tenant: "ns-b" });

/** Tenant B's ordinary calls against the emulator: every one must succeed. */
async function tenantBWorks(): Promise<void> {
  const b = tenantB();
  const results = await Promise.allSettled([
    b.listProjects(),
    b.getProject(seedIds.demoProject),
    b.getProjectBySlug("demo-project"),
    b.listProjects(),
    b.getProject(seedIds.demoProject),
  ]);
  const failed = results.flatMap((r) => (r.status === "rejected" ? [String(r.reason)] : []));
  expect(failed).toEqual([]);
}

/** Tenant C reads a body of the largest size allowed, whole. */
async function tenantCReadsTheLargestBody(): Promise<void> {
  const res = await sendRequest(
    { base: serviceBase(hostileUrl), method: "GET", path: "/whole", headers: {}, timeoutMs: 60_000, maxResponseBytes: M, tenant: "ns-c" },
    "getThing",
  );
  expect(res.text).toHaveLength(M);
}

describe("the response budget shared between tenants", () => {
  it(`${CALLS} calls of one tenant to a server that declares the largest body and trickles: the others' calls all succeed`, async () => {
    setResponseBudget(2 * M, M);
    hostileMode = "trickle";
    answered = 0;
    resetResponseBudgetPeak();
    const controller = new AbortController();
    const a = tenantA().withSignal(controller.signal);
    const attack = Promise.allSettled(Array.from({ length: CALLS }, () => a.listProjects()));
    // Every call of A has its headers and some of its body.
    await eventually(
      () => Promise.resolve(answered),
      (n) => n >= CALLS,
    );
    await eventually(
      () => Promise.resolve(responseBudget().inFlight),
      (n) => n >= CALLS,
    );
    const heldByA = responseBudget().peak;
    await tenantBWorks();
    await tenantCReadsTheLargestBody();
    // Bytes received, not bytes declared: the trickles held a few bytes, not CALLS × M.
    expect(heldByA).toBeLessThan(M);
    controller.abort();
    const results = await attack;
    expect(results.every((r) => r.status === "rejected")).toBe(true);
    expect(responseBudget().inFlight).toBe(0);
    expect(responseBudget().tenants).toBe(0);
  });

  it(`${CALLS} calls of one tenant that each send all but a byte of the largest body and stall: that tenant holds at most its share, the others' calls all succeed`, async () => {
    setResponseBudget(2 * M, M);
    hostileMode = "hold";
    answered = 0;
    resetResponseBudgetPeak();
    const controller = new AbortController();
    const a = tenantA().withSignal(controller.signal);
    const settled: unknown[] = [];
    const attack = Promise.allSettled(
      Array.from({ length: CALLS }, () =>
        a.listProjects().catch((err: unknown) => {
          settled.push(err);
          throw err;
        }),
      ),
    );
    // One of A's bodies is held whole but a byte.
    await eventually(
      () => Promise.resolve(responseBudget().inFlight),
      (n) => n >= M - 1,
    );
    const heldByA = responseBudget().peak;
    await tenantBWorks();
    await tenantCReadsTheLargestBody();
    // A never held more than its share; its other calls were refused as their bytes came.
    expect(heldByA).toBeLessThanOrEqual(M);
    await eventually(
      () => Promise.resolve(settled.length),
      (n) => n >= CALLS - 1,
    );
    for (const err of settled) {
      expect(isTransportError(err) && err.code, String(err)).toBe("KEYWARD_RESPONSE_BUDGET");
      expect(isTransportError(err) && err.retryable).toBe(true);
    }
    expect(responseBudget().peak).toBeLessThanOrEqual(2 * M);
    controller.abort();
    await attack;
    expect(responseBudget().inFlight).toBe(0);
    expect(responseBudget().tenants).toBe(0);
  });
});
