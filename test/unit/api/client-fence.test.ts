// The fence of a sharded replica (ClientOptions.admit): asked right before each attempt; a call it
// refuses is never sent, fails as a retryable TransportError that did not land, and the client
// sends again once it admits.
import { afterAll, beforeAll, expect, it } from "vitest";
import { createApiClient, closeConnections, TransportError } from "../../../src/api/index.ts";
import { startEmulator, type Emulator } from "../../emulator/server.ts";

const TOKEN = "kw-fence-token";
let emulator: Emulator;

beforeAll(async () => {
  emulator = await startEmulator({ tokens: [TOKEN] });
});
afterAll(async () => {
  await emulator.close();
  await closeConnections();
});

it("sends nothing while the fence refuses, and sends again once it admits", async () => {
  let holds = false;
  const api = createApiClient({ baseUrl: emulator.url, token: TOKEN, admit: () => holds });
  emulator.clearRequests();
  const refused = await api.createProject({ projectName: "fenced", slug: "fenced-out" }).catch((err: unknown) => err);
  expect(refused).toBeInstanceOf(TransportError);
  expect(refused).toMatchObject({ kind: "fenced", retryable: true, mayHaveLanded: false });
  expect(emulator.requests()).toHaveLength(0);
  holds = true;
  expect(Array.isArray(await api.listProjects())).toBe(true);
  expect(emulator.requests()).toHaveLength(1);
});
