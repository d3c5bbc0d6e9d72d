// The client-side rate limit over HTTP: one bucket per credential (base URL + token, hashed) and
// limit. A call that finds no token, or a Retry-After still pending, never waits: it fails at
// once with a ThrottledError carrying when to come back, and sends nothing. The limiter's clock
// is the test's (frozen), so no assertion depends on how loaded the machine is.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeConnections, isThrottled, ThrottledError, type RequestInfo } from "../../../src/api/index.ts";
import { rejectionOf, seedIds, startHarness, TOKEN, type Harness } from "./emulator-fixture.ts";

const OTHER_TOKEN = `${TOKEN}-other-namespace`;
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ tokens: [TOKEN, OTHER_TOKEN] });
});
afterAll(async () => {
  await h.em.close();
  await closeConnections();
});

const frozen = (): number => 0;

describe("client-side rate limit", () => {
  it("no token left: the call fails at once with the delay, sends nothing, and a second client of the credential sees the spending", async () => {
    const rateLimit = { requestsPerSecond: 4, burst: 1 };
    const sent: RequestInfo[] = [];
    h.em.clearRequests();
    const a = h.client({ rateLimit, rateLimitClock: frozen, onRequest: (i) => sent.push(i) });
    const b = h.client({ rateLimit, rateLimitClock: frozen, onRequest: (i) => sent.push(i) });
    await a.getProject(seedIds.demoProject);
    const second = await rejectionOf(b.listProjects({}));
    const third = await rejectionOf(a.getProject(seedIds.pkiProject));
    expect(second).toBeInstanceOf(ThrottledError);
    expect(second).toMatchObject({ operation: "listProjects", retryable: true, mayHaveLanded: false, retryAfterMs: 250 });
    // The turns are spread: the next caller turned away comes back one interval later.
    expect(third).toMatchObject({ operation: "getProject", retryAfterMs: 500 });
    expect(isThrottled(third)).toBe(true);
    expect(sent.map((i) => i.operation)).toEqual(["getProject"]);
    expect(h.em.requests().filter((r) => r.path.startsWith("/api/"))).toHaveLength(1);
  });

  it("a 429's Retry-After fails the call at once (no retry inside the client) and holds off the credential's other calls, not another token's", async () => {
    h.em.setFaults({ rateLimit: { count: 1, retryAfterSeconds: 30 } });
    h.em.clearRequests();
    const rateLimit = { requestsPerSecond: 1000, burst: 1000 };
    const a = h.client({ rateLimit, rateLimitClock: frozen });
    const first = await rejectionOf(a.listProjects({}));
    expect(first).toMatchObject({ status: 429, retryable: true, retryAfterMs: 30_000 });
    const held = await rejectionOf(h.client({ rateLimit, rateLimitClock: frozen }).getProject(seedIds.demoProject));
    expect(held).toBeInstanceOf(ThrottledError);
    expect(held).toMatchObject({ retryAfterMs: 30_000 });
    h.em.setFaults({});
    const other = h.client({ rateLimit, rateLimitClock: frozen, token: OTHER_TOKEN });
    await other.getProject(seedIds.demoProject);
    expect(
      h.em
        .requests()
        .filter((r) => r.path.startsWith("/api/"))
        .map((r) => r.status),
    ).toEqual([429, 200]);
  });

  it("two namespaces' configs at one base URL with different limits each keep their own bucket", async () => {
    const strict = h.client({ rateLimit: { requestsPerSecond: 1, burst: 1 }, rateLimitClock: frozen });
    const generous = h.client({ token: OTHER_TOKEN, rateLimit: { requestsPerSecond: 100, burst: 5 }, rateLimitClock: frozen });
    await strict.getProject(seedIds.demoProject);
    for (let i = 0; i < 5; i++) await generous.getProject(seedIds.demoProject);
    // The generous config, seen last, did not loosen the strict one's bucket, nor the other way round.
    expect(await rejectionOf(strict.getProject(seedIds.demoProject))).toMatchObject({ retryAfterMs: 1000 });
    expect(await rejectionOf(generous.getProject(seedIds.demoProject))).toMatchObject({ retryAfterMs: 10 });
  });

  it("a pass whose first call went out finishes: its later calls borrow, and the next callers' turns come later", async () => {
    const rateLimit = { requestsPerSecond: 4, burst: 1 };
    h.em.clearRequests();
    const client = h.client({ rateLimit, rateLimitClock: frozen, token: OTHER_TOKEN });
    const pass = client.withSignal(new AbortController().signal);
    await pass.getProject(seedIds.demoProject);
    // No token is left, but this pass has begun: its second and third calls go out.
    await pass.listProjects({});
    await pass.getProject(seedIds.pkiProject);
    // A newcomer — another pass, or a call outside any — waits out the debt: three calls on a budget of one.
    expect(await rejectionOf(client.withSignal(new AbortController().signal).getProject(seedIds.demoProject))).toMatchObject({
      retryAfterMs: 750,
    });
    expect(await rejectionOf(client.getProject(seedIds.demoProject))).toMatchObject({ retryAfterMs: 1000 });
    expect(h.em.requests().filter((r) => r.path.startsWith("/api/"))).toHaveLength(3);
  });

  it("a pass turned away at its first call sends nothing; a Retry-After stops even a pass that has begun", async () => {
    const rateLimit = { requestsPerSecond: 2, burst: 2 };
    const client = h.client({ rateLimit, rateLimitClock: frozen, token: OTHER_TOKEN });
    const pass = client.withSignal(new AbortController().signal);
    await pass.getProject(seedIds.demoProject);
    h.em.setFaults({ rateLimit: { count: 1, retryAfterSeconds: 30 } });
    expect(await rejectionOf(pass.listProjects({}))).toMatchObject({ status: 429 });
    h.em.setFaults({});
    h.em.clearRequests();
    expect(await rejectionOf(pass.getProject(seedIds.demoProject))).toBeInstanceOf(ThrottledError);
    expect(h.em.requests()).toHaveLength(0);
  });
});
