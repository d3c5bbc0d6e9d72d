// The committed CRDs are what the zod schemas generate: a schema change without
// `npm run generate` (or a hand edit of a generated file) fails here.
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { crdDirs, crdFileProblems, renderKindCrdFiles } from "../../../src/crd/files.ts";
import { derivedFileProblems } from "../../../src/crd/derived-files.ts";
import { kinds } from "../../../src/resources/registry.ts";

const crdSources = kinds.map((k) => k.crd);

const repoRoot = fileURLToPath(new URL("../../..", import.meta.url));

describe("committed CRDs", () => {
  const files = renderKindCrdFiles(kinds);

  it("generate one file per kind", () => {
    expect(files.size).toBe(crdSources.length);
  });

  it.each(crdDirs)("in %s equal what the schemas generate (run `npm run generate`)", (dir) => {
    const problems = crdFileProblems(repoRoot, files).filter((p) => p.path.startsWith(`${dir}/`));
    expect(problems).toEqual([]);
  });
});

describe("files derived from the kind registry (the plugin's constants, health.lua's reason tables, docs/kinds.md)", () => {
  it("are what the registry generates (run `npm run generate`)", async () => {
    expect(await derivedFileProblems(repoRoot)).toEqual([]);
  });
});
