import { describe, expect, it } from "vitest";
import { DRAIN_LABEL, SHARD_LABEL } from "../../../src/shard/plan.ts";
import { EMPTY_NAMESPACE_GRACE_MS, plansAgain, rememberKeys, shardMetadata, sharesOf } from "../../../src/shard/sharder.ts";
import { createRing } from "../../../src/lib/ring.ts";
import type { KubeObject } from "../../../src/engine/types.ts";

const projects = { group: "keyward.dev", version: "v1alpha1", plural: "projects", kind: "Project" };

/** A Project's metadata as a metadata-only watch delivers it after keyward's create (managedFields already gone: slim). */
function watched(labels: Record<string, string>, resourceVersion = "41"): KubeObject {
  return {
    apiVersion: "meta.k8s.io/v1",
    kind: "PartialObjectMetadata",
    metadata: {
      name: "payments",
      namespace: "team-a",
      uid: "6f1c1d0e-3c55-4a8e-9a57-0b8a6f3c2d11",
      resourceVersion,
      generation: 1,
      creationTimestamp: "2026-11-26T10:00:00Z",
      labels: { "app.kubernetes.io/part-of": "shop", team: "payments", ...labels },
      annotations: {
        "keyward.dev/create-started": "2026-11-26T10:00:01.000Z 6f1c1d0e-3c55-4a8e-9a57-0b8a6f3c2d11",
        "keyward.dev/external-id": "0b6e1c55-2f7a-4d7e-8e0c-5a4b1d2c3e4f",
      },
      finalizers: ["keyward.dev/finalizer"],
      ownerReferences: [{ apiVersion: "argoproj.io/v1alpha1", kind: "Application", name: "shop", uid: "1" }],
    },
  } as unknown as KubeObject;
}

describe("the sharder's cache (shardMetadata)", () => {
  it("keeps the ring key, resourceVersion and the shard labels, nothing else (no UID)", () => {
    const kept = shardMetadata(watched({ [SHARD_LABEL]: "kw-0", [DRAIN_LABEL]: "true" }), projects);
    expect(kept).toEqual({
      apiVersion: "keyward.dev/v1alpha1",
      kind: "Project",
      metadata: {
        name: "payments",
        namespace: "team-a",
        resourceVersion: "41",
        labels: { [SHARD_LABEL]: "kw-0", [DRAIN_LABEL]: "true" },
      },
    });
  });

  it("keeps no labels for an object not yet assigned", () => {
    expect(shardMetadata(watched({}), projects).metadata.labels).toBeUndefined();
  });

  it("holds less than half of the untrimmed metadata, as JSON", () => {
    const full = watched({ [SHARD_LABEL]: "kw-0" });
    const before = JSON.stringify(full).length;
    const after = JSON.stringify(shardMetadata(watched({ [SHARD_LABEL]: "kw-0" }), projects)).length;
    expect(after).toBeLessThan(before / 2);
  });
});

describe("plansAgain: which events of the sharder's cache schedule a pass", () => {
  const assigned = shardMetadata(watched({ [SHARD_LABEL]: "kw-0" }), projects);

  it("an add and a delete always do", () => {
    expect(plansAgain("add", assigned, undefined)).toBe(true);
    expect(plansAgain("delete", assigned, undefined)).toBe(true);
  });

  it("an update that changes no shard label (a mark, a status: only the resourceVersion moved) does not", () => {
    const next = shardMetadata(watched({ [SHARD_LABEL]: "kw-0" }, "42"), projects);
    expect(plansAgain("update", next, assigned)).toBe(false);
  });

  it("an update that assigns, moves, drains or undrains does", () => {
    const unassigned = shardMetadata(watched({}), projects);
    const moved = shardMetadata(watched({ [SHARD_LABEL]: "kw-1" }, "42"), projects);
    const draining = shardMetadata(watched({ [SHARD_LABEL]: "kw-0", [DRAIN_LABEL]: "true" }, "42"), projects);
    expect(plansAgain("update", assigned, unassigned)).toBe(true);
    expect(plansAgain("update", moved, assigned)).toBe(true);
    expect(plansAgain("update", draining, assigned)).toBe(true);
    expect(plansAgain("update", assigned, draining)).toBe(true);
  });
});

describe("the namespaces the shares count (rememberKeys)", () => {
  const set = (...keys: string[]): Set<string> => new Set(keys);

  it("counts a new namespace at once and an emptied one for the grace period, then drops it", () => {
    const keysFor = rememberKeys(1000);
    expect([...keysFor(set("namespace/a", "namespace/b"), 0)].sort()).toEqual(["namespace/a", "namespace/b"]);
    expect([...keysFor(set("namespace/a"), 10)].sort()).toEqual(["namespace/a", "namespace/b"]);
    expect([...keysFor(set("namespace/a", "namespace/c"), 1000)].sort()).toEqual(["namespace/a", "namespace/b", "namespace/c"]);
    expect([...keysFor(set("namespace/a", "namespace/c"), 1001)].sort()).toEqual(["namespace/a", "namespace/c"]);
    expect(EMPTY_NAMESPACE_GRACE_MS).toBe(3_600_000);
  });

  it("a tenant creating and deleting its only object in a loop changes no one else's owner within the hour", () => {
    // 12 namespaces over 3 replicas, and the tenant's: with the plain key set (no grace) some
    // toggle of the tenant's namespace moves another namespace; with the grace none does.
    const ring = createRing(["kw-a", "kw-b", "kw-c"]);
    const others = Array.from({ length: 12 }, (_, i) => `namespace/team-${i}`);
    const tenant = "namespace/tenant";
    const ownersWith = (keysFor: (present: ReadonlySet<string>, now: number) => ReadonlySet<string>): Set<string> => {
      const shares = sharesOf(ring);
      const seen = new Set<string>();
      for (let t = 0; t < 60; t++) {
        const present = new Set(t % 2 === 0 ? [...others, tenant] : others);
        const current = shares(keysFor(present, t * 60_000));
        seen.add(others.map((k) => current.ownerOf(k)).join(","));
      }
      return seen;
    };
    expect(ownersWith((present) => present).size).toBeGreaterThan(1);
    expect(ownersWith(rememberKeys(EMPTY_NAMESPACE_GRACE_MS)).size).toBe(1);
  });
});
