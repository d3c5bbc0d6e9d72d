// withSignal: a view of one client whose every call the caller can cancel (keyward aborts the
// reconciles that outrun the shutdown grace).
import { afterAll, beforeAll, expect, it } from "vitest";
import { createApiClient, closeConnections } from "../../../src/api/index.ts";
import { startEmulator, type Emulator } from "../../emulator/server.ts";

const TOKEN = "kw-signal-token";
let emulator: Emulator;

beforeAll(async () => {
  emulator = await startEmulator({ tokens: [TOKEN] });
});
afterAll(async () => {
  await emulator.close();
  await closeConnections();
});

it("cancels a call held by the service when the signal aborts, and leaves the client usable", async () => {
  const api = createApiClient({ baseUrl: emulator.url, token: TOKEN, timeoutMs: 60_000 });
  emulator.setFaults({ match: { method: "GET", pathPattern: "^/api/v1/projects$" }, latencyMs: 30_000 });
  const controller = new AbortController();
  const pending = api.withSignal(controller.signal).listProjects();
  setTimeout(() => controller.abort(), 200);
  await expect(pending).rejects.toThrow(/abort/i);
  emulator.setFaults({});
  expect(Array.isArray(await api.listProjects())).toBe(true);
});

it("does not send a call whose signal has already aborted", async () => {
  const api = createApiClient({ baseUrl: emulator.url, token: TOKEN });
  emulator.clearRequests();
  await expect(api.withSignal(AbortSignal.abort()).createProject({ projectName: "never", slug: "never-sent" })).rejects.toThrow(/abort/i);
  expect(emulator.requests().filter((r) => r.operation === "createProject")).toHaveLength(0);
});

it("is a view with every method of the client, its credential and timeout, whether or not a call was made", async () => {
  const api = createApiClient({ baseUrl: emulator.url, token: TOKEN, timeoutMs: 7_000 });
  const view = api.withSignal(new AbortController().signal);
  // Read before any call: a pass that calls nothing (served from a shared listing) needs only these.
  expect(view.credential).toBe(api.credential);
  expect(view.timeoutMs).toBe(7_000);
  const methods = Object.keys(api).filter((k) => typeof (api as unknown as Record<string, unknown>)[k] === "function");
  expect(methods).toContain("createProject");
  for (const name of methods) {
    expect(name in view).toBe(true);
    expect(typeof (view as unknown as Record<string, unknown>)[name]).toBe("function");
  }
  expect(Object.keys(view).sort()).toEqual(Object.keys(api).sort());
  expect(Array.isArray(await view.listProjects())).toBe(true);
  // The same methods on every read (built once per view).
  const members = view as unknown as Record<string, unknown>;
  expect(members["listProjects"]).toBe(members["listProjects"]);
});
