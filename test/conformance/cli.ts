// Run the conformance probe against a deployment and print a table.
//
//   npx node test/conformance/cli.ts --url http://127.0.0.1:8080 --token T --emulator-admin
//   npx node test/conformance/cli.ts --url https://service.example --fixtures fixtures.json
//
// The token may come from PROBE_TOKEN instead of --token (keeps it out of shell history).
// --emulator-admin seeds fresh fixtures through the emulator's /_emulator admin endpoints and
// adds members through them; otherwise --fixtures names a JSON file of ProbeFixtures
// (see README.md). Exit status: 0 when every check passed, 1 otherwise, 2 for usage errors.

import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import type { ProbeFixtures, ProbeHelpers, ProbeResult } from "./probe.ts";
import { runProbe } from "./probe.ts";
import { adminHelpers, emulatorFixtures, seedThroughAdmin } from "./fixtures.ts";

const USAGE =
  "usage: cli.ts --url URL (--token T | env PROBE_TOKEN) (--emulator-admin | --fixtures FILE) [--settle-timeout-ms N] [--only PREFIX]";

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      url: { type: "string" },
      token: { type: "string" },
      fixtures: { type: "string" },
      "emulator-admin": { type: "boolean", default: false },
      "settle-timeout-ms": { type: "string" },
      only: { type: "string" },
      help: { type: "boolean", default: false },
    },
  });
  const token = values.token ?? process.env.PROBE_TOKEN;
  if (values.help || values.url === undefined || token === undefined || (values.fixtures === undefined && !values["emulator-admin"])) {
    console.error(USAGE);
    return 2;
  }
  const { fixtures, helpers } = await prepare(values.url, values.fixtures, values["emulator-admin"]);
  const settle = values["settle-timeout-ms"];
  const results = await runProbe({
    baseUrl: values.url,
    token,
    fixtures,
    helpers,
    ...(settle === undefined ? {} : { settleTimeoutMs: Number(settle) }),
  });
  const only = values.only;
  const shown = only === undefined ? results : results.filter((r) => r.id.startsWith(only));
  printTable(shown);
  return shown.every((r) => r.passed) ? 0 : 1;
}

async function prepare(
  url: string,
  fixturesFile: string | undefined,
  viaAdmin: boolean,
): Promise<{ fixtures: ProbeFixtures; helpers: ProbeHelpers }> {
  if (fixturesFile !== undefined) {
    const fixtures = JSON.parse(readFileSync(fixturesFile, "utf8")) as ProbeFixtures;
    return { fixtures, helpers: viaAdmin ? adminHelpers(url) : {} };
  }
  const { seed, fixtures } = emulatorFixtures();
  await seedThroughAdmin(url, seed);
  return { fixtures, helpers: adminHelpers(url) };
}

function printTable(results: ProbeResult[]): void {
  const idWidth = Math.max(5, ...results.map((r) => r.id.length));
  console.log(`${"check".padEnd(idWidth)}  result  detail`);
  console.log(`${"-".repeat(idWidth)}  ------  ------`);
  for (const r of results) {
    const detail = r.passed ? r.description : `${r.description} -- ${r.detail}`;
    console.log(`${r.id.padEnd(idWidth)}  ${r.passed ? "pass  " : "FAIL  "}  ${detail}`);
  }
  const failed = results.filter((r) => !r.passed).length;
  console.log(`\n${results.length - failed} passed, ${failed} failed`);
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : "probe failed");
    process.exitCode = 2;
  },
);
