// Sharding: a replica restarted under the same name reconciles only after the leader acknowledged
// its new incarnation (the join handshake), never after a timer. The test is the leader (it holds
// the leader Lease, marked as acknowledging joins): it takes the killed replica's Lease over, as a
// leader that judged it dead would, and its pass moving that replica's objects away "stalls" —
// here, for longer than a lease duration and a retry period, the wait a timer gave. The restarted
// replica must send nothing to the service until the stalled pass has landed and the leader
// acknowledged it; then it reconciles its share.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CoordinationV1Api, V1MicroTime, type KubeConfig } from "@kubernetes/client-node";
import type { Emulator } from "../emulator/server.ts";
import { loadDefaultSeed } from "../emulator/default-seed.ts";
import { createTestNamespace, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import { createKube, type Kube } from "../../src/kube/client.ts";
import { kubeJson } from "../../src/kube/rest.ts";
import { isConflict } from "../../src/kube/objects.ts";
import { testKubeConfig } from "../controlplane/testenv.ts";
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
import { startReplica, stopReplicas, type Replica } from "./support/shard-replicas.ts";

const TOKEN = "kw-rejoin-token-71c2";
const SHARD_LABEL = "shard.keyward.dev/owner";
// Spelled out (not imported) so this test also runs, and fails, on a keyward without the handshake.
const INCARNATION = "shard.keyward.dev/incarnation";
const JOINED = "shard.keyward.dev/joined";
const HANDSHAKE = "shard.keyward.dev/acknowledges-joins";
// The replicas' lease duration and retry period (support/shard-replicas.ts): the old timer's wait.
const TIMER_WAIT_MS = 6_000 + 1_000;

let env: TestEnv | undefined;
let kc: KubeConfig;
let kube: Kube;
let emulator: Emulator;
let leaseNs = "";
const work: TestNamespace[] = [];
const replicas: Replica[] = [];

const label = (owner: string) => ({ metadata: { labels: { [SHARD_LABEL]: owner } } });
const labelledProject = (name: string, owner: string): object => {
  const p = projectObject(name, { name: `rejoin-${name}`, slug: `rejoin-${name}` }) as { metadata: object };
  return { ...p, metadata: { ...p.metadata, labels: { [SHARD_LABEL]: owner } } };
};
interface Lease {
  metadata?: { name?: string; resourceVersion?: string; annotations?: Record<string, string> };
  spec?: { holderIdentity?: string; renewTime?: string; leaseDurationSeconds?: number };
}
const leasePath = (identity: string): string =>
  `/apis/coordination.k8s.io/v1/namespaces/${leaseNs}/leases/keyward-leader-shard-${identity}`;
const readLease = (identity: string): Promise<Lease> => kubeJson<Lease>(kube.access, { path: leasePath(identity) });

/** Writes the Lease as `change` makes it, on the version read (again after a 409: the holder renews every second). */
async function rewriteLease(identity: string, change: (l: Lease) => Lease): Promise<Lease> {
  return waitFor(
    async () => {
      const lease = await readLease(identity).catch(() => undefined);
      if (!lease) return undefined;
      const body = { apiVersion: "coordination.k8s.io/v1", kind: "Lease", ...change(lease) };
      return kubeJson(kube.access, { method: "PUT", path: leasePath(identity), body }).then(
        () => lease,
        (err: unknown) => (isConflict(err) ? undefined : Promise.reject(err as Error)),
      );
    },
    { timeoutMs: 20_000, intervalMs: 50, description: `the Lease of ${identity} written` },
  );
}

/** The leader's acknowledgement of the incarnation the replica's Lease carries. */
const acknowledge = (identity: string): Promise<Lease> =>
  rewriteLease(identity, (l) => {
    const incarnation = l.metadata?.annotations?.[INCARNATION];
    return incarnation === undefined
      ? l
      : { ...l, metadata: { ...l.metadata, annotations: { ...l.metadata?.annotations, [JOINED]: incarnation } } };
  });

const projectReady = (ns: string, name: string) =>
  waitFor(async () => (condition(await getCustom(kc, ns, "projects", name), "Ready")?.status === "True" ? true : undefined), {
    timeoutMs: 60_000,
    description: `${ns}/${name} Ready`,
  });

beforeAll(async () => {
  env = await startTestEnv({
    prefix: "shard-rejoin",
    token: TOKEN,
    emulator: { seed: loadDefaultSeed() },
    provider: false,
    keyward: false,
  });
  ({ kc, emulator } = env);
  kube = createKube(testKubeConfig());
  leaseNs = env.ns.name;
  // The test is the leader, and one that acknowledges joins: no replica runs a sharder.
  await kc.makeApiClient(CoordinationV1Api).createNamespacedLease({
    namespace: leaseNs,
    body: {
      metadata: { name: "keyward-leader", annotations: { [HANDSHAKE]: "the-test" } },
      spec: { holderIdentity: "the-test", leaseDurationSeconds: 3600, renewTime: new V1MicroTime(), acquireTime: new V1MicroTime() },
    },
  });
  for (const prefix of ["shard-rejoin-a", "shard-rejoin-b"]) {
    const ns = await createTestNamespace(prefix);
    env.onStop(() => ns.cleanup());
    await installProvider(kc, ns.name, emulator.url, TOKEN);
    work.push(ns);
  }
  env.onStop(() => stopReplicas(replicas));
}, 120_000);

afterAll(() => env?.stop());

describe("a replica restarted under the same name", () => {
  it(
    "sends nothing until the leader acknowledged its new incarnation, however long a pass moving its objects stalls",
    { timeout: 180_000 },
    async () => {
      const [first, second] = work.map((w) => w.name) as [string, string];
      const start = (id: string) => startReplica(id, { namespaces: [first, second], leaseNamespace: leaseNs });
      replicas.push(await start("kw-a"), await start("kw-b"));
      await Promise.all(["kw-a", "kw-b"].map((id) => acknowledge(id)));
      await Promise.all(replicas.map((r) => r.started));
      await mergePatchCustom(kc, first, "providerconfigs", "default", label("kw-a"));
      await createCustom(kc, first, "projects", labelledProject("p1", "kw-a"));
      await projectReady(first, "p1");

      // A dies; the leader judges it dead and takes its Lease over; its pass moving A's objects stalls.
      const a = replicas[0];
      a?.child.kill("SIGKILL");
      await a?.exited;
      await rewriteLease("kw-a", (l) => ({ ...l, spec: { ...l.spec, holderIdentity: "" } }));

      // A comes back under its name while that pass still has not landed.
      const restarted = await start("kw-a");
      replicas.push(restarted);
      await waitFor(async () => ((await readLease("kw-a")).spec?.holderIdentity === "kw-a" ? true : undefined), {
        timeoutMs: 30_000,
        description: "kw-a holding its Lease again",
      });
      const mark = emulator.requests().length;
      await new Promise((resolve) => setTimeout(resolve, TIMER_WAIT_MS + 3_000));
      const sent = emulator.requests().slice(mark);
      const startedEarly = restarted.logs.some((l) => l.includes('"keyward started"'));
      console.info(
        `before the acknowledgement: restarted replica started=${String(startedEarly)}, service requests=${String(sent.length)}`,
      );
      expect(startedEarly).toBe(false);
      expect(sent.map((r) => `${r.method} ${r.path}`)).toEqual([]);

      // The stalled pass lands (A's objects are B's now), then the leader acknowledges A's incarnation.
      await mergePatchCustom(kc, first, "providerconfigs", "default", label("kw-b"));
      await mergePatchCustom(kc, first, "projects", "p1", label("kw-b"));
      const acked = await acknowledge("kw-a");
      expect(acked.metadata?.annotations?.[INCARNATION]).toBeDefined();
      await restarted.started;

      // A reconciles its share from then on; the moved Project stays B's, and Ready.
      await mergePatchCustom(kc, second, "providerconfigs", "default", label("kw-a"));
      await createCustom(kc, second, "projects", labelledProject("p2", "kw-a"));
      await projectReady(second, "p2");
      const p1 = await getCustom(kc, first, "projects", "p1");
      expect(p1?.metadata.labels?.[SHARD_LABEL]).toBe("kw-b");
      expect(condition(p1, "Ready")?.status).toBe("True");
    },
  );
});
