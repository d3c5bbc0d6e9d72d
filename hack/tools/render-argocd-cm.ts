// Renders argocd/argocd-cm-health.yaml (values for the argo-cd Helm chart: configs.cm): the one
// health script argocd/health.lua under one key per keyward kind. `npx node hack/tools/render-argocd-cm.ts` writes it;
// `--check` changes nothing and exits 1 when the file is out of date (the unit test does the same).
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { crdSources } from "../../src/resources/index.ts";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const healthFile = join(root, "argocd", "health.lua");
export const valuesFile = join(root, "argocd", "argocd-cm-health.yaml");

/** keyward's kinds, from the CRD sources the CRDs are generated from, sorted. */
export function keywardKinds(): string[] {
  return crdSources.map((s) => s.kind).sort((a, b) => a.localeCompare(b));
}

/** The one health script, under each kind's key. */
export function healthScripts(): { kind: string; script: string }[] {
  const script = readFileSync(healthFile, "utf8");
  return keywardKinds().map((kind) => ({ kind, script }));
}

export function renderValues(scripts: { kind: string; script: string }[]): string {
  const lines = [
    "# Argo CD health checks for keyward's kinds, as values for the argo-cd Helm chart",
    "# (`helm upgrade argocd argo/argo-cd -f argocd-cm-health.yaml`, merged with your own values).",
    "# For a plain argocd-cm ConfigMap, copy the keys under configs.cm into its data.",
    "# Generated from argocd/health.lua by `npx node hack/tools/render-argocd-cm.ts`: do not edit.",
    "configs:",
    "  cm:",
  ];
  for (const { kind, script } of scripts) {
    lines.push(`    resource.customizations.health.keyward.dev_${kind}: |`);
    for (const line of script.replace(/\n$/, "").split("\n")) lines.push(line === "" ? "" : `      ${line}`);
  }
  return `${lines.join("\n")}\n`;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const rendered = renderValues(healthScripts());
  if (process.argv.includes("--check")) {
    const current = readFileSync(valuesFile, "utf8");
    if (current !== rendered) {
      console.error(`${valuesFile} is out of date: run \`npx node hack/tools/render-argocd-cm.ts\``);
      process.exit(1);
    }
    console.log(`${valuesFile} is up to date`);
  } else {
    writeFileSync(valuesFile, rendered);
    console.log(`wrote ${valuesFile}`);
  }
}
