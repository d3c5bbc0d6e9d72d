// npm run test:matrix [-- v1.32 v1.34 …]: for each supported Kubernetes minor (every
// hack/controlplane-go/kube/v1.Y/), oldest first, builds (or finds) its control plane, then runs
// the integration smoke below against it: the test setup starts that control plane, applies
// keyward's CRDs and waits until they are Established. Prints one row per minor and writes the
// table to ${KEYWARD_STATE_DIR:-.keyward}/test-matrix.md.
import { spawn } from "node:child_process";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ensureBinaries, repoRoot } from "./binaries.ts";
import { minorOf, supportedMinors, kubernetesVersionOf } from "./versions.ts";

/**
 * What differs between minors, each through existing integration tests:
 * - crd/apply, crd/bounds: the generated CRDs as structural schemas, CEL rules with `reason` and
 *   `fieldPath`, and the CEL cost budget of bounded lists (the estimator changes across releases);
 * - kube/informer-watchlist: the informer's streamed initial state (WatchList, on by default in
 *   1.32 and from 1.34, off in 1.33) and its fallback to a list (a control plane with the gate off);
 * - kube/objects: status writes through the /status subresource and metadata patches with retries;
 * - project, secretsync: a reconcile round trip of a Project and a SecretSync against the emulator.
 */
export const smokeFiles = [
  "test/integration/crd/apply.test.ts",
  "test/integration/crd/bounds.test.ts",
  "test/integration/kube/informer-watchlist.test.ts",
  "test/integration/kube/objects.test.ts",
  "test/integration/project.test.ts",
  "test/integration/secretsync.test.ts",
] as const;

export interface MatrixRow {
  version: string;
  /** Seconds the build took, or "cached". */
  build: number | "cached" | "failed";
  crdsEstablished: boolean;
  testSeconds: number;
  passed: number;
  failed: number;
  /** The failed tests' names, or what stopped the run before any test. */
  failures: string[];
}

interface VitestJson {
  testResults?: { assertionResults?: { fullName?: string; status?: string }[] }[];
}

/** Passed and failed tests of a vitest JSON report (skipped ones are neither). */
export function countsOf(report: VitestJson): { passed: number; failed: string[] } {
  let passed = 0;
  const failed: string[] = [];
  for (const file of report.testResults ?? []) {
    for (const test of file.assertionResults ?? []) {
      if (test.status === "passed") passed++;
      else if (test.status === "failed") failed.push(test.fullName ?? "(unnamed)");
    }
  }
  return { passed, failed };
}

export function matrixTable(rows: readonly MatrixRow[]): string {
  const lines = [
    "| Kubernetes | build (s) | CRDs Established | tests (s) | passed | failed |",
    "|---|---|---|---|---|---|",
    ...rows.map((row) =>
      [
        "",
        ` ${row.version} `,
        ` ${row.build} `,
        ` ${row.crdsEstablished ? "yes" : "no"} `,
        ` ${row.testSeconds} `,
        ` ${row.passed} `,
        ` ${row.failed} `,
        "",
      ].join("|"),
    ),
  ];
  const failures = rows.flatMap((row) => row.failures.map((name) => `- ${row.version}: ${name}`));
  return `${lines.join("\n")}\n${failures.length > 0 ? `\nFailed:\n${failures.join("\n")}\n` : ""}`;
}

const log = (line: string) => process.stderr.write(`[test:matrix] ${line}\n`);

async function runMinor(minor: string, outDir: string): Promise<MatrixRow> {
  const version = kubernetesVersionOf(minor);
  const row: MatrixRow = { version, build: "failed", crdsEstablished: false, testSeconds: 0, passed: 0, failed: 0, failures: [] };
  const buildStarted = Date.now();
  try {
    const binaries = await ensureBinaries({ minor, log: (line) => log(`${minor}: ${line}`) });
    row.build = binaries.source === "built" ? Math.round((Date.now() - buildStarted) / 1000) : "cached";
  } catch (error) {
    row.failed = 1;
    row.failures.push(`build: ${(error instanceof Error ? error.message : String(error)).split("\n")[0] ?? ""}`);
    return row;
  }
  const report = join(outDir, `vitest-${minor}.json`);
  await rm(report, { force: true });
  const testStarted = Date.now();
  const vitest = join(repoRoot, "node_modules", "vitest", "vitest.mjs");
  const args = [
    vitest,
    "run",
    "--project",
    "integration",
    "--reporter=default",
    "--reporter=json",
    `--outputFile.json=${report}`,
    ...smokeFiles,
  ];
  const output = await runInheriting(process.execPath, args, { ...process.env, KEYWARD_K8S_MINOR: minor });
  row.testSeconds = Math.round((Date.now() - testStarted) / 1000);
  row.crdsEstablished = /installed \d+ CRD file\(s\) from crds\//.test(output);
  const counts = countsOf(JSON.parse(await readFile(report, "utf8").catch(() => "{}")) as VitestJson);
  row.passed = counts.passed;
  row.failed = counts.failed.length;
  row.failures = counts.failed;
  if (row.passed + row.failed === 0) {
    row.failed = 1;
    row.failures.push(row.crdsEstablished ? "no test ran" : "the control plane or keyward's CRDs did not come up");
  }
  return row;
}

/** Runs a command with its output shown as it comes; resolves with stdout and stderr together. */
function runInheriting(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { cwd: repoRoot, env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    const tee = (stream: NodeJS.WriteStream) => (chunk: Buffer) => {
      output += chunk.toString("utf8");
      stream.write(chunk);
    };
    child.stdout.on("data", tee(process.stdout));
    child.stderr.on("data", tee(process.stderr));
    child.on("error", reject);
    child.on("close", () => resolvePromise(output));
  });
}

async function main(): Promise<number> {
  const supported = supportedMinors();
  const chosen = process.argv.slice(2).map(minorOf);
  const unknown = chosen.filter((minor) => !supported.includes(minor));
  if (unknown.length > 0) {
    console.error(`not supported: ${unknown.join(", ")} (supported: ${supported.join(", ")})`);
    return 2;
  }
  const minors = chosen.length > 0 ? supported.filter((minor) => chosen.includes(minor)) : supported;
  const outDir = join(process.env.KEYWARD_STATE_DIR ?? join(repoRoot, ".keyward"), "test-matrix");
  await mkdir(outDir, { recursive: true });
  const rows: MatrixRow[] = [];
  const resultsFile = join(outDir, "results.md");
  for (const minor of minors) {
    log(`${minor}: ${kubernetesVersionOf(minor)}`);
    rows.push(await runMinor(minor, outDir));
    // Written after every minor, so a long run shows its progress and keeps what it finished.
    await writeFile(resultsFile, matrixTable(rows));
  }
  process.stdout.write(`\n${matrixTable(rows)}\nwritten to ${resultsFile}\n`);
  return rows.every((row) => row.failed === 0) ? 0 : 1;
}

if (import.meta.main) process.exitCode = await main();
