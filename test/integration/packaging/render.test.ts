// The chart's renderings and the kustomize install, accepted by the real apiserver.
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestNamespace, kubectl, kubectlStdout, testKubeconfigPath, type TestNamespace } from "../../controlplane/testenv.ts";
import { chartDir, helm, parseYamlDocuments, renderChart, repoRoot, valuesAllFile } from "../../unit/chart/helm.ts";
import { waitForCrdsEstablished } from "../../controlplane/crds-established.ts";

// A ServiceMonitor and a PrometheusRule need prometheus-operator's CRDs; these minimal stand-ins
// let the apiserver accept (and validate the envelope of) the ones the chart renders.
const standInCrd = (kind: string, plural: string): string => `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ${plural}.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: { kind: ${kind}, plural: ${plural}, singular: ${kind.toLowerCase()}, listKind: ${kind}List }
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: { type: object, x-kubernetes-preserve-unknown-fields: true }
`;
const monitoringCrds = [
  { name: "servicemonitors.monitoring.coreos.com", yaml: standInCrd("ServiceMonitor", "servicemonitors") },
  { name: "prometheusrules.monitoring.coreos.com", yaml: standInCrd("PrometheusRule", "prometheusrules") },
];

let release: TestNamespace;
let watchedA: TestNamespace;
let watchedB: TestNamespace;
/** The stand-in CRDs this file created (and deletes). */
const installedCrds: string[] = [];

beforeAll(async () => {
  [release, watchedA, watchedB] = await Promise.all([
    createTestNamespace("pkg-release"),
    createTestNamespace("pkg-a"),
    createTestNamespace("pkg-b"),
  ]);
  for (const crd of monitoringCrds) {
    const existing = await kubectl(["get", "crd", crd.name]);
    if (existing.code === 0) continue;
    const created = await kubectl(["create", "-f", "-"], { input: crd.yaml });
    if (created.code === 0) installedCrds.push(crd.name);
    expect(created.code, created.stderr).toBe(0);
    await waitForCrdsEstablished(kubectlStdout, [`crd/${crd.name}`], 60_000);
  }
});

afterAll(async () => {
  for (const name of installedCrds) await kubectl(["delete", "crd", name, "--wait=false"]);
  await Promise.all([release, watchedA, watchedB].map((ns) => ns.cleanup()));
});

/**
 * A server-side dry run of the rendered objects. The CRDs are replaced, not applied: the suite's
 * are installed calling its own webhook by URL, and a client-side apply would merge the chart's
 * Service into that clientConfig; a replace checks each as the whole object an install makes it.
 */
async function serverDryRun(yaml: string): Promise<string> {
  const docs = yaml.split(/^---\s*$/m).filter((d) => /^kind:/m.test(d));
  const isCrd = (d: string): boolean => /^kind: CustomResourceDefinition$/m.test(d);
  let out = "";
  for (const [verb, part] of [
    ["apply", docs.filter((d) => !isCrd(d))],
    ["replace", docs.filter(isCrd)],
  ] as const) {
    if (part.length === 0) continue;
    const result = await kubectl([verb, "--dry-run=server", "-f", "-"], { input: part.join("\n---\n") });
    expect(result.code, result.stderr).toBe(0);
    out += result.stdout;
  }
  return out;
}

/** The rendered objects whose kind the apiserver serves cluster-scoped. */
async function clusterScopedAmong(yaml: string): Promise<string[]> {
  const resources = await kubectl(["api-resources", "--namespaced=false", "--no-headers"]);
  expect(resources.code, resources.stderr).toBe(0);
  // The last column is the kind.
  const clusterKinds = new Set(
    resources.stdout
      .split("\n")
      .map((line) => line.trim().split(/\s+/).at(-1))
      .filter((k) => k !== undefined && k !== ""),
  );
  expect(clusterKinds.has("ClusterRole")).toBe(true);
  return parseYamlDocuments(yaml)
    .filter((d) => clusterKinds.has(d.kind))
    .map((d) => `${d.kind}/${d.metadata.name}`);
}

describe("helm template | kubectl apply --dry-run=server", () => {
  it("accepts the default values", async () => {
    const out = await serverDryRun(await renderChart({ namespace: release.name }));
    expect(out).toMatch(/deployment\.apps\/kw-keyward (created|configured) \(server dry run\)/);
    expect(out).toMatch(/clusterrole\.rbac\.authorization\.k8s\.io\/kw-keyward (created|configured) \(server dry run\)/);
  });

  it("accepts a namespaced install, which holds no cluster-scoped object but the CRDs", async () => {
    // The CRDs are the one cluster-scoped part of a namespaced install; crds.enabled=false leaves
    // them to the cluster admin.
    const yaml = await renderChart({
      namespace: release.name,
      setJson: { watchNamespaces: [watchedA.name, watchedB.name], crds: { enabled: false } },
    });
    const out = await serverDryRun(yaml);
    expect(out).toContain(`role.rbac.authorization.k8s.io/kw-keyward created (server dry run)`);
    expect(out).not.toMatch(/clusterrole/);
    expect(await clusterScopedAmong(yaml)).toEqual([]);
  });

  it("accepts every option on", async () => {
    const yaml = await renderChart({
      namespace: release.name,
      valuesFiles: [valuesAllFile],
      setJson: { watchNamespaces: [watchedA.name, watchedB.name], accessTokens: { namespaces: [watchedA.name] } },
    });
    // values-all asks for metrics.auth kubernetes: its reviews are cluster-scoped APIs, so those
    // roles are the one exception to a namespaced install holding nothing cluster-scoped.
    expect((await clusterScopedAmong(yaml)).sort()).toEqual([
      "ClusterRole/keyward-operator-metrics-auth",
      "ClusterRole/keyward-operator-metrics-reader",
      "ClusterRoleBinding/keyward-operator-metrics-auth",
      "ClusterRoleBinding/keyward-operator-metrics-reader",
    ]);
    const out = await serverDryRun(yaml);
    for (const kind of [
      "poddisruptionbudget.policy",
      "servicemonitor.monitoring.coreos.com",
      "prometheusrule.monitoring.coreos.com",
      "configmap",
      "providerconfig.keyward.dev",
      "deployment.apps",
      "service",
    ]) {
      expect(out).toMatch(new RegExp(`^${kind.replaceAll(".", "\\.")}/\\S+ created \\(server dry run\\)$`, "m"));
    }
  });
});

describe("helm install --dry-run=server", () => {
  it("notes of a namespaced install name the CRDs and the webhook's ClusterRole as its only cluster-scoped objects", async () => {
    const result = await helm([
      ...["install", "kw", chartDir, "--namespace", release.name, "--dry-run=server", "--kubeconfig", testKubeconfigPath()],
      // The suite's CRDs were applied without Helm's ownership metadata: a real install takes them over.
      "--take-ownership",
      ...["--set-json", `watchNamespaces=${JSON.stringify([watchedA.name])}`],
    ]);
    expect(result.code, result.stderr).toBe(0);
    const notes = result.stdout.slice(result.stdout.indexOf("NOTES:"));
    expect(notes).toContain(`only in: ${watchedA.name}`);
    expect(notes).toMatch(
      /The release has no cluster-scoped objects[\s\S]*except the seven CRDs[\s\S]*and the ClusterRole kw-keyward-webhook/,
    );
    // the webhook's ClusterRole (keyward's CRDs' caBundle, nothing else) and its binding, and the
    // uninstall hook's (those CRDs' webhook taken out, during helm uninstall only); no other
    const manifest = result.stdout.slice(0, result.stdout.indexOf("NOTES:"));
    const cluster = [...manifest.matchAll(/^kind: (Cluster\w+)\nmetadata:\n {2}name: ([\w-]+)/gm)].map((m) => `${m[1]}/${m[2]}`);
    expect(cluster.sort()).toEqual([
      "ClusterRole/kw-keyward-uninstall",
      "ClusterRole/kw-keyward-webhook",
      "ClusterRoleBinding/kw-keyward-uninstall",
      "ClusterRoleBinding/kw-keyward-webhook",
    ]);
  });

  it("with the ServiceMonitor: the apiserver accepts the scraper identity, and the notes name it", async () => {
    const result = await helm([
      ...["install", "kw", chartDir, "--namespace", release.name, "--dry-run=server", "--kubeconfig", testKubeconfigPath()],
      "--take-ownership",
      ...["--set-json", `serviceMonitor=${JSON.stringify({ enabled: true })}`],
    ]);
    expect(result.code, result.stderr).toBe(0);
    const manifest = result.stdout.slice(0, result.stdout.indexOf("NOTES:"));
    expect(manifest).toContain("type: kubernetes.io/service-account-token");
    expect(manifest).not.toContain("bearerTokenFile");
    const notes = result.stdout.slice(result.stdout.indexOf("NOTES:"));
    expect(notes).toMatch(/the ServiceMonitor sends the token of ServiceAccount\s+kw-keyward-scraper \(Secret kw-keyward-scraper-token\)/);
  });
});

describe("kubectl apply -k config/default", () => {
  // keyward-system must exist for a server-side dry run of the objects in it; CRDs and every
  // cluster-scoped object stay dry-run, so the suite's CRDs are untouched.
  let created = false;
  beforeAll(async () => {
    const result = await kubectl(["create", "namespace", "keyward-system"]);
    created = result.code === 0;
  });
  afterAll(async () => {
    if (created) await kubectl(["delete", "namespace", "keyward-system", "--wait=false"]);
  });

  it("is accepted by the apiserver", async () => {
    const built = await kubectl(["kustomize", join(repoRoot, "config", "default")]);
    expect(built.code, built.stderr).toBe(0);
    const out = await serverDryRun(built.stdout);
    for (const object of [
      "customresourcedefinition.apiextensions.k8s.io/projects.keyward.dev",
      "serviceaccount/keyward-controller-manager",
      "clusterrole.rbac.authorization.k8s.io/keyward-manager-role",
      "clusterrolebinding.rbac.authorization.k8s.io/keyward-manager-rolebinding",
      "role.rbac.authorization.k8s.io/keyward-leader-election-role",
      "service/keyward-controller-manager-metrics",
      "deployment.apps/keyward-controller-manager",
    ]) {
      expect(out).toMatch(new RegExp(`^${object.replaceAll(".", "\\.")} \\w+ \\(server dry run\\)$`, "m"));
    }
  });
});
