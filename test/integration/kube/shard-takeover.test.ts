// The fence of a shard takeover on real Leases: the leader takes a silent member's objects only
// after a write on that member's own Lease, conditional on the version it judged dead; a holder
// that finds its Lease written by another stops at once and never takes it back; a takeover judged
// from a stale list is a 409 and moves nothing.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKube, type Kube } from "../../../src/kube/client.ts";
import type { LeaderElection } from "../../../src/kube/lease.ts";
import { shardLeasePrefix, type ShardLease } from "../../../src/shard/leases.ts";
import { takeOverDead } from "../../../src/shard/sharder.ts";
import { createLogger } from "../../../src/log.ts";
import { kubeJson } from "../../../src/kube/rest.ts";
import { isConflict } from "../../../src/kube/objects.ts";
import { createTestNamespace, testKubeConfig, waitFor, type TestNamespace } from "../../controlplane/testenv.ts";
import { shardLeaseHarness, type ShardLeaseHarness } from "../support/shard-leases.ts";

let kube: Kube;
let ns!: TestNamespace;
const logger = createLogger({ level: "silent" });
let leases!: ShardLeaseHarness;
const prefix = shardLeasePrefix("keyward");

beforeAll(async () => {
  kube = createKube(testKubeConfig());
  ns = await createTestNamespace("kube-shard-takeover");
  leases = shardLeaseHarness(kube, ns.name, logger, {
    leaseDurationMs: 6000,
    renewDeadlineMs: 4000,
    retryPeriodMs: 250,
    monotonicNow: () => 0,
  });
});

afterAll(async () => {
  await leases?.stopAll();
  await ns?.cleanup();
});

// A frozen monotonic clock: the renew deadline never passes, so a holder stops only because it
// found its Lease written by another, at its next renewal (250 ms of real time) — what these tests
// assert, without a bound on wall-clock time.
const replica = (identity: string, events: string[]): LeaderElection => leases.replica(identity, events);

const leasePath = (name?: string): string => `/apis/coordination.k8s.io/v1/namespaces/${ns.name}/leases${name ? `/${name}` : ""}`;
const readLease = (identity: string): Promise<ShardLease> => kubeJson<ShardLease>(kube.access, { path: leasePath(`${prefix}${identity}`) });
const listLeases = async (): Promise<ShardLease[]> =>
  (await kubeJson<{ items?: ShardLease[] }>(kube.access, { path: leasePath() })).items ?? [];

describe("a shard takeover", () => {
  it("stops a holder whose Lease another wrote, at once, and it never takes the Lease back", async () => {
    const events: string[] = [];
    const a = replica("alive-a", events);
    await waitFor(() => Promise.resolve(events.includes("alive-a joined") ? true : undefined), {
      timeoutMs: 20_000,
      description: "joined",
    });
    // The leader's takeover: the Lease released on the version it read (again after a 409: the
    // holder renews every 250 ms).
    const takenAt = await waitFor(
      async () => {
        const lease = await readLease("alive-a");
        const body = {
          apiVersion: "coordination.k8s.io/v1",
          kind: "Lease",
          metadata: lease.metadata,
          spec: { ...lease.spec, holderIdentity: "" },
        };
        return kubeJson<ShardLease>(kube.access, { method: "PUT", path: leasePath(`${prefix}alive-a`), body }).then(
          (written) => written.metadata?.resourceVersion ?? "",
          (err: unknown) => (isConflict(err) ? undefined : Promise.reject(err as Error)),
        );
      },
      { timeoutMs: 5_000, intervalMs: 10, description: "the takeover written" },
    );
    // At its next renewal: the deadline cannot pass on the frozen clock.
    await waitFor(() => Promise.resolve(events.includes("alive-a lost") ? true : undefined), {
      timeoutMs: 30_000,
      intervalMs: 50,
      description: "the holder stopped",
    });
    expect(a.holds()).toBe(false);
    // Stopping it would release a Lease it still held: the takeover's write is the last.
    await a.stop();
    const after = await readLease("alive-a");
    expect(after.spec?.holderIdentity ?? "").toBe("");
    expect(after.metadata?.resourceVersion).toBe(takenAt);
    expect(events).toEqual(["alive-a joined", "alive-a lost"]);
  });

  it("is a conditional write on the Lease: one judged from a stale list is a 409 and the member's objects stay", async () => {
    const events: string[] = [];
    const b = replica("alive-b", events);
    await waitFor(() => Promise.resolve(events.includes("alive-b joined") ? true : undefined), {
      timeoutMs: 20_000,
      description: "joined",
    });
    const stale = (await listLeases()).filter((l) => l.metadata?.name === `${prefix}alive-b`);
    const judged = stale[0]?.metadata?.resourceVersion;
    await waitFor(async () => ((await readLease("alive-b")).metadata?.resourceVersion !== judged ? true : undefined), {
      timeoutMs: 5_000,
      description: "a renewal after the list",
    });
    // Judged dead from the stale list (neither live nor unknown): the takeover is refused.
    expect(await takeOverDead({ kube, leaseNamespace: ns.name, leasePrefix: prefix }, stale, { live: [], unknown: [] }, logger)).toEqual([
      "alive-b",
    ]);
    expect((await readLease("alive-b")).spec?.holderIdentity).toBe("alive-b");
    expect(b.holds()).toBe(true);
    expect(events).toEqual(["alive-b joined"]);
    // A live or unknown member is never taken over.
    expect(
      await takeOverDead(
        { kube, leaseNamespace: ns.name, leasePrefix: prefix },
        await listLeases(),
        { live: ["alive-b"], unknown: [] },
        logger,
      ),
    ).toEqual([]);
    expect((await readLease("alive-b")).spec?.holderIdentity).toBe("alive-b");
    // Judged on the current version: released, and the holder stops.
    await b.stop();
    const dead = replica("silent-c", events);
    await waitFor(() => Promise.resolve(events.includes("silent-c joined") ? true : undefined), {
      timeoutMs: 20_000,
      description: "joined",
    });
    const current = (await listLeases()).filter((l) => l.metadata?.name === `${prefix}silent-c`);
    const kept = await takeOverDead({ kube, leaseNamespace: ns.name, leasePrefix: prefix }, current, { live: [], unknown: [] }, logger);
    // The holder may have renewed between the list and the write (then kept, 409); otherwise taken over and stopped.
    if (kept.length === 0) {
      expect((await readLease("silent-c")).spec?.holderIdentity ?? "").toBe("");
      await waitFor(() => Promise.resolve(events.includes("silent-c lost") ? true : undefined), {
        timeoutMs: 30_000,
        description: "stopped",
      });
      expect(dead.holds()).toBe(false);
    } else {
      expect(kept).toEqual(["silent-c"]);
    }
  });
});
