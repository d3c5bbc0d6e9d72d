// The conformance probe against the emulator: seed what the interface cannot create, run
// every check over real HTTP, and require all of them to pass.

import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Emulator } from "../emulator/server.ts";
import { startEmulator } from "../emulator/server.ts";
import { emulatorFixtures } from "./fixtures.ts";
import type { ProbeFixtures, ProbeResult } from "./probe.ts";
import { runProbe } from "./probe.ts";

const token = randomBytes(24).toString("hex");
let emulator: Emulator;
let fixtures: ProbeFixtures;
let results: ProbeResult[];

beforeAll(async () => {
  const prepared = emulatorFixtures();
  fixtures = prepared.fixtures;
  // Jobs stay pending long enough for the immediate second trigger to find one in progress.
  emulator = await startEmulator({ tokens: [token], seed: prepared.seed, jobDelayMs: 400, rateLimit: false });
  results = await runProbe({
    baseUrl: emulator.url,
    token,
    fixtures,
    helpers: {
      addMember: (m) => {
        emulator.addMember(m);
        return Promise.resolve();
      },
    },
    settleTimeoutMs: 20_000,
  });
}, 180_000);

afterAll(async () => {
  await emulator.close();
});

describe("conformance probe against the emulator", () => {
  it("runs every section, one result per check id", () => {
    const ids = results.map((r) => r.id);
    expect(new Set(ids).size, "duplicate check ids").toBe(ids.length);
    for (const section of ["project.", "membership.", "group.", "token.", "certificate-profile.", "sync.", "auth.", "limit."]) {
      expect(
        ids.some((id) => id.startsWith(section)),
        `no ${section} checks ran`,
      ).toBe(true);
    }
    expect(ids.filter((id) => id.startsWith("limit.")).length).toBeGreaterThanOrEqual(30);
  });

  it("passes every check", () => {
    const failed = results.filter((r) => !r.passed);
    const summary = failed.map((r) => `${r.id}: ${r.detail}`).join("\n");
    expect(
      failed.map((r) => r.id),
      `${failed.length} of ${results.length} checks failed:\n${summary}`,
    ).toEqual([]);
  });

  it("never echoes the bearer token", () => {
    expect(results.some((r) => r.detail.includes(token) || r.description.includes(token))).toBe(false);
  });
});
