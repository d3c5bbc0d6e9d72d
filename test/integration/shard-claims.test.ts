// Sharding: the claim on an external id ("another resource of the kind that holds the id keeps
// it; the oldest wins", ExternalIdClaimed) holds across replicas. Two namespaces the sharder puts on
// two replica processes (the test as the leader labels them), one credential (one service
// account, as a shared ClusterProviderConfig gives them): a Project in each naming the same slug,
// and a copy of the first one's manifest (its keyward.dev/external-id) in the second. The younger
// ones report ExternalIdClaimed wherever they are reconciled; the service sees one create and
// nothing from the claimed ones; deleting a claimed one (deletionPolicy Delete) deletes nothing;
// deleting the holder wakes the claimant on the other replica, which takes the project over at
// once (the resync is 10 minutes). Before, each replica saw only its own share: the second one
// adopted the project and rewrote it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CoordinationV1Api, V1MicroTime, type KubeConfig } from "@kubernetes/client-node";
import type { Emulator } from "../emulator/server.ts";
import { connectionIds, loadDefaultSeed } from "../emulator/default-seed.ts";
import { createTestNamespace, kubectlStdout, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import { SHARD_LABEL } from "../../src/shard/plan.ts";
import { ANNOTATION_EXTERNAL_ID, keyDigest, NATURAL_KEY_LABEL } from "../../src/engine/holder.ts";
import type { KubeObject } from "../../src/engine/types.ts";
import {
  condition,
  createCustom,
  deleteCustom,
  getCustom,
  installProvider,
  isReady,
  mergePatchCustom,
  startTestEnv,
  waitForObject,
  type TestEnv,
} from "./support/keyward.ts";
import { shareOwner, shares, startReplica, stopReplicas, type Replica } from "./support/shard-replicas.ts";

const TOKEN = "kw-shard-claims-9c";
const SLUG = "shop-shard-claims";
const MEMBERS = ["kw-a", "kw-b"] as const;
let env: TestEnv | undefined;
let kc: KubeConfig;
let emulator: Emulator;
/** One namespace per replica, in MEMBERS' order: the owner of each in the sharder's shares. */
const teams: TestNamespace[] = [];
const replicas: Replica[] = [];

const project = (name: string, owner: string, spec: Record<string, unknown>, annotations: Record<string, string> = {}): object => ({
  apiVersion: "keyward.dev/v1alpha1",
  kind: "Project",
  metadata: { name, labels: { [SHARD_LABEL]: owner }, annotations },
  spec: { slug: SLUG, ...spec },
});

const calls = (operation: string, since = 0): number =>
  emulator
    .requests()
    .slice(since)
    .filter((r) => r.operation === operation).length;

const writes = (since: number): string[] =>
  emulator
    .requests()
    .slice(since)
    .filter((r) => r.method !== "GET")
    .map((r) => `${r.operation} ${JSON.stringify(r.body)}`);

/** Once the object's Synced condition is there, whatever it says. */
const synced = async (namespace: string, name: string): Promise<KubeObject> =>
  waitForObject(kc, namespace, "projects", name, {
    until: (o) => condition(o, "Synced") !== undefined,
    timeoutMs: 60_000,
    description: `${namespace}/${name} reconciled`,
  });

beforeAll(async () => {
  env = await startTestEnv({
    prefix: "shard-claims",
    token: TOKEN,
    provider: false,
    keyward: false,
    emulator: { seed: loadDefaultSeed(), jobDelayMs: 50 },
  });
  ({ kc, emulator } = env);
  await kc.makeApiClient(CoordinationV1Api).createNamespacedLease({
    namespace: env.ns.name,
    body: {
      metadata: { name: "keyward-leader" },
      spec: { holderIdentity: "the-test", leaseDurationSeconds: 3600, renewTime: new V1MicroTime(), acquireTime: new V1MicroTime() },
    },
  });
  // Namespaces until the ring has given one to each replica (one namespace alone goes to its ring
  // owner; one on each replica is within the bounded shares' cap, so the sharder keeps them there).
  const byOwner = new Map<string, TestNamespace>();
  for (let i = 0; byOwner.size < MEMBERS.length; i++) {
    if (i >= 20) throw new Error("the ring put 20 namespaces on one replica");
    const ns = await createTestNamespace(`shard-claims-${String(i)}`);
    env.onStop(() => ns.cleanup());
    const owner = shareOwner(shares(MEMBERS, [ns.name]), ns.name);
    if (owner === undefined || byOwner.has(owner)) continue;
    byOwner.set(owner, ns);
    await installProvider(kc, ns.name, emulator.url, TOKEN);
    await mergePatchCustom(kc, ns.name, "providerconfigs", "default", { metadata: { labels: { [SHARD_LABEL]: owner } } });
  }
  for (const m of MEMBERS) teams.push(byOwner.get(m) as TestNamespace);
  env.onStop(() => stopReplicas(replicas));
  // The default resync of the replicas (10 minutes) is longer than these tests: every pass after
  // the first comes from an event.
  const names = teams.map((t) => t.name);
  const planned = shares(MEMBERS, names);
  for (const [owner, ns] of byOwner) {
    if (shareOwner(planned, ns.name) !== owner) throw new Error(`the sharder would move ${ns.name} off ${owner}`);
  }
  for (const id of MEMBERS) replicas.push(await startReplica(id, { namespaces: names, leaseNamespace: env.ns.name }));
  await Promise.all(replicas.map((r) => r.started));
}, 120_000);

afterAll(() => env?.stop());

describe("Projects naming one external project on two replicas", () => {
  it(
    "lets the older one hold it; the younger ones are ExternalIdClaimed, change nothing, and take over when it goes",
    { timeout: 240_000 },
    async () => {
      const [a, b] = teams;
      if (!a || !b) throw new Error("no namespaces");
      const [ownerA, ownerB] = MEMBERS;

      await createCustom(kc, a.name, "projects", project("shop", ownerA, {}));
      const held = await waitForObject(kc, a.name, "projects", "shop", {
        until: isReady,
        timeoutMs: 60_000,
        description: "A's Project Ready on kw-a",
      });
      const projectId = String(held.status?.["projectId"]);
      // A created project is named in metadata by its slug's label and the create-started mark, not
      // its id: the other replica's claim view does not show it, the adopters' fresh read does.
      expect(held.metadata.annotations?.[ANNOTATION_EXTERNAL_ID]).toBeUndefined();
      expect(held.metadata.labels?.[NATURAL_KEY_LABEL]).toBe(keyDigest(SLUG));
      // Creation timestamps have one-second resolution: team B's are clearly younger.
      await new Promise((r) => setTimeout(r, 1_100));
      const mark = emulator.requests().length;

      // B adopts by the slug, and a copy of A's manifest names the id, both with policies that would
      // rewrite and delete the project.
      const taking = { creationPolicy: "CreateOrAdopt", description: "taken over by B", deletionPolicy: "Delete" };
      await createCustom(kc, b.name, "projects", project("shop", ownerB, taking));
      await createCustom(
        kc,
        b.name,
        "projects",
        project("copy", ownerB, { ...taking, description: "copied" }, { [ANNOTATION_EXTERNAL_ID]: projectId }),
      );
      const claimed = await Promise.all(["shop", "copy"].map((name) => synced(b.name, name)));
      for (const o of claimed) {
        console.info(
          `${b.name}/${o.metadata.name}: Synced ${condition(o, "Synced")?.reason ?? ""}, Ready ${condition(o, "Ready")?.reason ?? ""}`,
        );
      }
      console.info(`service writes since B's Projects: ${JSON.stringify(writes(mark))}`);
      for (const o of claimed) {
        expect(condition(o, "Synced")?.reason, `${o.metadata.name} Synced`).toBe("ExternalIdClaimed");
        expect(condition(o, "Synced")?.message).toContain(`${a.name}/shop`);
        expect(isReady(o)).toBe(false);
        expect(o.status?.["projectId"]).toBeUndefined();
      }
      expect(calls("createProject")).toBe(1);
      expect(writes(mark)).toEqual([]);
      expect(isReady(await getCustom(kc, a.name, "projects", "shop"))).toBe(true);

      // The claimed copy goes with deletionPolicy Delete: released without a call.
      await deleteCustom(kc, b.name, "projects", "copy");
      await waitFor(async () => ((await getCustom(kc, b.name, "projects", "copy")) === undefined ? true : undefined), {
        timeoutMs: 60_000,
        description: "B's copy released",
      });
      expect(writes(mark)).toEqual([]);

      // The holder goes (deletionPolicy Retain): B's Project, on the other replica, is woken and
      // adopts the project — no resync comes within this test.
      await deleteCustom(kc, a.name, "projects", "shop");
      const taken = await waitForObject(kc, b.name, "projects", "shop", {
        until: isReady,
        timeoutMs: 90_000,
        description: "B's Project Ready after A's went",
      });
      expect(taken.status?.["projectId"]).toBe(projectId);
      expect(calls("createProject")).toBe(1);
      expect(calls("deleteProject")).toBe(0);
      expect(writes(mark).map((w) => w.split(" ")[0])).toEqual(["updateProject"]);
    },
  );

  it(
    "finds a holder on the other replica by its status when its project was renamed at the service, which its slug no longer names",
    { timeout: 180_000 },
    async () => {
      const [a, b] = teams;
      if (!a || !b) throw new Error("no namespaces");
      const [ownerA, ownerB] = MEMBERS;
      const created = "renamed-shard-claims";
      const renamed = "renamed-shard-claims-b";
      await createCustom(kc, a.name, "projects", project("renamed", ownerA, { slug: created }));
      const held = await waitForObject(kc, a.name, "projects", "renamed", {
        until: isReady,
        timeoutMs: 60_000,
        description: "A's Project Ready on kw-a",
      });
      const projectId = String(held.status?.["projectId"]);
      expect(held.metadata.annotations?.[ANNOTATION_EXTERNAL_ID]).toBeUndefined();
      // Renamed at the service by hand: A's slug label names the old slug, its metadata no id, and A
      // is not woken (its resync is 10 minutes).
      const res = await fetch(`${emulator.url}/api/v1/projects/${projectId}`, {
        method: "PATCH",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ slug: renamed }),
      });
      expect(res.status).toBe(200);
      // What the API reference tells a user to run to find the resource that records an id.
      const listed = await kubectlStdout([
        "get",
        "projects.v1alpha1.keyward.dev",
        "-A",
        "--field-selector",
        `status.projectId=${projectId}`,
        "-o",
        'jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}{"\\n"}{end}',
      ]);
      expect(listed.trim().split("\n")).toEqual([`${a.name}/renamed`]);
      await new Promise((r) => setTimeout(r, 1_100));
      const mark = emulator.requests().length;

      // B, on the other replica, adopts the new slug: it finds A by A's status, after the lock.
      await createCustom(
        kc,
        b.name,
        "projects",
        project("renamed", ownerB, { slug: renamed, creationPolicy: "Adopt", description: "taken" }),
      );
      const claimed = await synced(b.name, "renamed");
      console.info(`B's Project: Synced ${condition(claimed, "Synced")?.reason ?? ""}; service writes: ${JSON.stringify(writes(mark))}`);
      expect(condition(claimed, "Synced")?.reason).toBe("ExternalIdClaimed");
      expect(condition(claimed, "Synced")?.message).toContain(`${a.name}/renamed`);
      expect(claimed.status?.["projectId"]).toBeUndefined();
      expect(writes(mark)).toEqual([]);
      await deleteCustom(kc, b.name, "projects", "renamed");
      await waitFor(async () => ((await getCustom(kc, b.name, "projects", "renamed")) === undefined ? true : undefined), {
        timeoutMs: 60_000,
        description: "B's Project released",
      });
      expect(writes(mark)).toEqual([]);
    },
  );

  it(
    "lets a SecretSync on one replica keep its sync; one naming it by spec.syncId on the other changes and removes nothing",
    { timeout: 180_000 },
    async () => {
      const [a, b] = teams;
      if (!a || !b) throw new Error("no namespaces");
      const [ownerA, ownerB] = MEMBERS;
      await createCustom(kc, a.name, "projects", project("vault", ownerA, { slug: "vault-shard-claims" }));
      await waitForObject(kc, a.name, "projects", "vault", { until: isReady, timeoutMs: 60_000, description: "A's vault Project Ready" });
      const sync = (owner: string, spec: Record<string, unknown>): object => ({
        apiVersion: "keyward.dev/v1alpha1",
        kind: "SecretSync",
        metadata: { name: "orders", labels: { [SHARD_LABEL]: owner } },
        spec: {
          destination: "data-platform",
          connectionId: connectionIds["data-platform"],
          environment: "prod",
          secretPath: "/",
          destinationConfig: { scope: "workspace" },
          ...spec,
        },
      });
      await createCustom(kc, a.name, "secretsyncs", sync(ownerA, { projectRef: { name: "vault" } }));
      const held = await waitForObject(kc, a.name, "secretsyncs", "orders", {
        until: isReady,
        timeoutMs: 60_000,
        description: "A's SecretSync Ready",
      });
      const syncId = String(held.status?.["syncId"]);
      const projectId = String((await getCustom(kc, a.name, "projects", "vault"))?.status?.["projectId"]);
      await new Promise((r) => setTimeout(r, 1_100));
      const mark = emulator.requests().length;

      await createCustom(
        kc,
        b.name,
        "secretsyncs",
        sync(ownerB, { projectId, syncId, description: "taken over by B", deletionPolicy: "RemoveSecrets" }),
      );
      const claimed = await waitForObject(kc, b.name, "secretsyncs", "orders", {
        until: (o) => condition(o, "Synced") !== undefined,
        timeoutMs: 60_000,
        description: "B's SecretSync reconciled",
      });
      console.info(`B's SecretSync: Synced ${condition(claimed, "Synced")?.reason ?? ""}; service writes: ${JSON.stringify(writes(mark))}`);
      expect(condition(claimed, "Synced")?.reason).toBe("ExternalIdClaimed");
      expect(condition(claimed, "Synced")?.message).toContain(`${a.name}/orders`);
      expect(claimed.status?.["syncId"]).toBeUndefined();
      await deleteCustom(kc, b.name, "secretsyncs", "orders");
      await waitFor(async () => ((await getCustom(kc, b.name, "secretsyncs", "orders")) === undefined ? true : undefined), {
        timeoutMs: 60_000,
        description: "B's SecretSync released",
      });
      expect(writes(mark)).toEqual([]);
      expect(isReady(await getCustom(kc, a.name, "secretsyncs", "orders"))).toBe(true);
    },
  );
});
