// The committed CRDs are what the zod schemas generate: a schema change without
// `npm run generate` (or a hand edit of a generated file) fails here.
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { crdDirs, crdFileProblems, renderCrdFiles } from "../../../src/crd/files.ts";
import { crdSources } from "../../../src/resources/index.ts";

const repoRoot = fileURLToPath(new URL("../../..", import.meta.url));

describe("committed CRDs", () => {
  const files = renderCrdFiles(crdSources);

  it("generate one file per kind", () => {
    expect(files.size).toBe(crdSources.length);
  });

  it.each(crdDirs)("in %s equal what the schemas generate (run `npm run generate`)", (dir) => {
    const problems = crdFileProblems(repoRoot, files).filter((p) => p.path.startsWith(`${dir}/`));
    expect(problems).toEqual([]);
  });
});
