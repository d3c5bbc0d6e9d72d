// The default seed (seed.default.json) as a typed value for tests and tools.
import { readFileSync } from "node:fs";
import type { Seed } from "./types.ts";

/** Fixed ids of seed.default.json. */
export const seedIds = {
  demoProject: "a1b2c3d4-0005-4a00-8000-000000000001",
  pkiProject: "a1b2c3d4-0005-4a00-8000-000000000002",
  identity: "a1b2c3d4-0003-4a00-8000-000000000002",
  platformGroup: "a1b2c3d4-0002-4a00-8000-000000000001",
  securityGroup: "a1b2c3d4-0002-4a00-8000-000000000002",
  alice: "alice@example.com",
  bob: "bob@example.com",
} as const;

/** The seeded connection of each destination. */
export const connectionIds = {
  "workflow-engine": "a1b2c3d4-0004-4a00-8000-000000000001",
  "code-host": "a1b2c3d4-0004-4a00-8000-000000000002",
  "data-platform": "a1b2c3d4-0004-4a00-8000-000000000003",
  "cloud-secrets-manager": "a1b2c3d4-0004-4a00-8000-000000000004",
  "app-platform": "a1b2c3d4-0004-4a00-8000-000000000005",
  "git-host": "a1b2c3d4-0004-4a00-8000-000000000006",
  monitoring: "a1b2c3d4-0004-4a00-8000-000000000007",
} as const;

export function loadDefaultSeed(): Seed {
  return JSON.parse(readFileSync(new URL("./seed.default.json", import.meta.url), "utf8")) as Seed;
}
