// `npm run lint:chart`: `helm lint --strict` of charts/keyward, then `helm template | kubeconform
// -strict` against schemas for every kind the chart renders (hack/lint/schemas.ts), for the
// default values and each value set in hack/lint/values/. Fails on any warning, any invalid
// document, and any kind no schema describes.
//   node hack/lint/chart.ts
// helm comes from KEYWARD_HELM or hack/tools/ensure-helm.sh's cache, kubeconform from
// KEYWARD_KUBECONFORM or hack/tools/ensure-kubeconform.sh's cache (.ci/run builds both first).
import { execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { basename, join } from "node:path";
import { loadAll } from "js-yaml";
import { kindsOf, loadSchemaSources, repoRoot, schemaLocationTemplate, writeSchemas, type SchemaSources } from "./schemas.ts";

export const chartDir = join(repoRoot, "charts", "keyward");
export const valueSetsDir = join(repoRoot, "hack", "lint", "values");

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function run(file: string, args: string[], input?: string): Promise<RunResult> {
  return new Promise((resolvePromise, reject) => {
    const child = execFile(file, args, { cwd: repoRoot, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error && typeof error.code !== "number") {
        reject(new Error(`${file}: ${error.message}`));
        return;
      }
      resolvePromise({ code: typeof error?.code === "number" ? error.code : 0, stdout, stderr });
    });
    child.stdin?.end(input ?? "");
  });
}

/** $envVar, else the tool cache's NAME-VERSION/NAME where the ensure script's default VERSION says. */
export async function toolBinary(name: string, envVar: string, ensureScript: string): Promise<string> {
  const fromEnv = process.env[envVar];
  if (fromEnv) return fromEnv;
  // The ensure script prints the path, building the tool only when it is not cached yet.
  const printed = await new Promise<string>((resolvePromise, reject) => {
    const child = spawn("bash", [join(repoRoot, "hack", "tools", ensureScript)], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolvePromise(out.trim()) : reject(new Error(`${ensureScript} failed (exit ${code})`))));
  });
  if (!existsSync(printed)) throw new Error(`${ensureScript} printed ${printed}, which does not exist`);
  return printed;
}

export const helmBinary = (): Promise<string> => toolBinary("helm", "KEYWARD_HELM", "ensure-helm.sh");
export const kubeconformBinary = (): Promise<string> => toolBinary("kubeconform", "KEYWARD_KUBECONFORM", "ensure-kubeconform.sh");

export const cacheDir = (): string => process.env["KEYWARD_CACHE_DIR"] ?? join(homedir(), ".cache", "keyward");

/**
 * kubeconform -strict of a multi-document YAML text, against schemas written into a fresh
 * directory for exactly the kinds the text holds. A kind without a schema fails (kubeconform is
 * not given -ignore-missing-schemas).
 */
export async function kubeconform(manifests: string, sources: SchemaSources, bin: string): Promise<RunResult> {
  const dir = await mkdtemp(join(tmpdir(), "keyward-schemas-"));
  try {
    const missing = await writeSchemas(dir, sources, kindsOf(loadAll(manifests)));
    const result = await run(
      bin,
      ["-strict", "-summary", "-output", "text", "-schema-location", join(dir, schemaLocationTemplate), "-"],
      manifests,
    );
    if (missing.length > 0) {
      const names = missing.map((m) => `${m.apiVersion} ${m.kind}`).join(", ");
      return { ...result, code: result.code || 1, stderr: `${result.stderr}no schema for: ${names}\n` };
    }
    return result;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The value sets: the chart's defaults (no file), then each file in hack/lint/values/. */
export async function valueSets(): Promise<{ name: string; file?: string }[]> {
  const files = (await readdir(valueSetsDir)).filter((f) => f.endsWith(".yaml")).sort();
  return [{ name: "defaults" }, ...files.map((f) => ({ name: basename(f, ".yaml"), file: join(valueSetsDir, f) }))];
}

export interface ChartLintResult {
  name: string;
  ok: boolean;
  output: string;
}

/** helm lint --strict and helm template | kubeconform -strict of the chart with one values file (or none). */
export async function lintValueSet(
  set: { name: string; file?: string },
  tools: { helm: string; kubeconform: string; sources: SchemaSources },
  chart = chartDir,
): Promise<ChartLintResult> {
  const values = set.file === undefined ? [] : ["--values", set.file];
  const lint = await run(tools.helm, ["lint", "--strict", chart, ...values]);
  // helm lint --strict fails on warnings; INFO lines (e.g. "icon is recommended") are not failures.
  if (lint.code !== 0) return { name: set.name, ok: false, output: `helm lint --strict:\n${lint.stdout}${lint.stderr}` };
  // As on a cluster with prometheus-operator: without its CRDs the ServiceMonitor and the
  // PrometheusRule are left out (renderMode skipIfMissing), and there would be nothing to check.
  const monitoring = ["ServiceMonitor", "PrometheusRule"].flatMap((kind) => ["--api-versions", `monitoring.coreos.com/v1/${kind}`]);
  const rendered = await run(tools.helm, ["template", "keyward", chart, "--namespace", "keyward-system", ...monitoring, ...values]);
  if (rendered.code !== 0) return { name: set.name, ok: false, output: `helm template:\n${rendered.stderr}` };
  const checked = await kubeconform(rendered.stdout, tools.sources, tools.kubeconform);
  return { name: set.name, ok: checked.code === 0, output: `${checked.stdout}${checked.stderr}` };
}

async function main(): Promise<void> {
  const [helm, kubeconformBin, sources] = await Promise.all([helmBinary(), kubeconformBinary(), loadSchemaSources()]);
  let failed = 0;
  for (const set of await valueSets()) {
    const result = await lintValueSet(set, { helm, kubeconform: kubeconformBin, sources });
    const summary = result.output.trim().split("\n").at(-1) ?? "";
    if (result.ok) {
      console.log(`lint:chart ${set.name}: ok (${summary})`);
    } else {
      failed++;
      console.error(`lint:chart ${set.name}: FAILED\n${result.output}`);
    }
  }
  if (failed > 0) process.exit(1);
}

if (process.argv[1] !== undefined && import.meta.filename === process.argv[1]) await main();
