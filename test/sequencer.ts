// npm test's file order: vitest's own, except that the few files that take minutes start first.
//
// vitest orders by its results cache (slowest first) and, for files it has never run, by size. A
// fresh clone (CI) has no cache, and size says nothing of time: the short soak, a small file that
// runs for about 8 minutes, started last of the integration files and ran alone while the other
// worker sat idle, and the unit project waits for the integration project to finish. Started
// first, the long files run beside the rest (longest processing time first).
import { basename, dirname } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

// "<directory>/<file>" under test/, longest first: the files over two minutes in a full run.
export const startFirst = ["integration/soak.test.ts", "integration/create-claim-rules.test.ts"];

const nameOf = (moduleId: string): string => `${basename(dirname(moduleId))}/${basename(moduleId)}`;

function rank(moduleId: string): number {
  const at = startFirst.indexOf(nameOf(moduleId));
  return at === -1 ? startFirst.length : at;
}

// Stable: keeps the given order (projects, then vitest's) apart from moving the named files ahead
// of the rest of their project.
export function longFilesFirst<T extends Pick<TestSpecification, "moduleId"> & { project: { name: string } }>(files: readonly T[]): T[] {
  const projectAt = new Map<string, number>();
  files.forEach((f) => {
    if (!projectAt.has(f.project.name)) projectAt.set(f.project.name, projectAt.size);
  });
  return files
    .map((file, at) => ({ file, at }))
    .sort(
      (a, b) =>
        (projectAt.get(a.file.project.name) ?? 0) - (projectAt.get(b.file.project.name) ?? 0) ||
        rank(a.file.moduleId) - rank(b.file.moduleId) ||
        a.at - b.at,
    )
    .map(({ file }) => file);
}

export class LongFilesFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    return longFilesFirst(await super.sort(files));
  }
}
