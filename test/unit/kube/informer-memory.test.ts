// What a cached object costs in heap bytes (src/kube/informer.ts createStore), counted, not timed:
// a child process (--expose-gc, so a full collection before each count) feeds the watch events of
// N Projects, as the apiserver sends them, into the three caches a sharded replica keeps of the
// kind — its share whole (slim), the claim view (claimMetadata) and, on the leader, the sharder's
// (shardMetadata) — and reports the heap each store retains per object. The claim view and the
// sharder's cache hold one per object of the whole cluster (50,000 Projects over 4 replicas:
// 50,000 each), so their bytes per object are what the chart's memory limit is about.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const src = (path: string): string => fileURLToPath(new URL(`../../../src/${path}`, import.meta.url));

/** Bytes of heap each store retains per object, for `n` Projects over 40 namespaces. */
function perObject(n: number): Record<"share" | "claims" | "sharder", number> {
  const script = `
    const { createStore } = await import(${JSON.stringify(src("kube/informer.ts"))});
    const { claimMetadata } = await import(${JSON.stringify(src("engine/claims.ts"))});
    const { shardMetadata } = await import(${JSON.stringify(src("shard/sharder.ts"))});
    const kind = { group: "keyward.dev", version: "v1alpha1", plural: "projects", kind: "Project" };
    const hex = (i, len) => i.toString(16).padStart(len, "0");
    const uuid = (i, salt) => hex(salt, 8) + "-" + hex(i % 65536, 4) + "-4" + hex(i % 4096, 3) + "-8" + hex(salt % 4096, 3) + "-" + hex(i, 12);
    // A Project as keyward leaves it (create mark, id, shard label, status), names as tenants write them.
    const event = (i) => JSON.stringify({
      apiVersion: "keyward.dev/v1alpha1", kind: "Project",
      metadata: {
        annotations: { "keyward.dev/create-started": "2026-11-29T11:23:33.301Z " + uuid(i, 1), "keyward.dev/external-id": uuid(i, 2) },
        creationTimestamp: "2026-11-29T11:23:28Z", generation: 1,
        labels: { "keyward.dev/external-id-digest": hex(i, 40), "shard.keyward.dev/owner": "keyward-7d9f8-x2k4q" },
        managedFields: [{ apiVersion: "keyward.dev/v1alpha1", fieldsType: "FieldsV1", fieldsV1: { "f:metadata": { "f:labels": {} } }, manager: "keyward", operation: "Update", time: "2026-11-29T11:23:33Z" }],
        name: "payments-api-" + i, namespace: "team-payments-" + (i % 40), resourceVersion: String(100000 + i), uid: uuid(i, 1),
      },
      spec: {},
      status: {
        conditions: [
          { lastTransitionTime: "2026-11-29T11:23:34.410Z", message: "the external object is available", observedGeneration: 1, reason: "Available", status: "True", type: "Ready" },
          { lastTransitionTime: "2026-11-29T11:23:34.410Z", message: "the external object matches the spec", observedGeneration: 1, reason: "ReconcileSuccess", status: "True", type: "Synced" },
        ],
        observedGeneration: 1, projectId: uuid(i, 2), slug: "payments-api-" + i,
      },
    });
    const texts = Array.from({ length: ${n} }, (_, i) => event(i));
    const used = () => { gc(); gc(); return process.memoryUsage().heapUsed; };
    const stores = {
      share: undefined,
      claims: (o) => claimMetadata(o, kind),
      sharder: (o) => shardMetadata(o, kind),
    };
    const out = {};
    const kept = [];
    for (const [name, transform] of Object.entries(stores)) {
      const before = used();
      const store = createStore(kind, () => {}, transform);
      for (const text of texts) store.onWatchEvent("ADDED", JSON.parse(text));
      kept.push(store);
      out[name] = Math.round((used() - before) / ${n});
    }
    console.log(JSON.stringify(out));`;
  const run = spawnSync(process.execPath, ["--expose-gc", "--input-type=module", "-e", script], { encoding: "utf8", timeout: 60_000 });
  expect(run.stderr).toBe("");
  return JSON.parse(run.stdout) as Record<"share" | "claims" | "sharder", number>;
}

describe("the bytes a cached Project costs (createStore)", () => {
  // Measured (claim view / sharder / share): 607 / 528 / 1,472 bytes on main, with a key string,
  // a namespace and an apiVersion of its own per object, a creation time in the claim view, a UID
  // in the sharder's and a copy of every condition string; 368 / 296 / 1,322 without the first
  // four; 368 / 297 / 1,148 with the condition strings shared too.
  let bytes: Record<"share" | "claims" | "sharder", number> | undefined;
  const measured = (): Record<"share" | "claims" | "sharder", number> => (bytes ??= perObject(5000));

  it("the claim view keeps at most 420 bytes per object, the sharder's cache 350", () => {
    expect(measured().claims).toBeLessThanOrEqual(420);
    expect(measured().sharder).toBeLessThanOrEqual(350);
  });

  it("a share's whole Project (metadata, spec, two conditions) costs at most 1,230 bytes", () => {
    expect(measured().share).toBeLessThanOrEqual(1230);
  });
});
