// Global setup of the `unit` project: the tools some unit tests run (helm and promtool for the
// chart, lua5.1 for the Argo CD health checks) are made present here, so `npm ci && npm test` works on a fresh
// machine as the README says. (argocd, for the same checks, is built by the test that runs it:
// vitest runs every project's global setup before the first test, and the integration project,
// which runs first, needs none of it.) helm is built from its Go module into keyward's cache (minutes
// the first time, reused after); lua5.1 comes from Debian's packages when we may install them.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dirname, "..", "..");

function onPath(name: string): boolean {
  return (process.env["PATH"] ?? "").split(":").some((dir) => dir !== "" && existsSync(join(dir, name)));
}

function ensureHelm(): void {
  if (process.env["KEYWARD_HELM"]) return;
  const path = execFileSync("bash", [join(root, "hack", "tools", "ensure-helm.sh")], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  }).trim();
  process.env["KEYWARD_HELM"] = path;
}

/** promtool, for the chart's PrometheusRule: built like helm (hack/tools/ensure-promtool.sh). */
function ensurePromtool(): void {
  if (process.env["KEYWARD_PROMTOOL"]) return;
  const path = execFileSync("bash", [join(root, "hack", "tools", "ensure-promtool.sh")], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  }).trim();
  process.env["KEYWARD_PROMTOOL"] = path;
}

function ensureLua(): void {
  if (process.env["KEYWARD_LUA"] || onPath("lua5.1")) return;
  if (process.getuid?.() !== 0 || !onPath("apt-get")) return; // the Argo CD test then fails with the install command
  console.error("[unit setup] installing lua5.1 from Debian's packages");
  execFileSync("bash", ["-c", "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq lua5.1"], {
    stdio: ["ignore", "ignore", "inherit"],
  });
}

export default function setup(): void {
  ensureHelm();
  ensurePromtool();
  ensureLua();
}
