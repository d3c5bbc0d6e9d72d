import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { call, eventually, start, TOKEN } from "./helpers.ts";
import type { Emulator } from "./server.ts";

let emu: Emulator;
beforeEach(async () => {
  emu = await start();
});
afterEach(() => emu.close());

const projectNames = async (): Promise<string[]> =>
  (await call<{ projects: { name: string }[] }>(emu, "GET", "/api/v1/projects")).body.projects.map((p) => p.name);

describe("faults", () => {
  it("answers errorStatus with the service's error body for matching requests only", async () => {
    emu.setFaults({ match: { method: "GET", pathPattern: "^/api/v1/projects$" }, errorRate: 1, errorStatus: 503 });
    const failed = await call(emu, "GET", "/api/v1/projects");
    expect(failed.status).toBe(503);
    expect(Object.keys(failed.body).sort()).toEqual(["error", "message", "reqId", "statusCode"]);
    expect((await call(emu, "POST", "/api/v2/workspace", { body: { projectName: "fine" } })).status).toBe(200);
    emu.setFaults({});
    expect((await call(emu, "GET", "/api/v1/projects")).status).toBe(200);
  });

  it("defaults the injected error to 500", async () => {
    emu.setFaults({ errorRate: 1 });
    expect((await call(emu, "GET", "/api/v1/projects")).body).toMatchObject({ statusCode: 500, error: "InternalServerError" });
  });

  it("rate-limits the next `count` matching requests with Retry-After", async () => {
    emu.setFaults({ rateLimit: { count: 2, retryAfterSeconds: 7 } });
    for (let i = 0; i < 2; i += 1) {
      const res = await call(emu, "GET", "/api/v1/projects");
      expect(res.status).toBe(429);
      expect(res.headers.get("retry-after")).toBe("7");
      expect(res.body["error"]).toBe("RateLimitExceeded");
    }
    expect((await call(emu, "GET", "/api/v1/projects")).status).toBe(200);
  });

  it("drops a request before handling: no answer and no change", async () => {
    emu.setFaults({ match: { method: "POST" }, drop: { count: 1, when: "before-handling" } });
    await expect(call(emu, "POST", "/api/v2/workspace", { body: { projectName: "lost" } })).rejects.toThrow();
    expect(await projectNames()).not.toContain("lost");
    expect(emu.requests().at(-2)).toMatchObject({ operation: "createProject", status: 0, fault: "drop-before-handling" });
  });

  it("drops a request after handling: the change is applied, only the answer is lost", async () => {
    emu.setFaults({ match: { method: "POST" }, drop: { count: 1, when: "after-handling" } });
    await expect(call(emu, "POST", "/api/v2/workspace", { body: { projectName: "applied" } })).rejects.toThrow();
    expect(await projectNames()).toContain("applied");
  });

  it("delays matching requests while others pass", async () => {
    emu.setFaults({ match: { pathPattern: "/memberships$" }, latencyMs: 30_000 });
    let delayedSettled = false;
    const delayed = call(emu, "GET", "/api/v1/projects/x/memberships").finally(() => {
      delayedSettled = true;
    });
    delayed.catch(() => undefined);
    expect((await call(emu, "GET", "/api/v1/projects")).status).toBe(200);
    expect(delayedSettled).toBe(false);
  });

  it("lands a request held before handling whose client gave up, when asked to", async () => {
    emu.setFaults({ match: { method: "POST", pathPattern: "^/api/v2/workspace$" }, latencyMs: 60_000, landsWithoutClient: true });
    const abort = new AbortController();
    const gaveUp = fetch(`${emu.url}/api/v2/workspace`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ projectName: "late", slug: "late-lands" }),
      signal: abort.signal,
    });
    gaveUp.catch(() => undefined);
    await eventually(() => Promise.resolve(emu.heldRequests() > 0 ? true : undefined));
    expect(emu.heldRequests({ clientGone: true })).toBe(0);
    abort.abort();
    // The hold sees its client go, and lands when released (not when a latency happens to end).
    await eventually(() => Promise.resolve(emu.heldRequests({ clientGone: true }) === 1 ? true : undefined));
    expect(emu.requests().filter((r) => r.operation === "createProject")).toEqual([]);
    expect(emu.releaseHeld()).toBe(1);
    const landed = await eventually(() => {
      const logged = emu.requests().filter((r) => r.operation === "createProject");
      return Promise.resolve(logged.length > 0 ? logged : undefined);
    });
    expect(landed.map((r) => [r.status, r.fault])).toEqual([[200, "client-gone"]]);
    emu.setFaults({});
    expect((await call(emu, "GET", "/api/v1/projects/slug/late-lands")).status).toBe(200);
  });

  it("answers a held request at once when released, its client still waiting", async () => {
    emu.setFaults({ match: { pathPattern: "/memberships$" }, latencyMs: 60_000 });
    const held = call(emu, "GET", "/api/v1/projects/x/memberships");
    await eventually(() => Promise.resolve(emu.heldRequests() === 1 ? true : undefined));
    expect(emu.heldRequests({ clientGone: true })).toBe(0);
    expect(emu.releaseHeld()).toBe(1);
    expect((await held).status).toBe(404);
    expect(emu.heldRequests()).toBe(0);
    expect(emu.releaseHeld()).toBe(0);
  });

  it("holds the answer after handling: the change is applied and logged while the client waits", async () => {
    emu.setFaults({ match: { method: "POST", pathPattern: "^/api/v2/workspace$" }, latencyMs: 60_000, latencyWhen: "after-handling" });
    const abort = new AbortController();
    let heldSettled = false;
    const held = fetch(`${emu.url}/api/v2/workspace`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ projectName: "held" }),
      signal: abort.signal,
    }).finally(() => {
      heldSettled = true;
    });
    held.catch(() => undefined);
    await eventually(async () => ((await projectNames()).includes("held") ? true : undefined));
    expect(heldSettled).toBe(false);
    expect(emu.requests().find((r) => r.operation === "createProject")).toMatchObject({ status: 200 });
    // The client gives up (as a killed process would): the applied change stays.
    abort.abort();
    await expect(held).rejects.toThrow();
    expect(await projectNames()).toContain("held");
  });

  it("delays before handling by default: nothing is applied while the request waits", async () => {
    emu.setFaults({ match: { method: "POST", pathPattern: "^/api/v2/workspace$" }, latencyMs: 60_000 });
    const abort = new AbortController();
    const held = fetch(`${emu.url}/api/v2/workspace`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ projectName: "waiting" }),
      signal: abort.signal,
    });
    held.catch(() => undefined);
    expect((await call(emu, "GET", "/api/v1/projects")).status).toBe(200);
    expect(await projectNames()).not.toContain("waiting");
    abort.abort();
    await expect(held).rejects.toThrow();
  });
});

describe("request log", () => {
  it("records every /api request with operation, status and auth, never the token", async () => {
    await call(emu, "POST", "/api/v2/workspace", { body: { projectName: "logged" }, query: { trace: "1" } });
    await call(emu, "GET", "/api/v1/projects", { token: null });
    await call(emu, "GET", "/api/v1/projects", { token: "wrong" });
    const log = emu.requests();
    expect(log.map((r) => [r.operation, r.status, r.auth])).toEqual([
      ["createProject", 200, "valid"],
      ["listProjects", 401, "none"],
      ["listProjects", 403, "invalid"],
    ]);
    expect(log[0]).toMatchObject({
      seq: 1,
      method: "POST",
      path: "/api/v2/workspace",
      query: { trace: "1" },
      body: { projectName: "logged" },
    });
    expect(log[0]?.reqId).toMatch(/^req-/);
    expect(JSON.stringify(log)).not.toContain(TOKEN);
    expect(JSON.stringify(log)).not.toContain("wrong");
    emu.clearRequests();
    expect(emu.requests()).toEqual([]);
  });
});
