// The shared listing that lets a resync's steady passes share one list call (pure; a fake clock).
import { describe, expect, it } from "vitest";
import { createSharedListing, isSteady, listingScope } from "../../../src/resources/listing.ts";

describe("createSharedListing", () => {
  it("serves every pass of a scope from one call until the TTL passes, then lists again", async () => {
    let t = 0;
    let calls = 0;
    const listing = createSharedListing<{ id: string }>((x) => x.id, 1_000, () => t);
    const list = (): Promise<{ id: string }[]> => {
      calls += 1;
      return Promise.resolve([{ id: "a" }, { id: "b" }]);
    };
    const [one, two] = await Promise.all([listing.get("pc", list), listing.get("pc", list)]);
    expect(calls).toBe(1);
    expect(one.get("b")).toEqual({ id: "b" });
    expect(two).toBe(one);
    t = 999;
    await listing.get("pc", list);
    expect(calls).toBe(1);
    await listing.get("other-scope", list);
    expect(calls).toBe(2);
    t = 1_000;
    await listing.get("pc", list);
    expect(calls).toBe(3);
  });

  it("lists again after keyward writes to the scope, and never keeps a failed listing", async () => {
    let calls = 0;
    let fail = true;
    const listing = createSharedListing<{ id: string }>((x) => x.id, 60_000, () => 0);
    const list = (): Promise<{ id: string }[]> => {
      calls += 1;
      return fail ? Promise.reject(new Error("503")) : Promise.resolve([{ id: "a" }]);
    };
    await expect(listing.get("pc", list)).rejects.toThrow("503");
    fail = false;
    expect((await listing.get("pc", list)).has("a")).toBe(true);
    expect(calls).toBe(2);
    listing.invalidate("pc");
    await listing.get("pc", list);
    expect(calls).toBe(3);
  });
});

describe("isSteady", () => {
  const ok = { metadata: { generation: 3 }, status: { observedGeneration: 3, conditions: [{ type: "Ready", status: "True" }, { type: "Synced", status: "True" }] } };
  it("holds only for an object Ready and Synced at its current generation and not being deleted", () => {
    expect(isSteady(ok)).toBe(true);
    expect(isSteady({ ...ok, metadata: { generation: 4 } })).toBe(false);
    expect(isSteady({ ...ok, metadata: { generation: 3, deletionTimestamp: "2026-01-01T00:00:00Z" } })).toBe(false);
    expect(isSteady({ ...ok, status: { ...ok.status, conditions: [{ type: "Ready", status: "False" }, { type: "Synced", status: "True" }] } })).toBe(false);
    expect(isSteady({ ...ok, status: { ...ok.status, conditions: [{ type: "Ready", status: "True" }] } })).toBe(false);
    expect(isSteady({ metadata: {} })).toBe(false);
  });
});

describe("listingScope", () => {
  it("tells a ProviderConfig from a ClusterProviderConfig of the same name, and narrows by project", () => {
    const key = { namespace: "team-a" };
    const namespaced = listingScope({ key, spec: { providerConfigRef: { name: "shared" } } });
    const cluster = listingScope({ key, spec: { providerConfigRef: { kind: "ClusterProviderConfig", name: "shared" } } });
    expect(namespaced).not.toBe(cluster);
    expect(listingScope({ key, spec: {} })).toBe(listingScope({ key, spec: { providerConfigRef: { name: "default" } } }));
    expect(listingScope({ key, spec: {} }, "p1")).not.toBe(listingScope({ key, spec: {} }, "p2"));
  });
});
