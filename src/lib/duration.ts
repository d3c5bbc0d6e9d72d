// Durations written as text, in milliseconds. keyward reads three formats, each where it comes
// from, so each has its own name here rather than one parseDuration meaning three things:
// - parseFlagDuration: keyward's own flags and environment variables ("500ms", "30s", "10m", "1h").
// - parseGoDuration: Go-style durations in CRD fields such as renewBefore ("10m", "1h30m"), the
//   format GO_DURATION_PATTERN lets through the CRD schema.
// - parseMsStyleDuration: the ms-library format (https://github.com/vercel/ms) the service reads
//   a temporary role's temporaryRange in ("1h", "1.5 hours", "7d", "1500").
// Pure and dependency-free. The emulator keeps its own ms-style parser (test/emulator/duration.ts):
// it stands in for the service and ships as an image of test/emulator alone, so it imports nothing
// of src (test/emulator/self-contained.test.ts); the conformance probe checks both against the service.

/** The units keyward's own formats know (flags and Go-style), in milliseconds. */
const clockUnitMs: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

const flagPattern = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/;

/**
 * keyward's flag and environment-variable format: one decimal number and one unit (ms, s, m, h),
 * surrounding whitespace ignored, rounded to whole milliseconds. "500ms", "1.5m", "2h".
 * Throws for anything else, naming the text.
 */
export function parseFlagDuration(text: string): number {
  const m = flagPattern.exec(text.trim());
  if (!m?.[1] || !m[2]) throw new Error(`"${text}" is not a duration like 30s, 10m or 1h`);
  return Math.round(Number(m[1]) * (clockUnitMs[m[2]] ?? 0));
}

/**
 * Go-style durations as CRD fields take them: one or more decimal numbers, each with a unit
 * (ms, s, m, h), no sign, no spaces. The CRD schemas validate with this very pattern.
 */
export const GO_DURATION_PATTERN = /^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$/;

/**
 * A Go-style duration ("10m", "1h30m", "1.5h", "500ms") in whole milliseconds. Throws for
 * anything GO_DURATION_PATTERN rejects (the text is not trimmed).
 */
export function parseGoDuration(text: string): number {
  if (!GO_DURATION_PATTERN.test(text)) throw new Error(`not a duration: ${text}`);
  let total = 0;
  for (const m of text.matchAll(/([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)/g)) {
    total += Number(m[1]) * (clockUnitMs[m[2] ?? ""] ?? 0);
  }
  return Math.round(total);
}

/** The ms library's units, in every spelling it accepts, in milliseconds (a Map: no "constructor"). */
const msStyleUnitMs: ReadonlyMap<string, number> = new Map(
  Object.entries({
    ms: 1,
    msec: 1,
    msecs: 1,
    millisecond: 1,
    milliseconds: 1,
    s: 1_000,
    sec: 1_000,
    secs: 1_000,
    second: 1_000,
    seconds: 1_000,
    m: 60_000,
    min: 60_000,
    mins: 60_000,
    minute: 60_000,
    minutes: 60_000,
    h: 3_600_000,
    hr: 3_600_000,
    hrs: 3_600_000,
    hour: 3_600_000,
    hours: 3_600_000,
    d: 86_400_000,
    day: 86_400_000,
    days: 86_400_000,
    w: 604_800_000,
    week: 604_800_000,
    weeks: 604_800_000,
    y: 31_557_600_000,
    yr: 31_557_600_000,
    yrs: 31_557_600_000,
    year: 31_557_600_000,
    years: 31_557_600_000,
  }),
);

/**
 * An ms-style duration ("8h", "30m", "1.5 hours", "2 Days", ".5h", "1500" — a bare number is
 * milliseconds) in milliseconds, not rounded; surrounding whitespace ignored, units in any case.
 * undefined when unreadable. Zero reads as 0: whether zero is allowed is the caller's call (the
 * service wants a temporaryRange above zero).
 */
export function parseMsStyleDuration(text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?|\.\d+)\s*([a-z]*)$/i.exec(text.trim());
  if (!match?.[1]) return undefined;
  const unit = (match[2] ?? "").toLowerCase();
  const factor = unit === "" ? 1 : msStyleUnitMs.get(unit);
  return factor === undefined ? undefined : Number(match[1]) * factor;
}
