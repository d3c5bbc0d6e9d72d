// Leader election's times: checked before a campaign starts, and expiry judged on the
// monotonic clock the election is given (the campaign itself runs against the real apiserver in
// test/integration/leader-election.test.ts).
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { leaseExpired, leaseTimesProblems, renewWait, runLeaderElection, type LeaderElectionOptions } from "../../../src/kube/lease.ts";
import { createLogger } from "../../../src/log.ts";

describe("leaseTimesProblems", () => {
  it("accepts client-go's defaults (15s, 10s, 2s)", () => {
    expect(leaseTimesProblems({ leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 })).toEqual([]);
  });

  it("refuses a renew deadline not below the lease duration, saying why", () => {
    expect(leaseTimesProblems({ leaseDurationMs: 10_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 })).toEqual([
      {
        setting: "renewDeadlineMs",
        message: "renew deadline 10s must be below the lease duration 10s, or an old leader may still act when a standby takes over",
      },
    ]);
  });

  it("refuses a retry period not below the renew deadline", () => {
    expect(leaseTimesProblems({ leaseDurationMs: 15_000, renewDeadlineMs: 2_000, retryPeriodMs: 3_000 }).map((p) => p.setting)).toEqual([
      "retryPeriodMs",
    ]);
  });

  it("names both problems at once, and refuses zero or negative times before comparing", () => {
    expect(leaseTimesProblems({ leaseDurationMs: 5_000, renewDeadlineMs: 6_000, retryPeriodMs: 7_000 }).map((p) => p.setting)).toEqual([
      "renewDeadlineMs",
      "retryPeriodMs",
    ]);
    expect(leaseTimesProblems({ leaseDurationMs: 15_000, renewDeadlineMs: 0, retryPeriodMs: -1 }).map((p) => p.setting)).toEqual([
      "renewDeadlineMs",
      "retryPeriodMs",
    ]);
  });
});

describe("renewWait", () => {
  it("never sleeps past the renew deadline, for every setting the validation accepts", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 600_000 }),
        fc.integer({ min: 0, max: 700_000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (durationMs, sinceRenewMs, d, r) => {
          const renewDeadlineMs = Math.max(1, Math.floor(durationMs * d));
          const retryPeriodMs = Math.max(1, Math.floor(renewDeadlineMs * r));
          const t = { leaseDurationMs: durationMs, renewDeadlineMs, retryPeriodMs };
          fc.pre(leaseTimesProblems(t).length === 0);
          const wait = renewWait(sinceRenewMs, t);
          expect(wait).toBeGreaterThanOrEqual(0);
          expect(wait).toBeLessThanOrEqual(retryPeriodMs);
          // The loop wakes no later than the deadline, which is below the lease duration.
          expect(sinceRenewMs + wait).toBeLessThanOrEqual(Math.max(sinceRenewMs, renewDeadlineMs));
        },
      ),
    );
  });

  it("wakes at the deadline, not a retry period after it (15 s / 14 s / 4 s, 12 s since the last renewal)", () => {
    expect(renewWait(12_000, { renewDeadlineMs: 14_000, retryPeriodMs: 4_000 })).toBe(2_000);
    expect(renewWait(2_000, { renewDeadlineMs: 14_000, retryPeriodMs: 4_000 })).toBe(4_000);
    expect(renewWait(15_000, { renewDeadlineMs: 14_000, retryPeriodMs: 4_000 })).toBe(0);
  });
});

describe("leaseExpired", () => {
  it("holds another's lease until its duration has passed since this process saw it change", () => {
    expect(leaseExpired(1_000, 15_000, 15_999)).toBe(false);
    expect(leaseExpired(1_000, 15_000, 16_000)).toBe(true);
  });
});

describe("runLeaderElection", () => {
  const options = (times: Partial<LeaderElectionOptions>): LeaderElectionOptions => ({
    // Refused before any request: the access is never used.
    kube: {
      access: {
        server: "https://127.0.0.1:1",
        authorization: () => Promise.resolve(undefined),
      } as unknown as LeaderElectionOptions["kube"]["access"],
    },
    namespace: "ns",
    name: "lease",
    identity: "me",
    leaseDurationMs: 15_000,
    renewDeadlineMs: 10_000,
    retryPeriodMs: 2_000,
    onStartedLeading: () => undefined,
    onStoppedLeading: () => undefined,
    logger: createLogger({ level: "fatal" }),
    ...times,
  });

  it("refuses times that would let two replicas lead, before campaigning", () => {
    expect(() => runLeaderElection(options({ leaseDurationMs: 10_000, renewDeadlineMs: 12_000 }))).toThrow(
      /leader election: renew deadline 12s must be below the lease duration 10s/,
    );
  });

  it("decides expiry on the monotonic clock: no Date.now outside the times it writes into the Lease", () => {
    const source = readFileSync(new URL("../../../src/kube/lease.ts", import.meta.url), "utf8");
    const wallClockUses = source.split("\n").filter((line) => line.includes("Date.now()") && !line.trimStart().startsWith("//"));
    expect(wallClockUses.length).toBeGreaterThan(0);
    expect(wallClockUses.every((line) => /microTime\(Date\.now\(\)\)/.test(line))).toBe(true);
    expect(source).toContain("performance.now()");
  });
});
