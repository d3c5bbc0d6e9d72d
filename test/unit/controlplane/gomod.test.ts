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
  stagingReplacement,
  stagingVersion,
} from "../../controlplane/gomod.ts";
import { kubernetesVersionOf, minorOf, supportedMinors, testMinor } from "../../controlplane/versions.ts";

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

  it("points a staging module the proxy does not serve at the newest older patch of that minor, and says so", () => {
    expect(stagingReplacement("v0.32.13", undefined)).toBe("v0.32.13");
    expect(stagingReplacement("v0.32.13", ["v0.32.13"])).toBe("v0.32.13");
    expect(stagingReplacement("v0.32.13", ["v0.31.14", "v0.32.3", "v0.32.12", "v0.32.9", "v0.33.1", "v0.32.14", "v0.32.12-rc.0"])).toBe(
      "v0.32.12",
    );
    expect(() => stagingReplacement("v0.32.13", ["v0.31.14", "v0.33.0"])).toThrow(/no release of v0\.32\.x/);
    const goMod = renderKubeGoMod(upstream, "v1.32.13", { "k8s.io/kubectl": ["v0.32.3", "v0.32.12"] });
    expect(goMod).toContain("\tk8s.io/kubectl => k8s.io/kubectl v0.32.12 // v0.32.13 is not published\n");
    expect(goMod).toContain("\tk8s.io/api => k8s.io/api v0.32.13\n");
  });

  it("renders the etcd module at the etcd server version Kubernetes pins", () => {
    expect(requiredVersion(renderEtcdGoMod(upstream, "v1.36.3"), "go.etcd.io/etcd/server/v3")).toBe("v3.6.8");
    expect(() => renderEtcdGoMod("module x\n", "v1.36.3")).toThrow(/etcd\/server/);
  });
});

describe("the committed hack/controlplane-go modules", () => {
  const dir = join(import.meta.dirname, "..", "..", "..", "hack", "controlplane-go");
  const kubeGoMod = (minor: string) => readFileSync(join(dir, "kube", minor, "go.mod"), "utf8");

  it("are one module per supported minor, 1.32 to 1.37, and npm test runs on one of them", () => {
    expect(supportedMinors()).toEqual(["v1.32", "v1.33", "v1.34", "v1.35", "v1.36", "v1.37"]);
    expect(supportedMinors()).toContain(testMinor());
  });

  it.each(supportedMinors())("%s: replaces every k8s.io staging module with the release matching k8s.io/kubernetes", (minor) => {
    const kubernetes = requiredVersion(kubeGoMod(minor), "k8s.io/kubernetes");
    expect(kubernetes).toMatch(/^v1\.\d+\.\d+$/);
    expect(minorOf(kubernetes ?? "")).toBe(minor);
    expect(kubernetesVersionOf(minor)).toBe(kubernetes);
    const replaces = [...kubeGoMod(minor).matchAll(/^\t(k8s\.io\/\S+) => (\S+) (\S+)( \/\/ (\S+) is not published)?$/gm)];
    expect(replaces.length).toBeGreaterThan(20);
    for (const [, from, to, version, note, wanted] of replaces) {
      expect(to).toBe(from);
      // A release the module proxy does not serve is replaced by an older patch of the same minor.
      if (note === undefined) expect(version).toBe(stagingVersion(kubernetes ?? ""));
      else expect([wanted, minorOf((version ?? "").replace(/^v0/, "v1"))]).toEqual([stagingVersion(kubernetes ?? ""), minor]);
    }
  });

  it.each(supportedMinors())("%s: has go.sum entries for what it builds", (minor) => {
    const kubernetes = requiredVersion(kubeGoMod(minor), "k8s.io/kubernetes") ?? "";
    expect(readFileSync(join(dir, "kube", minor, "go.sum"), "utf8")).toContain(`k8s.io/kubernetes ${kubernetes} h1:`);
  });

  it("build the kind e2e's release: its node image takes kube-apiserver, the controller manager and etcd from that build", () => {
    const e2e = /^K8S_VERSION=(v\S+)/m.exec(readFileSync(join(dir, "..", "e2e", "lib.sh"), "utf8"))?.[1] ?? "";
    expect(supportedMinors()).toContain(minorOf(e2e));
    expect(kubernetesVersionOf(minorOf(e2e))).toBe(e2e);
    expect(requiredVersion(readFileSync(join(dir, "..", "e2e", "go", "kube", "go.mod"), "utf8"), "k8s.io/kubernetes")).toBe(e2e);
  });

  it("has the one etcd every minor runs with", () => {
    const etcdVersion = requiredVersion(readFileSync(join(dir, "etcd", "go.mod"), "utf8"), "go.etcd.io/etcd/server/v3") ?? "";
    expect(readFileSync(join(dir, "etcd", "go.sum"), "utf8")).toContain(`go.etcd.io/etcd/server/v3 ${etcdVersion} h1:`);
  });
});
