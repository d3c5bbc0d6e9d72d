// Sharding: a copy a replica no longer owns is never written back, and no call follows it. The
// leader could once hand a live replica's objects to another (from a stale Lease list) while that
// replica's passes still ran; the old owner then wrote status from its stale copy and acted on it.
// Here the test itself is that leader (it holds the leader Lease, so no replica assigns anything):
// a SecretSync with a sync request is handed from A to B while A's pass waits for the service's
// answer to its read of the sync. B handles the request; A's pass, resumed, must neither write nor
// call: exactly one sync-secrets call at the service, and B's record intact.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CoordinationV1Api, V1MicroTime, type KubeConfig } from "@kubernetes/client-node";
import type { Emulator } from "../emulator/server.ts";
import { loadDefaultSeed } from "../emulator/default-seed.ts";
import { createTestNamespace, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import { SHARD_LABEL } from "../../src/shard/plan.ts";
import {
  condition,
  createCustom,
  dataPlatformSync,
  getCustom,
  installProvider,
  mergePatchCustom,
  startTestEnv,
  type TestEnv,
} from "./support/keyward.ts";
import { startReplica, stopReplicas, type Replica } from "./support/shard-replicas.ts";

const TOKEN = "kw-fence-token-3b9e";
let env: TestEnv | undefined;
let kc: KubeConfig;
let emulator: Emulator;
let work: TestNamespace;
const replicas: Replica[] = [];

const label = (owner: string) => ({ metadata: { labels: { [SHARD_LABEL]: owner } } });

beforeAll(async () => {
  env = await startTestEnv({
    prefix: "shard-fence",
    token: TOKEN,
    emulator: { seed: loadDefaultSeed(), jobDelayMs: 50 },
    provider: false,
    keyward: false,
  });
  ({ kc, emulator } = env);
  // The test is the leader: no replica runs a sharder, so only the test moves objects.
  await kc.makeApiClient(CoordinationV1Api).createNamespacedLease({
    namespace: env.ns.name,
    body: {
      metadata: { name: "keyward-leader" },
      spec: { holderIdentity: "the-test", leaseDurationSeconds: 3600, renewTime: new V1MicroTime(), acquireTime: new V1MicroTime() },
    },
  });
  work = await createTestNamespace("shard-fence-work");
  env.onStop(() => work.cleanup());
  await installProvider(kc, work.name, emulator.url, TOKEN);
  env.onStop(() => stopReplicas(replicas));
}, 120_000);

afterAll(() => env?.stop());

describe("a handover in the middle of a SecretSync pass", () => {
  it(
    "makes exactly one sync-secrets call for the request, and the old owner writes nothing from its copy",
    { timeout: 180_000 },
    async () => {
      for (const id of ["kw-a", "kw-b"])
        replicas.push(await startReplica(id, { namespaces: [work.name], leaseNamespace: env?.ns.name ?? "" }));
      await Promise.all(replicas.map((r) => r.started));
      await mergePatchCustom(kc, work.name, "providerconfigs", "default", label("kw-a"));
      const manifest = dataPlatformSync("fenced") as { metadata: Record<string, unknown> };
      await createCustom(kc, work.name, "secretsyncs", { ...manifest, metadata: { ...manifest.metadata, ...label("kw-a").metadata } });
      const ready = await waitFor(
        async () => {
          const s = await getCustom(kc, work.name, "secretsyncs", "fenced");
          return condition(s, "Ready")?.status === "True" && typeof s?.status?.["syncId"] === "string" ? s : undefined;
        },
        { timeoutMs: 60_000, description: "the SecretSync Ready on A" },
      );
      const syncId = String(ready.status?.["syncId"]);

      // A's next pass waits 4 s for its read of the sync; meanwhile the sync is handed to B.
      emulator.setFaults({ match: { method: "GET", pathPattern: `/${syncId}$` }, latencyMs: 4_000 });
      await mergePatchCustom(kc, work.name, "secretsyncs", "fenced", {
        metadata: { annotations: { "keyward.dev/sync-requested-at": "v1" } },
      });
      await waitFor(() => Promise.resolve(emulator.heldRequests() > 0 ? true : undefined), {
        timeoutMs: 30_000,
        intervalMs: 20,
        description: "A's read held",
      });
      await mergePatchCustom(kc, work.name, "secretsyncs", "fenced", label("kw-b"));
      await mergePatchCustom(kc, work.name, "providerconfigs", "default", label("kw-b"));

      await waitFor(
        async () =>
          (await getCustom(kc, work.name, "secretsyncs", "fenced"))?.status?.["lastHandledSyncRequest"] === "v1" ? true : undefined,
        { timeoutMs: 60_000, description: "B handled the request" },
      );
      // Both held reads answered, and both passes over, before counting.
      await waitFor(() => Promise.resolve(emulator.heldRequests() === 0 ? true : undefined), {
        timeoutMs: 30_000,
        description: "no read held",
      });
      emulator.setFaults({});
      await new Promise((resolve) => setTimeout(resolve, 5_000));

      const triggers = emulator.requests().filter((r) => r.operation === "triggerSecretSync" && r.path.includes(syncId));
      console.info(`sync-secrets calls for the request: ${String(triggers.length)} (statuses ${triggers.map((t) => t.status).join(",")})`);
      expect(triggers).toHaveLength(1);
      const final = await getCustom(kc, work.name, "secretsyncs", "fenced");
      expect(final?.metadata.labels?.[SHARD_LABEL]).toBe("kw-b");
      expect(final?.status?.["lastHandledSyncRequest"]).toBe("v1");
      expect(final?.status?.["pendingRequest"]).toBeUndefined();
    },
  );
});
