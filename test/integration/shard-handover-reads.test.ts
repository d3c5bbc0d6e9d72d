// Sharding: a replica that let an object go never acts on it again, whatever path its read takes.
// Three keyward processes; tokenAuth ProviderConfigs in 8 namespaces (an identity each, so the
// service's log tells whose token was minted); a third replica joins and takes some namespaces
// from the first two by way of the drain label. The old owner used to go on reconciling the
// ProviderConfigs it released (the DELETED event of its label-selected watch, or a renewal timer,
// queued the key; the cache missed; the read confirmed the object at the apiserver) and minted
// their tokens beside the new owner: twice as often as an unmoved one. Counts, not timing: over
// one window, a moved ProviderConfig is minted for no more often than an unmoved one.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import type { Emulator } from "../emulator/server.ts";
import { createTestNamespace, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import { DRAIN_LABEL, SHARD_LABEL } from "../../src/shard/plan.ts";
import { GROUP, VERSION, type KubeObject } from "../../src/engine/types.ts";
import { condition, createCustom, credentialsLabels, startTestEnv, type TestEnv } from "./support/keyward.ts";
import { joiningIdentity, shareOwner, shares, startReplica, stopReplicas, type Replica } from "./support/shard-replicas.ts";

const TOKEN = "kw-handover-bootstrap-7c21";
const NAMESPACES = 8;
// Renewed 5 s after each issue (a third of 6 s is 2 s, but a renewal comes no sooner than 5 s).
const TTL_SECONDS = 6;
const WINDOW_MS = 30_000;
let env: TestEnv | undefined;
let kc: KubeConfig;
let emulator: Emulator;
const namespaces: TestNamespace[] = [];
const replicas: Replica[] = [];
const identityOf = (i: number): string => `a1b2c3d4-0028-4a00-8000-${String(i).padStart(12, "0")}`;

async function providerConfigs(): Promise<KubeObject[]> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const lists = await Promise.all(
    namespaces.map(
      async (n) =>
        (await custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: n.name, plural: "providerconfigs" })) as {
          items: KubeObject[];
        },
    ),
  );
  return lists.flatMap((l) => l.items);
}

/** create-token calls per identity (= per namespace's ProviderConfig) so far. */
function mints(): number[] {
  const all = emulator.requests().filter((r) => r.operation === "createIdentityToken" && r.status === 200);
  return namespaces.map((_, i) => all.filter((r) => r.path.includes(identityOf(i))).length);
}

beforeAll(async () => {
  env = await startTestEnv({ prefix: "shard-reads", token: TOKEN, provider: false, keyward: false });
  ({ kc, emulator } = env);
  emulator.seed({
    identities: Array.from({ length: NAMESPACES }, (_, i) => ({ id: identityOf(i), accessTokenTTL: TTL_SECONDS, accessTokenMaxTTL: 60 })),
  });
  for (let i = 0; i < NAMESPACES; i++) {
    const ns = await createTestNamespace(`shard-reads-${String(i)}`);
    namespaces.push(ns);
    env.onStop(() => ns.cleanup());
    await kc.makeApiClient(CoreV1Api).createNamespacedSecret({
      namespace: ns.name,
      body: { metadata: { name: "bootstrap", labels: credentialsLabels }, stringData: { token: TOKEN } },
    });
    await createCustom(kc, ns.name, "providerconfigs", {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: "ProviderConfig",
      metadata: { name: "default" },
      spec: {
        baseUrl: emulator.url,
        tokenAuth: { identityId: identityOf(i), bootstrapSecretRef: { name: "bootstrap" } },
        rateLimit: { requestsPerSecond: 200, burst: 200 },
        timeoutSeconds: 5,
      },
    });
  }
  env.onStop(() => stopReplicas(replicas));
}, 120_000);

afterAll(() => env?.stop());

describe("a released ProviderConfig", () => {
  it(
    "is no longer reconciled by its old owner: a moved one is minted for no more often than an unmoved one",
    { timeout: 300_000 },
    async () => {
      const names = namespaces.map((n) => n.name);
      const first = ["kw-a", "kw-c"];
      const joiner = joiningIdentity("kw-d", first, names, 2, 2);
      for (const id of first) replicas.push(await startReplica(id, { namespaces: names, leaseNamespace: env?.ns.name ?? "" }));
      await Promise.all(replicas.map((r) => r.started));
      await waitFor(
        async () => {
          const pcs = await providerConfigs();
          return pcs.length === NAMESPACES && pcs.every((p) => condition(p, "Ready")?.status === "True") ? true : undefined;
        },
        { timeoutMs: 90_000, intervalMs: 500, description: "every ProviderConfig Ready on two replicas" },
      );

      replicas.push(await startReplica(joiner, { namespaces: names, leaseNamespace: env?.ns.name ?? "" }));
      const owners = shares([...first, joiner], names);
      await waitFor(
        async () => {
          const pcs = await providerConfigs();
          return pcs.every(
            (p) => p.metadata.labels?.[SHARD_LABEL] === shareOwner(owners, p.metadata.namespace ?? "") && !p.metadata.labels?.[DRAIN_LABEL],
          )
            ? true
            : undefined;
        },
        { timeoutMs: 90_000, intervalMs: 250, description: "every ProviderConfig on its owner of three" },
      );
      const moved = names.map((n) => shareOwner(owners, n) === joiner);
      expect(moved.filter(Boolean).length).toBeGreaterThanOrEqual(2);
      // The new owner's first mint has happened; then one window, the same for every ProviderConfig.
      await waitFor(async () => ((await providerConfigs()).every((p) => condition(p, "Ready")?.status === "True") ? true : undefined), {
        timeoutMs: 30_000,
        description: "every ProviderConfig Ready on three replicas",
      });
      await new Promise((resolve) => setTimeout(resolve, 6_000));
      const before = mints();
      await new Promise((resolve) => setTimeout(resolve, WINDOW_MS));
      const inWindow = mints().map((n, i) => n - (before[i] ?? 0));
      const movedCounts = inWindow.filter((_, i) => moved[i]);
      const unmovedCounts = inWindow.filter((_, i) => !moved[i]);
      console.info(
        `create-token calls in ${String(WINDOW_MS / 1000)} s: moved ${movedCounts.join(",")}; unmoved ${unmovedCounts.join(",")}`,
      );
      // Each ProviderConfig is renewed by one replica, about every 5 s: 5 or 6 mints in the window
      // whichever it is (one of slack for where the window cuts each one's period). A moved one
      // renewed by its old owner too is minted for about twice as often.
      expect(Math.min(...unmovedCounts)).toBeGreaterThan(0);
      expect(
        Math.max(...movedCounts),
        `mints in the window: moved ${movedCounts.join(",")}, unmoved ${unmovedCounts.join(",")}`,
      ).toBeLessThanOrEqual(Math.max(...unmovedCounts) + 1);
    },
  );
});
