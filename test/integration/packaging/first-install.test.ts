// The chart's custom resources (providerConfig.create, clusterProviderConfig.create) on a cluster
// that has never seen keyward: a control plane of this file's own, without keyward's CRDs, where
// `helm install` must create the CRDs and the provider configs in one command; `helm upgrade`
// leaves them alone until they are handed to the release as docs/install.md says, and changes them
// after; `helm uninstall` leaves them. No pods run here (no nodes): no conversion webhook either,
// so objects are read by their stored version (providerconfigs.v1alpha1.keyward.dev), and a read
// naming no version fails as docs/install.md says; the uninstall skips the pre-delete Job
// (--no-hooks); the kind e2e runs it for real.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBinaries } from "../../controlplane/binaries.ts";
import { startControlPlane, type ControlPlane } from "../../controlplane/controlplane.ts";
import { chartDir, helm } from "../../unit/chart/helm.ts";
import { installPlugin, type InstalledPlugin } from "../support/plugin.ts";

const execFileAsync = promisify(execFile);

let plane: ControlPlane;
let kubectlBin: string;
let plugin: InstalledPlugin;
/** `kubectl keyward check` against this file's cluster. */
const check = (args: string[] = []) => plugin.run(["check", ...args], { KUBECONFIG: plane.kubeconfigPath });
const ns = "keyward-system";

const kubectlJson = async <T>(args: string[]): Promise<T> =>
  JSON.parse((await execFileAsync(kubectlBin, ["--kubeconfig", plane.kubeconfigPath, ...args, "-o", "json"])).stdout) as T;

interface Cr {
  metadata: { name: string; annotations?: Record<string, string>; labels?: Record<string, string> };
  spec: { baseUrl: string };
}

const values = (baseUrl: string): string[] => [
  ...[
    "--set",
    "providerConfig.create=true",
    "--set",
    `providerConfig.baseUrl=${baseUrl}`,
    "--set",
    "providerConfig.secretName=keyward-token",
  ],
  ...[
    "--set",
    "clusterProviderConfig.enabled=true",
    "--set",
    "clusterProviderConfig.create=true",
    "--set",
    "clusterProviderConfig.name=shared",
  ],
  ...["--set", `clusterProviderConfig.baseUrl=${baseUrl}`, "--set", "clusterProviderConfig.secretName=keyward-token"],
];

beforeAll(async () => {
  const binaries = await ensureBinaries();
  if (binaries.kubectl === undefined) throw new Error("no kubectl among the control-plane binaries");
  kubectlBin = binaries.kubectl;
  plane = await startControlPlane({ binaries, withControllerManager: false });
  plugin = installPlugin();
}, 180_000);

afterAll(async () => {
  plugin?.remove();
  await plane?.stop();
});

const release = (verb: "install" | "upgrade", baseUrl: string) =>
  helm([
    ...[verb, "kw", chartDir, "-n", ns, "--kubeconfig", plane.kubeconfigPath],
    ...(verb === "install" ? ["--create-namespace"] : []),
    ...values(baseUrl),
  ]);
const manifest = async (): Promise<string> =>
  (await helm(["get", "manifest", "kw", "-n", ns, "--kubeconfig", plane.kubeconfigPath])).stdout;
const providerConfig = () => kubectlJson<Cr>(["-n", ns, "get", "providerconfigs.v1alpha1.keyward.dev", "default"]);
const clusterProviderConfig = () => kubectlJson<Cr>(["get", "clusterproviderconfigs.v1alpha1.keyward.dev", "shared"]);

describe("ServiceMonitor and PrometheusRule on a cluster without prometheus-operator's CRDs", () => {
  it("are left out of the install, whose notes say so, rather than failing it", async () => {
    const result = await helm([
      ...["install", "kw-monitoring", chartDir, "-n", ns, "--dry-run=server", "--kubeconfig", plane.kubeconfigPath],
      ...["--set", "serviceMonitor.enabled=true", "--set", "prometheusRule.enabled=true"],
    ]);
    expect(result.code, result.stderr).toBe(0);
    const [manifest = "", notes = ""] = result.stdout.split(/^NOTES:$/m);
    expect(manifest).not.toMatch(/^kind: (ServiceMonitor|PrometheusRule)$/m);
    expect(notes).toMatch(/serviceMonitor\.enabled, but the cluster serves no ServiceMonitor CRD[^]*not rendered/);
    expect(notes).toMatch(/prometheusRule\.enabled, but the cluster serves no PrometheusRule CRD/);
  });
});

describe("a first install with the chart's provider configs, on a cluster without keyward's CRDs", () => {
  it("kubectl keyward check on the empty cluster: exit 1, each CRD missing and no controller, with what to do", async () => {
    const r = await check(["-A"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^FAIL {2}CRD providerconfigs\.keyward\.dev is missing\n {6}fix: install keyward's CRDs of this version: /m);
    expect(r.stdout.match(/^FAIL {2}CRD \S+ is missing$/gm)).toHaveLength(7);
    expect(r.stdout).toMatch(/^FAIL {2}controller: no keyward pod \(app\.kubernetes\.io\/name=keyward\) in any namespace$/m);
  });

  it("helm install creates the CRDs, then the ProviderConfig and the ClusterProviderConfig", async () => {
    const crds = await kubectlJson<{ items: unknown[] }>(["get", "crd"]);
    expect(crds.items).toEqual([]);
    const install = await release("install", "https://secrets.example.com");
    expect(install.code, install.stderr).toBe(0);
    expect(install.stderr).not.toMatch(/no matches for kind/);
    expect((await providerConfig()).spec.baseUrl).toBe("https://secrets.example.com");
    expect((await clusterProviderConfig()).spec.baseUrl).toBe("https://secrets.example.com");
  });

  it("kubectl keyward check after that install, whose controller never runs here: the CRDs pass, the controller and the configs fail", async () => {
    const r = await check(["-A"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^ok {4}CRDs: all 7 of keyward\.dev present, Established, of this version$/m);
    // No node and no controller manager: the Deployment has no pod.
    expect(r.stdout).toMatch(/^FAIL {2}controller: no keyward pod/m);
    expect(r.stdout).toMatch(
      new RegExp(`^FAIL {2}ProviderConfig ${ns}/default not Ready: no status yet\n {6}fix: keyward has not reconciled it`, "m"),
    );
  });

  it("without a webhook pod a read naming no version fails with the conversion error, one of v1alpha1 by name works, and check names the webhook", async () => {
    const unqualified = await execFileAsync(kubectlBin, [
      "--kubeconfig",
      plane.kubeconfigPath,
      "-n",
      ns,
      "get",
      "providerconfigs.keyward.dev",
      "default",
    ]).then(
      () => ({ code: 0, stderr: "" }),
      (err: unknown) => {
        const { code, stderr } = err as { code?: number; stderr?: string };
        return { code: code ?? -1, stderr: stderr ?? "" };
      },
    );
    expect(unqualified.code).not.toBe(0);
    expect(unqualified.stderr).toMatch(/conversion webhook for keyward\.dev\/v1alpha1, Kind=ProviderConfig failed/);
    // The read docs/install.md tells users to make meanwhile, run as written.
    const documented = /^kubectl (-n keyward-system get providerconfigs\.v1alpha1\.keyward\.dev default)$/m.exec(
      readFileSync(join(chartDir, "..", "..", "docs", "install.md"), "utf8"),
    );
    expect(documented?.[1]).toBeDefined();
    const read = await execFileAsync(kubectlBin, ["--kubeconfig", plane.kubeconfigPath, ...(documented?.[1] ?? "").split(" ")]);
    expect(read.stdout).toMatch(/^default\s/m);
    const r = await check(["-A"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(
      new RegExp(
        `^FAIL {2}conversion webhook: its Service ${ns}/kw-keyward-webhook has no ready endpoint, so reads of the other versions, and reads that name no version \\(kubectl get (\\w+)\\.keyward\\.dev\\), fail; reads of v1alpha1 by name \\(kubectl get \\1\\.v1alpha1\\.keyward\\.dev\\) work\n {6}fix: kubectl -n ${ns} get deployment,pods -l app\\.kubernetes\\.io/component=webhook; kubectl -n ${ns} describe deployment kw-keyward-webhook$`,
        "m",
      ),
    );
    // The plugin itself reads the stored version: the provider configs are still listed and judged.
    expect(r.stdout).toMatch(new RegExp(`^FAIL {2}ProviderConfig ${ns}/default not Ready: no status yet`, "m"));
  });

  it("helm upgrade leaves them alone, and its notes say they are not the release's and how to change them", async () => {
    const upgrade = await release("upgrade", "https://other.example.com");
    expect(upgrade.code, upgrade.stderr).toBe(0);
    expect(upgrade.stdout).toMatch(
      new RegExp(
        `ProviderConfig ${ns}/default and ClusterProviderConfig shared: created by the first install[^]*not part of\\s+the release`,
      ),
    );
    // Not claimed by the release (whose manifest would then say a URL the object does not have).
    expect(await manifest()).not.toMatch(/^kind: (Cluster)?ProviderConfig$/m);
    expect((await providerConfig()).spec.baseUrl).toBe("https://secrets.example.com");
    expect((await clusterProviderConfig()).spec.baseUrl).toBe("https://secrets.example.com");
  });

  it("handed to the release as the install docs say, the next upgrades change them", async () => {
    // docs/install.md, "Provider configs from the chart".
    const kubectl = (args: string[]) => execFileAsync(kubectlBin, ["--kubeconfig", plane.kubeconfigPath, ...args]);
    for (const target of [
      ["-n", ns, "providerconfigs.v1alpha1.keyward.dev/default"],
      ["clusterproviderconfigs.v1alpha1.keyward.dev/shared"],
    ]) {
      await kubectl([
        "annotate",
        ...target,
        "helm.sh/hook-",
        "helm.sh/hook-delete-policy-",
        `meta.helm.sh/release-name=kw`,
        `meta.helm.sh/release-namespace=${ns}`,
      ]);
    }
    // The upgrade that adopts them: Helm patches an adopted object from its rendering to itself.
    expect((await release("upgrade", "https://secrets.example.com")).code).toBe(0);
    expect(await manifest()).toMatch(/^kind: ProviderConfig$/m);
    expect(await manifest()).toMatch(/^kind: ClusterProviderConfig$/m);
    const upgrade = await release("upgrade", "https://other.example.com");
    expect(upgrade.code, upgrade.stderr).toBe(0);
    expect(upgrade.stdout).not.toMatch(/created by the first install/);
    expect((await providerConfig()).spec.baseUrl).toBe("https://other.example.com");
    expect((await clusterProviderConfig()).spec.baseUrl).toBe("https://other.example.com");
  });

  it("helm uninstall leaves them, as it leaves every keyward resource", async () => {
    const uninstall = await helm(["uninstall", "kw", "-n", ns, "--no-hooks", "--kubeconfig", plane.kubeconfigPath]);
    expect(uninstall.code, uninstall.stderr).toBe(0);
    expect((await providerConfig()).metadata.name).toBe("default");
    expect((await clusterProviderConfig()).metadata.name).toBe("shared");
  });
});
