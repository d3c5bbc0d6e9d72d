// The token schedule AccessToken and the connector share: durations, when to renew, how times
// are written, and a tokenAuth config's status fields.
import { describe, expect, it } from "vitest";
import { renewalPlan, rfc3339, tokenStatus, type TokenSchedule } from "../../../../src/resources/provider/token-schedule.ts";

const at = (iso: string): Date => new Date(iso);

describe("renewalPlan", () => {
  const issued = at("2030-01-01T00:00:00Z");
  const expires = at("2030-01-01T03:00:00Z");

  it("defaults renewBefore to a third of the lifetime", () => {
    expect(renewalPlan(issued, expires, undefined)).toEqual({ renewAt: at("2030-01-01T02:00:00Z"), clamped: false });
  });

  it("uses renewBefore when it is at most half the lifetime", () => {
    expect(renewalPlan(issued, expires, "10m")?.renewAt).toEqual(at("2030-01-01T02:50:00Z"));
  });

  it("cuts a renewBefore longer than half the lifetime to half, so tokens are never issued in a loop", () => {
    expect(renewalPlan(issued, expires, "5h")).toEqual({ renewAt: at("2030-01-01T01:30:00Z"), clamped: true });
  });

  it("has no schedule for a token without expiry", () => {
    expect(renewalPlan(issued, undefined, "10m")).toBeUndefined();
  });
});

describe("rfc3339", () => {
  it("drops the milliseconds, rounding down", () => {
    expect(rfc3339(at("2030-01-01T00:00:00.999Z"))).toBe("2030-01-01T00:00:00Z");
  });
});

describe("tokenStatus", () => {
  const schedule: TokenSchedule = {
    issuedAt: at("2030-01-01T00:00:00Z"),
    expiresAt: at("2030-01-01T00:01:00.500Z"),
    renewAt: at("2030-01-01T00:00:40Z"),
  };
  const schedules = { tokenSchedule: (id: string) => (id === "ProviderConfig/ns/a" ? schedule : undefined) };
  const tokenAuth = { tokenAuth: { identityId: "x" } };

  it("shows the current token's times and looks again just after the renewal", () => {
    expect(tokenStatus(schedules, "ProviderConfig/ns/a", tokenAuth, at("2030-01-01T00:00:10Z").getTime())).toEqual({
      status: { tokenExpiresAt: "2030-01-01T00:01:00Z", tokenRenewAt: "2030-01-01T00:00:40Z" },
      renewInMs: 30_250,
    });
  });

  it("clears the fields of a config without tokenAuth, or without a minted token yet", () => {
    const cleared = { status: { tokenExpiresAt: undefined, tokenRenewAt: undefined } };
    expect(tokenStatus(schedules, "ProviderConfig/ns/a", { credentialsSecretRef: { name: "t" } })).toEqual(cleared);
    expect(tokenStatus(schedules, "ProviderConfig/ns/b", tokenAuth)).toEqual(cleared);
  });
});
