// The generated CRD files and the three places they live: crds/ (the source of truth the
// chart and kustomize copy), charts/keyward/crds/ and config/crd/bases/.
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { crdFileName, crdFromSources, crdToYaml, generatedHeader } from "./crd.ts";
import type { CrdSource } from "../engine/kind.ts";

export const crdDirs = ["crds", "charts/keyward/crds", "config/crd/bases"] as const;

/** File name → YAML text, for every kind. */
export function renderCrdFiles(sources: readonly CrdSource[]): Map<string, string> {
  const files = new Map<string, string>();
  for (const src of sources) {
    const name = crdFileName(src);
    if (files.has(name)) throw new Error(`two kinds generate ${name}`);
    files.set(name, crdToYaml(crdFromSources(src)));
  }
  return new Map([...files].sort(([a], [b]) => a.localeCompare(b)));
}

function readIfExists(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

/** Generated files in a directory: those starting with the generated header. */
function generatedFilesIn(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
  return names.filter((n) => n.endsWith(".yaml") && readIfExists(join(dir, n))?.startsWith(generatedHeader)).sort();
}

export interface CrdFileProblem {
  path: string;
  problem: "missing" | "differs" | "stale";
}

/** What differs between the files on disk under `root` and `files`, in every CRD directory. */
export function crdFileProblems(root: string, files: ReadonlyMap<string, string>): CrdFileProblem[] {
  const problems: CrdFileProblem[] = [];
  for (const dir of crdDirs) {
    for (const [name, text] of files) {
      const path = join(dir, name);
      const current = readIfExists(join(root, path));
      if (current === undefined) problems.push({ path, problem: "missing" });
      else if (current !== text) problems.push({ path, problem: "differs" });
    }
    for (const name of generatedFilesIn(join(root, dir))) {
      if (!files.has(name)) problems.push({ path: join(dir, name), problem: "stale" });
    }
  }
  return problems;
}

/** Writes `files` into every CRD directory and deletes generated files no kind produces. */
export function writeCrdFiles(root: string, files: ReadonlyMap<string, string>): CrdFileProblem[] {
  const changed = crdFileProblems(root, files);
  for (const dir of crdDirs) mkdirSync(join(root, dir), { recursive: true });
  for (const { path, problem } of changed) {
    if (problem === "stale") rmSync(join(root, path));
    else writeFileSync(join(root, path), files.get(basename(path)) ?? "");
  }
  return changed;
}
