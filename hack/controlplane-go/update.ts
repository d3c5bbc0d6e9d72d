// Regenerates kube/go.mod and etcd/go.mod (and their go.sum) for one Kubernetes release:
//   node hack/controlplane-go/update.ts v1.36.3
// The release's go.mod comes through the Go toolchain (`go mod download`), like every module.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { renderEtcdGoMod, renderKubeGoMod } from "../../test/controlplane/gomod.ts";

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

function writeAndTidy(dir: string, goMod: string): void {
  writeFileSync(join(dir, "go.mod"), goMod);
  rmSync(join(dir, "go.sum"), { force: true });
  execFileSync("go", ["mod", "tidy"], { cwd: dir, env: { ...process.env, GOWORK: "off" }, stdio: "inherit" });
}

const version = process.argv[2];
if (version === undefined || !/^v1\.\d+\.\d+$/.test(version)) {
  console.error("usage: node hack/controlplane-go/update.ts v1.Y.Z");
  process.exit(2);
}
const upstream = upstreamGoMod(version);
writeAndTidy(join(here, "kube"), renderKubeGoMod(upstream, version));
writeAndTidy(join(here, "etcd"), renderEtcdGoMod(upstream, version));
console.log(`hack/controlplane-go now builds Kubernetes ${version}`);
