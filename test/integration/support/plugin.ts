// The kubectl plugin (bin/kubectl-keyward.cjs) as its users run it: a PATH entry named
// kubectl-keyward beside the test cluster's kubectl, found and run by kubectl's plugin lookup.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { testKubeconfigPath, testKubectlPath } from "../../controlplane/testenv.ts";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

export interface PluginResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface InstalledPlugin {
  /** A directory holding kubectl and kubectl-keyward (the test may put more there: a kubeconfig). */
  binDir: string;
  /** PATH with binDir first, then Node 24, then the test's PATH. */
  path: string;
  /** `kubectl keyward <args>` with the test cluster's kubeconfig (extraEnv may name another). */
  run(args: string[], extraEnv?: Record<string, string>): Promise<PluginResult>;
  /** Runs a command (kubectl) with PATH set to `path`. */
  spawnWithPath(command: string, args: string[], extraEnv?: Record<string, string>): Promise<PluginResult>;
  remove(): void;
}

export function installPlugin(): InstalledPlugin {
  const binDir = mkdtempSync(join(tmpdir(), "kubectl-keyward-"));
  symlinkSync(testKubectlPath(), join(binDir, "kubectl"));
  symlinkSync(join(repoRoot, "bin", "kubectl-keyward.cjs"), join(binDir, "kubectl-keyward"));
  const path = [binDir, dirname(process.execPath), process.env["PATH"] ?? ""].join(":");
  const spawnWithPath = (command: string, args: string[], extraEnv: Record<string, string> = {}): Promise<PluginResult> =>
    new Promise((resolve, reject) => {
      const child = spawn(command, args, { env: { ...process.env, PATH: path, ...extraEnv }, stdio: ["ignore", "pipe", "pipe"] });
      let stdout = "";
      let stderr = "";
      child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
      child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
      // A safety net against a plugin that never returns, not a timing assertion.
      const guard = setTimeout(() => child.kill("SIGKILL"), 100_000);
      child.on("error", reject);
      child.on("close", (code) => {
        clearTimeout(guard);
        resolve({ code: code ?? -1, stdout, stderr });
      });
    });
  return {
    binDir,
    path,
    run: (args, extraEnv = {}) => spawnWithPath("kubectl", ["keyward", ...args], { KUBECONFIG: testKubeconfigPath(), ...extraEnv }),
    spawnWithPath,
    remove: () => rmSync(binDir, { recursive: true, force: true }),
  };
}
