import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  goDirective,
  kubeTools,
  renderEtcdGoMod,
  renderKubeGoMod,
  requiredVersion,
  stagingModules,
  stagingVersion,
} from "../../controlplane/gomod.ts";

// The shape of k8s.io/kubernetes's own go.mod, cut down.
const upstream = `// This is a generated file. Do not edit directly.

module k8s.io/kubernetes

go 1.26.0

godebug default=go1.26

require (
	github.com/spf13/cobra v1.10.2
	go.etcd.io/etcd/client/v3 v3.6.8
	k8s.io/api v0.0.0
	k8s.io/apiserver v0.0.0 // the apiserver library
	k8s.io/kubectl v0.0.0
)

require go.etcd.io/etcd/server/v3 v3.6.8 // indirect

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/apiserver => ./staging/src/k8s.io/apiserver
	k8s.io/kubectl => ./staging/src/k8s.io/kubectl
	k8s.io/sample-cli-plugin => ./staging/src/k8s.io/sample-cli-plugin
	github.com/example/fork => github.com/example/fork v1.2.3
)
`;

describe("go.mod generation for the local control plane", () => {
  it("replaces exactly the required staging modules", () => {
    expect(stagingModules(upstream)).toEqual(["k8s.io/api", "k8s.io/apiserver", "k8s.io/kubectl"]);
  });

  it("maps a Kubernetes version to its staging modules' version", () => {
    expect(stagingVersion("v1.36.3")).toBe("v0.36.3");
    expect(stagingVersion("v1.35.4")).toBe("v0.35.4");
    expect(() => stagingVersion("v0.36.3")).toThrow(/not a Kubernetes/);
  });

  it("reads required versions from blocks and single-line directives", () => {
    expect(requiredVersion(upstream, "go.etcd.io/etcd/client/v3")).toBe("v3.6.8");
    expect(requiredVersion(upstream, "go.etcd.io/etcd/server/v3")).toBe("v3.6.8");
    expect(requiredVersion(upstream, "k8s.io/apiserver")).toBe("v0.0.0");
    expect(requiredVersion(upstream, "k8s.io/not-there")).toBeUndefined();
    expect(goDirective(upstream)).toBe("1.26.0");
  });

  it("renders the kube module: the release, its staging replacements and the tools", () => {
    const goMod = renderKubeGoMod(upstream, "v1.36.3");
    expect(requiredVersion(goMod, "k8s.io/kubernetes")).toBe("v1.36.3");
    expect(goMod).toContain("\tk8s.io/api => k8s.io/api v0.36.3\n");
    expect(goMod).toContain("\tk8s.io/kubectl => k8s.io/kubectl v0.36.3\n");
    expect(goMod).not.toContain("sample-cli-plugin");
    expect(goMod).not.toContain("./staging");
    for (const tool of kubeTools) expect(goMod).toContain(`\t${tool}\n`);
    expect(goDirective(goMod)).toBe("1.26.0");
  });

  it("renders the etcd module at the etcd server version Kubernetes pins", () => {
    expect(requiredVersion(renderEtcdGoMod(upstream, "v1.36.3"), "go.etcd.io/etcd/server/v3")).toBe("v3.6.8");
    expect(() => renderEtcdGoMod("module x\n", "v1.36.3")).toThrow(/etcd\/server/);
  });
});

describe("the committed hack/controlplane-go modules", () => {
  const dir = join(import.meta.dirname, "..", "..", "..", "hack", "controlplane-go");
  const kubeGoMod = readFileSync(join(dir, "kube", "go.mod"), "utf8");

  it("replace every k8s.io staging module with the release matching k8s.io/kubernetes", () => {
    const kubernetes = requiredVersion(kubeGoMod, "k8s.io/kubernetes");
    expect(kubernetes).toMatch(/^v1\.\d+\.\d+$/);
    const replaces = [...kubeGoMod.matchAll(/^\t(k8s\.io\/\S+) => (\S+) (\S+)$/gm)];
    expect(replaces.length).toBeGreaterThan(20);
    for (const [, from, to, version] of replaces) {
      expect(to).toBe(from);
      expect(version).toBe(stagingVersion(kubernetes ?? ""));
    }
  });

  it("have go.sum entries for what they build", () => {
    const kubernetes = requiredVersion(kubeGoMod, "k8s.io/kubernetes") ?? "";
    expect(readFileSync(join(dir, "kube", "go.sum"), "utf8")).toContain(`k8s.io/kubernetes ${kubernetes} h1:`);
    const etcdVersion = requiredVersion(readFileSync(join(dir, "etcd", "go.mod"), "utf8"), "go.etcd.io/etcd/server/v3") ?? "";
    expect(readFileSync(join(dir, "etcd", "go.sum"), "utf8")).toContain(`go.etcd.io/etcd/server/v3 ${etcdVersion} h1:`);
  });
});
