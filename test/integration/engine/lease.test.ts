// Leader election on a real Lease: one leader at a time, and a fast hand-over on stop.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKube, type Kube } from "../../../src/kube/client.ts";
import { runLeaderElection, type LeaderElection } from "../../../src/kube/lease.ts";
import { createLogger } from "../../../src/log.ts";
import { createTestNamespace, testKubeConfig, waitFor, type TestNamespace } from "../../controlplane/testenv.ts";

let kube: Kube;
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
  (await kube.coordination.readNamespacedLease({ namespace: ns.name, name })).spec?.holderIdentity;

describe("leader election", () => {
  it("lets one of two candidates lead, and hands over to the other when the leader stops", async () => {
    const log: string[] = [];
    const a = elector("a", log);
    await waitFor(async () => (a.isLeader() ? true : undefined), { timeoutMs: 30_000, description: "a to lead" });
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
    await waitFor(async () => (b.isLeader() ? true : undefined), { timeoutMs: 30_000, description: "b to take over" });
    expect(await holder()).toBe("b");
    expect(log).toEqual(["a started", "b started"]);

    const lease = await kube.coordination.readNamespacedLease({ namespace: ns.name, name: "keyward-leader" });
    expect(lease.spec?.leaseTransitions).toBe(1);
    await b.stop();
  });

  it("a candidate takes over a lease whose holder vanished without releasing it, once it expires", async () => {
    const log: string[] = [];
    const now = new Date().toISOString().replace("Z", "000Z").replace(/\.(\d{3})000Z$/, ".$1000Z");
    await kube.coordination.createNamespacedLease({
      namespace: ns.name,
      body: {
        metadata: { name: "abandoned" },
        spec: { holderIdentity: "crashed", leaseDurationSeconds: 2, renewTime: now as unknown as Date, acquireTime: now as unknown as Date },
      },
    });
    const c = elector("c", log, "abandoned");
    await waitFor(async () => (c.isLeader() ? true : undefined), { timeoutMs: 30_000, description: "c to take the expired lease" });
    expect(await holder("abandoned")).toBe("c");
    expect(log).toEqual(["c started"]);
    await c.stop();
  });
});
