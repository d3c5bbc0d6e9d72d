// `npm run generate`: writes every file derived from the kind registry (src/resources/registry.ts):
// the CRD of every kind into crds/ and config/crd/bases/, and as a template of the chart into
// charts/keyward/templates/crds/ (deleting CRD files no kind produces any more, and any left in the
// chart's former crds/ folder), the kubectl plugin's constants, the Argo CD health check's reason
// tables (and the Argo CD files rendered from health.lua), docs/kinds.md, docs/reference/api.md and api-v1alpha1.md
// (every kind's fields, in v1beta1 and in v1alpha1, and the labels and annotations keyward uses), the
// options tables of docs/destinations/ (each destination's SecretSync fields in v1beta1) and docs/reference/values.md (every chart
// value, from charts/keyward/values.schema.json and values.yaml).
// `npm run generate -- --check` changes nothing and exits 1 when a file on disk differs from what
// the registry generates (CI and tests).
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { crdFileProblems, renderKindCrdFiles, writeCrdFiles } from "../src/crd/files.ts";
import { derivedFileProblems, writeDerivedFiles } from "../src/crd/derived-files.ts";
import { kinds } from "../src/resources/registry.ts";
import { renderArgoCdFiles } from "./tools/render-argocd-cm.ts";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const check = process.argv.includes("--check");

const files = renderKindCrdFiles(kinds);
if (check) {
  const problems = [...crdFileProblems(root, files), ...(await derivedFileProblems(root))];
  for (const { path, problem } of problems) console.error(`${problem}: ${path}`);
  if (problems.length > 0) {
    console.error("Generated files are out of date: run `npm run generate`.");
    process.exit(1);
  }
  console.log(`${files.size} CRDs and the files derived from the registry up to date.`);
} else {
  const changed = [...writeCrdFiles(root, files), ...(await writeDerivedFiles(root))];
  for (const { path, problem } of changed) console.log(`${problem === "stale" ? "deleted" : "wrote"} ${path}`);
  // The Argo CD files embed health.lua, whose reason tables may just have changed.
  await renderArgoCdFiles();
  console.log(`${files.size} CRDs and the files derived from the registry generated, ${changed.length} files changed.`);
}
