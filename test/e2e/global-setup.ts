// vitest globalSetup of the e2e project: hack/e2e/up.sh builds or reuses everything (docker,
// kind, the node image, the cluster, keyward's release artifacts as `npm run release` makes them
// — the image loaded into the cluster from its OCI archive, the packaged chart — and the
// emulator's image) and prints KEY=VALUE lines; they reach the test files through provide/inject.
import type { TestProject } from "vitest/node";
import { upScript } from "../../bench/soak/kind.ts";

export interface E2eContext {
  kubeconfig: string;
  kubectl: string;
  helm: string;
  /** package.json's version, the release's. */
  keywardVersion: string;
  /** The release's image, <the chart's image.repository>:<version>, loaded from its OCI archive. */
  keywardImage: string;
  /** The same image under the tag <version>-next. */
  keywardImageNext: string;
  /** The release's packaged chart (hack/release.sh): what a user installs. */
  keywardChart: string;
  /** The release's CycloneDX SBOM of the image. */
  keywardSbom: string;
  emulatorImage: string;
  argocdImage: string;
  /** Argo CD's CRDs and stock argocd-secret/-rbac-cm, from its Go module. */
  argocdManifests: string;
  /** The previous release (CHANGELOG.md) rebuilt from its commit, or why it could not be. */
  previousRelease: PreviousRelease | { error: string };
}

export interface PreviousRelease {
  version: string;
  commit: string;
  image: string;
  /** Its charts/keyward packaged as `version` (a .tgz). */
  chart: string;
}

declare module "vitest" {
  export interface ProvidedContext {
    e2e: E2eContext;
  }
}

export default async function setup(project: TestProject): Promise<void> {
  const started = Date.now();
  const values = await upScript();
  const get = values.get;
  const context: E2eContext = {
    kubeconfig: get("KUBECONFIG"),
    kubectl: get("KUBECTL"),
    helm: get("HELM"),
    keywardVersion: get("KEYWARD_VERSION"),
    keywardImage: get("KEYWARD_IMAGE"),
    keywardImageNext: get("KEYWARD_IMAGE_NEXT"),
    keywardChart: get("KEYWARD_CHART"),
    keywardSbom: get("KEYWARD_SBOM"),
    emulatorImage: get("EMULATOR_IMAGE"),
    argocdImage: get("ARGOCD_IMAGE"),
    argocdManifests: get("ARGOCD_MANIFESTS"),
    previousRelease: values.has("PREVIOUS_ERROR")
      ? { error: get("PREVIOUS_ERROR") }
      : {
          version: get("PREVIOUS_VERSION"),
          commit: get("PREVIOUS_COMMIT"),
          image: get("KEYWARD_IMAGE_PREVIOUS"),
          chart: get("PREVIOUS_CHART"),
        },
  };
  process.stderr.write(`[e2e] ready in ${Math.round((Date.now() - started) / 1000)}s: ${JSON.stringify(context)}\n`);
  project.provide("e2e", context);
}
