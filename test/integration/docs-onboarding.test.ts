// The onboarding pages, executed: docs/connect.md and every page of docs/destinations/, each
// command block run verbatim in bash with the real kubectl against the real apiserver, each YAML
// sample written as the file it names and applied by the page's own commands (real creates, not
// dry-runs), keyward in-process with its closed default (no --allowed-base-urls) and the emulator
// over HTTP. The test fills in only what a user fills in: the service URL, the tokens, the
// identity id, the connection ids and the namespace. Every request keyward made along the way
// must be one the connect page lists among the calls the token needs.
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KubeConfig } from "@kubernetes/client-node";
import { startEmulator, type Emulator } from "../emulator/server.ts";
import { connectionIds, loadDefaultSeed, seedIds } from "../emulator/default-seed.ts";
import { kubectl, testKubeConfig, testKubeconfigPath, testKubectlPath } from "../controlplane/testenv.ts";
import { repoRoot } from "../unit/chart/helm.ts";
import { fill, markdownBlocks, runBlock, type BlockRun, type Page } from "../unit/docs/blocks.ts";
import { documentedCalls, isDocumented } from "../unit/docs/calls.ts";
import { connectionAppByDestination, destinations } from "../../src/api/index.ts";
import { isReady, startKeyward, waitForObject, type RunningKeyward } from "./support/keyward.ts";

const TOKEN = "kw-onboarding-token-3f9a51";
const BOOTSTRAP = "kw-onboarding-bootstrap-c72e04";
const ns = `docs-onboard-${randomBytes(3).toString("hex")}`;
const read = (file: string): string => readFileSync(join(repoRoot, file), "utf8");
const page = (file: string): Page => markdownBlocks(file, read(file));

let kc: KubeConfig;
let keyward: RunningKeyward;
let emulator: Emulator;
let binDir: string;
const workDirs: string[] = [];

/** Runs every block of `p` in a fresh directory holding its files; fails on the first that fails; returns each run. */
async function runPage(p: Page, placeholders: Record<string, string>): Promise<BlockRun[]> {
  const cwd = mkdtempSync(join(tmpdir(), "keyward-docs-"));
  workDirs.push(cwd);
  for (const f of p.files) writeFileSync(join(cwd, f.name), fill(f.text, placeholders));
  const runs: BlockRun[] = [];
  for (const block of p.commands) {
    expect(block.notRun, `${block.where} is marked not run`).toBeUndefined();
    const result = await runBlock(fill(block.text, placeholders), { cwd, binDir, env: { KUBECONFIG: testKubeconfigPath() } });
    expect(result.code, `${block.where} failed:\n${block.text}\n${result.stderr}${result.stdout}`).toBe(0);
    runs.push(result);
  }
  return runs;
}

const common = (): Record<string, string> => ({ "team-a": ns, "https://secrets.example.com": emulator.url });

/** The requests keyward made that docs/connect.md does not list. */
function undocumentedRequests(): string[] {
  const calls = documentedCalls(read("docs/connect.md"));
  return emulator
    .requests()
    .filter((r) => !isDocumented(calls, r.method, r.path))
    .map((r) => `${r.method} ${r.path}`);
}

beforeAll(async () => {
  kc = testKubeConfig();
  binDir = mkdtempSync(join(tmpdir(), "keyward-docs-bin-"));
  workDirs.push(binDir);
  symlinkSync(testKubectlPath(), join(binDir, "kubectl"));
  emulator = await startEmulator({ tokens: [TOKEN, BOOTSTRAP], seed: loadDefaultSeed(), jobDelayMs: 200 });
  keyward = await startKeyward(kc, { namespaces: [ns], allowedBaseUrls: null, resyncIntervalMs: 2_000 });
});

afterAll(async () => {
  await kubectl(["delete", "namespace", ns, "--wait=false", "--ignore-not-found"]);
  await keyward?.stop();
  await emulator?.close();
  for (const dir of workDirs) rmSync(dir, { recursive: true, force: true });
});

describe("the onboarding pages, executed", () => {
  it("docs/connect.md: every block runs; the static and the tokenAuth ProviderConfig are Ready=True Connected", async () => {
    const p = page("docs/connect.md");
    expect(p.files.map((f) => f.name)).toEqual(["providerconfig.yaml", "providerconfig-tokenauth.yaml"]);
    const runs = await runPage(p, {
      ...common(),
      "<access token>": TOKEN,
      "<bootstrap token>": BOOTSTRAP,
      "<identity id>": seedIds.identity,
    });
    expect(runs).toHaveLength(3);
    for (const name of ["default", "rotating"]) {
      const pc = await waitForObject(kc, ns, "providerconfigs", name, { until: isReady, timeoutMs: 30_000, description: `${name} Ready` });
      expect(pc.status?.conditions?.find((c) => c.type === "Ready")?.reason).toBe("Connected");
    }
    // The page's last command prints the minted token's expiry, never the token.
    const printed = runs.at(-1)?.stdout.trim().split("\n").at(-1) ?? "";
    expect(printed).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/);
    expect(printed).not.toContain(BOOTSTRAP);
    // tokenAuth went through create-token with the bootstrap token, for the identity the page names.
    const minted = emulator.requests().filter((r) => r.method === "POST" && r.path.includes(`/identities/${seedIds.identity}/tokens`));
    expect(minted.length).toBeGreaterThanOrEqual(1);
    expect(undocumentedRequests()).toEqual([]);
  });

  it.each(destinations)(
    "docs/destinations/%s.md: its sample is created, Ready, and writes through the connection kind the page names",
    async (d) => {
      // The Project the destination pages sync from, as the getting-started page makes it.
      const project = markdownBlocks("docs/getting-started.md", read("docs/getting-started.md")).files.find(
        (f) => f.name === "project.yaml",
      );
      expect(project).toBeDefined();
      const applied = await runPage(
        { commands: [{ where: "project", text: "kubectl apply -f project.yaml\n" }], files: [project!] },
        common(),
      );
      expect(applied).toHaveLength(1);
      await waitForObject(kc, ns, "projects", "payments", { until: isReady, timeoutMs: 60_000, description: "Project payments Ready" });

      const p = page(`docs/destinations/${d}.md`);
      expect(p.files.map((f) => f.name)).toEqual([`secretsync-${d}.yaml`]);
      const runs = await runPage(p, { ...common(), "<connection id>": connectionIds[d] });
      expect(runs.at(-1)?.stdout.trim().split("\n").at(-1)).toBe(connectionAppByDestination[d]);
      const sync = await waitForObject(kc, ns, "secretsyncs", `payments-${d}`, { until: isReady, timeoutMs: 30_000, description: "Ready" });
      expect(sync.status?.["connectionId"]).toBe(connectionIds[d]);
      expect(undocumentedRequests()).toEqual([]);
    },
    200_000,
  );
});
