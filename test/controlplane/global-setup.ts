// vitest globalSetup of the integration project: one control plane per run (or an existing
// cluster named by KEYWARD_E2E_KUBECONFIG), keyward's CRDs installed (v1beta1 served beside the stored
// v1alpha1, converted by keyward's webhook in this process: crds-with-webhook.ts), and the kubeconfig and
// kubectl paths handed to test files through provide/inject and KEYWARD_TEST_* env vars.
import { execFile } from "node:child_process";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import type { TestProject } from "vitest/node";
import { ensureBinaries, repoRoot } from "./binaries.ts";
import { startControlPlane } from "./controlplane.ts";
import { waitForCrdsEstablished } from "./crds-established.ts";
import { installCrdsWithWebhook } from "./crds-with-webhook.ts";

declare module "vitest" {
  export interface ProvidedContext {
    /** Admin kubeconfig of the cluster the integration tests run against. */
    keywardKubeconfig: string;
    /** The kubectl binary to run against it. */
    keywardKubectl: string;
    /** Whether a controller manager runs (garbage collection, namespace deletion). */
    keywardControllerManager: boolean;
  }
}

const execFileAsync = promisify(execFile);
const log = (line: string) => process.stderr.write(`[control-plane] ${line}\n`);

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const cluster = await provideCluster();
  project.provide("keywardKubeconfig", cluster.kubeconfig);
  project.provide("keywardKubectl", cluster.kubectl);
  project.provide("keywardControllerManager", cluster.controllerManager);
  process.env.KEYWARD_TEST_KUBECONFIG = cluster.kubeconfig;
  process.env.KEYWARD_TEST_KUBECTL = cluster.kubectl;
  if (process.env.KEYWARD_E2E_KUBECONFIG) {
    await installCrds(cluster);
    return cluster.stop;
  }
  try {
    const served = await installCrdsWithWebhook({ kubeconfig: cluster.kubeconfig, kubectl: cluster.kubectl });
    log(`installed keyward's CRDs, v1beta1 converted by keyward's webhook at ${served.url}`);
    return async () => {
      await served.stop();
      await cluster.stop();
    };
  } catch (error) {
    await cluster.stop();
    throw error;
  }
}

interface Cluster {
  kubeconfig: string;
  kubectl: string;
  controllerManager: boolean;
  stop: () => Promise<void>;
}

async function provideCluster(): Promise<Cluster> {
  const existing = process.env.KEYWARD_E2E_KUBECONFIG;
  if (existing !== undefined && existing !== "") {
    log(`using the existing cluster of KEYWARD_E2E_KUBECONFIG=${existing}`);
    return {
      kubeconfig: existing,
      kubectl: process.env.KEYWARD_TEST_KUBECTL ?? "kubectl",
      controllerManager: true,
      stop: () => Promise.resolve(),
    };
  }
  // Another minor than npm test's (KEYWARD_K8S_MINOR, as `npm run test:matrix` sets it) runs
  // without a controller manager unless its full build is already there: see EnsureOptions.
  const binaries = await ensureBinaries({ log });
  const started = Date.now();
  const controllerManager = binaries.kubeControllerManager !== undefined;
  const plane = await startControlPlane({ binaries, withControllerManager: controllerManager });
  log(`kube-apiserver ${binaries.version ?? "(KUBEBUILDER_ASSETS)"} ready at ${plane.server} in ${Date.now() - started}ms`);
  return { kubeconfig: plane.kubeconfigPath, kubectl: binaries.kubectl ?? "kubectl", controllerManager, stop: plane.stop };
}

/**
 * An existing cluster (a kind cluster with keyward's release, whose webhook converts): applies
 * crds/*.yaml and waits until they are served.
 */
async function installCrds(cluster: Cluster): Promise<void> {
  const crdsDir = join(repoRoot, "crds");
  const files = (await readdir(crdsDir).catch(() => []))
    .filter((name) => /\.(ya?ml|json)$/.test(name) && !name.startsWith("kustomization"))
    .sort()
    .map((name) => join(crdsDir, name));
  if (files.length === 0) return;
  const fileArgs = files.flatMap((file) => ["-f", file]);
  const kubectl = (args: string[]) =>
    execFileAsync(cluster.kubectl, ["--kubeconfig", cluster.kubeconfig, ...args]).catch((error: unknown) => {
      const stderr = (error as { stderr?: string }).stderr ?? String(error);
      throw new Error(`kubectl ${args[0] ?? ""} of crds/ failed: ${stderr.trim()}`);
    });
  await kubectl(["apply", "--server-side", "--force-conflicts", ...fileArgs]);
  await waitForCrdsEstablished(async (args) => (await kubectl(args)).stdout, fileArgs);
  log(`installed ${files.length} CRD file(s) from crds/`);
}
