// Which action values count as handled: the last one, and the recent ones kept as digests, so a
// value put back after another was handled (Argo CD's self-heal, an old manifest applied again)
// is not run again.
import { describe, expect, it } from "vitest";
import { handledBefore, recordHandled, requestDigest } from "../../../src/resources/secretsync.ts";
import { RECENT_REQUESTS_KEPT } from "../../../src/resources/secretsync-schema.ts";

describe("handled action values", () => {
  it("records the last value and a digest of each, newest first, and knows all of them afterwards", () => {
    let s = recordHandled({}, "remove", "r1");
    s = { ...s, ...recordHandled(s, "remove", "r2") };
    expect(s.lastHandledRemoveSecretsRequest).toBe("r2");
    expect(s.recentRequests?.remove).toEqual([requestDigest("r2"), requestDigest("r1")]);
    expect(handledBefore(s, "remove", "r2")).toBe(true);
    expect(handledBefore(s, "remove", "r1")).toBe(true);
    expect(handledBefore(s, "remove", "r3")).toBe(false);
    // Per action: a remove value is no sync value.
    expect(handledBefore(s, "sync", "r1")).toBe(false);
  });

  it("keeps the last RECENT_REQUESTS_KEPT values, each once", () => {
    let s = {};
    for (let i = 0; i < RECENT_REQUESTS_KEPT + 3; i++) s = { ...s, ...recordHandled(s, "sync", `v${i}`) };
    s = { ...s, ...recordHandled(s, "sync", `v${RECENT_REQUESTS_KEPT + 2}`) };
    const kept = (s as { recentRequests: { sync: string[] } }).recentRequests.sync;
    expect(kept).toHaveLength(RECENT_REQUESTS_KEPT);
    expect(new Set(kept).size).toBe(kept.length);
    expect(handledBefore(s, "sync", "v0")).toBe(false);
    expect(handledBefore(s, "sync", "v3")).toBe(true);
  });

  it("a digest is short, fixed and not the value", () => {
    const long = "x".repeat(1024);
    expect(requestDigest(long)).toHaveLength(16);
    expect(requestDigest(long)).not.toContain("xxx");
    expect(requestDigest("a")).not.toBe(requestDigest("b"));
  });

  it("without recent digests (an object of an older keyward) only the last value counts", () => {
    expect(handledBefore({ lastHandledSyncRequest: "s1" }, "sync", "s1")).toBe(true);
    expect(handledBefore({ lastHandledSyncRequest: "s1" }, "sync", "s0")).toBe(false);
  });
});
