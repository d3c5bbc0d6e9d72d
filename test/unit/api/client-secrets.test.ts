// Tokens never show: every error type is provoked with a recognisable token in play, and the
// token is searched for in each error's message, stack, String() and JSON, and in every log line.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeConnections, createApiClient, type ApiClient } from "../../../src/api/index.ts";
import { createLogger } from "../../../src/log.ts";
import { loadDefaultSeed } from "../../emulator/default-seed.ts";
import { startEmulator } from "../../emulator/server.ts";
import { fastRetry, rejectionOf, seedIds, startHarness, TOKEN, unique, type Harness } from "./emulator-fixture.ts";
import { freePort } from "../../controlplane/controlplane.ts"; // a port nothing listens on once it returns

const BAD_TOKEN = `${TOKEN}-revoked`;
const lines: string[] = [];
const logger = createLogger({ level: "debug" }, { write: (line: string) => void lines.push(line) });

let h: Harness;
let api: ApiClient;
const errors: { what: string; err: unknown }[] = [];
const secrets: string[] = [TOKEN, BAD_TOKEN];

beforeAll(async () => {
  h = await startHarness();
  api = h.client({ logger });
});
afterAll(async () => {
  await h.em.close();
  await closeConnections();
});

async function provoke(what: string, call: Promise<unknown>): Promise<unknown> {
  const err = await rejectionOf(call);
  errors.push({ what, err });
  return err;
}

/** An emulator whose stored project name is an object holding the token (a malformed answer). */
async function malformedEmulator() {
  const persistPath = join(mkdtempSync(join(tmpdir(), "kw-secrets-")), "state.json");
  await (await startEmulator({ tokens: [TOKEN], seed: loadDefaultSeed(), persistPath })).close();
  const state = JSON.parse(readFileSync(persistPath, "utf8")) as { projects: Record<string, Record<string, unknown>> };
  state.projects[seedIds.demoProject]!["name"] = { leaked: TOKEN };
  writeFileSync(persistPath, JSON.stringify(state));
  return startEmulator({ tokens: [TOKEN], persistPath });
}

describe("no token in errors or logs", () => {
  it("provokes every error type", async () => {
    const issued = await api.createIdentityToken(seedIds.identity, { name: "secret-test" });
    secrets.push(issued.accessToken);
    await api.listProjects({}, { token: issued.accessToken });

    // ApiError: the service echoes the token back in its message (404 for an id that is the token).
    const notFound = await provoke("404 echoing the token", api.getProject(TOKEN));
    expect((notFound as Error).message).toContain("[REDACTED]");
    await provoke("401", h.client({ token: undefined, logger }).listProjects());
    await provoke("403 per-call bad token", api.getProject(seedIds.demoProject, { token: BAD_TOKEN }));
    await provoke("422", h.unchecked({ logger }).updateProject(seedIds.demoProject, { name: TOKEN.repeat(3) }));
    await provoke(
      "400 duplicate",
      (async () => {
        const slug = unique("dup");
        await api.createProject({ projectName: TOKEN.slice(0, 30), slug });
        await api.createProject({ projectName: TOKEN.slice(0, 30), slug });
      })(),
    );
    h.em.setFaults({ rateLimit: { count: 1, retryAfterSeconds: 600 } });
    await provoke("429", api.listProjects());
    h.em.setFaults({ errorRate: 1, errorStatus: 503 });
    await provoke("503 after retries", api.listProjects());

    // TransportError: dropped, timeout, refused.
    h.em.setFaults({ match: { method: "POST" }, drop: { count: 1, when: "after-handling" } });
    await provoke("dropped create", api.createIdentityToken(seedIds.identity));
    h.em.setFaults({ latencyMs: 300 });
    await provoke("timeout", h.client({ logger, timeoutMs: 50, retry: { maxAttempts: 1 } }).getProject(seedIds.demoProject));
    h.em.setFaults({});
    const refused = createApiClient({ baseUrl: `http://127.0.0.1:${await freePort()}`, token: TOKEN, logger, retry: fastRetry });
    await provoke("refused", refused.getProject(seedIds.demoProject));
    const controller = new AbortController();
    controller.abort();
    await provoke("aborted", api.getProject(seedIds.demoProject, { signal: controller.signal }));

    // RequestValidationError with the token in the refused values.
    await provoke("request validation", api.createProject({ projectName: TOKEN, slug: `${TOKEN}${"x".repeat(40)}` }));
    await provoke(
      "request validation (refinement)",
      api.createSecretSync("data-platform", {
        name: TOKEN.slice(0, 20),
        projectId: seedIds.demoProject,
        connectionId: "a1b2c3d4-0004-4a00-8000-000000000003",
        environment: "dev",
        secretPath: "/",
        syncOptions: { initialSyncBehavior: "overwrite-destination", keySchema: TOKEN },
        destinationConfig: { scope: TOKEN },
      }),
    );

    // ResponseValidationError with the token inside the malformed field.
    const bad = await malformedEmulator();
    try {
      await provoke("response validation", createApiClient({ baseUrl: bad.url, token: TOKEN, logger }).getProject(seedIds.demoProject));
    } finally {
      await bad.close();
    }

    expect(errors.map((e) => (e.err as Error).name)).toEqual(
      expect.arrayContaining(["ApiError", "TransportError", "RequestValidationError", "ResponseValidationError"]),
    );
    for (const { what, err } of errors) expect(err, what).toBeInstanceOf(Error);
  });

  it("no error shows a token in message, stack, String() or JSON", () => {
    expect(errors.length).toBeGreaterThanOrEqual(14);
    for (const { what, err } of errors) {
      const e = err as Error;
      const views = [e.message, e.stack ?? "", String(e), JSON.stringify(e)];
      for (const view of views) for (const secret of secrets) expect(view.includes(secret), `${what}: ${view.slice(0, 200)}`).toBe(false);
    }
  });

  it("no log line shows a token, and the logger did log the calls", () => {
    expect(lines.length).toBeGreaterThan(10);
    expect(lines.some((l) => l.includes('"operation":"createIdentityToken"'))).toBe(true);
    for (const line of lines) for (const secret of secrets) expect(line.includes(secret), line.slice(0, 200)).toBe(false);
  });
});
