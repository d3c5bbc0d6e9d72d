// Reading and writing the files derived from the registry (src/crd/derived.ts renders them), and the
// chart's values reference (src/crd/values-reference.ts, from values.schema.json and values.yaml).
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { format, resolveConfig } from "prettier";
import { ANNOTATION_PAUSED } from "../engine/meta.ts";
import { kinds, reasonRegistry } from "../resources/registry.ts";
import { derivedFiles, type DerivedFile } from "./derived.ts";
import { valuesFile, valuesReference, valuesReferenceFile, valuesSchemaFile } from "./values-reference.ts";

export interface DerivedFileProblem {
  path: string;
  problem: "out of date";
}

function readIfThere(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

/** Prettier's text of a file it formats (the plugin), so the generated part is what `npm run lint` expects. */
async function formatted(path: string, text: string): Promise<string> {
  if (!path.endsWith(".cjs") && !path.endsWith(".ts")) return text;
  return format(text, { ...(await resolveConfig(path)), filepath: path });
}

/** Files derived from other files of the repository rather than the registry: the chart's values reference. */
function fromRepoFiles(root: string): DerivedFile[] {
  const read = (path: string): string => readFileSync(join(root, path), "utf8");
  return [{ path: valuesReferenceFile, render: () => valuesReference(read(valuesSchemaFile), read(valuesFile)) }];
}

async function renderAll(root: string): Promise<{ path: string; current: string | undefined; next: string }[]> {
  return Promise.all(
    [...derivedFiles(kinds, reasonRegistry(), ANNOTATION_PAUSED), ...fromRepoFiles(root)].map(async (f) => {
      const path = join(root, f.path);
      const current = readIfThere(path);
      return { path: f.path, current, next: await formatted(path, f.render(current)) };
    }),
  );
}

export async function derivedFileProblems(root: string): Promise<DerivedFileProblem[]> {
  return (await renderAll(root)).filter((f) => f.current !== f.next).map((f) => ({ path: f.path, problem: "out of date" }));
}

export async function writeDerivedFiles(root: string): Promise<DerivedFileProblem[]> {
  const changed = (await renderAll(root)).filter((f) => f.current !== f.next);
  for (const f of changed) writeFileSync(join(root, f.path), f.next);
  return changed.map((f) => ({ path: f.path, problem: "out of date" }));
}
