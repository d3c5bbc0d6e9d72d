// CLI: npm run emulator -- --port P --token T [--token T2 ...] [--seed file.json | --no-seed]
//   [--persist state.json] [--job-delay-ms N] [--no-rate-limit] [--host H]
//   [--without-operation getSecretSyncByName ...]  (serve only what a stricter server serves)
// Tokens also come from EMULATOR_TOKENS (comma-separated). Without --seed the default seed
// (seed.default.json next to this file) is loaded.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { loadDefaultSeed } from "./default-seed.ts";
import { defaultRateLimit, startEmulator } from "./server.ts";
import type { Seed } from "./types.ts";

function readSeed(path: string | undefined, noSeed: boolean): Seed | undefined {
  if (noSeed) return undefined;
  if (path === undefined) return loadDefaultSeed();
  return JSON.parse(readFileSync(path, "utf8")) as Seed;
}

function toNumber(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${flag} needs a non-negative number`);
  return value;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      host: { type: "string" },
      port: { type: "string" },
      token: { type: "string", multiple: true },
      seed: { type: "string" },
      "no-seed": { type: "boolean" },
      persist: { type: "string" },
      "job-delay-ms": { type: "string" },
      "no-rate-limit": { type: "boolean" },
      "without-operation": { type: "string", multiple: true },
    },
  });
  const envTokens = (process.env["EMULATOR_TOKENS"] ?? "")
    .split(",")
    .map((t) => t.trim())
    .filter((t) => t !== "");
  const tokens = [...(values.token ?? []), ...envTokens];
  if (tokens.length === 0) throw new Error("give at least one --token (or EMULATOR_TOKENS)");
  const seed = readSeed(values.seed, values["no-seed"] === true);
  const port = toNumber(values.port, "--port");
  const jobDelayMs = toNumber(values["job-delay-ms"], "--job-delay-ms");
  const emulator = await startEmulator({
    tokens,
    ...(values.host === undefined ? {} : { host: values.host }),
    ...(port === undefined ? {} : { port }),
    ...(seed === undefined ? {} : { seed }),
    ...(values.persist === undefined ? {} : { persistPath: values.persist }),
    ...(jobDelayMs === undefined ? {} : { jobDelayMs }),
    rateLimit: values["no-rate-limit"] === true ? false : defaultRateLimit,
    ...(values["without-operation"] === undefined ? {} : { withoutOperations: values["without-operation"] }),
  });
  console.log(`emulator listening on ${emulator.url}`);
  const stop = (): void => {
    emulator.close().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error("emulator: close failed", err);
        process.exit(1);
      },
    );
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

main().catch((err: unknown) => {
  console.error(`emulator: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(2);
});
