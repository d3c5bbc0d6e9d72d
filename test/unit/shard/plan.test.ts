import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  DRAIN_LABEL,
  inShare,
  RELEASE_LABELS,
  SHARD_LABEL,
  shardChanges,
  shardLabels,
  shardSelector,
  shardStanding,
  type ShardedObject,
} from "../../../src/shard/plan.ts";
import { shardKey } from "../../../src/shard/sharder.ts";

const owners = (map: Record<string, string>) => (key: string) => map[key];

describe("shardChanges", () => {
  it("assigns an unowned object and one whose owner is gone, straight away", () => {
    const objects: ShardedObject[] = [{ key: "ns/a" }, { key: "ns/b", owner: "dead", draining: true }];
    expect(shardChanges(objects, owners({ "ns/a": "r1", "ns/b": "r2" }), new Set(["r1", "r2"]))).toEqual([
      { key: "ns/a", change: "assign", to: "r1" },
      { key: "ns/b", change: "assign", to: "r2" },
    ]);
  });

  it("leaves an object alone while its owner's liveness is unknown, whatever the ring says", () => {
    const objects: ShardedObject[] = [{ key: "ns/a", owner: "maybe" }, { key: "ns/b", owner: "maybe", draining: true }, { key: "ns/c" }];
    const ring = owners({ "ns/a": "r1", "ns/b": "r1", "ns/c": "r1" });
    expect(shardChanges(objects, ring, new Set(["r1"]), new Set(["maybe"]))).toEqual([{ key: "ns/c", change: "assign", to: "r1" }]);
  });

  it("asks a live owner to drain, waits while it drains, and assigns once it let go", () => {
    const live = new Set(["r1", "r2"]);
    const ring = owners({ "ns/a": "r2" });
    expect(shardChanges([{ key: "ns/a", owner: "r1" }], ring, live)).toEqual([{ key: "ns/a", change: "drain", from: "r1" }]);
    expect(shardChanges([{ key: "ns/a", owner: "r1", draining: true }], ring, live)).toEqual([]);
    expect(shardChanges([{ key: "ns/a" }], ring, live)).toEqual([{ key: "ns/a", change: "assign", to: "r2" }]);
  });

  it("takes a drain back when the ring returns the object to its owner; leaves settled objects alone", () => {
    const live = new Set(["r1"]);
    expect(shardChanges([{ key: "ns/a", owner: "r1", draining: true }], owners({ "ns/a": "r1" }), live)).toEqual([
      { key: "ns/a", change: "undrain", owner: "r1" },
    ]);
    expect(shardChanges([{ key: "ns/a", owner: "r1" }], owners({ "ns/a": "r1" }), live)).toEqual([]);
    expect(shardChanges([{ key: "ns/a" }], () => undefined, new Set())).toEqual([]);
  });

  it("never hands an object from a live owner to another without the drain (property)", () => {
    const ids = fc.constantFrom("r1", "r2", "r3", "r4");
    fc.assert(
      fc.property(
        fc.array(fc.record({ owner: fc.option(ids, { nil: undefined }), draining: fc.boolean(), target: ids }), { maxLength: 30 }),
        fc.uniqueArray(ids, { minLength: 1 }),
        (rows, liveIds) => {
          const live = new Set(liveIds);
          const objects = rows.map((r, i) => ({ key: `ns/o${i}`, owner: r.owner, draining: r.draining }));
          const target = (key: string) => rows[Number(key.slice(4))]?.target;
          for (const c of shardChanges(objects, target, live)) {
            const o = objects[Number(c.key.slice(4))]!;
            if (c.change === "assign" && o.owner !== undefined && live.has(o.owner)) return false;
          }
          return true;
        },
      ),
      { seed: 18, numRuns: 500 },
    );
  });
});

describe("shardLabels", () => {
  it("is the merge patch of each change", () => {
    expect(shardLabels({ key: "k", change: "assign", to: "r1" })).toEqual({ [SHARD_LABEL]: "r1", [DRAIN_LABEL]: null });
    expect(shardLabels({ key: "k", change: "drain", from: "r1" })).toEqual({ [DRAIN_LABEL]: "true" });
    expect(shardLabels({ key: "k", change: "undrain", owner: "r1" })).toEqual({ [DRAIN_LABEL]: null });
  });
});

describe("shardStanding", () => {
  it("is own only with this replica's label and no drain; draining with both; foreign otherwise", () => {
    expect(shardStanding({ [SHARD_LABEL]: "a" }, "a")).toBe("own");
    expect(shardStanding({ [SHARD_LABEL]: "a", [DRAIN_LABEL]: "true" }, "a")).toBe("draining");
    expect(shardStanding({ [SHARD_LABEL]: "b", [DRAIN_LABEL]: "true" }, "a")).toBe("foreign");
    expect(shardStanding({}, "a")).toBe("foreign");
    expect(shardStanding(undefined, "a")).toBe("foreign");
  });

  it("lets a replica act on an object as read only with its own label (draining too); cluster-scoped objects are not on the ring", () => {
    expect(inShare({ namespace: "n", labels: { [SHARD_LABEL]: "a" } }, "a")).toBe(true);
    expect(inShare({ namespace: "n", labels: { [SHARD_LABEL]: "a", [DRAIN_LABEL]: "true" } }, "a")).toBe(true);
    expect(inShare({ namespace: "n", labels: { [SHARD_LABEL]: "b" } }, "a")).toBe(false);
    expect(inShare({ namespace: "n", labels: {} }, "a")).toBe(false);
    expect(inShare({ namespace: "n" }, "a")).toBe(false);
    expect(inShare({ namespace: "" }, "a")).toBe(true);
  });

  it("selects a replica's share by its label, and releases by removing both labels", () => {
    expect(shardSelector("kw-0")).toBe(`${SHARD_LABEL}=kw-0`);
    expect(RELEASE_LABELS).toEqual({ [SHARD_LABEL]: null, [DRAIN_LABEL]: null });
  });
});

describe("shardKey", () => {
  it("keys a namespaced object by its namespace, a cluster-scoped one by its name", () => {
    expect(shardKey({ metadata: { namespace: "team-a", name: "p1" } })).toBe(shardKey({ metadata: { namespace: "team-a", name: "p2" } }));
    expect(shardKey({ metadata: { name: "cpc" } })).not.toBe(shardKey({ metadata: { name: "other" } }));
    // a namespace and a cluster-scoped object of the same name are different keys
    expect(shardKey({ metadata: { namespace: "x", name: "a" } })).not.toBe(shardKey({ metadata: { name: "x" } }));
  });
});
