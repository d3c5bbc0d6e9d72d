// Renders keyward's Argo CD health checks from the one script argocd/health.lua:
// - argocd/argocd-cm-health.yaml: values for the argo-cd Helm chart (configs.cm), the script
//   under the wildcard form of argocd-cm: `resource.customizations` with `keyward.dev/*`;
// - argocd/argocd-cm.yaml: the same as a plain argocd-cm ConfigMap (also what
//   `argocd admin settings resource-overrides health --argocd-cm-path` reads);
// - argocd/resource_customizations/keyward.dev/<Kind>/: Argo CD's upstream layout (health.lua,
//   health_test.yaml and testdata/), ready to be contributed; the messages in health_test.yaml
//   come from running the script with lua5.1.
// `npx node hack/tools/render-argocd-cm.ts` writes them; `--check` changes nothing and exits 1
// when a file is out of date (the unit test does the same).
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { dumpYaml, loadYaml } from "@kubernetes/client-node";
import { kinds } from "../../src/resources/registry.ts";
import { assessWithLua } from "./argocd-lua.ts";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const healthFile = join(root, "argocd", "health.lua");
export const valuesFile = join(root, "argocd", "argocd-cm-health.yaml");
export const configMapFile = join(root, "argocd", "argocd-cm.yaml");
export const upstreamDir = join(root, "argocd", "resource_customizations", "keyward.dev");
export const customizationsKey = "resource.customizations";
export const groupPattern = "keyward.dev/*";

/** keyward's kinds, from the registry, sorted. */
export function keywardKinds(): string[] {
  return kinds.map((k) => k.ref.kind).sort((a, b) => a.localeCompare(b));
}

/**
 * A Ready=False reason the kind really writes while it waits: its own first progress reason, else
 * the wait every kind with a provider config knows (the registry's, so the example cannot go stale).
 */
function waitingReason(kind: string): { reason: string; message: string } {
  const k = kinds.find((x) => x.ref.kind === kind);
  const own = Object.entries(k?.reasons ?? {}).find(([, r]) => r.means === "progress")?.[0];
  if (own) return { reason: own, message: "a job runs at the service" };
  return k?.refers.providerConfig
    ? { reason: "ProviderConfigNotFound", message: "ProviderConfig default does not exist" }
    : { reason: "CredentialsNotFound", message: "Secret keyward-credentials does not exist" };
}

export function healthScript(): string {
  return readFileSync(healthFile, "utf8");
}

function indent(text: string, spaces: number): string[] {
  return text
    .replace(/\n$/, "")
    .split("\n")
    .map((line) => (line === "" ? "" : `${" ".repeat(spaces)}${line}`));
}

/** The value of argocd-cm's `resource.customizations` key: every keyward.dev kind, one script. */
export function customizationsValue(script: string): string {
  return [`${groupPattern}:`, "  health.lua: |", ...indent(script, 4)].join("\n") + "\n";
}

export function renderValues(script: string): string {
  return [
    "# Argo CD health checks for keyward's kinds, as values for the argo-cd Helm chart",
    "# (`helm upgrade argocd argo/argo-cd -f argocd-cm-health.yaml`, merged with your own values).",
    "# For a plain argocd-cm ConfigMap see argocd-cm.yaml. One script serves every keyward.dev kind",
    `# through the wildcard form of argocd-cm (${customizationsKey} with ${groupPattern}).`,
    "# Generated from argocd/health.lua by `npx node hack/tools/render-argocd-cm.ts`: do not edit.",
    "configs:",
    "  cm:",
    `    ${customizationsKey}: |`,
    ...indent(customizationsValue(script), 6),
    "",
  ].join("\n");
}

export function renderConfigMap(script: string): string {
  return [
    "# argocd-cm with keyward's health checks (merge the data key into your own argocd-cm).",
    "# Generated from argocd/health.lua by `npx node hack/tools/render-argocd-cm.ts`: do not edit.",
    "apiVersion: v1",
    "kind: ConfigMap",
    "metadata:",
    "  name: argocd-cm",
    "  labels:",
    "    app.kubernetes.io/name: argocd-cm",
    "    app.kubernetes.io/part-of: argocd",
    "data:",
    `  ${customizationsKey}: |`,
    ...indent(customizationsValue(script), 4),
    "",
  ].join("\n");
}

// --- upstream layout -----------------------------------------------------------------------

type Cond = { type: string; status: string; reason: string; message: string };

interface TestCase {
  file: string;
  status?: Record<string, unknown>;
  conditions?: Cond[];
}

const ready = (message: string): Cond => ({ type: "Ready", status: "True", reason: "Available", message });
const syncedOk: Cond = { type: "Synced", status: "True", reason: "ReconcileSuccess", message: "" };

/** The states every kind is tested in (upstream testdata), plus SecretSync's job states. */
function testCases(kind: string): TestCase[] {
  const cases: TestCase[] = [
    { file: "progressing-new.yaml" },
    { file: "progressing-waiting.yaml", conditions: [{ type: "Ready", status: "False", ...waitingReason(kind) }, syncedOk] },
    {
      file: "progressing-retrying.yaml",
      conditions: [
        { type: "Ready", status: "False", reason: "ServiceUnavailable", message: "the service answered 503" },
        { type: "Synced", status: "False", reason: "ServiceUnavailable", message: "the service answered 503" },
      ],
    },
    { file: "healthy.yaml", conditions: [ready(`the ${kind} is available`), syncedOk] },
    {
      file: "degraded.yaml",
      conditions: [
        { type: "Ready", status: "False", reason: "ValidationFailed", message: "the service refused the spec: slug is taken" },
        { type: "Synced", status: "False", reason: "ValidationFailed", message: "the service refused the spec: slug is taken" },
      ],
    },
    {
      file: "suspended.yaml",
      conditions: [
        ready(`the ${kind} is available`),
        { type: "Synced", status: "False", reason: "ReconcilePaused", message: "keyward.dev/paused is true" },
      ],
    },
  ];
  if (kind === "ProviderConfig") {
    cases.push({
      file: "degraded-unauthorized.yaml",
      conditions: [{ type: "Ready", status: "False", reason: "Unauthorized", message: "the service refused the token (401)" }, syncedOk],
    });
  }
  if (kind === "SecretSync") {
    cases.push(
      { file: "progressing-sync-running.yaml", conditions: [ready("the sync is available"), syncedOk], status: { syncStatus: "running" } },
      {
        file: "degraded-sync-failed.yaml",
        conditions: [ready("the sync is available"), syncedOk],
        status: { syncStatus: "failed", lastSyncMessage: "the destination refused the write" },
      },
      {
        file: "healthy-synced.yaml",
        conditions: [ready("the sync is available"), syncedOk],
        status: { syncStatus: "succeeded", lastSyncMessage: "" },
      },
    );
  }
  return cases;
}

/** The first sample of config/samples of this kind (its spec is realistic). */
function sampleOf(kind: string): Record<string, unknown> & { metadata: Record<string, unknown> } {
  const dir = join(root, "config", "samples");
  for (const file of readdirSync(dir).sort()) {
    if (!file.endsWith(".yaml") || file === "kustomization.yaml") continue;
    for (const doc of readFileSync(join(dir, file), "utf8").split(/^---$/m)) {
      if (!new RegExp(`^kind: ${kind}$`, "m").test(doc)) continue;
      return loadYaml(doc);
    }
  }
  throw new Error(`no sample of kind ${kind} in config/samples`);
}

function testObject(kind: string, c: TestCase): Record<string, unknown> {
  const sample = sampleOf(kind);
  const generation = 2;
  const at = "2026-11-23T10:00:00Z";
  const obj: Record<string, unknown> = {
    apiVersion: sample["apiVersion"],
    kind,
    metadata: {
      name: sample.metadata["name"],
      namespace: "team-a",
      generation,
      creationTimestamp: at,
      finalizers: c.conditions ? ["keyward.dev/finalizer"] : undefined,
    },
    spec: sample["spec"],
  };
  if (c.conditions) {
    obj["status"] = {
      observedGeneration: generation,
      conditions: c.conditions.map((cond) => ({ ...cond, observedGeneration: generation, lastTransitionTime: at })),
      ...c.status,
    };
  }
  return JSON.parse(JSON.stringify(obj)) as Record<string, unknown>;
}

/** Every file of argocd/resource_customizations/keyward.dev, by path. */
export async function renderUpstream(script: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (const kind of keywardKinds()) {
    const dir = join(upstreamDir, kind);
    const cases = testCases(kind);
    const objects = cases.map((c) => testObject(kind, c));
    const health = await assessWithLua(healthFile, objects);
    files.set(join(dir, "health.lua"), script);
    const tests = cases.map((c, i) => ({
      healthStatus: { status: health[i]?.status, message: health[i]?.message },
      inputPath: `testdata/${c.file}`,
    }));
    files.set(join(dir, "health_test.yaml"), dumpYaml({ tests }));
    cases.forEach((c, i) => files.set(join(dir, "testdata", c.file), dumpYaml(objects[i])));
  }
  return files;
}

export async function renderAll(): Promise<Map<string, string>> {
  const script = healthScript();
  const files = new Map<string, string>([
    [valuesFile, renderValues(script)],
    [configMapFile, renderConfigMap(script)],
  ]);
  for (const [path, content] of await renderUpstream(script)) files.set(path, content);
  return files;
}

function existingUpstreamFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name));
}

/** Paths that differ from (or are missing in, or are extra to) the rendering. */
export async function staleFiles(): Promise<string[]> {
  const files = await renderAll();
  const stale = [...files].filter(([path, content]) => !existsSync(path) || readFileSync(path, "utf8") !== content).map(([path]) => path);
  const extra = existingUpstreamFiles(upstreamDir).filter((path) => !files.has(path));
  return [...stale, ...extra].map((path) => relative(root, path));
}

/** Writes every file rendered from health.lua; the number written. */
export async function renderArgoCdFiles(): Promise<number> {
  const files = await renderAll();
  rmSync(upstreamDir, { recursive: true, force: true });
  for (const [path, content] of files) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, content);
  }
  return files.size;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv.includes("--check")) {
    const stale = await staleFiles();
    if (stale.length > 0) {
      console.error(`out of date: ${stale.join(", ")}: run \`npx node hack/tools/render-argocd-cm.ts\``);
      process.exit(1);
    }
    console.log("argocd/ is up to date");
  } else {
    console.log(`wrote ${await renderArgoCdFiles()} files under argocd/`);
  }
}
