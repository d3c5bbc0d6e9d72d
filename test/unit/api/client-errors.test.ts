// Every error class over real HTTP, and what the client retries — proved with the emulator's
// request log (counts, statuses, timestamps), never with wall-clock assertions.
import { readFileSync, writeFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  closeConnections,
  createApiClient,
  isApiError,
  isJobInProgress,
  isServiceNotFound,
  isResponseValidationError,
  isTransportError,
  type ApiClient,
  type RequestInfo,
} from "../../../src/api/index.ts";
import { loadDefaultSeed } from "../../emulator/default-seed.ts";
import { startEmulator } from "../../emulator/server.ts";
import {
  connectionIds,
  destinationConfigs,
  eventually,
  fastRetry,
  rejectionOf,
  seedIds,
  startHarness,
  TOKEN,
  unique,
  type Harness,
} from "./emulator-fixture.ts";
import { freePort } from "../../controlplane/controlplane.ts"; // a port nothing listens on once it returns

let h: Harness;
let api: ApiClient;

beforeAll(async () => {
  h = await startHarness();
  api = h.client();
});
afterAll(async () => {
  await h.em.close();
  await closeConnections();
});
beforeEach(() => {
  h.em.setFaults({});
  h.em.clearRequests();
});

const syncBody = (over: Record<string, unknown> = {}) => ({
  name: unique("err"),
  projectId: seedIds.demoProject,
  connectionId: connectionIds["git-host"],
  environment: "dev",
  secretPath: "/",
  syncOptions: { initialSyncBehavior: "overwrite-destination" as const },
  destinationConfig: destinationConfigs["git-host"],
  ...over,
});

async function apiErrorOf(p: Promise<unknown>) {
  const err = await rejectionOf(p);
  if (!isApiError(err)) throw new Error(`expected an ApiError, got ${String(err)}`);
  return err;
}

describe("service errors", () => {
  it("401 without a token", async () => {
    const err = await apiErrorOf(h.client({ token: undefined }).listProjects());
    expect(err).toMatchObject({ status: 401, operation: "listProjects", retryable: false });
    expect(err.serviceMessage).toContain("Token missing");
    expect(err.reqId).toBe(h.em.requests()[0]?.reqId);
  });

  it("403 for an unknown token", async () => {
    const err = await apiErrorOf(h.client({ token: "not-a-valid-token" }).getProject(seedIds.demoProject));
    expect(err).toMatchObject({ status: 403, retryable: false });
    expect(h.em.requests()).toHaveLength(1);
  });

  it("403 when deleting a delete-protected project, which stays", async () => {
    const p = await api.createProject({ projectName: "Protected", slug: unique("prot"), hasDeleteProtection: true });
    const err = await apiErrorOf(api.deleteProject(p.id));
    expect(err.status).toBe(403);
    expect((await api.getProject(p.id)).id).toBe(p.id);
  });

  it("404 for an unknown id", async () => {
    const err = await apiErrorOf(api.getProject("00000000-0000-4000-8000-00000000dead"));
    expect(err).toMatchObject({ status: 404, retryable: false });
    expect(isServiceNotFound(err)).toBe(true);
  });

  it("400 for a duplicate project slug and a duplicate sync name, not retried", async () => {
    const slug = unique("dup");
    await api.createProject({ projectName: "one", slug });
    expect(await apiErrorOf(api.createProject({ projectName: "two", slug }))).toMatchObject({
      status: 400,
      jobInProgress: false,
      retryable: false,
    });
    const body = syncBody({ isAutoSyncEnabled: false });
    await api.createSecretSync("git-host", body);
    expect((await apiErrorOf(api.createSecretSync("git-host", body))).status).toBe(400);
    expect(h.requestsOf("createProject").map((r) => r.status)).toEqual([200, 400]);
    expect(h.requestsOf("createSecretSync").map((r) => r.status)).toEqual([200, 400]);
  });

  it("422 renders the service's issues readably", async () => {
    const err = await apiErrorOf(h.unchecked().updateProject(seedIds.demoProject, { pitVersionLimit: 0 }));
    expect(err).toMatchObject({ status: 422, error: "ValidationFailure" });
    expect(err.serviceMessage).toMatch(/^pitVersionLimit: /);
  });
});

describe("400 while a job of the sync is in progress", () => {
  let slow: Harness;
  beforeAll(async () => {
    slow = await startHarness({ jobDelayMs: 600_000 });
  });
  afterAll(async () => {
    await slow.em.close();
  });

  it("trigger and remove answer 400, and are not retried", async () => {
    const c = slow.client();
    const sync = await c.createSecretSync("git-host", syncBody());
    expect(sync.syncStatus).toBe("pending");
    for (const call of [c.syncSecrets("git-host", sync.id), c.removeSecrets("git-host", sync.id)]) {
      const err = await apiErrorOf(call);
      expect(err).toMatchObject({ status: 400, jobInProgress: true, retryable: true });
      expect(isJobInProgress(err)).toBe(true);
    }
    expect(slow.requestsOf("syncSecrets")).toHaveLength(1);
    expect(slow.requestsOf("removeSecrets")).toHaveLength(1);
  });
});

describe("429", () => {
  it("a read is not retried inside the client: the error carries Retry-After for the engine's requeue", async () => {
    h.em.setFaults({ match: { method: "GET" }, rateLimit: { count: 1, retryAfterSeconds: 1 } });
    const err = await apiErrorOf(api.getProject(seedIds.demoProject));
    expect(err).toMatchObject({ status: 429, retryable: true, retryAfterMs: 1000, error: "RateLimitExceeded", mayHaveLanded: false });
    expect(h.requestsOf("getProject").map((r) => r.status)).toEqual([429]);
  });

  it("nor is a create: refused before processing, it fails with mayHaveLanded false (the caller may create again later)", async () => {
    h.em.setFaults({ match: { method: "POST", pathPattern: "^/api/v2/workspace$" }, rateLimit: { count: 1, retryAfterSeconds: 1 } });
    const slug = unique("rl");
    const err = await apiErrorOf(api.createProject({ projectName: "rate limited", slug }));
    expect(err).toMatchObject({ status: 429, retryable: true, mayHaveLanded: false, retryAfterMs: 1000 });
    expect(h.requestsOf("createProject").map((r) => r.status)).toEqual([429]);
    expect((await api.listProjects()).filter((p) => p.slug === slug)).toHaveLength(0);
  });

  it("a long Retry-After is carried as is", async () => {
    h.em.setFaults({ rateLimit: { count: 1, retryAfterSeconds: 120 } });
    const err = await apiErrorOf(api.listProjects());
    expect(err).toMatchObject({ status: 429, retryable: true, retryAfterMs: 120_000, error: "RateLimitExceeded" });
    expect(h.em.requests()).toHaveLength(1);
  });
});

describe("5xx", () => {
  // A re-send would need a backoff, and a backoff inside the call would hold the worker: the
  // caller gets the retryable error at once and its engine requeues the key with backoff.
  for (const status of [502, 503, 504]) {
    it(`${status} on a read is not re-sent inside the call: one request, retryable for the caller`, async () => {
      h.em.setFaults({ errorRate: 1, errorStatus: status });
      const err = await apiErrorOf(api.getProject(seedIds.demoProject));
      expect(err).toMatchObject({ status, retryable: true });
      expect(h.requestsOf("getProject").map((r) => r.status)).toEqual([status]);
    });
  }

  it("500 is not retried by the client (but is retryable for the caller)", async () => {
    h.em.setFaults({ errorRate: 1, errorStatus: 500 });
    expect(await apiErrorOf(api.getProject(seedIds.demoProject))).toMatchObject({ status: 500, retryable: true });
    expect(h.em.requests()).toHaveLength(1);
  });

  it("503 on a create is not retried: it may have landed", async () => {
    h.em.setFaults({ errorRate: 1, errorStatus: 503 });
    expect(await apiErrorOf(api.createProject({ projectName: "x", slug: unique("five") }))).toMatchObject({
      status: 503,
      mayHaveLanded: true,
    });
    expect(h.em.requests()).toHaveLength(1);
  });
});

describe("findProjectBySlug (a lookup whose usual answer is 'none')", () => {
  it("is undefined for a slug the service does not know, the project for one it knows, and sends one request each", async () => {
    const slug = unique("find");
    h.em.clearRequests();
    expect(await api.findProjectBySlug(slug)).toBeUndefined();
    await api.createProject({ projectName: "found", slug });
    expect((await api.findProjectBySlug(slug))?.slug).toBe(slug);
    expect(h.requestsOf("getProjectBySlug")).toHaveLength(2);
  });

  it("still fails for a route the service does not serve (a wrong base URL is no 'absent')", async () => {
    const wrong = h.client({ baseUrl: `${h.em.url}/not-the-api` });
    const err = await rejectionOf(wrong.findProjectBySlug(unique("route")));
    expect(isApiError(err) && err.routeNotFound).toBe(true);
  });
});

describe("dropped responses", () => {
  const dropAfter = (method: string, pathPattern: string) =>
    h.em.setFaults({ match: { method, pathPattern }, drop: { count: 1, when: "after-handling" } });

  it("a create whose response is dropped is not sent twice; it landed", async () => {
    dropAfter("POST", "^/api/v2/workspace$");
    const slug = unique("drop");
    const err = await rejectionOf(api.createProject({ projectName: "dropped", slug }));
    expect(isTransportError(err) && err).toMatchObject({ kind: "dropped-response", mayHaveLanded: true, retryable: true });
    expect(h.requestsOf("createProject")).toHaveLength(1);
    expect((await api.getProjectBySlug(slug)).slug).toBe(slug);
  });

  it("neither is a sync create, a token create, a trigger or a remove", async () => {
    const sync = await api.createSecretSync("git-host", syncBody({ isAutoSyncEnabled: false }));
    const calls: [string, () => Promise<unknown>][] = [
      ["^/api/v1/secret-syncs/git-host$", () => api.createSecretSync("git-host", syncBody({ isAutoSyncEnabled: false }))],
      ["/tokens$", () => api.createIdentityToken(seedIds.identity)],
      ["/sync-secrets$", () => api.syncSecrets("git-host", sync.id)],
    ];
    for (const [pattern, call] of calls) {
      h.em.clearRequests();
      dropAfter("POST", pattern);
      const err = await rejectionOf(call());
      expect(isTransportError(err) && err.mayHaveLanded, pattern).toBe(true);
      expect(h.em.requests(), pattern).toHaveLength(1);
    }
    await eventually(
      () => api.getSecretSync("git-host", sync.id),
      (s) => s.syncStatus !== "pending" && s.syncStatus !== "running",
    );
    h.em.clearRequests();
    dropAfter("POST", "/remove-secrets$");
    expect(isTransportError(await rejectionOf(api.removeSecrets("git-host", sync.id)))).toBe(true);
    expect(h.requestsOf("removeSecrets")).toHaveLength(1);
  });

  it("a create lost before handling is not re-sent either (the client cannot tell)", async () => {
    h.em.setFaults({ match: { method: "POST" }, drop: { count: 1, when: "before-handling" } });
    const slug = unique("lost");
    const err = await rejectionOf(api.createProject({ projectName: "lost", slug }));
    expect(isTransportError(err) && err.mayHaveLanded).toBe(true);
    expect(h.requestsOf("createProject")).toHaveLength(1);
    expect(isServiceNotFound(await rejectionOf(api.getProjectBySlug(slug)))).toBe(true);
  });

  // The service got these and may be holding the next one as long: a re-send waits for the
  // engine's requeue, with the worker free meanwhile.
  it("a read whose response is dropped is not re-sent inside the call: retryable for the caller, and the next call succeeds", async () => {
    h.em.setFaults({ match: { method: "GET" }, drop: { count: 1, when: "after-handling" } });
    const err = await rejectionOf(api.getProject(seedIds.demoProject));
    expect(isTransportError(err) && err).toMatchObject({ kind: "dropped-response", retryable: true, mayHaveLanded: true });
    expect(h.requestsOf("getProject").map((r) => r.fault ?? "ok")).toEqual(["drop-after-handling"]);
    expect((await api.getProject(seedIds.demoProject)).id).toBe(seedIds.demoProject);
  });

  it("neither is an update whose response is dropped (it landed; the requeued pass converges)", async () => {
    h.em.setFaults({ match: { method: "PATCH" }, drop: { count: 1, when: "after-handling" } });
    const err = await rejectionOf(api.updateProject(seedIds.demoProject, { description: "once" }));
    expect(isTransportError(err) && err.retryable).toBe(true);
    expect(h.requestsOf("updateProject")).toHaveLength(1);
    expect((await api.getProject(seedIds.demoProject)).description).toBe("once");
  });
});

describe("transport failures", () => {
  it("a refused connection is sent again at once, even a create: nothing was sent and nothing waited", async () => {
    const attempts: RequestInfo[] = [];
    const c = createApiClient({
      baseUrl: `http://127.0.0.1:${await freePort()}`,
      token: TOKEN,
      retry: fastRetry,
      onRequest: (i) => attempts.push(i),
    });
    const err = await rejectionOf(c.createProject({ projectName: "nowhere" }));
    expect(isTransportError(err) && err).toMatchObject({
      kind: "connection-refused",
      mayHaveLanded: false,
      retryable: true,
      code: "ECONNREFUSED",
    });
    expect(attempts.map((a) => [a.attempt, a.status])).toEqual([
      [1, "error"],
      [2, "error"],
      [3, "error"],
    ]);
  });

  // The emulator drops a request whose client left during the latency (it neither applies nor
  // logs it), so the attempts are counted on the client's side (onRequest).
  it("a read slower than timeoutMs times out and is not re-sent inside the call: a second wait would hold the worker as long again", async () => {
    h.em.setFaults({ latencyMs: 400 });
    const attempts: RequestInfo[] = [];
    const err = await rejectionOf(h.client({ timeoutMs: 100, onRequest: (i) => attempts.push(i) }).getProject(seedIds.demoProject));
    expect(isTransportError(err) && err).toMatchObject({ kind: "timeout", mayHaveLanded: true, retryable: true });
    expect(attempts.map((a) => [a.attempt, a.status])).toEqual([[1, "error"]]);
  });

  it("a create slower than timeoutMs is not re-sent: it may have landed", async () => {
    h.em.setFaults({ latencyMs: 400 });
    const attempts: RequestInfo[] = [];
    const err = await rejectionOf(
      h.client({ timeoutMs: 100, onRequest: (i) => attempts.push(i) }).createProject({ projectName: "slow", slug: unique("slow") }),
    );
    expect(isTransportError(err) && err).toMatchObject({ kind: "timeout", mayHaveLanded: true, retryable: true });
    expect(attempts).toHaveLength(1);
  });

  it("an aborted call is not retried", async () => {
    h.em.setFaults({ latencyMs: 300 });
    const controller = new AbortController();
    const call = api.getProject(seedIds.demoProject, { signal: controller.signal });
    setTimeout(() => controller.abort(), 20);
    expect(await rejectionOf(call)).toMatchObject({ name: "TransportError", kind: "aborted", retryable: false });
  });
});

describe("response validation", () => {
  it("a body that breaks the response schema names the operation and field, not the value", async () => {
    const dir = mkdtempSync(join(tmpdir(), "kw-api-"));
    const persistPath = join(dir, "state.json");
    const first = await startEmulator({ tokens: [TOKEN], seed: loadDefaultSeed(), persistPath });
    await first.close();
    // Corrupt the stored data the way a differing service version would answer.
    const state = JSON.parse(readFileSync(persistPath, "utf8")) as Record<string, Record<string, Record<string, unknown>>>;
    state["projects"]![seedIds.demoProject]!["name"] = 31337;
    const est = Object.values(state["profiles"]!).find((p) => p["slug"] === "network-devices")!;
    est["estConfig"] = { ...(est["estConfig"] as object), passphrase: 8675309 };
    writeFileSync(persistPath, JSON.stringify(state));
    const second = await startEmulator({ tokens: [TOKEN], persistPath });
    try {
      const c = createApiClient({ baseUrl: second.url, token: TOKEN, retry: fastRetry });
      const err = await rejectionOf(c.getProject(seedIds.demoProject));
      expect(isResponseValidationError(err) && err).toMatchObject({ operation: "getProject", retryable: false });
      expect((err as Error).message).toContain("project.name");
      expect((err as Error).message).not.toContain("31337");
      const listErr = await rejectionOf(c.listCertificateProfiles({ projectId: seedIds.pkiProject }));
      expect((listErr as Error).message).toMatch(/certificateProfiles\[\d+\]\.estConfig\.passphrase/);
      expect(`${String(listErr)}${JSON.stringify(listErr)}${(listErr as Error).stack ?? ""}`).not.toContain("8675309");
      expect(second.requests()).toHaveLength(2);
    } finally {
      await second.close();
    }
  });
});
