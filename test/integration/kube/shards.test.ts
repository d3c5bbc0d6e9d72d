// Shard membership on real Leases (src/shard/leases.ts): replicas join by taking their own Lease,
// leave by releasing it, and drop out when they stop renewing.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKube, type Kube } from "../../../src/kube/client.ts";
import type { LeaderElection } from "../../../src/kube/lease.ts";
import { createShardObserver, shardLeasePrefix, type ShardLease } from "../../../src/shard/leases.ts";
import { createLogger } from "../../../src/log.ts";
import { kubeJson } from "../../../src/kube/rest.ts";
import { createTestNamespace, testKubeConfig, waitFor, type TestNamespace } from "../../controlplane/testenv.ts";
import { shardLeaseHarness, type ShardLeaseHarness } from "../support/shard-leases.ts";

let kube: Kube;
let ns!: TestNamespace;
const logger = createLogger({ level: "silent" });
let leases!: ShardLeaseHarness;
const replica = (identity: string, events: string[]): LeaderElection => leases.replica(identity, events);

beforeAll(async () => {
  kube = createKube(testKubeConfig());
  ns = await createTestNamespace("kube-shards");
  leases = shardLeaseHarness(kube, ns.name, logger, { leaseDurationMs: 4000, renewDeadlineMs: 3000, retryPeriodMs: 250 });
});

afterAll(async () => {
  await leases?.stopAll();
  await ns?.cleanup();
});

// As the sharder does (src/shard/sharder.ts): one list, judged by one observer over time.
const observer = createShardObserver(shardLeasePrefix("keyward"));
async function listLiveShards(namespace: string): Promise<string[]> {
  const list = await kubeJson<{ items?: ShardLease[] }>(kube.access, {
    path: `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`,
  });
  return observer.live(list.items ?? []);
}

const members = (): Promise<string[]> => listLiveShards(ns.name);

describe("shard membership", () => {
  it("counts the replicas holding their shard Lease, and drops one that releases it", async () => {
    const events: string[] = [];
    const [a, b, c] = ["replica-a", "replica-b", "replica-c"].map((id) => replica(id, events));
    await waitFor(async () => ((await members()).length === 3 ? true : undefined), { timeoutMs: 30_000, description: "3 live shards" });
    expect(await members()).toEqual(["replica-a", "replica-b", "replica-c"]);
    expect([a, b, c].every((r) => r?.isLeader())).toBe(true);
    await b?.stop();
    expect(await members()).toEqual(["replica-a", "replica-c"]);
    expect(events.sort()).toEqual(["replica-a joined", "replica-b joined", "replica-c joined"]);
  });

  it("ignores Leases that are no shard's and a holder that is not the Lease's own identity; drops one that stops changing", async () => {
    const lease = (name: string, holderIdentity: string) =>
      kubeJson(kube.access, {
        method: "POST",
        path: `/apis/coordination.k8s.io/v1/namespaces/${ns.name}/leases`,
        body: {
          apiVersion: "coordination.k8s.io/v1",
          kind: "Lease",
          metadata: { name },
          // A renewTime far in the past: liveness never reads the holder's clock.
          spec: { holderIdentity, leaseDurationSeconds: 2, renewTime: "2001-01-01T00:00:00.000000Z" },
        },
      });
    await lease("keyward-leader", "replica-x");
    await lease("keyward-shard-gone", "gone");
    await lease("keyward-shard-impostor", "replica-a");
    const first = await members();
    expect(first).not.toContain("replica-x");
    expect(first).not.toContain("impostor");
    // First seen now: not live, only unknown (a dead replica's last renewal looks as fresh as a
    // live one's)...
    expect(first).not.toContain("gone");
    const unknown = async (): Promise<string[]> => {
      const list = await kubeJson<{ items?: ShardLease[] }>(kube.access, {
        path: `/apis/coordination.k8s.io/v1/namespaces/${ns.name}/leases`,
      });
      return observer.view(list.items ?? []).unknown;
    };
    expect(await unknown()).toContain("gone");
    // ...then dead once unchanged for its duration, never having been live.
    await waitFor(async () => (!(await unknown()).includes("gone") ? true : undefined), {
      timeoutMs: 10_000,
      description: "gone known dead",
    });
    expect(await members()).not.toContain("gone");
  });
});
