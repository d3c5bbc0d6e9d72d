// docs/compatibility.md's table of versions says what the tests pin: the Kubernetes release of the
// test control plane (the newest minor) and of the kind e2e (the oldest), the helm ensure-helm.sh
// builds and the Argo CD module of the e2e; the oldest Kubernetes the chart takes (its kubeVersion) and why the
// CRDs alone need 1.28; and the matrix run's row for every minor the control plane builds.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { e2eKubernetesVersion, kubernetesVersionOf, supportedMinors, testMinor } from "../../controlplane/versions.ts";
import { pinnedHelmVersion, repoRoot } from "../chart/helm.ts";

const read = (file: string): string => readFileSync(join(repoRoot, file), "utf8");
const table = (): string => {
  const text = read("docs/compatibility.md");
  return text.slice(text.indexOf("## Kubernetes, Helm and Argo CD"), text.indexOf("## Version numbers"));
};

describe("docs/compatibility.md's versions", () => {
  it("name the versions the tests run", () => {
    const argocd = /argo-cd\/v3 (v\d+\.\d+\.\d+)/.exec(read("hack/e2e/go/argocd/go.mod"))?.[1];
    expect(argocd).toBeDefined();
    const row = (name: string) => table().split("\n").find((l) => l.startsWith(`| ${name} |`)) ?? "";
    expect(row("Kubernetes")).toContain(`| ${kubernetesVersionOf(testMinor())}: the apiserver of \`npm test\`;`);
    expect(row("Kubernetes")).toContain(`; ${e2eKubernetesVersion()}: the kind e2e`);
    expect(row("Helm")).toMatch(new RegExp(`\\| ${pinnedHelmVersion().replaceAll(".", "\\.")} \\|$`));
    expect(row("Argo CD")).toMatch(new RegExp(`\\| ${(argocd ?? "").replaceAll(".", "\\.")} \\|$`));
  });

  it("say the oldest Kubernetes the chart takes, and what needs 1.28: the CRDs' rules with reason and fieldPath", () => {
    const oldest = supportedMinors()[0]?.slice(1) ?? "";
    expect(read("charts/keyward/Chart.yaml")).toContain(`kubeVersion: ">=${oldest}.0-0"`);
    expect(table()).toContain(`| Kubernetes | ${oldest} or newer (the chart's \`kubeVersion\`)`);
    expect(table()).toMatch(/the CRDs alone need 1\.28: their validation rules carry `reason` and `fieldPath`/);
    expect(read("crds/secretsyncs.keyward.dev.yaml")).toMatch(/^ +fieldPath: /m);
  });

  it("show the matrix run's row for every supported minor, and where the full suites run", () => {
    const text = read("docs/compatibility.md");
    const matrix = text.slice(text.indexOf("### Tested Kubernetes versions"), text.indexOf("## Version numbers"));
    expect(matrix).toMatch(/on \d{4}-\d{2}-\d{2} at commit [0-9a-f]{7,}/);
    for (const minor of supportedMinors()) expect(matrix).toMatch(new RegExp(`^\\| ${kubernetesVersionOf(minor).replaceAll(".", "\\.")} \\|`, "m"));
    expect(matrix).toContain(
      `The full test suite runs on ${kubernetesVersionOf(testMinor())} (the newest) and the kind e2e on ${e2eKubernetesVersion()} (the oldest)`,
    );
  });
});
