// Renders argocd/argocd-cm-health.yaml (values for the argo-cd Helm chart: configs.cm) from the
// health scripts in argocd/health/. `npx node hack/tools/render-argocd-cm.ts` writes it;
// `--check` changes nothing and exits 1 when the file is out of date (the unit test does the same).
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const healthDir = join(root, "argocd", "health");
export const valuesFile = join(root, "argocd", "argocd-cm-health.yaml");

/** The kind a script is for, read from its `resource.customizations.health.keyward.dev_<Kind>` header. */
export function scriptKind(script: string): string {
  const m = /resource\.customizations\.health\.keyward\.dev_([A-Za-z]+)/.exec(script);
  if (!m?.[1]) throw new Error("health script names no resource.customizations.health.keyward.dev_<Kind> key");
  return m[1];
}

/** Every health script by kind, sorted by kind. */
export function healthScripts(dir = healthDir): { kind: string; file: string; script: string }[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith(".lua"))
    .map((f) => {
      const script = readFileSync(join(dir, f), "utf8");
      return { kind: scriptKind(script), file: f, script };
    })
    .sort((a, b) => a.kind.localeCompare(b.kind));
}

export function renderValues(scripts: { kind: string; script: string }[]): string {
  const lines = [
    "# Argo CD health checks for keyward's kinds, as values for the argo-cd Helm chart",
    "# (`helm upgrade argocd argo/argo-cd -f argocd-cm-health.yaml`, merged with your own values).",
    "# For a plain argocd-cm ConfigMap, copy the keys under configs.cm into its data.",
    "# Generated from argocd/health/*.lua by `npx node hack/tools/render-argocd-cm.ts`: do not edit.",
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
