// hack/release.sh reads the version from package.json and stops, before building anything, when
// Chart.yaml's version or appVersion is another one (`--check` runs that check only).
import { execFile } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";

const repoRoot = join(import.meta.dirname, "..", "..", "..");
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A copy of what the check reads, with package.json's version and Chart.yaml's fields replaced. */
function tree(pkgVersion: string, chartVersion: string, appVersion: string): string {
  const dir = mkdtempSync(join(tmpdir(), "release-check-"));
  dirs.push(dir);
  mkdirSync(join(dir, "hack", "e2e"), { recursive: true });
  cpSync(join(repoRoot, "hack", "release.sh"), join(dir, "hack", "release.sh"));
  cpSync(join(repoRoot, "hack", "e2e", "lib.sh"), join(dir, "hack", "e2e", "lib.sh"));
  // lib.sh reads the e2e's Kubernetes release from its module.
  cpSync(join(repoRoot, "hack", "e2e", "go", "kube", "go.mod"), join(dir, "hack", "e2e", "go", "kube", "go.mod"));
  symlinkSync(join(repoRoot, "node_modules"), join(dir, "node_modules"));
  const pkg = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { version: string };
  writeFileSync(join(dir, "package.json"), JSON.stringify({ ...pkg, version: pkgVersion }));
  cpSync(join(repoRoot, "charts", "keyward"), join(dir, "charts", "keyward"), { recursive: true });
  const chart = readFileSync(join(repoRoot, "charts", "keyward", "Chart.yaml"), "utf8")
    .replace(/^version: .*$/m, `version: ${chartVersion}`)
    .replace(/^appVersion: .*$/m, `appVersion: "${appVersion}"`);
  writeFileSync(join(dir, "charts", "keyward", "Chart.yaml"), chart);
  return dir;
}

function check(dir: string): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      "bash",
      [join(dir, "hack", "release.sh"), "--check"],
      { env: { ...process.env, KEYWARD_CACHE_DIR: join(dir, "cache") } },
      (error, _out, stderr) => resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : -1, stderr }),
    );
  });
}

describe("hack/release.sh version check", () => {
  it("passes when Chart.yaml's version and appVersion are package.json's, whatever the version", async () => {
    const result = await check(tree("7.8.9", "7.8.9", "7.8.9"));
    expect(result.stderr).toContain("7.8.9; default image ghcr.io/keyward/keyward:7.8.9");
    expect(result.code).toBe(0);
  });

  it.each([
    ["version", "7.8.9", "7.8.8", "7.8.9"],
    ["appVersion", "7.8.9", "7.8.9", "7.8.8"],
  ])("stops when Chart.yaml's %s differs from package.json's, naming both", async (_field, pkg, chart, app) => {
    const result = await check(tree(pkg, chart, app));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(`charts/keyward/Chart.yaml has version: ${chart}, appVersion: ${app}; package.json has version ${pkg}`);
  });

  it("holds for the repository as it is", async () => {
    const result = await check(repoRoot);
    expect(result.code, result.stderr).toBe(0);
  });
});
