// kube-apiserver, etcd, kube-controller-manager and kubectl for the local control plane:
// taken from KUBEBUILDER_ASSETS when it holds them, otherwise built once per Kubernetes release
// from Go modules (hack/controlplane-go/kube/v1.Y/) into a cache outside the clone, shared by
// every clone and run.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { homedir, hostname } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { kubeTools } from "./gomod.ts";
import { isAlive, sleep } from "./processes.ts";
import { goModulesDir, kubeModuleDir, kubernetesVersionOf, minorOf, selectedMinor, testMinor } from "./versions.ts";

export interface Binaries {
  binDir: string;
  kubeApiserver: string;
  etcd: string;
  /** Undefined only when KUBEBUILDER_ASSETS has none. */
  kubeControllerManager: string | undefined;
  kubectl: string | undefined;
  /** The Kubernetes version, e.g. v1.36.3 (undefined for KUBEBUILDER_ASSETS). */
  version: string | undefined;
  source: "KUBEBUILDER_ASSETS" | "cache" | "built";
}

export const repoRoot = resolve(import.meta.dirname, "..", "..");
export { goModulesDir };

const etcdInputs = ["etcd/go.mod", "etcd/go.sum", "etcd/main.go"];
const allTools = ["kube-apiserver", "kube-controller-manager", "kubectl"] as const;

export function cacheRoot(): string {
  return process.env.KEYWARD_CACHE_DIR ?? join(homedir(), ".cache", "keyward");
}

/** The Kubernetes release the control plane of `minor` (default: selectedMinor()) is built at. */
export function kubernetesVersion(minor: string = selectedMinor()): string {
  return kubernetesVersionOf(minor);
}

export function versionDirOf(version: string): string {
  return join(cacheRoot(), "controlplane", `k8s-${version}`);
}

export function binariesIn(binDir: string, version: string | undefined, source: Binaries["source"]): Binaries {
  const optional = (name: string) => (existsSync(join(binDir, name)) ? join(binDir, name) : undefined);
  return {
    binDir,
    kubeApiserver: join(binDir, "kube-apiserver"),
    etcd: join(binDir, "etcd"),
    kubeControllerManager: optional("kube-controller-manager"),
    kubectl: optional("kubectl"),
    version,
    source,
  };
}

export interface EnsureOptions {
  /** Where build progress goes; the default is stderr. */
  log?: (line: string) => void;
  /** The Kubernetes minor, e.g. v1.32 (hack/controlplane-go/kube/v1.32/); default: selectedMinor(). */
  minor?: string;
  /**
   * Build kube-controller-manager and kubectl too for a minor other than the test version (the
   * kind e2e's node image takes them). Without it such a minor gets kube-apiserver (and etcd)
   * alone, most of a build, and kubectl from the test version's build: the tests of the matrix's
   * other minors need no controller manager. A full build in the cache serves either.
   */
  allTools?: boolean;
}

export async function ensureBinaries(options: EnsureOptions = {}): Promise<Binaries> {
  const log = options.log ?? ((line: string) => process.stderr.write(`[control-plane] ${line}\n`));
  const assets = process.env.KUBEBUILDER_ASSETS;
  if (assets !== undefined && assets !== "") {
    if (existsSync(join(assets, "kube-apiserver")) && existsSync(join(assets, "etcd"))) {
      return binariesIn(assets, undefined, "KUBEBUILDER_ASSETS");
    }
    log(`KUBEBUILDER_ASSETS=${assets} has no kube-apiserver and etcd; using the build cache instead`);
  }
  const minor = minorOf(options.minor ?? selectedMinor());
  const apiserverOnly = options.allTools !== true && minor !== testMinor();
  const tools = apiserverOnly ? allTools.slice(0, 1) : allTools;
  const version = kubernetesVersion(minor);
  const versionDir = versionDirOf(version);
  const stamp = await inputsHash(version, minor);
  const found = async (source: Binaries["source"]): Promise<Binaries> => {
    const binaries = binariesIn(join(versionDir, "bin"), version, source);
    if (binaries.kubectl !== undefined || !apiserverOnly) return binaries;
    return { ...binaries, kubectl: (await ensureBinaries({ log, minor: testMinor() })).kubectl };
  };
  if (await isBuilt(versionDir, stamp, tools)) return found("cache");
  return withLock(`${versionDir}.lock`, log, async () => {
    // Another run may have finished the build while this one waited for the lock.
    if (await isBuilt(versionDir, stamp, tools)) return found("cache");
    await build({ version, minor, tools, versionDir, inputs: stamp }, log);
    return found("built");
  });
}

interface BuildStamp {
  inputs: string;
  tools: string[];
  goVersion: string;
  builtAt: string;
  seconds: number;
}

async function inputsHash(version: string, minor: string): Promise<string> {
  const hash = createHash("sha256").update(version).update(ldflags(version));
  // The names hashed are those of the single kube/ module this layout replaced, so its builds stay valid.
  for (const input of ["go.mod", "go.sum"]) hash.update(`kube/${input}`).update(await readFile(join(kubeModuleDir(minor), input)));
  for (const input of etcdInputs) hash.update(input).update(await readFile(join(goModulesDir, input)));
  return hash.digest("hex");
}

async function isBuilt(versionDir: string, inputs: string, tools: readonly string[]): Promise<boolean> {
  try {
    const stamp = JSON.parse(await readFile(join(versionDir, "build.json"), "utf8")) as Partial<BuildStamp>;
    const complete = ["etcd", ...tools].every((name) => existsSync(join(versionDir, "bin", name)));
    return stamp.inputs === inputs && complete;
  } catch {
    return false;
  }
}

function ldflags(version: string): string {
  const [major, minor] = version.replace(/^v/, "").split(".");
  const vars: Record<string, string> = {
    gitVersion: version,
    gitMajor: major ?? "",
    gitMinor: minor ?? "",
    gitTreeState: "clean",
  };
  const flags = ["-s", "-w"];
  for (const pkg of ["k8s.io/component-base/version", "k8s.io/client-go/pkg/version"]) {
    for (const [name, value] of Object.entries(vars)) flags.push(`-X ${pkg}.${name}=${value}`);
  }
  return flags.join(" ");
}

interface BuildTarget {
  version: string;
  minor: string;
  tools: readonly string[];
  versionDir: string;
  inputs: string;
}

async function build({ version, minor, tools, versionDir, inputs }: BuildTarget, log: (line: string) => void): Promise<void> {
  const started = Date.now();
  const goVersion = (await run("go", ["env", "GOVERSION"], goModulesDir)).trim();
  await removeAbandonedBuilds(versionDir);
  const tmpDir = `${versionDir}.tmp-${process.pid}`;
  const binDir = join(tmpDir, "bin");
  await mkdir(binDir, { recursive: true });
  log(`building Kubernetes ${version} (${tools.join(", ")}) and etcd with ${goVersion} into ${versionDir}`);
  log("only the first run builds (5 to 20 minutes on 2 cores, plus module downloads); later runs reuse the cache");
  // go build is silent while it compiles: show it is alive.
  const heartbeat = setInterval(() => log(`still building (${Math.round((Date.now() - started) / 60_000)} min)`), 60_000);
  try {
    const packages = kubeTools.filter((pkg) => tools.includes(basename(pkg)));
    await goBuild(kubeModuleDir(minor), ["-ldflags", ldflags(version), "-o", `${binDir}/`, ...packages], log);
    await goBuild(join(goModulesDir, "etcd"), ["-ldflags", "-s -w", "-o", join(binDir, "etcd"), "."], log);
  } finally {
    clearInterval(heartbeat);
  }
  const seconds = Math.round((Date.now() - started) / 1000);
  const stamp: BuildStamp = { inputs, tools: [...tools], goVersion, builtAt: new Date().toISOString(), seconds };
  await writeFile(join(tmpDir, "build.json"), `${JSON.stringify(stamp, null, 2)}\n`);
  // Swap the finished tree in with renames so no reader ever sees a half-built bin/.
  const oldDir = `${versionDir}.old-${process.pid}`;
  if (existsSync(versionDir)) await rename(versionDir, oldDir);
  await rename(tmpDir, versionDir);
  await rm(oldDir, { recursive: true, force: true });
  log(`built in ${seconds}s`);
}

/** Half-built trees of killed builds (the lock is held, so nobody else is writing them). */
async function removeAbandonedBuilds(versionDir: string): Promise<void> {
  const parent = dirname(versionDir);
  const prefix = basename(versionDir);
  for (const entry of await readdir(parent)) {
    if (entry.startsWith(`${prefix}.tmp-`) || entry.startsWith(`${prefix}.old-`)) {
      await rm(join(parent, entry), { recursive: true, force: true });
    }
  }
}

async function goBuild(moduleDir: string, args: string[], log: (line: string) => void): Promise<void> {
  await run("go", ["build", "-trimpath", "-buildvcs=false", ...args], moduleDir, log);
}

/** Runs a command to completion; stderr lines go to `log`, a failure carries the output's tail. */
function run(command: string, args: string[], cwd: string, log?: (line: string) => void): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const env = { ...process.env, CGO_ENABLED: "0", GOWORK: "off" };
    const child = spawn(command, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderrTail = "";
    // `go: downloading` comes once per module (hundreds): say it every 50 so CI logs stay readable.
    let downloads = 0;
    const logQuietly = (line: string) => {
      if (!line.startsWith("go: downloading")) return log?.(line);
      if (downloads++ % 50 === 0) log?.(`downloading Go modules (${downloads} so far): ${line.slice(16)}`);
    };
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderrTail = (stderrTail + chunk).slice(-8000);
      if (log) for (const line of chunk.split("\n")) if (line.trim() !== "") logQuietly(line);
    });
    child.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") {
        reject(
          new Error(
            `${command} is not installed: install Go (see hack/controlplane-go) or set KUBEBUILDER_ASSETS to a directory holding kube-apiserver and etcd`,
          ),
        );
      } else reject(error);
    });
    child.on("close", (code) => {
      if (code === 0) resolvePromise(stdout);
      else reject(new Error(`${command} ${args.join(" ")} (in ${cwd}) exited with ${code}:\n${stderrTail}`));
    });
  });
}

const lockWaitMs = 60 * 60_000;

interface LockOwner {
  pid: number;
  host: string;
}

/**
 * Runs `fn` holding a lock directory (mkdir is atomic). A lock whose owner process is gone
 * (same host) is taken over, so a killed build never blocks later runs.
 */
async function withLock<T>(lockDir: string, log: (line: string) => void, fn: () => Promise<T>): Promise<T> {
  await mkdir(join(lockDir, ".."), { recursive: true });
  let waitingSaid = false;
  const giveUpAt = Date.now() + lockWaitMs;
  for (;;) {
    try {
      await mkdir(lockDir);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    if (await isStaleLock(lockDir)) {
      await rm(lockDir, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > giveUpAt) throw new Error(`gave up after ${lockWaitMs / 60_000} minutes waiting for the build lock ${lockDir}`);
    if (!waitingSaid) log(`waiting for another build holding ${lockDir}`);
    waitingSaid = true;
    await sleep(2000);
  }
  const owner: LockOwner = { pid: process.pid, host: hostname() };
  await writeFile(join(lockDir, "owner.json"), JSON.stringify(owner));
  try {
    return await fn();
  } finally {
    await rm(lockDir, { recursive: true, force: true });
  }
}

async function isStaleLock(lockDir: string): Promise<boolean> {
  try {
    const owner = JSON.parse(await readFile(join(lockDir, "owner.json"), "utf8")) as LockOwner;
    return owner.host === hostname() && !isAlive(owner.pid);
  } catch {
    // The owner file is written right after mkdir; give a fresh lock a moment before calling it abandoned.
    const created = await stat(lockDir).then(
      (s) => s.mtimeMs,
      () => Date.now(),
    );
    return Date.now() - created > 60_000;
  }
}
