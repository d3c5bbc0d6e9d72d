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
