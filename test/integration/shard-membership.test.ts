// Sharding: the "oldest membership of a subject manages it" rule holds across replicas. Two
// namespaces on two replica processes (the test as the leader assigns them), a ProjectMembership
// for one user of one project in each: the younger one reports SubjectClaimed wherever it is
// reconciled, the service sees only the older one's roles, and deleting the claimed one (Revoke)
// revokes nothing. Before, each replica saw only the memberships of its own share: both managed
// the user, rewrote each other's roles on every resync, and the claimed one's deletion revoked
// what the other managed.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CoordinationV1Api, V1MicroTime, type KubeConfig } from "@kubernetes/client-node";
import type { Emulator } from "../emulator/server.ts";
import { createTestNamespace, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import { SHARD_LABEL } from "../../src/shard/plan.ts";
import {
  condition,
  createCustom,
  deleteCustom,
  getCustom,
  installProvider,
  mergePatchCustom,
  startTestEnv,
  type TestEnv,
} from "./support/keyward.ts";
import { startReplica, stopReplicas, type Replica } from "./support/shard-replicas.ts";

const TOKEN = "kw-shard-membership-5d";
const PROJECT_ID = "c1000000-0000-4000-8000-000000000028";
let env: TestEnv | undefined;
let kc: KubeConfig;
let emulator: Emulator;
const teams: TestNamespace[] = [];
const replicas: Replica[] = [];

const membership = (role: string, owner: string): object => ({
  apiVersion: "keyward.dev/v1alpha1",
  kind: "ProjectMembership",
  metadata: { name: "bob", labels: { [SHARD_LABEL]: owner } },
  spec: { projectId: PROJECT_ID, username: "bob@example.com", roles: [{ role }], deletionPolicy: "Revoke" },
});

const roleUpdates = (): string[] =>
  emulator
    .requests()
    .filter((r) => r.operation === "updateMembership")
    .map((r) => (r.body as { roles: Array<{ role: string }> }).roles[0]?.role ?? "");

beforeAll(async () => {
  env = await startTestEnv({
    prefix: "shard-members",
    token: TOKEN,
    provider: false,
    keyward: false,
    emulator: {
      seed: {
        users: [{ username: "bob@example.com" }],
        projects: [{ id: PROJECT_ID, name: "Shared", slug: "shared-sharded" }],
        memberships: [{ projectId: PROJECT_ID, username: "bob@example.com", roles: [{ role: "viewer" }] }],
      },
    },
  });
  ({ kc, emulator } = env);
  await kc.makeApiClient(CoordinationV1Api).createNamespacedLease({
    namespace: env.ns.name,
    body: {
      metadata: { name: "keyward-leader" },
      spec: { holderIdentity: "the-test", leaseDurationSeconds: 3600, renewTime: new V1MicroTime(), acquireTime: new V1MicroTime() },
    },
  });
  for (const [i, owner] of ["kw-a", "kw-b"].entries()) {
    const ns = await createTestNamespace(`shard-members-${String(i)}`);
    teams.push(ns);
    env.onStop(() => ns.cleanup());
    await installProvider(kc, ns.name, emulator.url, TOKEN);
    await mergePatchCustom(kc, ns.name, "providerconfigs", "default", { metadata: { labels: { [SHARD_LABEL]: owner } } });
  }
  env.onStop(() => stopReplicas(replicas));
}, 120_000);

afterAll(() => env?.stop());

describe("ProjectMemberships of one subject on two replicas", () => {
  it("lets the older one manage the subject; the younger one waits and its deletion revokes nothing", { timeout: 180_000 }, async () => {
    const [a, b] = teams;
    if (!a || !b) throw new Error("no namespaces");
    const names = teams.map((t) => t.name);
    for (const id of ["kw-a", "kw-b"])
      replicas.push(await startReplica(id, { namespaces: names, leaseNamespace: env?.ns.name ?? "", args: ["--resync-interval", "2s"] }));
    await Promise.all(replicas.map((r) => r.started));

    await createCustom(kc, a.name, "projectmemberships", membership("admin", "kw-a"));
    await waitFor(
      async () => (condition(await getCustom(kc, a.name, "projectmemberships", "bob"), "Ready")?.status === "True" ? true : undefined),
      {
        timeoutMs: 60_000,
        description: "team A's membership Ready on kw-a",
      },
    );
    // Creation timestamps have one-second resolution: team B's is clearly younger.
    await new Promise((r) => setTimeout(r, 1_100));
    await createCustom(kc, b.name, "projectmemberships", membership("member", "kw-b"));
    // Several resyncs of both (2 s): the claimed one is told so, and only A's roles are ever sent.
    await new Promise((r) => setTimeout(r, 10_000));
    const reasons = await Promise.all(
      teams.map(async (t) => condition(await getCustom(kc, t.name, "projectmemberships", "bob"), "Ready")?.reason),
    );
    console.info(`Ready reasons: ${reasons.join(", ")}; role updates: ${roleUpdates().join(",")}`);
    expect(reasons).toEqual(["Available", "SubjectClaimed"]);
    expect(roleUpdates()).toEqual(["admin"]);

    // The claimed one goes with deletionPolicy Revoke: nothing is revoked, A's roles stay.
    await deleteCustom(kc, b.name, "projectmemberships", "bob");
    await waitFor(async () => ((await getCustom(kc, b.name, "projectmemberships", "bob")) === undefined ? true : undefined), {
      timeoutMs: 30_000,
      description: "team B's membership gone",
    });
    await new Promise((r) => setTimeout(r, 4_000));
    expect(roleUpdates()).toEqual(["admin"]);
    expect(condition(await getCustom(kc, a.name, "projectmemberships", "bob"), "Ready")?.status).toBe("True");
  });
});
