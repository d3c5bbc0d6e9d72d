// The client-side rate limit over HTTP: one bucket per base URL, shared by every client of it.
// Spacing is read from the emulator's request log (a lower bound the limiter guarantees).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeConnections } from "../../../src/api/index.ts";
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
    const rateLimit = { requestsPerSecond: 4, burst: 1 };
    const a = h.client({ rateLimit });
    const b = h.client({ rateLimit, token: undefined });
    h.em.clearRequests();
    await a.getProject(seedIds.demoProject);
    await b.listProjects({}).catch(() => undefined);
    await a.getProject(seedIds.pkiProject);
    const at = h.em.requests().map((r) => Date.parse(r.at));
    expect(at).toHaveLength(3);
    // 4/s: 250 ms apart; the log's timestamps are taken after handling, so allow some slack.
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(200);
    expect(at[2]! - at[1]!).toBeGreaterThanOrEqual(200);
  });
});
