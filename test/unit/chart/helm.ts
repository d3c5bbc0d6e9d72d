// Helpers for the chart and packaging tests: the helm binary (built by hack/tools/ensure-helm.sh),
// rendering the chart, and reading multi-document YAML without the typed client-node models.
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { loadYaml } from "@kubernetes/client-node";

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
export const chartDir = join(repoRoot, "charts", "keyward");
export const valuesAllFile = join(repoRoot, "test", "unit", "chart", "values-all.yaml");

const ensureHelmScript = join(repoRoot, "hack", "tools", "ensure-helm.sh");
const ensurePromtoolScript = join(repoRoot, "hack", "tools", "ensure-promtool.sh");

/** The helm version ensure-helm.sh installs by default (one place says it: the script). */
export function pinnedHelmVersion(): string {
  const m = /HELM_VERSION:-(v\d+\.\d+\.\d+)/.exec(readFileSync(ensureHelmScript, "utf8"));
  if (!m?.[1]) throw new Error(`no default HELM_VERSION in ${ensureHelmScript}`);
  return m[1];
}

/** KEYWARD_HELM, else the tool cache's helm-<pinned>, else `helm` from PATH; fails clearly when none. */
export function helmBinary(): string {
  const fromEnv = process.env["KEYWARD_HELM"];
  if (fromEnv) return fromEnv;
  const cache = process.env["KEYWARD_CACHE_DIR"] ?? join(homedir(), ".cache", "keyward");
  const cached = join(cache, "tools", `helm-${pinnedHelmVersion()}-k8s`, "helm");
  if (existsSync(cached)) return cached;
  for (const dir of (process.env["PATH"] ?? "").split(":")) {
    if (dir && existsSync(join(dir, "helm"))) return join(dir, "helm");
  }
  throw new Error(`helm not found (looked at $KEYWARD_HELM, ${cached} and PATH): run hack/tools/ensure-helm.sh first`);
}

/** KEYWARD_PROMTOOL, else the tool cache's promtool-<pinned> (hack/tools/ensure-promtool.sh), else `promtool` from PATH. */
export function promtoolBinary(): string {
  const fromEnv = process.env["KEYWARD_PROMTOOL"];
  if (fromEnv) return fromEnv;
  const m = /PROMTOOL_MODULE_VERSION:-(v\d+\.\d+\.\d+)/.exec(readFileSync(ensurePromtoolScript, "utf8"));
  if (!m?.[1]) throw new Error(`no default PROMTOOL_MODULE_VERSION in ${ensurePromtoolScript}`);
  const cache = process.env["KEYWARD_CACHE_DIR"] ?? join(homedir(), ".cache", "keyward");
  const cached = join(cache, "tools", `promtool-${m[1]}`, "promtool");
  if (existsSync(cached)) return cached;
  for (const dir of (process.env["PATH"] ?? "").split(":")) {
    if (dir && existsSync(join(dir, "promtool"))) return join(dir, "promtool");
  }
  throw new Error(`promtool not found (looked at $KEYWARD_PROMTOOL, ${cached} and PATH): run hack/tools/ensure-promtool.sh first`);
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function run(file: string, args: string[], opts: { cwd?: string } = {}): Promise<RunResult> {
  return new Promise((resolvePromise, reject) => {
    execFile(file, args, { cwd: opts.cwd ?? repoRoot, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error && typeof error.code !== "number") {
        reject(new Error(`${file}: ${error.message}`));
        return;
      }
      resolvePromise({ code: typeof error?.code === "number" ? error.code : 0, stdout, stderr });
    });
  });
}

export function helm(args: string[]): Promise<RunResult> {
  return run(helmBinary(), args);
}

export interface RenderOptions {
  release?: string;
  namespace?: string;
  valuesFiles?: string[];
  /** --set-json key=value pairs. */
  setJson?: Record<string, unknown>;
  /**
   * Render as on a cluster serving prometheus-operator's ServiceMonitor and PrometheusRule
   * (--api-versions; default true): without them the chart leaves both out (renderMode skipIfMissing).
   */
  monitoringCrds?: boolean;
}

/** `helm template` of the chart; throws with helm's stderr when it fails. */
export async function renderChart(opts: RenderOptions = {}): Promise<string> {
  const result = await helm(templateArgs(opts));
  if (result.code !== 0) throw new Error(`helm template failed (exit ${result.code}): ${result.stderr.trim()}`);
  return result.stdout;
}

export function templateArgs(opts: RenderOptions): string[] {
  const args = ["template", opts.release ?? "kw", chartDir, "--namespace", opts.namespace ?? "keyward-system"];
  for (const file of opts.valuesFiles ?? []) args.push("--values", file);
  for (const [key, value] of Object.entries(opts.setJson ?? {})) args.push("--set-json", `${key}=${JSON.stringify(value)}`);
  if (opts.monitoringCrds ?? true) {
    for (const kind of ["ServiceMonitor", "PrometheusRule"]) args.push("--api-versions", `monitoring.coreos.com/v1/${kind}`);
  }
  return args;
}

export type Doc = Record<string, unknown> & {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
};

/**
 * Every non-empty document of a multi-document YAML text, as plain JSON values. Each document
 * is read under a made-up apiVersion, so client-node's loader keeps it as it is instead of
 * mapping it onto its typed models.
 */
export function parseYamlDocuments(text: string): Doc[] {
  return text
    .split(/^---[ \t]*$/m)
    .filter((doc) => doc.split("\n").some((line) => line.trim() !== "" && !line.trimStart().startsWith("#")))
    .map((doc) => {
      const indented = doc
        .split("\n")
        .map((line) => `  ${line}`)
        .join("\n");
      const wrapped = loadYaml<{ doc: unknown }>(`apiVersion: raw.keyward.dev/v1\nkind: Raw\ndoc:\n${indented}\n`);
      return JSON.parse(JSON.stringify(wrapped.doc)) as Doc;
    });
}

export function readYamlFile(path: string): Doc[] {
  return parseYamlDocuments(readFileSync(path, "utf8"));
}

export function findDoc(docs: Doc[], kind: string, name?: string, namespace?: string): Doc {
  const found = docs.find(
    (d) =>
      d.kind === kind &&
      (name === undefined || d.metadata.name === name) &&
      (namespace === undefined || d.metadata.namespace === namespace),
  );
  if (!found)
    throw new Error(
      `no ${kind}${name ? ` ${name}` : ""}${namespace ? ` in ${namespace}` : ""} among ${docs.map((d) => `${d.kind}/${d.metadata.name}`).join(", ")}`,
    );
  return found;
}

/** The environment of the (first) Deployment's first container: the variables that have a value. */
export function deploymentEnv(docs: Doc[]): Record<string, string> {
  const deployment = findDoc(docs, "Deployment") as unknown as {
    spec: { template: { spec: { containers: { env?: { name: string; value?: string }[] }[] } } };
  };
  const env = deployment.spec.template.spec.containers[0]?.env ?? [];
  return Object.fromEntries(env.flatMap((e) => (e.value === undefined ? [] : [[e.name, e.value]])));
}

export interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  verbs: string[];
}

/** Rules flattened to sorted "group/resource[/name]: verb" strings, for exact comparison. */
export function flattenRules(rules: PolicyRule[]): string[] {
  const out: string[] = [];
  for (const rule of rules) {
    for (const group of rule.apiGroups ?? [""]) {
      for (const resource of rule.resources ?? []) {
        for (const name of rule.resourceNames ?? [""]) {
          for (const verb of rule.verbs) out.push(`${group || "core"}/${resource}${name ? `#${name}` : ""}: ${verb}`);
        }
      }
    }
  }
  return out.sort();
}

/** The six kinds keyward serves (DESIGN.md) and their plurals. */
export const keywardPlurals = ["providerconfigs", "projects", "projectmemberships", "secretsyncs", "accesstokens", "certificateprofiles"];

/** What keyward does in a watched namespace: exactly these grants (see src/ for every call). */
export const expectedWorkloadGrants: string[] = flattenRules([
  { apiGroups: ["keyward.dev"], resources: keywardPlurals, verbs: ["get", "list", "watch", "patch", "update"] },
  { apiGroups: ["keyward.dev"], resources: keywardPlurals.map((p) => `${p}/status`), verbs: ["get", "patch", "update"] },
  // Only AccessToken owns something (its Secret, with blockOwnerDeletion): rbac-audit.test.ts.
  { apiGroups: ["keyward.dev"], resources: ["accesstokens/finalizers"], verbs: ["update"] },
  // Read everywhere; patch for the in-use finalizer on credentials Secrets. Writes: secretWriterGrants.
  { apiGroups: [""], resources: ["secrets"], verbs: ["get", "list", "watch", "patch"] },
  { apiGroups: [""], resources: ["events"], verbs: ["create", "patch"] },
]);

/** Where AccessTokens write their Secrets (accessTokens.namespaces, else every watched namespace). */
export const secretWriterGrants: string[] = flattenRules([
  { apiGroups: [""], resources: ["secrets"], verbs: ["create", "patch", "delete"] },
]);

/** The pre-delete hook's Role in the release namespace: scale keyward's Deployment to 0 and wait for its pods. */
export function uninstallGrants(deployment: string): string[] {
  return flattenRules([
    { apiGroups: ["apps"], resources: ["deployments"], resourceNames: [deployment], verbs: ["get"] },
    { apiGroups: ["apps"], resources: ["deployments/scale"], resourceNames: [deployment], verbs: ["patch"] },
    { apiGroups: [""], resources: ["pods"], verbs: ["list"] },
  ]);
}

/** The cluster-scoped kinds keyward serves (clusterProviderConfig.enabled, cluster-wide installs). */
export const keywardClusterPlurals = ["clusterproviderconfigs"];

/** What serving ClusterProviderConfigs adds to the ClusterRole. */
export const clusterProviderConfigGrants: string[] = flattenRules([
  { apiGroups: ["keyward.dev"], resources: keywardClusterPlurals, verbs: ["get", "list", "watch"] },
  { apiGroups: ["keyward.dev"], resources: keywardClusterPlurals.map((p) => `${p}/status`), verbs: ["get", "patch", "update"] },
  { apiGroups: [""], resources: ["namespaces"], verbs: ["get", "list", "watch"] },
]);

/** The Role in the credentials namespace: ClusterProviderConfigs read their Secrets there only. */
export const credentialsGrants: string[] = flattenRules([{ apiGroups: [""], resources: ["secrets"], verbs: ["get", "list", "watch"] }]);

/** metrics.auth kubernetes: who is this token, and may it get /metrics (src/kube/metrics-auth.ts). */
export const metricsAuthGrants: string[] = flattenRules([
  { apiGroups: ["authentication.k8s.io"], resources: ["tokenreviews"], verbs: ["create"] },
  { apiGroups: ["authorization.k8s.io"], resources: ["subjectaccessreviews"], verbs: ["create"] },
]);

/** With sharding.enabled: every replica's own shard Lease (names not known in advance), the leader's list of them and its deletes of stale ones. */
export const shardingLeaseGrants = flattenRules([
  { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get", "update", "list", "delete"] },
]);

export function leaseGrants(leaseName: string): string[] {
  return flattenRules([
    { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["create"] },
    { apiGroups: ["coordination.k8s.io"], resources: ["leases"], resourceNames: [leaseName], verbs: ["get", "update"] },
    // The sharding marker: an unsharded leader waits until it is dead, then deletes it.
    { apiGroups: ["coordination.k8s.io"], resources: ["leases"], resourceNames: [`${leaseName}-sharded`], verbs: ["get", "delete"] },
  ]);
}
