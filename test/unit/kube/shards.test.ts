import { describe, expect, it } from "vitest";
import { liveShards as liveOf, shardLeasePrefix, type ShardLease } from "../../../src/kube/shards.ts";

const at = Date.parse("2026-11-25T12:00:00Z");
const lease = (name: string, holder: string | undefined, renewedAgoMs: number | undefined, seconds = 15): ShardLease => ({
  metadata: { name },
  spec: {
    ...(holder !== undefined ? { holderIdentity: holder } : {}),
    leaseDurationSeconds: seconds,
    ...(renewedAgoMs !== undefined ? { renewTime: new Date(at - renewedAgoMs).toISOString() } : {}),
  },
});

const liveShards = (leases: readonly ShardLease[], nowMs: number, skewMs: number): string[] =>
  liveOf(leases, shardLeasePrefix("keyward"), nowMs, skewMs);

describe("liveShards", () => {
  it("keeps held shard Leases renewed within their duration plus the skew, sorted", () => {
    const leases = [lease("keyward-shard-b", "b", 1_000), lease("keyward-shard-a", "a", 14_000), lease("keyward-shard-c", "c", 16_500)];
    expect(liveShards(leases, at, 2_000)).toEqual(["a", "b", "c"]);
    expect(liveShards(leases, at, 0)).toEqual(["a", "b"]);
  });

  it("drops released, never-renewed, foreign-named and impostor Leases", () => {
    const leases = [
      lease("keyward-shard-released", "", 0),
      lease("keyward-shard-new", "new", undefined),
      lease("keyward-leader", "keyward-leader", 0),
      lease("keyward-shard-x", "y", 0),
      lease("keyward-shard-", "", 0),
      // another installation's replica, in the same namespace
      lease("keyward-staging-shard-s", "s", 0),
    ];
    expect(liveShards(leases, at, 2_000)).toEqual([]);
  });
});
