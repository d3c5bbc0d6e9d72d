// The connector both provider kinds share: tokenAuth's schedule, setbacks and refusals, against
// the emulator over loopback HTTP with a clock the test moves.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isThrottled } from "../../../../src/api/index.ts";
import { createLogger } from "../../../../src/log.ts";
import { CREDENTIALS_LABEL } from "../../../../src/resources/provider/credentials.ts";
import { createConnector, type ConnectionSpec } from "../../../../src/resources/provider/connector.ts";
import type { KubeObject } from "../../../../src/engine/types.ts";
import { loadDefaultSeed } from "../../../emulator/default-seed.ts";
import { startEmulator, type Emulator } from "../../../emulator/server.ts";

const BOOTSTRAP = "kw-unit-bootstrap-token";
const IDENTITY = "a1b2c3d4-0003-4a00-8000-000000000001"; // the default seed's 60-second identity

describe("the connector's tokenAuth", () => {
  let emulator: Emulator;
  let clock = Date.UTC(2030, 0, 1);
  const secret = (token: string): KubeObject =>
    ({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "bootstrap", namespace: "ns", labels: { [CREDENTIALS_LABEL]: "true" } },
      spec: {},
      data: { token: Buffer.from(token).toString("base64") },
    }) as unknown as KubeObject;
  let bootstrap = BOOTSTRAP;
  const read = (): Promise<KubeObject | undefined> => Promise.resolve(secret(bootstrap));
  const mints = (): number => emulator.requests().filter((r) => r.operation === "createIdentityToken").length;
  let spec: ConnectionSpec;

  beforeAll(async () => {
    emulator = await startEmulator({ tokens: [BOOTSTRAP, "kw-unit-other-bootstrap"], seed: loadDefaultSeed() });
    // A limit far above these tests' calls: the buckets are shared by credential across tests, and the limit is not what they test.
    spec = {
      baseUrl: emulator.url,
      tokenAuth: { identityId: IDENTITY, bootstrapSecretRef: { name: "bootstrap" } },
      rateLimit: { requestsPerSecond: 10_000, burst: 10_000 },
    };
  });
  afterAll(() => emulator.close());

  it("mints once, reuses the token until a third of its lifetime is left, then mints the next", async () => {
    const connector = createConnector({ log: createLogger({ level: "silent" }), now: () => clock, allowedBaseUrls: ["*"] });
    // Concurrent first connects share one mint.
    const clients = await Promise.all(
      [1, 2, 3].map(() => connector.connect("ProviderConfig/ns/a", spec, read, { secretNamespace: "ns", tenant: "ns" })),
    );
    expect(mints()).toBe(1);
    await clients[0]?.listProjects({});
    const first = connector.tokenSchedule("ProviderConfig/ns/a");
    expect(first?.expiresAt && first.expiresAt.getTime() - first.issuedAt.getTime()).toBe(60_000);
    expect(first?.renewAt && first.renewAt.getTime() - first.issuedAt.getTime()).toBe(40_000);

    clock += 39_000;
    await connector.connect("ProviderConfig/ns/a", spec, read, { secretNamespace: "ns", tenant: "ns" });
    expect(mints()).toBe(1);
    clock += 1_000;
    const renewed = await connector.connect("ProviderConfig/ns/a", spec, read, { secretNamespace: "ns", tenant: "ns" });
    expect(mints()).toBe(2);
    expect(connector.tokenSchedule("ProviderConfig/ns/a")?.issuedAt.getTime()).toBeGreaterThan(first?.issuedAt.getTime() ?? Infinity);
    // The calls go with the minted token: the bootstrap token served create-token only.
    await renewed.listProjects({});
    const calls = emulator.requests().filter((r) => r.operation === "listProjects");
    expect(calls.length).toBe(2);
    expect(calls.every((r) => r.auth === "valid")).toBe(true);
  });

  it("mints anew when the bootstrap token changes, and keeps configs apart", async () => {
    const connector = createConnector({ log: createLogger({ level: "silent" }), now: () => clock, allowedBaseUrls: ["*"] });
    const before = mints();
    await connector.connect("ClusterProviderConfig/x", spec, read, { secretNamespace: "ns", tenant: "ns" });
    await connector.connect("ClusterProviderConfig/y", spec, read, { secretNamespace: "ns", tenant: "ns" });
    expect(mints()).toBe(before + 2);
    bootstrap = "kw-unit-other-bootstrap";
    await connector.connect("ClusterProviderConfig/x", spec, read, { secretNamespace: "ns", tenant: "ns" });
    expect(mints()).toBe(before + 3);
    bootstrap = BOOTSTRAP;
  });

  it("a 403 for a permission (PermissionDenied) keeps the shared minted token: no new mint", async () => {
    const connector = createConnector({ log: createLogger({ level: "silent" }), now: () => clock, allowedBaseUrls: ["*"] });
    const client = await connector.connect("ProviderConfig/ns/perm", spec, read, { secretNamespace: "ns", tenant: "ns" });
    const before = mints();
    const schedule = connector.tokenSchedule("ProviderConfig/ns/perm");
    // A real PermissionDenied: deleting a project with delete protection.
    const project = await client.createProject({ projectName: `protected-${clock}`, slug: `protected-${clock}` });
    await client.updateProject(project.id, { hasDeleteProtection: true });
    await expect(client.deleteProject(project.id)).rejects.toMatchObject({ status: 403, error: "PermissionDenied" });
    const again = await connector.connect("ProviderConfig/ns/perm", spec, read, { secretNamespace: "ns", tenant: "ns" });
    expect(connector.tokenSchedule("ProviderConfig/ns/perm")).toBe(schedule);
    await again.listProjects({});
    expect(mints()).toBe(before);
  });

  it("a token the service says is bad (403 TokenError) is dropped and minted anew once; a 401 too", async () => {
    const connector = createConnector({ log: createLogger({ level: "silent" }), now: () => clock, allowedBaseUrls: ["*"] });
    const client = await connector.connect("ProviderConfig/ns/refused", spec, read, { secretNamespace: "ns", tenant: "ns" });
    // The emulator forgets every minted token (and its request log): the token is now unknown.
    await fetch(`${emulator.url}/_emulator/reset`, { method: "POST" });
    await expect(client.listProjects({})).rejects.toMatchObject({ status: 403, error: "TokenError" });
    expect(connector.tokenSchedule("ProviderConfig/ns/refused")).toBeUndefined();
    clock += 1_000; // the first setback's backoff is at most 1 s
    const fresh = await connector.connect("ProviderConfig/ns/refused", spec, read, { secretNamespace: "ns", tenant: "ns" });
    await fresh.listProjects({});
    expect(mints()).toBe(1);

    emulator.setFaults({ match: { method: "GET", pathPattern: "^/api/v1/projects$" }, errorRate: 1, errorStatus: 401 });
    try {
      await expect(fresh.listProjects({})).rejects.toMatchObject({ status: 401 });
    } finally {
      emulator.setFaults({});
    }
    expect(connector.tokenSchedule("ProviderConfig/ns/refused")).toBeUndefined();
  });

  it("a service refusing every minted token sees one mint per backoff step, not a storm", async () => {
    const connector = createConnector({ log: createLogger({ level: "silent" }), now: () => clock, allowedBaseUrls: ["*"] });
    const id = "ProviderConfig/ns/storm";
    const before = mints();
    emulator.setFaults({ match: { method: "GET", pathPattern: "^/api/v1/projects$" }, errorRate: 1, errorStatus: 401 });
    const errors: unknown[] = [];
    try {
      // 3 backoff steps (ceilings 1 s, 2 s, 4 s), 30 reconciles each at the same instant.
      for (const step of [1_000, 2_000, 4_000]) {
        for (let i = 0; i < 30; i++) {
          try {
            await (await connector.connect(id, spec, read, { secretNamespace: "ns", tenant: "ns" })).listProjects({});
          } catch (err) {
            errors.push(err);
          }
        }
        clock += step;
      }
    } finally {
      emulator.setFaults({});
    }
    expect(mints() - before).toBe(3);
    expect(errors).toHaveLength(90);
    const held = errors.filter((e) => (e as { reason?: string }).reason === "MintedTokenRefused");
    expect(held.length).toBe(87);
    expect(
      held.every(
        (e) =>
          (e as { retryable?: boolean; retryAfterMs?: number }).retryable === true &&
          ((e as { retryAfterMs?: number }).retryAfterMs ?? 0) > 0,
      ),
    ).toBe(true);
    // A success ends it: the next mint is not held back.
    const ok = await connector.connect(id, spec, read, { secretNamespace: "ns", tenant: "ns" });
    await ok.listProjects({});
    expect(mints() - before).toBe(4);
  });

  it("a mint the client-side rate limit turns away is not a failure: no backoff, the pass comes back at its turn", async () => {
    // The connector's clock stands still: a setback recorded for the throttled mint would hold
    // the next mint back for its whole backoff step, however long the test waits.
    const connector = createConnector({ log: createLogger({ level: "silent" }), now: () => clock, allowedBaseUrls: ["*"] });
    // Burst 1 at 20 per second: the first config's mint takes the only token for 50 ms.
    const tight = { ...spec, rateLimit: { requestsPerSecond: 20, burst: 1 } };
    const before = mints();
    await connector.connect("ProviderConfig/ns/tight-a", tight, read, { secretNamespace: "ns", tenant: "ns" });
    expect(mints() - before).toBe(1);
    const turnedAway = await connector
      .connect("ProviderConfig/ns/tight-b", tight, read, { secretNamespace: "ns", tenant: "ns" })
      .catch((e: unknown) => e);
    expect(isThrottled(turnedAway)).toBe(true);
    expect((turnedAway as { retryAfterMs?: number }).retryAfterMs ?? 0).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, 200));
    await connector.connect("ProviderConfig/ns/tight-b", tight, read, { secretNamespace: "ns", tenant: "ns" });
    expect(mints() - before).toBe(2);
  });

  it("a refused bootstrap token is tried once per backoff step, whatever the number of connects; a new one at once", async () => {
    const connector = createConnector({ log: createLogger({ level: "silent" }), now: () => clock, allowedBaseUrls: ["*"] });
    const id = "ProviderConfig/ns/wrong";
    bootstrap = "kw-unit-wrong-bootstrap-2";
    const before = mints();
    try {
      const concurrent = await Promise.all(
        Array.from({ length: 40 }, () =>
          connector.connect(id, spec, read, { secretNamespace: "ns", tenant: "ns" }).catch((e: unknown) => e),
        ),
      );
      expect(mints() - before).toBe(1);
      expect(concurrent.every((e) => (e as { reason?: string }).reason === "BootstrapTokenRejected")).toBe(true);
      for (let i = 0; i < 40; i++)
        await expect(connector.connect(id, spec, read, { secretNamespace: "ns", tenant: "ns" })).rejects.toMatchObject({
          reason: "BootstrapTokenRejected",
        });
      expect(mints() - before).toBe(1);
      clock += 1_000;
      for (let i = 0; i < 40; i++)
        await expect(connector.connect(id, spec, read, { secretNamespace: "ns", tenant: "ns" })).rejects.toMatchObject({
          reason: "BootstrapTokenRejected",
        });
      expect(mints() - before).toBe(2);
      const messages = concurrent.map((e) => (e as Error).message).join("\n");
      expect(messages).not.toContain("kw-unit-wrong-bootstrap-2");
    } finally {
      bootstrap = BOOTSTRAP;
    }
    // The fixed bootstrap token is another session key: minted at once.
    await connector.connect(id, spec, read, { secretNamespace: "ns", tenant: "ns" });
    expect(mints() - before).toBe(3);
  });

  it("reports a refused bootstrap token as BootstrapTokenRejected, without the token", async () => {
    const connector = createConnector({ log: createLogger({ level: "silent" }), now: () => clock, allowedBaseUrls: ["*"] });
    bootstrap = "kw-unit-wrong-bootstrap";
    const err = (await connector
      .connect("ProviderConfig/ns/b", spec, read, { secretNamespace: "ns", tenant: "ns" })
      .catch((e: unknown) => e)) as {
      reason?: string;
      message: string;
      retryable?: boolean;
    };
    bootstrap = BOOTSTRAP;
    expect(err.reason).toBe("BootstrapTokenRejected");
    expect(err.retryable).toBe(false);
    expect(err.message).toContain(IDENTITY);
    expect(err.message).not.toContain("kw-unit-wrong-bootstrap");
    expect(connector.tokenSchedule("ProviderConfig/ns/b")).toBeUndefined();
  });

  it("refuses a spec with both or neither credentials", async () => {
    const connector = createConnector({ log: createLogger({ level: "silent" }), now: () => clock, allowedBaseUrls: ["*"] });
    const both = { ...spec, credentialsSecretRef: { name: "bootstrap" } };
    await expect(connector.connect("ProviderConfig/ns/c", both, read, { secretNamespace: "ns", tenant: "ns" })).rejects.toMatchObject({
      reason: "ProviderConfigInvalid",
    });
    await expect(
      connector.connect("ProviderConfig/ns/c", { baseUrl: emulator.url }, read, { secretNamespace: "ns", tenant: "ns" }),
    ).rejects.toMatchObject({
      reason: "ProviderConfigInvalid",
    });
  });
});
