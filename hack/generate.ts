// `npm run generate`: writes the CRD of every kind (from the zod schemas in src/resources) into
// crds/, charts/keyward/crds/ and config/crd/bases/, and deletes generated files no kind
// produces any more. `npm run generate -- --check` changes nothing and exits 1 when the files
// on disk differ from what the schemas generate (CI and tests).
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { crdFileProblems, renderCrdFiles, writeCrdFiles } from "../src/crd/files.ts";
import { crdSources } from "../src/resources/index.ts";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const check = process.argv.includes("--check");

const files = renderCrdFiles(crdSources);
if (check) {
  const problems = crdFileProblems(root, files);
  for (const { path, problem } of problems) console.error(`${problem}: ${path}`);
  if (problems.length > 0) {
    console.error("CRDs are out of date: run `npm run generate`.");
    process.exit(1);
  }
  console.log(`${files.size} CRDs up to date.`);
} else {
  const changed = writeCrdFiles(root, files);
  for (const { path, problem } of changed) console.log(`${problem === "stale" ? "deleted" : "wrote"} ${path}`);
  console.log(`${files.size} CRDs generated, ${changed.length} files changed.`);
}
