// The default seed (seed.default.json) as a typed value for tests and tools.
import { readFileSync } from "node:fs";
import type { Seed } from "./types.ts";

export function loadDefaultSeed(): Seed {
  return JSON.parse(readFileSync(new URL("./seed.default.json", import.meta.url), "utf8")) as Seed;
}
