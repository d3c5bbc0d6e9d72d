// ms-style durations ("30m", "1h", "7d", "1.5 hours", "500"): the format the real service
// accepts for temporaryRange, read by keyward's own parser (src/lib/duration.ts, the ms library's
// grammar) with the service's rule on top: the range must be above zero. Returns milliseconds, or
// undefined when the text is not one.
import { parseMsStyleDuration } from "../../src/lib/duration.ts";

export function parseDuration(text: string): number | undefined {
  const ms = parseMsStyleDuration(text);
  return ms !== undefined && ms > 0 ? ms : undefined;
}
