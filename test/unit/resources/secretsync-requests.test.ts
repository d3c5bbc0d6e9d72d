// Which action values count as handled: the last one, and the recent ones kept as digests, so a
// value put back after another was handled (Argo CD's self-heal, an old manifest applied again)
// is not run again.
import { describe, expect, it } from "vitest";
import { handledBefore, handledByRecord, recordHandled, requestDigest } from "../../../src/resources/secretsync.ts";
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

  it("an object of an older keyward (no digests): its last value joins the list with the next one handled", () => {
    const old = { lastHandledSyncRequest: "s1" };
    expect(handledBefore(old, "sync", "s1")).toBe(true);
    expect(handledBefore(old, "sync", "s0")).toBe(false);
    const next = { ...old, ...recordHandled(old, "sync", "s2") };
    expect(next.recentRequests?.sync).toEqual([requestDigest("s2"), requestDigest("s1")]);
    // s1 put back after s2 ran (a self-heal to the manifest of before the upgrade) is not run again.
    expect(handledBefore(next, "sync", "s1")).toBe(true);
  });

  it("reads an edited list for what it can: strings only, at most RECENT_REQUESTS_KEPT", () => {
    const edited = { recentRequests: { sync: "not-a-list" } } as unknown as Parameters<typeof handledBefore>[0];
    expect(handledBefore(edited, "sync", "x")).toBe(false);
    expect(recordHandled(edited, "sync", "x").recentRequests?.sync).toEqual([requestDigest("x")]);
    const long = { recentRequests: { sync: [...Array(20).keys()].map((i) => requestDigest(`v${i}`)).concat([7 as unknown as string]) } };
    expect(recordHandled(long, "sync", "new").recentRequests?.sync).toHaveLength(RECENT_REQUESTS_KEPT);
  });
});

describe("a request value the ledger does not know, answered by the service's record (a rebuild from Git)", () => {
  const record = { lastSyncedAt: "2026-03-01T10:00:05.000Z", lastRemovedAt: "2026-03-01T09:00:00Z" };

  it("is done when the record shows a job of its action stamped at or after its time", () => {
    expect(handledByRecord(record, "sync", "2026-03-01T10:00:00Z")).toBe("2026-03-01T10:00:05.000Z");
    expect(handledByRecord(record, "sync", "2026-03-01T10:00:05.000Z")).toBe("2026-03-01T10:00:05.000Z");
    // The same instant in another zone.
    expect(handledByRecord(record, "sync", "2026-03-01T11:00:00+01:00")).toBe("2026-03-01T10:00:05.000Z");
  });

  it("is not done when the last job of its action is older, or there is none, or it is another action's", () => {
    expect(handledByRecord(record, "sync", "2026-03-01T10:00:05.001Z")).toBeUndefined();
    expect(handledByRecord(record, "remove", "2026-03-01T10:00:00Z")).toBeUndefined();
    expect(handledByRecord({}, "sync", "2020-01-01T00:00:00Z")).toBeUndefined();
  });

  it("answers only for a time with its zone: any other value cannot be placed against the record", () => {
    for (const value of ["r1", "2026-03-01", "2026-03-01T10:00:00", "1", "2026-03-01T10:00:00Z-1", "2026-13-45T99:99:99Z"]) {
      expect(handledByRecord(record, "sync", value), value).toBeUndefined();
    }
  });
});
