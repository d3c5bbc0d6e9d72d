// Sharding turned off while a sharded replica still runs: the unsharded leader must not reconcile
// beside it. Sharded replicas keep a fixed-name Lease, the sharding marker, alive on each renewal;
// an unsharded leader reconciles only once that marker is gone or has stayed unchanged for its
// duration. Here the test is the sharded leader (it acknowledges the sharded replica's join), then
// lets the leader Lease go, as that pod would when stopped in a rolling change; an unsharded
// keyward process takes it while the sharded replica still holds its shard Lease.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CoordinationV1Api, V1MicroTime, type KubeConfig } from "@kubernetes/client-node";
import type { Emulator } from "../emulator/server.ts";
import { loadDefaultSeed } from "../emulator/default-seed.ts";
import { createTestNamespace, testKubeConfig, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import { createKube, type Kube } from "../../src/kube/client.ts";
import { kubeJson } from "../../src/kube/rest.ts";
import { isConflict, isKubeNotFound } from "../../src/kube/objects.ts";
import {
  condition,
  createCustom,
  getCustom,
  installProvider,
  mergePatchCustom,
  projectObject,
  startTestEnv,
  type TestEnv,
} from "./support/keyward.ts";
import { alive, startReplica, stopReplicas, type Replica } from "./support/shard-replicas.ts";

const TOKEN = "kw-shard-off-token-5d08";
const SHARD_LABEL = "shard.keyward.dev/owner";
const INCARNATION = "shard.keyward.dev/incarnation";
const JOINED = "shard.keyward.dev/joined";
const HANDSHAKE = "shard.keyward.dev/acknowledges-joins";
// The replicas' lease duration (support/shard-replicas.ts).
const LEASE_DURATION_MS = 6_000;

let env: TestEnv | undefined;
let kc: KubeConfig;
let kube: Kube;
let emulator: Emulator;
let leaseNs = "";
let work: TestNamespace;
const replicas: Replica[] = [];

interface Lease {
  metadata?: { name?: string; resourceVersion?: string; annotations?: Record<string, string> };
  spec?: { holderIdentity?: string; renewTime?: string; leaseDurationSeconds?: number };
}
const leasePath = (name: string): string => `/apis/coordination.k8s.io/v1/namespaces/${leaseNs}/leases/${name}`;
const readLease = (name: string): Promise<Lease | undefined> =>
  kubeJson<Lease>(kube.access, { path: leasePath(name) }).catch((err: unknown) =>
    isKubeNotFound(err) ? undefined : Promise.reject(err as Error),
  );

async function rewriteLease(name: string, change: (l: Lease) => Lease): Promise<void> {
  await waitFor(
    async () => {
      const lease = await readLease(name);
      if (!lease) return undefined;
      const body = { apiVersion: "coordination.k8s.io/v1", kind: "Lease", ...change(lease) };
      return kubeJson(kube.access, { method: "PUT", path: leasePath(name), body }).then(
        () => true,
        (err: unknown) => (isConflict(err) ? undefined : Promise.reject(err as Error)),
      );
    },
    { timeoutMs: 20_000, intervalMs: 50, description: `${name} written` },
  );
}

const projectReady = (name: string) =>
  waitFor(async () => (condition(await getCustom(kc, work.name, "projects", name), "Ready")?.status === "True" ? true : undefined), {
    timeoutMs: 60_000,
    description: `${name} Ready`,
  });

beforeAll(async () => {
  env = await startTestEnv({ prefix: "shard-off", token: TOKEN, emulator: { seed: loadDefaultSeed() }, provider: false, keyward: false });
  ({ kc, emulator } = env);
  kube = createKube(testKubeConfig());
  leaseNs = env.ns.name;
  await kc.makeApiClient(CoordinationV1Api).createNamespacedLease({
    namespace: leaseNs,
    body: {
      metadata: { name: "keyward-leader", annotations: { [HANDSHAKE]: "the-test" } },
      spec: { holderIdentity: "the-test", leaseDurationSeconds: 3600, renewTime: new V1MicroTime(), acquireTime: new V1MicroTime() },
    },
  });
  work = await createTestNamespace("shard-off-work");
  env.onStop(() => work.cleanup());
  await installProvider(kc, work.name, emulator.url, TOKEN);
  env.onStop(() => stopReplicas(replicas));
}, 120_000);

afterAll(() => env?.stop());

describe("sharding turned off while a sharded replica still runs", () => {
  it("keeps the unsharded leader waiting until no sharded replica can act", { timeout: 180_000 }, async () => {
    const sharded = await startReplica("kw-s", { namespaces: [work.name], leaseNamespace: leaseNs });
    replicas.push(sharded);
    await rewriteLease("keyward-leader-shard-kw-s", (l) => {
      const incarnation = l.metadata?.annotations?.[INCARNATION];
      return incarnation === undefined
        ? l
        : { ...l, metadata: { ...l.metadata, annotations: { ...l.metadata?.annotations, [JOINED]: incarnation } } };
    });
    await sharded.started;
    await mergePatchCustom(kc, work.name, "providerconfigs", "default", { metadata: { labels: { [SHARD_LABEL]: "kw-s" } } });
    const p1 = projectObject("p1", { name: "off-p1", slug: "off-p1" }) as { metadata: object };
    await createCustom(kc, work.name, "projects", { ...p1, metadata: { ...p1.metadata, labels: { [SHARD_LABEL]: "kw-s" } } });
    await projectReady("p1");

    // The sharded leader goes, and the leader Lease passes to an unsharded keyward (the test
    // hands it over: the sharded replica, a candidate too, would otherwise take it).
    const unsharded = await startReplica("kw-u", { namespaces: [work.name], leaseNamespace: leaseNs, args: ["--sharding", "false"] });
    replicas.push(unsharded);
    unsharded.started.catch(() => undefined); // awaited below; a failure before must not be an unhandled rejection
    await rewriteLease("keyward-leader", (l) => ({ ...l, spec: { ...l.spec, holderIdentity: "kw-u", leaseDurationSeconds: 6 } }));
    await waitFor(() => Promise.resolve(unsharded.logs.some((l) => l.includes('"became leader"')) ? true : undefined), {
      timeoutMs: 30_000,
      description: "the unsharded process leading",
    });
    await new Promise((resolve) => setTimeout(resolve, LEASE_DURATION_MS + 3_000));
    const startedBeside = unsharded.logs.some((l) => l.includes('"keyward started"'));
    console.info(`unsharded leader started beside a live sharded replica: ${String(startedBeside)}`);
    if (startedBeside) console.info([...sharded.logs.slice(-15), "----", ...unsharded.logs.slice(-25)].join("\n"));
    expect(startedBeside).toBe(false);
    expect(alive(sharded)).toBe(true);
    expect((await readLease("keyward-leader-shard-kw-s"))?.spec?.holderIdentity).toBe("kw-s");

    // The sharded replica stops: the unsharded leader reconciles everything, and the marker is gone.
    sharded.child.kill("SIGTERM");
    await sharded.exited;
    await unsharded.started;
    expect(await readLease("keyward-leader-sharded")).toBeUndefined();
    await createCustom(kc, work.name, "projects", projectObject("p2", { name: "off-p2", slug: "off-p2" }));
    await projectReady("p2");
  });
});
