// The connector against a service whose create-token numbers are hostile (1e308, 0.001, -1 s),
// and what a deleted config leaves behind: the emulator over loopback HTTP, a clock the test
// moves, mints counted at the service.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openConnectionPools } from "../../../../src/api/index.ts";
import { createLogger } from "../../../../src/log.ts";
import { CREDENTIALS_LABEL } from "../../../../src/resources/provider/credentials.ts";
import { createConnector, type ConnectionSpec } from "../../../../src/resources/provider/connector.ts";
import type { KubeObject } from "../../../../src/engine/types.ts";
import { startEmulator, type Emulator } from "../../../emulator/server.ts";

const BOOTSTRAP = "kw-unit-numbers-bootstrap";
/** Each identity's tokens live two hours; create-token says otherwise. */
const IDENTITIES = {
  huge: "a1b2c3d4-0009-4a00-8000-000000000001",
  tiny: "a1b2c3d4-0009-4a00-8000-000000000002",
  negative: "a1b2c3d4-0009-4a00-8000-000000000003",
  honest: "a1b2c3d4-0009-4a00-8000-000000000004",
};
const YEAR_MS = 365 * 24 * 3_600_000;

describe("the connector and the numbers of create-token", () => {
  let emulator: Emulator;
  let clock = Date.UTC(2030, 0, 1);
  // Its owner pins where the token may go (keyward.dev/allowed-base-urls): both names of the emulator.
  const secret = (): KubeObject =>
    ({
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name: "bootstrap",
        namespace: "ns",
        labels: { [CREDENTIALS_LABEL]: "true" },
        annotations: { "keyward.dev/allowed-base-urls": `${emulator.url},${emulator.url.replace("127.0.0.1", "localhost")}` },
      },
      data: { token: Buffer.from(BOOTSTRAP).toString("base64") },
    }) as unknown as KubeObject;
  const read = (): Promise<KubeObject | undefined> => Promise.resolve(secret());
  const mintsOf = (identity: string): number =>
    emulator.requests().filter((r) => r.operation === "createIdentityToken" && r.path.includes(identity)).length;
  const specFor = (identity: string, baseUrl = emulator.url): ConnectionSpec => ({
    baseUrl,
    tokenAuth: { identityId: identity, bootstrapSecretRef: { name: "bootstrap" } },
    rateLimit: { requestsPerSecond: 10_000, burst: 10_000 },
  });
  const newConnector = () => createConnector({ log: createLogger({ level: "silent" }), now: () => clock });

  beforeAll(async () => {
    emulator = await startEmulator({
      tokens: [BOOTSTRAP],
      seed: {
        identities: [
          { id: IDENTITIES.huge, accessTokenTTL: 7200, answeredExpiresIn: 1e308 },
          { id: IDENTITIES.tiny, accessTokenTTL: 7200, answeredExpiresIn: 0.001 },
          { id: IDENTITIES.negative, accessTokenTTL: 7200, answeredExpiresIn: -1 },
          { id: IDENTITIES.honest, accessTokenTTL: 7200 },
        ],
      },
    });
  });
  afterAll(() => emulator.close());

  it("expiresIn 1e308: the token is taken to live ten years, its times are real dates, and it is minted once", async () => {
    const connector = newConnector();
    for (let i = 0; i < 20; i++) {
      const client = await connector.connect("ProviderConfig/ns/huge", specFor(IDENTITIES.huge), read, {
        secretNamespace: "ns",
        tenant: "ns",
      });
      await client.listProjects({});
      clock += 60_000;
    }
    expect(mintsOf(IDENTITIES.huge)).toBe(1);
    const schedule = connector.tokenSchedule("ProviderConfig/ns/huge");
    expect(schedule?.expiresAt?.getTime()).toBe((schedule?.issuedAt.getTime() ?? NaN) + 10 * YEAR_MS);
    expect(Number.isFinite(schedule?.renewAt?.getTime())).toBe(true);
    expect(() => schedule?.renewAt?.toISOString()).not.toThrow();
  });

  it("expiresIn 0.001: one second after another for five minutes of the clock, at most one mint per 5 s", async () => {
    const connector = newConnector();
    const start = clock;
    for (let i = 0; i < 300; i++) {
      const client = await connector.connect("ProviderConfig/ns/tiny", specFor(IDENTITIES.tiny), read, {
        secretNamespace: "ns",
        tenant: "ns",
      });
      await client.listProjects({});
      clock += 1_000;
    }
    // Today's code minted at every connect (300); the floor lets through one per 5 s of the clock.
    expect(mintsOf(IDENTITIES.tiny)).toBeLessThanOrEqual((clock - start) / 5_000 + 1);
    expect(mintsOf(IDENTITIES.tiny)).toBeGreaterThanOrEqual(2);
  });

  it("a negative expiresIn is an invalid answer with its own reason, tried again only after the backoff", async () => {
    const connector = newConnector();
    const errors: unknown[] = [];
    for (let i = 0; i < 30; i++) {
      try {
        await connector.connect("ProviderConfig/ns/negative", specFor(IDENTITIES.negative), read, { secretNamespace: "ns", tenant: "ns" });
      } catch (err) {
        errors.push(err);
      }
    }
    expect(errors).toHaveLength(30);
    expect(errors.every((e) => (e as { reason?: string }).reason === "InvalidTokenLifetime")).toBe(true);
    expect((errors[0] as Error).message).toContain("expiresIn -1");
    expect((errors[0] as Error).message).not.toContain("kwe.");
    expect(mintsOf(IDENTITIES.negative)).toBe(1);
    expect(connector.tokenSchedule("ProviderConfig/ns/negative")).toBeUndefined();
  });

  it("forget drops a deleted config's clients, minted token, setbacks and connection pool; the next connect mints anew", async () => {
    const connector = newConnector();
    // A base URL of its own (localhost rather than 127.0.0.1), so its pool is this test's alone.
    const own = emulator.url.replace("127.0.0.1", "localhost");
    const pools = openConnectionPools();
    const client = await connector.connect("ProviderConfig/ns/gone", specFor(IDENTITIES.honest, own), read, {
      secretNamespace: "ns",
      tenant: "ns",
    });
    await client.listProjects({});
    await expect(
      connector.connect("ProviderConfig/ns/bad", specFor(IDENTITIES.negative, own), read, { secretNamespace: "ns", tenant: "ns" }),
    ).rejects.toThrow();
    expect(connector.held()).toEqual({ clients: 3, sessions: 1, setbacks: 1 });
    expect(openConnectionPools()).toBe(pools + 1);
    const minted = mintsOf(IDENTITIES.honest);

    connector.forget("ProviderConfig/ns/gone");
    connector.forget("ProviderConfig/ns/bad");
    expect(connector.held()).toEqual({ clients: 0, sessions: 0, setbacks: 0 });
    expect(connector.tokenSchedule("ProviderConfig/ns/gone")).toBeUndefined();
    expect(openConnectionPools()).toBe(pools);

    // A config of the same name later is a new one: its own mint, its own pool.
    const again = await connector.connect("ProviderConfig/ns/gone", specFor(IDENTITIES.honest, own), read, {
      secretNamespace: "ns",
      tenant: "ns",
    });
    await again.listProjects({});
    expect(mintsOf(IDENTITIES.honest)).toBe(minted + 1);
    connector.forget("ProviderConfig/ns/gone");
    expect(openConnectionPools()).toBe(pools);
  });

  it("a config forgotten while its mint is under way keeps nothing of that mint", async () => {
    const connector = newConnector();
    emulator.setFaults({ match: { method: "POST", pathPattern: "/tokens$" }, latencyMs: 200 });
    try {
      const pending = connector.connect("ProviderConfig/ns/midway", specFor(IDENTITIES.honest), read, {
        secretNamespace: "ns",
        tenant: "ns",
      });
      await new Promise((resolve) => setTimeout(resolve, 50));
      connector.forget("ProviderConfig/ns/midway");
      await pending.catch(() => undefined);
    } finally {
      emulator.setFaults({});
    }
    expect(connector.tokenSchedule("ProviderConfig/ns/midway")).toBeUndefined();
    expect(connector.held()).toEqual({ clients: 0, sessions: 0, setbacks: 0 });
  });
});
