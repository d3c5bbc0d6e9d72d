// The CRDs move from the chart's crds/ folder (0.2.0 and earlier) into its templates, against
// the real apiserver: the previous release's chart, taken from git history at the commit
// CHANGELOG.md names, is installed with `helm install`; `helm upgrade` to the working-tree chart
// fails with Helm's ownership error until the migration commands of charts/keyward/README.md
// ("Upgrading") are run, then succeeds and the release owns the CRDs with their keep policy;
// `helm rollback` to the 0.2.0 revision and `helm uninstall` leave the CRDs and the resources.
//
// On a control plane of this file's own: the release takes the CRDs over, and with no pods to run
// a webhook they serve v1alpha1 alone (webhook.enabled=false), which the suite's shared plane,
// serving v1beta1 through keyward's webhook, must keep doing for every other file.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, isAbsolute, join } from "node:path";
import { promisify } from "node:util";
import { KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startControlPlane, type ControlPlane } from "../../controlplane/controlplane.ts";
import { waitForCrdsEstablished } from "../../controlplane/crds-established.ts";
import { storageVersionCrdDir, storageVersionOnly } from "../../controlplane/crds-without-webhook.ts";
import { kubectl as testKubectl, testApis, testKubectlPath, type KubectlResult } from "../../controlplane/testenv.ts";
import { chartDir, helm, parseYamlDocuments, repoRoot, type Doc } from "../../unit/chart/helm.ts";
import { widgetCrd } from "../support/throwaway-crd.ts";

const execFileAsync = promisify(execFile);

interface Crd {
  metadata: {
    name: string;
    uid: string;
    resourceVersion: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec: { group: string };
}

// Helm, kubectl and the migration script run against this file's control plane.
const existingCluster = Boolean(process.env["KEYWARD_E2E_KUBECONFIG"]);
let plane: ControlPlane;

const kubectl = (args: string[], opts: { input?: string } = {}): Promise<KubectlResult> =>
  testKubectl(args, { ...opts, kubeconfig: plane.kubeconfigPath });
async function kubectlStdout(args: string[]): Promise<string> {
  const result = await kubectl(args);
  if (result.code !== 0) throw new Error(`kubectl ${args.join(" ")}: ${result.stderr.trim()}`);
  return result.stdout;
}

/** The newest release of CHANGELOG.md (the first `## [x.y.z]` after `## [Unreleased]`) and its `Commit:`. */
function previousRelease(): { version: string; commit: string } {
  const lines = readFileSync(join(repoRoot, "CHANGELOG.md"), "utf8").split("\n");
  const start = lines.findIndex((l) => /^## \[\d+\.\d+\.\d+[^\]]*\]/.test(l));
  const version = start < 0 ? undefined : /^## \[([^\]]+)\]/.exec(lines[start] ?? "")?.[1];
  if (version === undefined) throw new Error("CHANGELOG.md names no release (no `## [x.y.z]` section)");
  const next = lines.findIndex((l, i) => i > start && l.startsWith("## "));
  const section = lines.slice(start, next < 0 ? undefined : next).join("\n");
  const commit = /^Commit: ([0-9a-f]{7,40})\b/m.exec(section)?.[1];
  if (commit === undefined) throw new Error(`CHANGELOG.md's [${version}] has no \`Commit: <sha>\` line`);
  return { version, commit };
}

/** charts/keyward of `commit`, extracted with `git archive` into a temporary directory. */
async function chartAt(commit: string, version: string, into: string): Promise<string> {
  try {
    await execFileAsync("git", ["-C", repoRoot, "cat-file", "-e", `${commit}^{commit}`]);
  } catch {
    throw new Error(
      `commit ${commit} of release ${version} (CHANGELOG.md) is not in this clone: fetch it (git fetch --unshallow, or git fetch origin ${commit})`,
    );
  }
  await execFileAsync("bash", [
    "-o",
    "pipefail",
    "-c",
    'git -C "$1" archive "$2" charts/keyward | tar -x -C "$3"',
    "-",
    repoRoot,
    commit,
    into,
  ]);
  return join(into, "charts", "keyward");
}

/** The sh block of charts/keyward/README.md's "## Upgrading" that hands the CRDs to the release, as users copy it. */
function documentedMigration(): string {
  const readme = readFileSync(join(chartDir, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("\n## Upgrading\n"));
  const block = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] ?? "").find((b) => b.includes("meta.helm.sh/release-name"));
  if (!section.startsWith("\n## Upgrading\n") || block === undefined)
    throw new Error("charts/keyward/README.md has no sh block under ## Upgrading that annotates the CRDs for the release");
  return block;
}

/** The keyward.dev CRDs, as generated into crds/. */
function crdNames(): string[] {
  return readdirSync(join(repoRoot, "crds"))
    .filter((f) => f.endsWith(".yaml"))
    .map((f) => f.slice(0, -".yaml".length))
    .sort();
}

async function getCrds(): Promise<Map<string, Crd>> {
  const list = JSON.parse(await kubectlStdout(["get", "crd", ...crdNames(), "-o", "json"])) as { items: Crd[] };
  return new Map(list.items.map((c) => [c.metadata.name, c]));
}

/** Every CRD of the cluster that names `release` as its owner. */
async function crdsOwnedBy(release: string): Promise<Crd[]> {
  const list = JSON.parse(await kubectlStdout(["get", "crd", "-o", "json"])) as { items: Crd[] };
  return list.items.filter((c) => c.metadata.annotations?.["meta.helm.sh/release-name"] === release);
}

const namespace = (): string => "crd-upgrade";
let release: string;
let previous: { version: string; commit: string; chart: string };
let work: string;
/** The CRDs as the suite's global setup would install them, before the previous release. */
let crdsBefore: Map<string, Crd>;

/** Values that keep the release from needing pods: no pre-delete hook, nothing aggregated into the shared built-in roles. */
const values = ["--set", "uninstall.releaseFinalizers=false", "--set", "rbac.aggregateToDefaultRoles=false"];
// The working tree's chart with the CRDs' spec as installed: v1alpha1 alone (no pods, so no
// webhook runs here; with webhook.enabled the CRDs would serve v1beta1 through one).
const currentValues = [...values, "--set", "webhook.enabled=false"];

const helmIn = (args: string[]) => helm([...args, "--namespace", namespace(), "--kubeconfig", plane.kubeconfigPath]);

async function history(): Promise<{ revision: number; status: string; chart: string }[]> {
  const result = await helmIn(["history", release, "-o", "json"]);
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as { revision: number; status: string; chart: string }[];
}

async function manifestKinds(revision: number): Promise<string[]> {
  const result = await helmIn(["get", "manifest", release, "--revision", String(revision)]);
  expect(result.code, result.stderr).toBe(0);
  return parseYamlDocuments(result.stdout).map((d) => `${d.kind}/${d.metadata.name}`);
}

const projectName = "crd-upgrade";
let projectUid: string;

async function project(): Promise<Doc & { metadata: { uid: string }; spec: unknown }> {
  return JSON.parse(await kubectlStdout(["-n", namespace(), "get", "projects.keyward.dev", projectName, "-o", "json"])) as Doc & {
    metadata: { uid: string };
    spec: unknown;
  };
}

async function expectCrdsAndProjectKept(): Promise<void> {
  const crds = await getCrds();
  expect([...crds.keys()].sort()).toEqual(crdNames());
  for (const [name, crd] of crds) expect(crd.metadata.uid, name).toBe(crdsBefore.get(name)?.metadata.uid);
  const p = await project();
  expect(p.metadata.uid).toBe(projectUid);
  expect(p.spec).toEqual({ name: "CRD upgrade", slug: "crd-upgrade" });
}

beforeAll(async () => {
  if (existingCluster) return;
  plane = await startControlPlane({ withControllerManager: false });
  const storageOnly = await storageVersionCrdDir(join(repoRoot, "crds"));
  await kubectlStdout(["apply", "--server-side", "-f", storageOnly]);
  await waitForCrdsEstablished(kubectlStdout, ["-f", storageOnly]);
  await kubectlStdout(["create", "namespace", namespace()]);
  release = `kw-crdup-${randomBytes(3).toString("hex")}`;
  work = mkdtempSync(join(tmpdir(), "keyward-crd-upgrade-"));
  const { version, commit } = previousRelease();
  previous = { version, commit, chart: await chartAt(commit, version, work) };
  crdsBefore = await getCrds();
  expect([...crdsBefore.keys()].sort(), "keyward's CRDs, installed").toEqual(crdNames());
}, 240_000);

afterAll(async () => {
  await plane?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe.skipIf(existingCluster)("upgrading from a release whose CRDs came from the chart's crds/ folder", () => {
  it("installs the previous release's chart (CHANGELOG.md's newest release, from git history)", async () => {
    expect(readdirSync(join(previous.chart, "crds")).length, `${previous.version}'s chart has a crds/ folder`).toBeGreaterThan(0);
    const result = await helmIn(["install", release, previous.chart, ...values]);
    expect(result.code, result.stderr).toBe(0);
    // Its CRDs are not release objects: Helm installs a crds/ folder without ownership metadata.
    expect(await manifestKinds(1)).not.toContainEqual(expect.stringMatching(/^CustomResourceDefinition\//));
    expect(await crdsOwnedBy(release)).toEqual([]);
    const created = await kubectl(["-n", namespace(), "apply", "-f", "-"], {
      input: JSON.stringify({
        apiVersion: "keyward.dev/v1alpha1",
        kind: "Project",
        metadata: { name: projectName },
        spec: { name: "CRD upgrade", slug: "crd-upgrade" },
      }),
    });
    expect(created.code, created.stderr).toBe(0);
    projectUid = (await project()).metadata.uid;
  });

  it("without the migration, helm upgrade fails with Helm's ownership error and changes nothing", async () => {
    const result = await helmIn(["upgrade", release, chartDir, ...currentValues]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(
      /Unable to continue with update: CustomResourceDefinition "[a-z0-9]+\.keyward\.dev" in namespace "" exists and cannot be imported into the current release: invalid ownership metadata/,
    );
    // "missing key ...: must be set to" for CRDs of no release, "must equal" for another release's.
    expect(result.stderr).toMatch(new RegExp(`"meta\\.helm\\.sh/release-name"(: must be set to| must equal) "${release}"`));
    expect((await history()).map((h) => [h.revision, h.status])).toEqual([[1, "deployed"]]);
    expect(await crdsOwnedBy(release)).toEqual([]);
  });

  it("after the README's migration commands, helm upgrade succeeds and the release owns the CRDs, kept", async () => {
    // The README's block as it is, but for the release's name and namespace.
    const script = documentedMigration();
    expect(script).toMatch(/^RELEASE=\S+ NAMESPACE=\S+$/m);
    const other = widgetCrd(testApis(kubeConfigOf(plane)));
    // A CRD of another group whose name also ends in .keyward.dev, which the migration must leave alone.
    await other.create();
    expect(`${other.kind.plural}.${other.kind.group}`).toMatch(/\.keyward\.dev$/);
    const bin = mkdtempSync(join(work, "bin-"));
    const kubectlPath = testKubectlPath();
    if (isAbsolute(kubectlPath)) symlinkSync(kubectlPath, join(bin, "kubectl"));
    const migration = script.replace(/^RELEASE=\S+ NAMESPACE=\S+$/m, `RELEASE=${release} NAMESPACE=${namespace()}`);
    await execFileAsync("bash", ["-euo", "pipefail", "-c", migration], {
      env: { ...process.env, PATH: `${bin}${delimiter}${process.env["PATH"] ?? ""}`, KUBECONFIG: plane.kubeconfigPath },
    });
    // Only keyward.dev's CRDs: not another group's, even one whose name ends in .keyward.dev.
    expect((await crdsOwnedBy(release)).map((c) => c.metadata.name).sort()).toEqual(crdNames());
    const migrated = await getCrds();

    // As the README says: the release's values again, on the new chart's defaults.
    const result = await helmIn(["upgrade", release, chartDir, "--reset-then-reuse-values", "--set", "webhook.enabled=false", "--debug"]);
    expect(result.code, result.stderr).toBe(0);
    // Helm itself wrote every CRD (its debug log names each patch).
    const patched = [...result.stderr.matchAll(/Patch CustomResourceDefinition "([a-z0-9.]+)"/g)].map((m) => m[1]);
    expect(patched.sort()).toEqual(crdNames());
    expect((await history()).map((h) => [h.revision, h.status])).toEqual([
      [1, "superseded"],
      [2, "deployed"],
    ]);
    expect((await manifestKinds(2)).filter((k) => k.startsWith("CustomResourceDefinition/")).sort()).toEqual(
      crdNames().map((n) => `CustomResourceDefinition/${n}`),
    );

    const generated = new Map(
      crdNames().map((n) => [
        n,
        storageVersionOnly(readFileSync(join(repoRoot, "crds", `${n}.yaml`), "utf8")) as unknown as Doc & { spec: object },
      ]),
    );
    for (const [name, crd] of await getCrds()) {
      expect(crd.metadata.annotations, name).toMatchObject({
        "meta.helm.sh/release-name": release,
        "meta.helm.sh/release-namespace": namespace(),
        "helm.sh/resource-policy": "keep",
        "argocd.argoproj.io/sync-options": "Prune=false,Delete=false",
      });
      // A label only the new chart's CRD templates carry.
      expect(crd.metadata.labels, name).toMatchObject({ "app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/component": "crds" });
      expect(crd.metadata.resourceVersion, name).not.toBe(migrated.get(name)?.metadata.resourceVersion);
      expect(crd.metadata.uid, name).toBe(crdsBefore.get(name)?.metadata.uid);
      // The schema is the working tree's generated one (in its storage version alone: webhook.enabled=false).
      expect(crd.spec, name).toMatchObject(generated.get(name)?.spec ?? { missing: name });
    }
    await expectCrdsAndProjectKept();
  });

  it("helm rollback to the crds/-folder revision leaves the CRDs and the resources", async () => {
    const result = await helmIn(["rollback", release, "1"]);
    expect(result.code, result.stderr).toBe(0);
    expect((await history()).at(-1)).toMatchObject({ revision: 3, status: "deployed" });
    expect(await manifestKinds(3)).not.toContainEqual(expect.stringMatching(/^CustomResourceDefinition\//));
    await expectCrdsAndProjectKept();
    // Still the release's: a later upgrade takes them back without the migration.
    expect((await crdsOwnedBy(release)).map((c) => c.metadata.name).sort()).toEqual(crdNames());
  });

  it("helm upgrade after the rollback needs no migration, and helm uninstall leaves the CRDs and the resources", async () => {
    const upgraded = await helmIn(["upgrade", release, chartDir, ...currentValues]);
    expect(upgraded.code, upgraded.stderr).toBe(0);
    const result = await helmIn(["uninstall", release]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout + result.stderr).toMatch(/kept due to the resource policy/);
    const list = await helmIn(["list", "-q"]);
    expect(list.stdout.split("\n")).not.toContain(release);
    await expectCrdsAndProjectKept();
  });
});

function kubeConfigOf(cp: ControlPlane): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  return kc;
}
