// When a token is renewed, and how its times are written: the one rule AccessToken (tokens it
// writes into Secrets) and the connector (tokenAuth's minted access tokens) both follow, and
// the status fields a tokenAuth config shows. Pure, but for the clock a caller passes in.
//
// The numbers come from the service (create-token's expiresIn), so none is trusted: lifetimes
// are capped at MAX_TOKEN_LIFETIME_MS, renewals come no sooner than MIN_RENEW_INTERVAL_MS after
// the issue, and every wait is a finite timer delay.
//
// May import: src/lib (nothing else: it is the bottom of provider/); never a kind's file.

import { MAX_TIMER_MS } from "../../lib/backoff.ts";
import { parseGoDuration } from "../../lib/duration.ts";

/**
 * The longest lifetime keyward believes: a token the service says lives longer (up to 1e308 s)
 * is taken to expire after ten years, so every date keyward computes and writes is a real date
 * and the expiry it reports is never later than the service's.
 */
export const MAX_TOKEN_LIFETIME_MS = 10 * 365 * 24 * 3_600_000;

/**
 * The shortest time between a token's issue and its renewal, whatever lifetime the service
 * names (0.001 s, say): keyward mints at most once per this per config or AccessToken. A token
 * that lives less is used past its expiry; the service refuses it then, and a refused minted
 * token waits out the mint backoff.
 */
export const MIN_RENEW_INTERVAL_MS = 5_000;

/** The last time a Date can hold (ECMAScript's limit): no date keyward computes goes past it. */
const LAST_DATE_MS = 8.64e15;

/** A create-token answer whose expiresIn is no usable lifetime: negative or not a finite number. */
export class InvalidTokenLifetimeError extends Error {
  constructor(expiresIn: number) {
    super(`the service answered create-token with expiresIn ${String(expiresIn)}, which is no lifetime in seconds (0 or more, finite)`);
    this.name = "InvalidTokenLifetimeError";
  }
}

/**
 * When a token the service answered with `expiresIn` (seconds) expires, counted from
 * `issuedAt`: undefined for 0 (the token does not expire), at most MAX_TOKEN_LIFETIME_MS later.
 * Throws InvalidTokenLifetimeError for a negative or non-finite expiresIn.
 */
export function tokenExpiry(issuedAt: Date, expiresIn: number): Date | undefined {
  if (!Number.isFinite(expiresIn) || expiresIn < 0) throw new InvalidTokenLifetimeError(expiresIn);
  if (expiresIn === 0) return undefined;
  // Whole milliseconds, rounded down: a fraction added to a date rounds to the nearest double,
  // which can be a millisecond later than the service said (0.00099975 s on a 2039 date).
  return new Date(Math.min(issuedAt.getTime() + Math.floor(Math.min(expiresIn * 1000, MAX_TOKEN_LIFETIME_MS)), LAST_DATE_MS));
}

export interface RenewalPlan {
  renewAt: Date;
  /** renewBefore asked for more than half the lifetime and was cut to half. */
  clamped: boolean;
}

/**
 * When to issue the next token: expiresAt − renewBefore, where renewBefore defaults to a third
 * of the lifetime and is at most half of it, so a renewBefore longer than the lifetime cannot
 * make keyward issue tokens in a loop. Whatever the dates, the renewal is at least
 * MIN_RENEW_INTERVAL_MS and at most MAX_TOKEN_LIFETIME_MS after the issue, and always a real
 * date; dates that are not (a status edited by hand) make the renewal due at once.
 * undefined: the token does not expire.
 */
export function renewalPlan(issuedAt: Date, expiresAt: Date | undefined, renewBefore: string | undefined): RenewalPlan | undefined {
  if (!expiresAt) return undefined;
  const issued = issuedAt.getTime();
  if (!Number.isFinite(issued) || !Number.isFinite(expiresAt.getTime())) return { renewAt: new Date(0), clamped: false };
  const lifetime = Math.min(Math.max(0, expiresAt.getTime() - issued), MAX_TOKEN_LIFETIME_MS);
  const parsed = renewBefore === undefined ? lifetime / 3 : parseGoDuration(renewBefore);
  const asked = Number.isFinite(parsed) ? parsed : lifetime;
  const before = Math.min(asked, lifetime / 2);
  const renewAt = Math.max(issued + lifetime - before, issued + MIN_RENEW_INTERVAL_MS);
  return { renewAt: new Date(Math.min(renewAt, LAST_DATE_MS)), clamped: asked > lifetime / 2 };
}

/**
 * How long to wait before looking at a token again so its renewal is on time: from `now` to just
 * after `renewAt`, at most `maxMs` (and never longer than a Node timer can wait).
 */
export function renewWaitMs(renewAt: Date, now: number, maxMs = MAX_TIMER_MS): number {
  const wait = Math.max(0, renewAt.getTime() - now) + 250;
  return Number.isFinite(wait) ? Math.min(wait, maxMs, MAX_TIMER_MS) : 250;
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
  return schedule.renewAt ? { status, renewInMs: renewWaitMs(schedule.renewAt, now) } : { status };
}
