import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, test } from "vitest";
import { longFilesFirst, startFirst } from "../sequencer.ts";

const testDir = resolve(import.meta.dirname, "..");
const spec = (project: string, path: string): { moduleId: string; project: { name: string } } => ({
  moduleId: join(testDir, path),
  project: { name: project },
});
const paths = (specs: readonly { moduleId: string }[]): string[] => specs.map((s) => s.moduleId.slice(testDir.length + 1));

describe("npm test's file order", () => {
  test("names files that exist", () => {
    for (const name of startFirst) expect(existsSync(join(testDir, name)), name).toBe(true);
  });

  test("moves the long files ahead of the rest of their project, longest first, and keeps the rest in order", () => {
    // vitest's cold order: integration before unit, then by size (the soak's small file last).
    const cold = [
      spec("integration", "integration/secretsync.test.ts"),
      spec("integration", "integration/create-claim-rules.test.ts"),
      spec("integration", "integration/project.test.ts"),
      spec("integration", "integration/soak.test.ts"),
      spec("unit", "unit/chart/chart.test.ts"),
      spec("unit", "unit/lib/ring.test.ts"),
    ];
    expect(paths(longFilesFirst(cold))).toEqual([
      "integration/soak.test.ts",
      "integration/create-claim-rules.test.ts",
      "integration/secretsync.test.ts",
      "integration/project.test.ts",
      "unit/chart/chart.test.ts",
      "unit/lib/ring.test.ts",
    ]);
  });

  test("never moves a file into another project's turn", () => {
    const cold = [spec("unit", "unit/lib/ring.test.ts"), spec("integration", "integration/soak.test.ts")];
    expect(paths(longFilesFirst(cold))).toEqual(["unit/lib/ring.test.ts", "integration/soak.test.ts"]);
  });
});
