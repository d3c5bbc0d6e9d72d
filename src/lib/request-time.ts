// An action annotation's value read as the time it was requested at: an RFC 3339 time with its
// zone, as `kubectl keyward sync` writes. The only values the service's record (a job's time) can
// answer for on a rebuild; the kubectl plugin warns about any other from the same pattern.

/** An RFC 3339 date-time with its zone offset (Z or ±hh:mm). */
export const REQUEST_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/i;

/** The value's time in ms since the epoch, or undefined when it is not such a time (or no real date). */
export function requestedAt(value: string): number | undefined {
  if (!REQUEST_TIME.test(value)) return undefined;
  const ms = Date.parse(value);
  return Number.isFinite(ms) ? ms : undefined;
}
