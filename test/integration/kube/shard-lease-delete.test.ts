// The leader deletes the shard Lease of a replica gone for good only at the version it judged
// stale (uid and resourceVersion preconditions), on the real apiserver: a Lease renewed since
// the list it judged by — a replica back under the same name — stays.
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CoordinationV1Api, type V1Lease } from "@kubernetes/client-node";
import { createTestNamespace, testKubeConfig, type TestNamespace } from "../../controlplane/testenv.ts";
import { createKube, resourcePath } from "../../../src/kube/client.ts";
import { leaseKind } from "../../../src/kube/lease.ts";
import { kubeJson } from "../../../src/kube/rest.ts";
import { createLogger } from "../../../src/log.ts";
import { deleteShardLease } from "../../../src/shard/sharder.ts";
import type { ShardLease } from "../../../src/shard/leases.ts";

let ns: TestNamespace;
const quiet = createLogger({ level: "silent" }, new Writable({ write: (_c, _e, cb) => cb() }));
const leases = (): CoordinationV1Api => testKubeConfig().makeApiClient(CoordinationV1Api);
const name = "keyward-shard-r1";

beforeAll(async () => {
  ns = await createTestNamespace("shard-lease-delete");
});
afterAll(async () => {
  await ns.cleanup();
});

const asShardLease = (l: V1Lease): ShardLease => ({
  metadata: { name: l.metadata?.name ?? "", resourceVersion: l.metadata?.resourceVersion ?? "", uid: l.metadata?.uid ?? "" },
});

describe("deleting a stale shard Lease", () => {
  it("keeps a Lease renewed after the list that judged it stale, and deletes it at the version it saw", async () => {
    const kube = createKube(testKubeConfig());
    const path = resourcePath(leaseKind, ns.name);
    const spec = { holderIdentity: "r1", leaseDurationSeconds: 15, renewTime: "2026-01-01T00:00:00.000000Z" };
    const created = await kubeJson<V1Lease>(kube.access, { method: "POST", path, body: { metadata: { name }, spec } });
    const judged = asShardLease(created);
    // The replica comes back under the same name and renews before the delete goes out.
    const renewed = await kubeJson<V1Lease>(kube.access, {
      method: "PUT",
      path: resourcePath(leaseKind, ns.name, name),
      body: { metadata: created.metadata, spec: { ...spec, renewTime: "2026-01-01T00:00:01.000000Z" } },
    });
    await deleteShardLease({ kube, leaseNamespace: ns.name }, judged, quiet);
    const still = await leases().readNamespacedLease({ name, namespace: ns.name });
    expect(still.metadata?.uid).toBe(created.metadata?.uid);

    await deleteShardLease({ kube, leaseNamespace: ns.name }, asShardLease(renewed), quiet);
    const gone = await leases()
      .readNamespacedLease({ name, namespace: ns.name })
      .then(() => 200)
      .catch((err: unknown) => (err as { code?: number }).code);
    expect(gone).toBe(404);
  });
});
