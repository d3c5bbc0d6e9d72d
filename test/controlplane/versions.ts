// The Kubernetes minors keyward's control plane can be built at: one Go module per minor under
// hack/controlplane-go/kube/v1.Y/, whose go.mod requires the patch release. The minor `npm test`
// runs on is named in hack/controlplane-go/test-version (read by scripts too); the release the
// kind e2e runs is the one hack/e2e/go/kube/go.mod builds (generated from one of those modules).
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { requiredVersion } from "./gomod.ts";

export const goModulesDir = resolve(import.meta.dirname, "..", "..", "hack", "controlplane-go");
/** The module of the kind e2e's node components (hack/controlplane-go/update.ts --e2e). */
export const e2eKubeModuleDir = resolve(import.meta.dirname, "..", "..", "hack", "e2e", "go", "kube");

/** v1.36.3 -> v1.36 */
export function minorOf(version: string): string {
  const match = /^(v1\.\d+)(\.\d+.*)?$/.exec(version);
  if (match?.[1] === undefined) throw new Error(`not a Kubernetes v1.x(.y) version: ${version}`);
  return match[1];
}

export function kubeModuleDir(minor: string): string {
  return join(goModulesDir, "kube", minorOf(minor));
}

/** The supported minors, oldest first: every kube/v1.Y/ module. */
export function supportedMinors(): string[] {
  return readdirSync(join(goModulesDir, "kube"), { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && /^v1\.\d+$/.test(entry.name))
    .map((entry) => entry.name)
    .sort((a, b) => Number(a.slice(3)) - Number(b.slice(3)));
}

/** The minor `npm test` runs on (hack/controlplane-go/test-version). */
export function testMinor(): string {
  return minorOf(readFileSync(join(goModulesDir, "test-version"), "utf8").trim());
}

/** The Kubernetes release kube/v1.Y/go.mod builds, e.g. v1.36.3 for v1.36. */
export function kubernetesVersionOf(minor: string): string {
  const goMod = readFileSync(join(kubeModuleDir(minor), "go.mod"), "utf8");
  const version = requiredVersion(goMod, "k8s.io/kubernetes");
  if (version === undefined) throw new Error(`hack/controlplane-go/kube/${minor}/go.mod does not require k8s.io/kubernetes`);
  return version;
}

/** The Kubernetes release the kind e2e runs (hack/e2e/lib.sh reads the same line as K8S_VERSION). */
export function e2eKubernetesVersion(): string {
  const version = requiredVersion(readFileSync(join(e2eKubeModuleDir, "go.mod"), "utf8"), "k8s.io/kubernetes");
  if (version === undefined) throw new Error("hack/e2e/go/kube/go.mod does not require k8s.io/kubernetes");
  return version;
}

/** The minor a run uses: KEYWARD_K8S_MINOR (e.g. v1.32, as `npm run test:matrix` sets it), else testMinor(). */
export function selectedMinor(): string {
  const chosen = process.env.KEYWARD_K8S_MINOR;
  if (chosen === undefined || chosen === "") return testMinor();
  const minor = minorOf(chosen);
  if (!supportedMinors().includes(minor)) {
    throw new Error(`KEYWARD_K8S_MINOR=${chosen}: no hack/controlplane-go/kube/${minor}/ (supported: ${supportedMinors().join(", ")})`);
  }
  return minor;
}
