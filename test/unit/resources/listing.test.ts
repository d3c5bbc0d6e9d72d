// The shared listing that lets a resync's steady passes share one list call (pure; a fake clock).
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApiClient, ResponseTooLargeError } from "../../../src/api/index.ts";
import { createSharedListing, isSteady, listedOrTooLarge, listingScope } from "../../../src/resources/listing.ts";

describe("createSharedListing", () => {
  it("serves every pass of a scope from one call until the TTL passes, then lists again", async () => {
    let t = 0;
    let calls = 0;
    const listing = createSharedListing<{ id: string }>(
      (x) => x.id,
      1_000,
      () => t,
    );
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

  it("keeps only the items `wanted` names, asked once per listing: the service's other objects cost no memory", async () => {
    let asked = 0;
    let ours = new Set(["a", "c"]);
    let t = 0;
    const listing = createSharedListing<{ id: string }>(
      (x) => x.id,
      1_000,
      () => t,
      () => {
        asked += 1;
        return ours;
      },
    );
    const list = (): Promise<{ id: string }[]> => Promise.resolve(["a", "b", "c", "d", "e"].map((id) => ({ id })));
    const first = await listing.get("pc", list);
    expect([...first.keys()]).toEqual(["a", "c"]);
    await listing.get("pc", list);
    expect(asked).toBe(1);
    // A resource that recorded its id since: the next listing keeps its object.
    ours = new Set(["a", "c", "e"]);
    t = 1_000;
    expect([...(await listing.get("pc", list)).keys()]).toEqual(["a", "c", "e"]);
    expect(asked).toBe(2);
  });

  it("lists again after keyward writes to the scope, and never keeps a failed listing", async () => {
    let calls = 0;
    let fail = true;
    const listing = createSharedListing<{ id: string }>(
      (x) => x.id,
      60_000,
      () => 0,
    );
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

  it("keeps an answer too large to read for the TTL (one such call per scope and window); listedOrTooLarge makes it undefined", async () => {
    let t = 0;
    let calls = 0;
    const listing = createSharedListing<{ id: string }>(
      (x) => x.id,
      1_000,
      () => t,
    );
    const tooLarge = (): Promise<{ id: string }[]> => {
      calls += 1;
      return Promise.reject(new ResponseTooLargeError({ operation: "listProjects", status: 200, limitBytes: 16, declaredBytes: 17 }));
    };
    expect(await listedOrTooLarge(listing, "pc", tooLarge)).toBeUndefined();
    expect(await listedOrTooLarge(listing, "pc", tooLarge)).toBeUndefined();
    expect(calls).toBe(1);
    t = 1_000;
    expect(await listedOrTooLarge(listing, "pc", tooLarge)).toBeUndefined();
    expect(calls).toBe(2);
    // Any other failure stays the caller's, and is not kept.
    const down = (): Promise<{ id: string }[]> => Promise.reject(new Error("503"));
    await expect(listedOrTooLarge(listing, "other", down)).rejects.toThrow("503");
    expect(listing.size()).toBe(1);
  });
});

describe("isSteady", () => {
  const ok = {
    metadata: { generation: 3 },
    status: {
      observedGeneration: 3,
      conditions: [
        { type: "Ready", status: "True" },
        { type: "Synced", status: "True" },
      ],
    },
  };
  it("holds only for an object Ready and Synced at its current generation and not being deleted", () => {
    expect(isSteady(ok)).toBe(true);
    expect(isSteady({ ...ok, metadata: { generation: 4 } })).toBe(false);
    expect(isSteady({ ...ok, metadata: { generation: 3, deletionTimestamp: "2026-01-01T00:00:00Z" } })).toBe(false);
    expect(
      isSteady({
        ...ok,
        status: {
          ...ok.status,
          conditions: [
            { type: "Ready", status: "False" },
            { type: "Synced", status: "True" },
          ],
        },
      }),
    ).toBe(false);
    expect(isSteady({ ...ok, status: { ...ok.status, conditions: [{ type: "Ready", status: "True" }] } })).toBe(false);
    expect(isSteady({ metadata: {} })).toBe(false);
  });
});

describe("listings are dropped when no pass uses them", () => {
  afterEach(() => {
    vi.useRealTimers();
  });
  const list = (): Promise<{ id: string }[]> => Promise.resolve([{ id: "a" }]);

  it("a listing unused for its TTL is dropped at the next get of any scope", async () => {
    let t = 0;
    const listing = createSharedListing<{ id: string }>(
      (x) => x.id,
      1_000,
      () => t,
    );
    await listing.get("token-of-a-config-since-deleted", list);
    await listing.get("busy", list);
    expect(listing.size()).toBe(2);
    t = 999;
    await listing.get("busy", list);
    expect(listing.size()).toBe(2);
    t = 1_500;
    await listing.get("busy", list);
    expect(listing.size()).toBe(1);
  });

  it("an idle keyward drops them too: the sweep runs on a timer while any listing is held", async () => {
    vi.useFakeTimers();
    const listing = createSharedListing<{ id: string }>((x) => x.id, 1_000);
    for (const scope of ["cred-1", "cred-2", "cred-3/project-9"]) await listing.get(scope, list);
    expect(listing.size()).toBe(3);
    vi.advanceTimersByTime(999);
    expect(listing.size()).toBe(3);
    vi.advanceTimersByTime(1);
    expect(listing.size()).toBe(0);
    // Nothing re-arms without listings; a new one lists again.
    expect(vi.getTimerCount()).toBe(0);
    await listing.get("cred-1", list);
    expect(listing.size()).toBe(1);
  });
});

describe("listingScope", () => {
  const conn = (baseUrl: string, token: string) => ({ conn: createApiClient({ baseUrl, token }) });

  it("is one per credential: every namespace using one ClusterProviderConfig (one token) shares it; another token never does", () => {
    const token = "kw-listing-token-0123456789abcdef";
    const teamA = conn("https://secrets.example.com", token);
    const teamB = conn("https://secrets.example.com/", token);
    expect(listingScope(teamA)).toBe(listingScope(teamB));
    expect(listingScope(teamA)).not.toBe(listingScope(conn("https://secrets.example.com", `${token}-other`)));
    expect(listingScope(teamA)).not.toBe(listingScope(conn("https://other.example.com", token)));
    expect(listingScope(teamA, "p1")).not.toBe(listingScope(teamA, "p2"));
  });

  it("never holds the token in clear", () => {
    const token = "kw-listing-token-0123456789abcdef";
    expect(listingScope(conn("https://secrets.example.com", token), "p1")).not.toContain(token);
  });
});
