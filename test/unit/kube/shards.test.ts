import { describe, expect, it } from "vitest";
import { createShardObserver, shardLeasePrefix, type ShardLease } from "../../../src/kube/shards.ts";

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
  return { live: (l) => o.live(l), stale: (l, ms) => o.stale(l, ms), at: (ms) => (now = ms) };
}

describe("createShardObserver", () => {
  it("keeps a shard live for its duration after it saw the Lease change, on its own clock, sorted", () => {
    const o = observer();
    const leases = [lease("keyward-shard-b", "b", "t1"), lease("keyward-shard-a", "a", "t1")];
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
});
