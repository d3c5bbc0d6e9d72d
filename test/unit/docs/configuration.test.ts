// docs/configuration.md names every setting keyward reads: each flag and its environment
// variable, as keyward's own usage text lists them (src/config.ts), so a new setting cannot ship
// undocumented.
import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { usage } from "../../../src/config.ts";

const root = resolve(import.meta.dirname, "..", "..", "..");

describe("docs/configuration.md", () => {
  const settings = [...usage.matchAll(/^ {2}(--[a-z-]+)\s+([A-Z_]+)$/gm)].map((m) => ({ flag: m[1]!, env: m[2]! }));

  it("reads the settings from keyward's usage text", () => {
    expect(settings.length).toBeGreaterThan(30);
    expect(settings).toContainEqual({ flag: "--resync-interval", env: "RESYNC_INTERVAL" });
  });

  it("names every flag and environment variable", async () => {
    const text = await readFile(join(root, "docs", "configuration.md"), "utf8");
    const missing = settings.filter((s) => !text.includes(`\`${s.flag}\``) || !text.includes(`\`${s.env}\``));
    expect(missing).toEqual([]);
  });
});
