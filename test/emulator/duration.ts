// ms-style durations ("30m", "1h", "7d", "1.5 hours", "500"): the format the real service
// accepts for temporaryRange. Returns milliseconds, or undefined when the text is not one.
// The emulator's own parser, not keyward's (src/lib/duration.ts): the emulator stands in for the
// service and ships as an image of test/emulator alone, so it imports nothing of src.
const unitMs: ReadonlyMap<string, number> = new Map(
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

export function parseDuration(text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?|\.\d+)\s*([a-z]*)$/i.exec(text.trim());
  if (!match) return undefined;
  const amount = Number(match[1]);
  const unit = (match[2] ?? "").toLowerCase();
  const factor = unit === "" ? 1 : unitMs.get(unit);
  if (factor === undefined || !(amount > 0)) return undefined;
  return amount * factor;
}
