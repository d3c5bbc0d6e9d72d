// docs/compatibility.md's table of versions says what the tests pin: the Kubernetes release of the
// test control plane and the kind e2e (hack/e2e/lib.sh), the helm ensure-helm.sh builds and the
// Argo CD module of the e2e; and why Kubernetes 1.28 is the oldest that can serve the CRDs.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { pinnedHelmVersion, repoRoot } from "../chart/helm.ts";

const read = (file: string): string => readFileSync(join(repoRoot, file), "utf8");
const table = (): string => {
  const text = read("docs/compatibility.md");
  return text.slice(text.indexOf("## Kubernetes, Helm and Argo CD"), text.indexOf("## Version numbers"));
};

describe("docs/compatibility.md's versions", () => {
  it("name the versions the tests run", () => {
    const kube = /^K8S_VERSION=(v\d+\.\d+\.\d+)/m.exec(read("hack/e2e/lib.sh"))?.[1];
    const argocd = /argo-cd\/v3 (v\d+\.\d+\.\d+)/.exec(read("hack/e2e/go/argocd/go.mod"))?.[1];
    expect(kube).toBeDefined();
    expect(argocd).toBeDefined();
    const row = (name: string) => table().split("\n").find((l) => l.startsWith(`| ${name} |`)) ?? "";
    expect(row("Kubernetes")).toContain(`| ${kube ?? ""}:`);
    expect(row("Helm")).toMatch(new RegExp(`\\| ${pinnedHelmVersion().replaceAll(".", "\\.")} \\|$`));
    expect(row("Argo CD")).toMatch(new RegExp(`\\| ${(argocd ?? "").replaceAll(".", "\\.")} \\|$`));
  });

  it("say what needs Kubernetes 1.28: the CRDs' rules with reason and fieldPath", () => {
    expect(table()).toMatch(/\| Kubernetes \| 1\.28 or newer: the CRDs' validation rules carry `reason` and `fieldPath`/);
    expect(read("crds/secretsyncs.keyward.dev.yaml")).toMatch(/^ +fieldPath: /m);
  });
});
