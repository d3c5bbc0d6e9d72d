// A service whose create-token numbers are hostile, against the real apiserver: expiresIn 1e308
// (the service means it: its tokens never expire) and 0.001 (the service says so, its tokens
// live two hours). tokenAuth ProviderConfigs and AccessTokens on each get Ready without a mint
// loop: mints are counted at the emulator, as a bound over the time watched (a renewal comes no
// sooner than 5 s after the issue), never as spacing. Then the configs are deleted: their
// connection pools close, and a config of the same name mints anew (nothing was kept).
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { openConnectionPools } from "../../src/api/index.ts";
import type { Emulator } from "../emulator/server.ts";
import { waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import {
  condition,
  createCustom,
  credentialsLabels,
  deleteCustom,
  getCustom,
  startKeyward,
  startTestEnv,
  waitForObject,
  type RunningKeyward,
  type TestEnv,
} from "./support/keyward.ts";

const BOOTSTRAP = `kw-bootstrap-${randomBytes(8).toString("hex")}`;
const ID = {
  hugeConfig: "a1b2c3d4-0010-4a00-8000-000000000001",
  hugeToken: "a1b2c3d4-0010-4a00-8000-000000000002",
  tinyConfig: "a1b2c3d4-0010-4a00-8000-000000000003",
  tinyToken: "a1b2c3d4-0010-4a00-8000-000000000004",
};
const YEAR_MS = 365 * 24 * 3_600_000;

let env: TestEnv | undefined;
let kc: KubeConfig;
let emulator: Emulator;
let ns: TestNamespace;
let keyward: RunningKeyward;

const mintsOf = (identity: string): number =>
  emulator.requests().filter((r) => r.operation === "createIdentityToken" && r.path.includes(identity)).length;

function providerConfig(name: string, baseUrl: string, identityId: string): object {
  return {
    apiVersion: "keyward.dev/v1alpha1",
    kind: "ProviderConfig",
    metadata: { name },
    spec: {
      baseUrl,
      tokenAuth: { identityId, bootstrapSecretRef: { name: "bootstrap" } },
      rateLimit: { requestsPerSecond: 200, burst: 200 },
    },
  };
}

function accessToken(name: string, config: string, identityId: string): object {
  return {
    apiVersion: "keyward.dev/v1alpha1",
    kind: "AccessToken",
    metadata: { name },
    spec: { providerConfigRef: { name: config }, identityId, secretName: `${name}-secret` },
  };
}

const ready = (plural: string, name: string) =>
  waitForObject(kc, ns.name, plural, name, {
    until: (o) => condition(o, "Ready")?.status === "True",
    timeoutMs: 60_000,
    description: `${plural}/${name} Ready`,
  });

/** Watches for `ms` of the test's clock: the mints of `identity` meanwhile, and how long it really was. */
async function mintsOver(identities: string[], ms: number): Promise<{ mints: number[]; elapsedMs: number }> {
  const before = identities.map(mintsOf);
  const start = performance.now();
  await new Promise((resolve) => setTimeout(resolve, ms));
  const elapsedMs = performance.now() - start;
  return { mints: identities.map((id, i) => mintsOf(id) - (before[i] ?? 0)), elapsedMs };
}

// Two names of the emulator, so each pair of objects has a connection pool of its own.
const hugeUrl = (): string => emulator.url;
const tinyUrl = (): string => emulator.url.replace("127.0.0.1", "localhost");

beforeAll(async () => {
  env = await startTestEnv({ prefix: "hostile-numbers", token: BOOTSTRAP, provider: false, keyward: false });
  ({ kc, emulator, ns } = env);
  emulator.seed({
    identities: [
      { id: ID.hugeConfig, accessTokenTTL: 1e308 },
      { id: ID.hugeToken, accessTokenTTL: 1e308 },
      { id: ID.tinyConfig, accessTokenTTL: 7200, answeredExpiresIn: 0.001 },
      { id: ID.tinyToken, accessTokenTTL: 7200, answeredExpiresIn: 0.001 },
    ],
  });
  await kc.makeApiClient(CoreV1Api).createNamespacedSecret({
    namespace: ns.name,
    body: {
      metadata: {
        name: "bootstrap",
        labels: credentialsLabels,
        // Its owner pins where the token may go: both names of the emulator.
        annotations: { "keyward.dev/allowed-base-urls": `${hugeUrl()},${tinyUrl()}` },
      },
      stringData: { token: BOOTSTRAP },
    },
  });
  // A resync every second: every object is looked at again and again, so a loop would show.
  keyward = await startKeyward(kc, { namespaces: [ns.name], resyncIntervalMs: 1_000 });
  env.onStop(() => keyward.stop());
  await createCustom(kc, ns.name, "providerconfigs", providerConfig("huge", hugeUrl(), ID.hugeConfig));
  await createCustom(kc, ns.name, "accesstokens", accessToken("huge-token", "huge", ID.hugeToken));
  await createCustom(kc, ns.name, "providerconfigs", providerConfig("tiny", tinyUrl(), ID.tinyConfig));
  await createCustom(kc, ns.name, "accesstokens", accessToken("tiny-token", "tiny", ID.tinyToken));
}, 120_000);

afterAll(() => env?.stop());

describe("create-token's numbers from a hostile service", () => {
  it("expiresIn 1e308: the ProviderConfig and the AccessToken are Ready on a ten-year token, each minted once", async () => {
    const config = await ready("providerconfigs", "huge");
    const token = await ready("accesstokens", "huge-token");
    const expires = Date.parse(String(config.status?.["tokenExpiresAt"]));
    expect(expires).toBeGreaterThan(Date.now() + 9 * YEAR_MS);
    expect(expires).toBeLessThanOrEqual(Date.now() + 10 * YEAR_MS);
    expect(Date.parse(String(token.status?.["expiresAt"]))).toBeGreaterThan(Date.now() + 9 * YEAR_MS);
    // Several resyncs later, still the one token each.
    await mintsOver([], 5_000);
    expect(mintsOf(ID.hugeConfig)).toBe(1);
    expect(mintsOf(ID.hugeToken)).toBe(1);
    expect(keyward.logs.filter((l) => l.includes("Invalid time value"))).toEqual([]);
  });

  it("expiresIn 0.001: Ready, and while watched no more mints than one per 5 s", async () => {
    await ready("providerconfigs", "tiny");
    await ready("accesstokens", "tiny-token");
    const { mints, elapsedMs } = await mintsOver([ID.tinyConfig, ID.tinyToken], 15_000);
    // A renewal comes at least 5 s after the issue (issue times are whole seconds: 4 s apart at least).
    const bound = Math.floor(elapsedMs / 4_000) + 1;
    expect(mints[0]).toBeLessThanOrEqual(bound);
    expect(mints[1]).toBeLessThanOrEqual(bound);
    expect(condition(await getCustom(kc, ns.name, "providerconfigs", "tiny"), "Ready")?.status).toBe("True");
  });

  it("a deleted config leaves no connection pool and no minted token: one of the same name mints anew", async () => {
    await ready("providerconfigs", "huge");
    await ready("providerconfigs", "tiny");
    expect(openConnectionPools()).toBe(2);
    const minted = mintsOf(ID.hugeConfig);

    await deleteCustom(kc, ns.name, "accesstokens", "huge-token");
    await deleteCustom(kc, ns.name, "providerconfigs", "huge");
    await waitFor(async () => ((await getCustom(kc, ns.name, "providerconfigs", "huge")) ? undefined : true), {
      timeoutMs: 60_000,
      description: "ProviderConfig huge gone",
    });
    await waitFor(() => Promise.resolve(openConnectionPools() === 1 ? true : undefined), {
      timeoutMs: 30_000,
      description: "the deleted config's connection pool closed",
    });

    await createCustom(kc, ns.name, "providerconfigs", providerConfig("huge", hugeUrl(), ID.hugeConfig));
    await ready("providerconfigs", "huge");
    expect(mintsOf(ID.hugeConfig)).toBe(minted + 1);
    expect(openConnectionPools()).toBe(2);

    for (const [plural, name] of [
      ["accesstokens", "tiny-token"],
      ["providerconfigs", "tiny"],
      ["providerconfigs", "huge"],
    ] as const)
      await deleteCustom(kc, ns.name, plural, name);
    await waitFor(() => Promise.resolve(openConnectionPools() === 0 ? true : undefined), {
      timeoutMs: 60_000,
      description: "every connection pool closed",
    });
  });
});
