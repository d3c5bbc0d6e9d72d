// When a token is renewed, and how its times are written: the one rule AccessToken (tokens it
// writes into Secrets) and the connector (tokenAuth's minted access tokens) both follow, and
// the status fields a tokenAuth config shows. Pure, but for the clock a caller passes in.
//
// May import: src/lib (nothing else: it is the bottom of provider/); never a kind's file.

import { parseGoDuration } from "../../lib/duration.ts";

export interface RenewalPlan {
  renewAt: Date;
  /** renewBefore asked for more than half the lifetime and was cut to half. */
  clamped: boolean;
}

/**
 * When to issue the next token: expiresAt − renewBefore, where renewBefore defaults to a third
 * of the lifetime and is at most half of it, so a renewBefore longer than the lifetime cannot
 * make keyward issue tokens in a loop. undefined: the token does not expire.
 */
export function renewalPlan(issuedAt: Date, expiresAt: Date | undefined, renewBefore: string | undefined): RenewalPlan | undefined {
  if (!expiresAt) return undefined;
  const lifetime = Math.max(0, expiresAt.getTime() - issuedAt.getTime());
  const asked = renewBefore === undefined ? lifetime / 3 : parseGoDuration(renewBefore);
  const before = Math.min(asked, lifetime / 2);
  return { renewAt: new Date(expiresAt.getTime() - before), clamped: asked > lifetime / 2 };
}

/** RFC 3339 to the second, rounded down: an expiry we report is never later than the service's. */
export function rfc3339(d: Date): string {
  return new Date(Math.floor(d.getTime() / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

/** A tokenAuth config's current access token, as status shows it: its times, never the token. */
export interface TokenSchedule {
  issuedAt: Date;
  expiresAt: Date | undefined;
  renewAt: Date | undefined;
}

/** Where the current minted token's schedule of a config (`ProviderConfig/ns/name`, `ClusterProviderConfig/name`) is kept. */
export interface TokenSchedules {
  tokenSchedule(configId: string): TokenSchedule | undefined;
}

/**
 * A tokenAuth config's status fields (the current token's expiry and renewal, never the token)
 * and when to look again so the next token is minted on time even when nothing else calls.
 */
export function tokenStatus(
  schedules: TokenSchedules,
  configId: string,
  spec: unknown,
  now = Date.now(),
): { status: Record<string, string | undefined>; renewInMs?: number } {
  const schedule = (spec as { tokenAuth?: unknown } | undefined)?.tokenAuth ? schedules.tokenSchedule(configId) : undefined;
  if (!schedule) return { status: { tokenExpiresAt: undefined, tokenRenewAt: undefined } };
  const status = {
    tokenExpiresAt: schedule.expiresAt ? rfc3339(schedule.expiresAt) : undefined,
    tokenRenewAt: schedule.renewAt ? rfc3339(schedule.renewAt) : undefined,
  };
  return schedule.renewAt ? { status, renewInMs: Math.max(0, schedule.renewAt.getTime() - now) + 250 } : { status };
}
