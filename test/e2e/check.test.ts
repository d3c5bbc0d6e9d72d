// `kubectl keyward check` as its users run it: bin/kubectl-keyward.cjs copied onto PATH as
// kubectl-keyward (mode 0755, as docs/kubectl-plugin.md says), found by kubectl's plugin lookup,
// against a release of the packaged chart on the kind cluster. A good install exits 0 with every
// line ok; then three broken ones, each with its exit code and its line: a ProviderConfig whose
// Secret does not allow its URL, the controller scaled to 0, and one of keyward's CRDs deleted
// (with the controller still down, so no keyward runs without its CRD). `helm upgrade` of the
// release puts the CRD and the replica back, and check --wait sees the install whole again.
import { spawn } from "node:child_process";
import { chmodSync, copyFileSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  apply,
  context,
  createNamespace,
  deployEmulator,
  emulatorToken,
  helm,
  installKeyward,
  kubectl,
  kubectlJson,
  kubectlResult,
  providerResources,
  ready,
  repoRoot,
  uninstallKeyward,
  waitFor,
  type Emulator,
  type KubeObject,
  type List,
} from "./support.ts";

const release = "kw-check";
const systemNs = "kw-e2e-check-system";
const emulatorNs = "kw-e2e-check-emulator";
const teamNs = "kw-e2e-check";
const deployment = `deployment/${release}-keyward`;
/** The CRD taken away: cluster-scoped, used by no object of this file (and of no file before it). */
const removedCrd = "clusterproviderconfigs.keyward.dev";

let binDir: string;
let emulator: Emulator;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `kubectl <args>` with binDir (kubectl, kubectl-keyward) and this Node first on PATH. */
function onPath(args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn("kubectl", args, {
      env: {
        ...process.env,
        PATH: [binDir, dirname(process.execPath), process.env["PATH"] ?? ""].join(":"),
        KUBECONFIG: context().kubeconfig,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
    child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

const check = (args: string[]): Promise<Run> => onPath(["keyward", "check", ...args]);

/** The report's check lines (not its fix lines). */
const checkLines = (stdout: string): string[] => stdout.split("\n").filter((l) => /^(ok|FAIL) /.test(l));

async function readyReason(namespace: string, name: string, reason: string): Promise<KubeObject> {
  return waitFor(
    `ProviderConfig ${namespace}/${name} Ready reason ${reason}`,
    async () => {
      const pc = await kubectlJson(["-n", namespace, "get", "providerconfigs.v1alpha1.keyward.dev", name]);
      return ready(pc)?.reason === reason ? pc : undefined;
    },
    180_000,
  );
}

/** check --wait until the install is whole again: exit 0, every line ok. */
async function expectAllOk(): Promise<string> {
  const r = await check(["-n", teamNs, "--wait", "--timeout", "4m"]);
  expect(r.code, r.stdout + r.stderr).toBe(0);
  const lines = checkLines(r.stdout);
  expect(lines.filter((l) => !l.startsWith("ok "))).toEqual([]);
  return r.stdout;
}

beforeAll(async () => {
  binDir = mkdtempSync(join(tmpdir(), "keyward-e2e-check-"));
  // Installed as docs/kubectl-plugin.md says: the one file, copied onto PATH, executable.
  copyFileSync(join(repoRoot, "bin", "kubectl-keyward.cjs"), join(binDir, "kubectl-keyward"));
  chmodSync(join(binDir, "kubectl-keyward"), 0o755);
  symlinkSync(context().kubectl, join(binDir, "kubectl"));
  await createNamespace(emulatorNs);
  emulator = await deployEmulator(emulatorNs);
  await createNamespace(systemNs);
  await createNamespace(teamNs);
  // The chart's defaults: one replica with leader election, no allowedBaseUrls (each Secret says where its token may go).
  await installKeyward(release, systemNs);
  await apply(providerResources(emulator.baseUrl), teamNs);
}, 900_000);

afterAll(async () => {
  await uninstallKeyward(release, systemNs);
  if (binDir) rmSync(binDir, { recursive: true, force: true });
}, 300_000);

describe("kubectl keyward check on the kind cluster", () => {
  it("a good install: exit 0, every line ok (CRDs, the leading pod, its RBAC, the ProviderConfig)", async () => {
    const out = await expectAllOk();
    expect(out).toMatch(/^ok {4}CRDs: all 7 of keyward\.dev present, Established, of this version$/m);
    expect(out).toMatch(
      new RegExp(
        `^ok {4}controller: 1 Ready pod\\(s\\) \\(${systemNs}/${release}-keyward-\\S+\\); ${release}-keyward-\\S+ leads \\(Lease ${systemNs}/${release}-keyward-leader\\)$`,
        "m",
      ),
    );
    expect(out).toMatch(new RegExp(`^ok {4}RBAC: ServiceAccount ${systemNs}/${release}-keyward may do the \\d+ things keyward does$`, "m"));
    expect(out).toMatch(new RegExp(`^ok {4}ProviderConfig ${teamNs}/default Ready \\(Connected\\)$`, "m"));
  });

  it("a ProviderConfig whose Secret does not allow its URL: exit 1, the line names the annotation; its fix, run as printed, makes it pass", async () => {
    await apply(
      [
        {
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: "unpinned", labels: { "keyward.dev/credentials": "true" } },
          stringData: { token: emulatorToken },
        },
        {
          apiVersion: "keyward.dev/v1alpha1",
          kind: "ProviderConfig",
          metadata: { name: "unpinned" },
          spec: { baseUrl: emulator.baseUrl, credentialsSecretRef: { name: "unpinned", key: "token" } },
        },
      ],
      teamNs,
    );
    await readyReason(teamNs, "unpinned", "BaseUrlNotAllowed");
    const r = await check(["-n", teamNs]);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toMatch(
      new RegExp(`^FAIL {2}ProviderConfig ${teamNs}/unpinned not Ready: BaseUrlNotAllowed: .*keyward\\.dev/allowed-base-urls`, "m"),
    );
    const fix = new RegExp(
      `^ {6}fix: allow its URL on the token's Secret: (kubectl -n ${teamNs} annotate --overwrite secret unpinned keyward\\.dev/allowed-base-urls=(\\S+)) `,
      "m",
    ).exec(r.stdout);
    expect(fix?.[2]).toBe(emulator.baseUrl);
    // Only that line fails.
    expect(checkLines(r.stdout).filter((l) => l.startsWith("FAIL"))).toHaveLength(1);
    const words = (fix?.[1] ?? "").split(" ");
    const fixed = await onPath(words.slice(1));
    expect(fixed.code, fixed.stderr).toBe(0);
    expect(await expectAllOk()).toMatch(new RegExp(`^ok {4}ProviderConfig ${teamNs}/unpinned Ready \\(Connected\\)$`, "m"));
  });

  it("the controller down (scaled to 0): exit 1, the line says no keyward pod runs", async () => {
    await kubectl(["-n", systemNs, "scale", deployment, "--replicas=0"]);
    await waitFor(
      "keyward's pods gone",
      async () =>
        (await kubectlJson<List>(["get", "pods", "-A", "-l", "app.kubernetes.io/name=keyward"])).items.length === 0 ? true : undefined,
      180_000,
    );
    const r = await check(["-n", teamNs]);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toMatch(/^FAIL {2}controller: no keyward pod \(app\.kubernetes\.io\/name=keyward\) in any namespace$/m);
    expect(r.stdout).toMatch(/^ {6}fix: install keyward .*, or scale its Deployment up$/m);
    // The rest still passes: CRDs there, the ProviderConfigs' last status Ready.
    expect(checkLines(r.stdout).filter((l) => l.startsWith("FAIL"))).toHaveLength(1);
  });

  it("a CRD of keyward's missing: exit 1, the line names it; helm upgrade puts it and the controller back, and check --wait exits 0", async () => {
    // Still no keyward running (the test before scaled it to 0): none watches a kind while its CRD goes.
    const objects = await kubectlJson<List>(["get", removedCrd]);
    expect(objects.items).toEqual([]);
    await kubectl(["delete", "crd", removedCrd, "--wait", "--timeout=180s"]);
    const r = await check(["-n", teamNs]);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toMatch(new RegExp(`^FAIL {2}CRD ${removedCrd.replaceAll(".", "\\.")} is missing$`, "m"));
    expect(r.stdout).toMatch(
      /^ {6}fix: install keyward's CRDs of this version: helm upgrade --install with crds\.enabled=true, or kubectl apply --server-side -f crds\/$/m,
    );
    // Without every CRD it reads no ProviderConfig.
    expect(r.stdout).not.toMatch(/ProviderConfig/);
    // The fix: the release upgraded as it is, which creates the CRD again and scales keyward back up.
    await helm(["upgrade", release, context().keywardChart, "-n", systemNs, "--reuse-values", "--wait", "--timeout", "5m"]);
    expect((await kubectlResult(["get", "crd", removedCrd])).code).toBe(0);
    await expectAllOk();
  });
});
