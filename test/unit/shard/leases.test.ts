import { describe, expect, it } from "vitest";
import { createShardObserver, shardLeasePrefix, type ShardLease } from "../../../src/shard/leases.ts";

const lease = (name: string, holder: string, renewTime: string, seconds = 15, resourceVersion = "1"): ShardLease => ({
  metadata: { name, resourceVersion },
  spec: { holderIdentity: holder, leaseDurationSeconds: seconds, renewTime },
});

/** An observer on a clock the test moves. */
function observer(): {
  live: (leases: ShardLease[]) => string[];
  stale: (l: ShardLease[], ms: number) => string[];
  at: (ms: number) => void;
} {
  let now = 0;
  const o = createShardObserver(shardLeasePrefix("keyward"), () => now);
  return { live: (l) => o.live(l), stale: (l, ms) => o.stale(l, ms).map((x) => x.metadata?.name ?? ""), at: (ms) => (now = ms) };
}

describe("createShardObserver", () => {
  it("keeps a shard live for its duration after it saw the Lease change, on its own clock, sorted", () => {
    const o = observer();
    const leases = [lease("keyward-shard-b", "b", "t1"), lease("keyward-shard-a", "a", "t1")];
    o.live([lease("keyward-shard-b", "b", "t0", 15, "0"), lease("keyward-shard-a", "a", "t0", 15, "0")]);
    expect(o.live(leases)).toEqual(["a", "b"]);
    o.at(10_000);
    const renewedA = [lease("keyward-shard-b", "b", "t1"), lease("keyward-shard-a", "a", "t2", 15, "2")];
    expect(o.live(renewedA)).toEqual(["a", "b"]);
    o.at(14_999);
    expect(o.live(renewedA)).toEqual(["a", "b"]);
    // b unchanged for its whole duration: gone; a was seen renewed at 10 s.
    o.at(15_000);
    expect(o.live(renewedA)).toEqual(["a"]);
    o.at(25_000);
    expect(o.live(renewedA)).toEqual([]);
  });

  it("never reads the holder's wall clock: a renewTime far in the past or future changes nothing", () => {
    const o = observer();
    const old = [lease("keyward-shard-a", "a", "2001-01-01T00:00:00.000000Z")];
    o.live([lease("keyward-shard-a", "a", "2001-01-01T00:00:00.000000Z", 15, "0")]);
    expect(o.live(old)).toEqual(["a"]);
    o.at(14_000);
    expect(o.live(old)).toEqual(["a"]);
    o.at(15_000);
    expect(o.live([lease("keyward-shard-a", "a", "2099-01-01T00:00:00.000000Z")])).toEqual(["a"]);
  });

  it("drops released, foreign-named and impostor Leases, and another installation's", () => {
    const o = observer();
    const leases = [
      lease("keyward-shard-released", "", "t", 1),
      lease("keyward-leader", "keyward-leader", "t"),
      lease("keyward-shard-x", "y", "t"),
      lease("keyward-shard-", "", "t"),
      lease("keyward-staging-shard-s", "s", "t"),
    ];
    expect(o.live(leases)).toEqual([]);
  });

  it("calls released Leases and ones unchanged for long stale, never a live one", () => {
    const o = observer();
    const leases = [lease("keyward-shard-a", "a", "t"), lease("keyward-shard-gone", "", "t", 1), lease("other", "z", "t")];
    expect(o.stale(leases, 300_000)).toEqual(["keyward-shard-gone"]);
    o.at(299_999);
    expect(o.stale(leases, 300_000)).toEqual(["keyward-shard-gone"]);
    o.at(300_000);
    expect(o.stale(leases, 300_000).sort()).toEqual(["keyward-shard-a", "keyward-shard-gone"]);
  });

  it("a Lease first seen is unknown, not live, until it is seen to change; unchanged for its duration it is dead", () => {
    // A new leader's first list: a's replica is alive and renews, b's died just before (its Lease
    // kept, its last renewal as fresh as a's).
    let now = 0;
    const o = createShardObserver(shardLeasePrefix("keyward"), () => now);
    const first = [lease("keyward-shard-a", "a", "t1", 15, "1"), lease("keyward-shard-b", "b", "t1", 15, "2")];
    expect(o.view(first)).toEqual({ live: [], unknown: ["a", "b"] });
    expect(o.live(first)).toEqual([]);
    now = 2_000;
    const renewedA = [lease("keyward-shard-a", "a", "t2", 15, "3"), lease("keyward-shard-b", "b", "t1", 15, "2")];
    expect(o.view(renewedA)).toEqual({ live: ["a"], unknown: ["b"] });
    now = 14_999;
    expect(o.view(renewedA)).toEqual({ live: ["a"], unknown: ["b"] });
    // b never changed for its duration since first seen: dead, never live; a is live while it renews.
    now = 15_000;
    const renewedAgain = [lease("keyward-shard-a", "a", "t3", 15, "4"), lease("keyward-shard-b", "b", "t1", 15, "2")];
    expect(o.view(renewedAgain)).toEqual({ live: ["a"], unknown: [] });
    // A Lease created while the leader runs (a replica joining) is unknown until its first renewal.
    now = 16_000;
    const joined = [...renewedAgain, lease("keyward-shard-c", "c", "t1", 15, "5")];
    expect(o.view(joined)).toEqual({ live: ["a"], unknown: ["c"] });
    now = 18_000;
    expect(o.view([...renewedAgain, lease("keyward-shard-c", "c", "t2", 15, "6")])).toEqual({ live: ["a", "c"], unknown: [] });
  });
});
