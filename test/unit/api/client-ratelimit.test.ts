// The client-side rate limit over HTTP: one bucket per base URL, shared by every client of it.
// What each request waited is read from the limiter itself, on a clock the test controls.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeConnections, type RequestInfo } from "../../../src/api/index.ts";
import { seedIds, startHarness, type Harness } from "./emulator-fixture.ts";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.em.close();
  await closeConnections();
});

describe("client-side rate limit", () => {
  it("two clients of one base URL share a bucket: the second waits for the first's spending", async () => {
    // The limiter's own clock, frozen: no token ever refills, so each reservation waits one
    // more interval than the one before, whichever client makes it and however loaded the
    // machine is. (Wall-clock spacing of the requests would flake under load.)
    const rateLimit = { requestsPerSecond: 4, burst: 1 };
    const waits: { operation: string; rateLimitWaitMs: number }[] = [];
    const onRequest = (info: RequestInfo): void => {
      waits.push({ operation: info.operation, rateLimitWaitMs: info.rateLimitWaitMs });
    };
    const frozen = (): number => 0;
    h.em.clearRequests();
    const a = h.client({ rateLimit, rateLimitClock: frozen, onRequest });
    const b = h.client({ rateLimit, token: undefined, onRequest });
    await a.getProject(seedIds.demoProject);
    await b.listProjects({}).catch(() => undefined);
    await a.getProject(seedIds.pkiProject);
    expect(waits).toEqual([
      { operation: "getProject", rateLimitWaitMs: 0 },
      { operation: "listProjects", rateLimitWaitMs: 250 },
      { operation: "getProject", rateLimitWaitMs: 500 },
    ]);
    expect(h.em.requests().filter((r) => r.operation === "getProject" || r.operation === "listProjects")).toHaveLength(3);
  });
});
