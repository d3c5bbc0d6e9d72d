// Leader election on a real Lease: one leader at a time, and a fast hand-over on stop.
import { isConflict } from "../../../src/kube/objects.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { V1MicroTime } from "@kubernetes/client-node";
import { createKube, type Kube } from "../../../src/kube/client.ts";
import { runLeaderElection, type LeaderElection } from "../../../src/kube/lease.ts";
import { createLogger } from "../../../src/log.ts";
import { createTestNamespace, testKubeConfig, waitFor, type TestNamespace, testApis } from "../../controlplane/testenv.ts";

let kube: Kube;
const apis = (): ReturnType<typeof testApis> => testApis();
let ns!: TestNamespace;
const logger = createLogger({ level: "silent" });
const electors: LeaderElection[] = [];

beforeAll(async () => {
  kube = createKube(testKubeConfig());
  ns = await createTestNamespace("engine-lease");
});

afterAll(async () => {
  await Promise.all(electors.map((e) => e.stop()));
  await ns?.cleanup();
});

function elector(identity: string, log: string[], leaseName = "keyward-leader") {
  const election = runLeaderElection({
    kube,
    namespace: ns.name,
    name: leaseName,
    identity,
    leaseDurationMs: 4000,
    renewDeadlineMs: 3000,
    retryPeriodMs: 250,
    logger,
    onStartedLeading: () => log.push(`${identity} started`),
    onStoppedLeading: () => log.push(`${identity} lost`),
  });
  electors.push(election);
  return election;
}

const holder = async (name = "keyward-leader") =>
  (await apis().coordination.readNamespacedLease({ namespace: ns.name, name })).spec?.holderIdentity;

describe("leader election", () => {
  it("lets one of two candidates lead, and hands over to the other when the leader stops", async () => {
    const log: string[] = [];
    const a = elector("a", log);
    await waitFor(() => Promise.resolve(a.isLeader() ? true : undefined), { timeoutMs: 30_000, description: "a to lead" });
    const b = elector("b", log);

    // b keeps trying for several renew rounds of a and never gets in.
    let samples = 0;
    await waitFor(
      async () => {
        expect(a.isLeader() && b.isLeader()).toBe(false);
        expect(b.isLeader()).toBe(false);
        expect(await holder()).toBe("a");
        samples += 1;
        return samples >= 8 ? true : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250, description: "several renew rounds" },
    );

    await a.stop();
    expect(a.isLeader()).toBe(false);
    // a released the lease (empty holder) unless b already took it.
    expect(["", "b"]).toContain(await holder());
    await waitFor(() => Promise.resolve(b.isLeader() ? true : undefined), { timeoutMs: 30_000, description: "b to take over" });
    expect(await holder()).toBe("b");
    expect(log).toEqual(["a started", "b started"]);

    const lease = await apis().coordination.readNamespacedLease({ namespace: ns.name, name: "keyward-leader" });
    expect(lease.spec?.leaseTransitions).toBe(1);
    await b.stop();
  });

  it("a candidate takes over a lease whose holder vanished without releasing it, once it expires", async () => {
    const log: string[] = [];
    const now = new V1MicroTime();
    await apis().coordination.createNamespacedLease({
      namespace: ns.name,
      body: {
        metadata: { name: "abandoned" },
        spec: { holderIdentity: "crashed", leaseDurationSeconds: 2, renewTime: now, acquireTime: now },
      },
    });
    const c = elector("c", log, "abandoned");
    await waitFor(() => Promise.resolve(c.isLeader() ? true : undefined), {
      timeoutMs: 30_000,
      description: "c to take the expired lease",
    });
    expect(await holder("abandoned")).toBe("c");
    expect(log).toEqual(["c started"]);
    await c.stop();
  });

  it("a leader that cannot renew (another holder took the lease) reports the loss", async () => {
    const log: string[] = [];
    const d = elector("d", log, "hijacked");
    await waitFor(() => Promise.resolve(d.isLeader() ? true : undefined), { timeoutMs: 30_000, description: "d to lead" });
    // Someone else writes itself in as holder (as a replica with a stale view might).
    // d renews every retry period, so a read-then-replace can lose the race (409): try again.
    await waitFor(
      async () => {
        const lease = await apis().coordination.readNamespacedLease({ namespace: ns.name, name: "hijacked" });
        try {
          await apis().coordination.replaceNamespacedLease({
            namespace: ns.name,
            name: "hijacked",
            body: {
              metadata: lease.metadata,
              spec: { holderIdentity: "intruder", leaseDurationSeconds: 60, renewTime: new V1MicroTime() },
            },
          });
          return true;
        } catch (err) {
          if (isConflict(err)) return undefined;
          throw err;
        }
      },
      { timeoutMs: 30_000, intervalMs: 10, description: "the intruder to write itself in" },
    );
    await waitFor(() => Promise.resolve(log.includes("d lost") ? true : undefined), { timeoutMs: 30_000, description: "d to notice" });
    expect(d.isLeader()).toBe(false);
    expect(log).toEqual(["d started", "d lost"]);
    expect(await holder("hijacked")).toBe("intruder");
    await d.stop();
    expect(await holder("hijacked")).toBe("intruder");
  });
});
