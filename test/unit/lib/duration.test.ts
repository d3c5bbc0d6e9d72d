// The three duration formats keyward reads: its own flags, Go-style CRD fields, and the
// service's ms-style temporaryRange. Each accepts exactly what it accepted before they shared a module.
import { describe, expect, it } from "vitest";
import { GO_DURATION_PATTERN, parseFlagDuration, parseGoDuration, parseMsStyleDuration } from "../../../src/lib/duration.ts";

describe("parseFlagDuration (flags and environment variables)", () => {
  it.each([
    ["500ms", 500],
    ["30s", 30_000],
    ["1.5m", 90_000],
    ["10m", 600_000],
    ["2h", 7_200_000],
    ["0s", 0],
    [" 45s\n", 45_000],
    ["0.0004s", 0],
    ["2.5ms", 3],
  ])("%j is %d ms", (text, ms) => expect(parseFlagDuration(text)).toBe(ms));

  it.each(["10 minutes", "10", "1h30m", "1d", "-5s", "+5s", ".5s", "5.s", "5 s", "5S", "1e3ms", "", "soon"])(
    "rejects %j, naming it",
    (text) => {
      expect(() => parseFlagDuration(text)).toThrow(`"${text}" is not a duration like 30s, 10m or 1h`);
    },
  );
});

describe("parseGoDuration (CRD fields such as renewBefore)", () => {
  it.each([
    ["10m", 600_000],
    ["1h30m", 5_400_000],
    ["1.5h", 5_400_000],
    ["500ms", 500],
    ["2s", 2_000],
    ["1h1m1s1ms", 3_661_001],
    ["30m1h", 5_400_000],
    ["1m1m", 120_000],
    ["0s", 0],
    ["0.0004s", 0],
    ["1.5ms", 2],
  ])("%s is %d ms", (text, ms) => expect(parseGoDuration(text)).toBe(ms));

  it.each(["10", "1d", "1h 30m", " 10m", "10m ", "-1h", ".5h", "5.h", "10M", "1us", "", "5 minutes"])(
    "rejects %j as GO_DURATION_PATTERN does",
    (text) => {
      expect(GO_DURATION_PATTERN.test(text)).toBe(false);
      expect(() => parseGoDuration(text)).toThrow(`not a duration: ${text}`);
    },
  );

  it("keeps the pattern the CRD schemas were generated with", () => {
    expect(GO_DURATION_PATTERN.source).toBe("^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$");
    expect(GO_DURATION_PATTERN.flags).toBe("");
  });
});

describe("parseMsStyleDuration (the service's temporaryRange)", () => {
  it.each([
    ["1h", 3_600_000],
    ["60m", 3_600_000],
    ["1.5 hours", 5_400_000],
    ["7d", 604_800_000],
    ["250ms", 250],
    ["1500", 1500],
    ["2 weeks", 1_209_600_000],
    ["1y", 31_557_600_000],
    ["2 Days", 172_800_000],
    ["1H", 3_600_000],
    [".5h", 1_800_000],
    ["0.5 s", 500],
    ["  30 mins ", 1_800_000],
    ["1\tsec", 1_000],
    ["1.5", 1.5],
    ["0", 0],
    ["0h", 0],
  ])("%j is %d ms", (text, ms) => expect(parseMsStyleDuration(text)).toBe(ms));

  it.each([
    ["ms", 1],
    ["msec", 1],
    ["msecs", 1],
    ["millisecond", 1],
    ["milliseconds", 1],
    ["s", 1_000],
    ["sec", 1_000],
    ["secs", 1_000],
    ["second", 1_000],
    ["seconds", 1_000],
    ["m", 60_000],
    ["min", 60_000],
    ["mins", 60_000],
    ["minute", 60_000],
    ["minutes", 60_000],
    ["h", 3_600_000],
    ["hr", 3_600_000],
    ["hrs", 3_600_000],
    ["hour", 3_600_000],
    ["hours", 3_600_000],
    ["d", 86_400_000],
    ["day", 86_400_000],
    ["days", 86_400_000],
    ["w", 604_800_000],
    ["week", 604_800_000],
    ["weeks", 604_800_000],
    ["y", 31_557_600_000],
    ["yr", 31_557_600_000],
    ["yrs", 31_557_600_000],
    ["year", 31_557_600_000],
    ["years", 31_557_600_000],
  ])("knows the unit %s (%d ms)", (unit, ms) => expect(parseMsStyleDuration(`2${unit}`)).toBe(2 * ms));

  it.each(["soon", "1 fortnight", "", "h", "-1h", "+1h", "1h30m", "1.h", "1e3", "1 constructor", "1 toString", "1,5h", "1 h r"])(
    "is undefined for %j",
    (text) => expect(parseMsStyleDuration(text)).toBeUndefined(),
  );
});
