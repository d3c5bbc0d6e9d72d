// Regenerates the go.mod (and go.sum) that builds one Kubernetes release's control plane:
//   node hack/controlplane-go/update.ts v1.36.3
// writes kube/v1.36/ (one module per supported minor; the patch release is the one it requires).
// With --etcd it also rewrites etcd/ to the etcd server that release pins (one etcd serves
// every minor: etcd's API is stable across the releases Kubernetes supports).
// With --e2e it also rewrites hack/e2e/go/kube/ (the kind e2e's node components) from the
// minor's module, so the e2e runs that release: `update.ts --e2e v1.32` does only that, from the
// committed kube/v1.32/.
// The release's go.mod comes through the Go toolchain (`go mod download`), like every module.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { e2eKubeModuleDir, kubeModuleDir, minorOf } from "../../test/controlplane/versions.ts";
import { renderE2eKubeGoMod, renderEtcdGoMod, renderKubeGoMod, stagingModules, stagingVersion } from "../../test/controlplane/gomod.ts";

const here = import.meta.dirname;

function upstreamGoMod(version: string): string {
  const scratch = mkdtempSync(join(tmpdir(), "keyward-gomod-"));
  try {
    const out = execFileSync("go", ["mod", "download", "-json", `k8s.io/kubernetes@${version}`], {
      cwd: scratch,
      env: { ...process.env, GOWORK: "off", GOFLAGS: "-mod=mod" },
      encoding: "utf8",
    });
    const info = JSON.parse(out) as { GoMod?: string; Error?: string };
    if (info.GoMod === undefined) throw new Error(`go mod download k8s.io/kubernetes@${version}: ${info.Error ?? "no go.mod"}`);
    return readFileSync(info.GoMod, "utf8");
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * What the module proxy serves of each staging module: undefined when it serves `wanted` (its
 * zip downloads: the proxy's version list and .info may name releases whose zip it refuses),
 * otherwise the versions it lists.
 */
function publishedVersions(modules: string[], wanted: string): Record<string, string[]> {
  const scratch = mkdtempSync(join(tmpdir(), "keyward-gomod-"));
  const go = (args: string[]) =>
    spawnSync("go", args, { cwd: scratch, env: { ...process.env, GOWORK: "off", GOFLAGS: "-mod=mod" }, encoding: "utf8" }).stdout;
  try {
    const downloads = go(["mod", "download", "-json", ...modules.map((module) => `${module}@${wanted}`)]);
    const missing = [...downloads.matchAll(/"Path": "([^"]+)",\s*"Version": "[^"]+",\s*"Error":/g)].map((match) => match[1] ?? "");
    if (missing.length === 0) return {};
    const lists = go(["list", "-m", "-versions", ...missing]);
    return Object.fromEntries(
      lists
        .trim()
        .split("\n")
        .map((line) => line.split(" "))
        .map(([module = "", ...versions]) => [module, versions.filter((version) => version !== wanted)]),
    );
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

function writeAndTidy(dir: string, goMod: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "go.mod"), goMod);
  rmSync(join(dir, "go.sum"), { force: true });
  execFileSync("go", ["mod", "tidy"], { cwd: dir, env: { ...process.env, GOWORK: "off" }, stdio: "inherit" });
}

const args = process.argv.slice(2);
const withEtcd = args.includes("--etcd");
const withE2e = args.includes("--e2e");
const version = args.find((arg) => !arg.startsWith("--"));
const e2eOnly = withE2e && version !== undefined && /^v1\.\d+$/.test(version);
if (version === undefined || !(e2eOnly || /^v1\.\d+\.\d+$/.test(version))) {
  console.error(
    "usage: node hack/controlplane-go/update.ts v1.Y.Z [--etcd] [--e2e]\n       node hack/controlplane-go/update.ts --e2e v1.Y",
  );
  process.exit(2);
}
const minor = minorOf(version);
if (!e2eOnly) {
  const upstream = upstreamGoMod(version);
  const published = publishedVersions(stagingModules(upstream), stagingVersion(version));
  writeAndTidy(kubeModuleDir(minor), renderKubeGoMod(upstream, version, published));
  if (withEtcd) writeAndTidy(join(here, "etcd"), renderEtcdGoMod(upstream, version));
  console.log(`hack/controlplane-go/kube/${minor} now builds Kubernetes ${version}${withEtcd ? " (and etcd/ its etcd)" : ""}`);
}
if (withE2e) {
  writeAndTidy(e2eKubeModuleDir, renderE2eKubeGoMod(readFileSync(join(kubeModuleDir(minor), "go.mod"), "utf8"), minor));
  console.log(`hack/e2e/go/kube now builds the node components of hack/controlplane-go/kube/${minor}'s release: the kind e2e runs on it`);
}
