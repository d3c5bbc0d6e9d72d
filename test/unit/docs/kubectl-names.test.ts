// keyward's kinds share their plural names with other operators' CRDs: `projects` (OpenShift),
// `providerconfigs` (Crossplane), `secretsyncs` (secrets-store-sync-controller). A kubectl line
// that names a kind bare acts on whichever the cluster resolves first, so every kubectl line a
// user is shown (the README, docs/, the chart's README and notes, the samples' comments) names
// keyward's kinds qualified (`projects.keyward.dev`) or by short name (`kwproj`).
import { readFileSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { kinds } from "../../../src/resources/registry.ts";

const root = resolve(import.meta.dirname, "..", "..", "..");
const inDir = (dir: string, ext: string): string[] =>
  (readdirSync(join(root, dir), { recursive: true }) as string[])
    .filter((f) => f.endsWith(ext) && !f.includes(".vitepress") && !f.includes("node_modules"))
    .map((f) => join(dir, f));
const files = [
  "README.md",
  "charts/keyward/README.md",
  "charts/keyward/templates/NOTES.txt",
  ...inDir("docs", ".md"),
  ...inDir("config/samples", ".yaml"),
];

/** Every name kubectl resolves for a kind without its group: plural, singular and kind, any case. */
const bareNames = kinds.flatMap((k) => [k.crd.plural, k.crd.singular ?? k.crd.kind.toLowerCase(), k.crd.kind.toLowerCase()]);

/**
 * The kubectl commands of a line: an inline code span starting with `kubectl` (to its closing
 * backtick), or the line itself when it is a command (a code block's line, a YAML comment's),
 * up to a `#` comment. "kubectl" in prose is no command.
 */
function commands(line: string): string[] {
  const spans = [...line.matchAll(/`(kubectl\s[^`]*)`?/g)].map((m) => m[1] ?? "");
  const whole = /^\s*(?:#\s*)?(?:\$\s+)?(kubectl\s.*)$/.exec(line)?.[1];
  return [...spans, ...(whole !== undefined && !line.trimStart().startsWith("`") ? [whole] : [])].map((c) => c.split(/\s#/)[0] ?? "");
}

/** The bare kind names of a line's kubectl commands: a word that is one, alone or before `/name`. */
export function bareKindNames(line: string): string[] {
  return commands(line).flatMap((command) =>
    command
      .split(/[\s,'"()]+/)
      .map((word) => word.split("/")[0] ?? "")
      .filter((word) => bareNames.includes(word.toLowerCase())),
  );
}

describe("kubectl lines in the docs", () => {
  it("finds a bare name and lets a qualified or short one be", () => {
    expect(bareKindNames("kubectl -n team-a annotate secretsync payments-monitoring x=y")).toEqual(["secretsync"]);
    expect(bareKindNames("kubectl get providerconfigs,projects.keyward.dev -A")).toEqual(["providerconfigs"]);
    expect(bareKindNames("kubectl wait project/payments --for=condition=Ready")).toEqual(["project"]);
    expect(bareKindNames("kubectl apply -f config/samples/secretsync-monitoring.yaml   # the project")).toEqual([]);
    expect(bareKindNames("kubectl get kwproj,secretsyncs.keyward.dev,keyward -A")).toEqual([]);
    expect(bareKindNames("#   kubectl annotate secretsync x a=b")).toEqual(["secretsync"]);
    expect(bareKindNames("Base URLs (`kubectl get providerconfigs -A`) for a project")).toEqual(["providerconfigs"]);
    expect(bareKindNames("deleted first (kubectl's order, and kubectl would pick a project)")).toEqual([]);
  });

  it("name keyward's kinds qualified or by short name", () => {
    const bare = files.flatMap((file) =>
      readFileSync(join(root, file), "utf8")
        .split("\n")
        .flatMap((line, i) => bareKindNames(line).map((name) => `${file}:${i + 1}: ${name} in: ${line.trim()}`)),
    );
    expect(bare).toEqual([]);
  });

  it("the docs say why, next to the first commands", () => {
    for (const file of ["README.md", "docs/getting-started.md"]) {
      const text = readFileSync(join(root, file), "utf8").replace(/\s+/g, " ");
      for (const said of ["OpenShift", "`projects`", "Crossplane", "`providerconfigs`", "secrets-store-sync-controller", "`secretsyncs`"]) {
        expect(text, file).toContain(said);
      }
    }
  });
});
