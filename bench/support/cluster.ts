// A real control plane for the benchmark: etcd and kube-apiserver (no controller manager: the
// benchmark needs no garbage collection and the whole plane is thrown away at the end), with
// keyward's CRDs from crds/ installed and Established.
import { execFile } from "node:child_process";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { KubeConfig, type CoreV1Api, type CustomObjectsApi } from "@kubernetes/client-node";
import type { EmulatorThread } from "./emulator.ts";
import { ensureBinaries, repoRoot } from "../../test/controlplane/binaries.ts";
import { startControlPlane } from "../../test/controlplane/controlplane.ts";
import { childPid } from "./proc.ts";
import { waitForCrdsEstablished } from "../../test/controlplane/crds-established.ts";

const execFileAsync = promisify(execFile);

export interface BenchCluster {
  kc: KubeConfig;
  kubeconfigPath: string;
  /** The kube-apiserver process (a child of this one), for its CPU time. */
  apiserverPid: number | undefined;
  kubeVersion: string;
  /** Runs kubectl against the cluster; resolves to stdout, rejects with stderr. */
  kubectl(args: string[]): Promise<string>;
  stop(): Promise<void>;
}

/** What a bench run works with: the cluster, the emulator, API clients and where keyward's logs go. */
export interface BenchContext {
  cluster: BenchCluster;
  emulator: EmulatorThread;
  core: CoreV1Api;
  custom: CustomObjectsApi;
  logDir: string;
}

export async function startCluster(log: (line: string) => void): Promise<BenchCluster> {
  const binaries = await ensureBinaries({ log });
  const plane = await startControlPlane({ binaries, withControllerManager: false, log });
  const kubectlPath = binaries.kubectl ?? "kubectl";
  const kubectl = async (args: string[]): Promise<string> => {
    try {
      const { stdout } = await execFileAsync(kubectlPath, ["--kubeconfig", plane.kubeconfigPath, ...args], { maxBuffer: 64 * 1024 * 1024 });
      return stdout;
    } catch (error) {
      throw new Error(`kubectl ${args.slice(0, 2).join(" ")} failed: ${((error as { stderr?: string }).stderr ?? String(error)).trim()}`, {
        cause: error,
      });
    }
  };
  try {
    await installCrds(kubectl);
  } catch (error) {
    await plane.stop();
    throw error;
  }
  const kc = new KubeConfig();
  kc.loadFromFile(plane.kubeconfigPath);
  return {
    kc,
    kubeconfigPath: plane.kubeconfigPath,
    apiserverPid: childPid("kube-apiserver"),
    kubeVersion: binaries.version ?? "(KUBEBUILDER_ASSETS)",
    kubectl,
    stop: plane.stop,
  };
}

async function installCrds(kubectl: BenchCluster["kubectl"]): Promise<void> {
  const dir = join(repoRoot, "crds");
  const files = (await readdir(dir))
    .filter((name) => /\.ya?ml$/.test(name) && !name.startsWith("kustomization"))
    .map((name) => ["-f", join(dir, name)]);
  if (files.length === 0) throw new Error("crds/ holds no CRD files");
  await kubectl(["apply", "--server-side", "--force-conflicts", ...files.flat()]);
  await waitForCrdsEstablished(kubectl, files.flat());
}
