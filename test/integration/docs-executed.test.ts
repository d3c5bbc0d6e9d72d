// The documentation a new user follows, executed: every command block of the README's "Five
// minutes with keyward", of docs/getting-started.md and of the chart's rendered notes, run
// verbatim in bash with the real kubectl against the real apiserver, keyward in-process with its
// closed default (no --allowed-base-urls: a token goes only where its Secret says) and the
// emulator over HTTP. The test fills in only what a user fills in: the service URL, the token,
// the connection id and the namespace. Each page then has to reach the end state it promises.
// The kind e2e (test/e2e/first-hour.test.ts) runs the same blocks against an installed release.
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KubeConfig } from "@kubernetes/client-node";
import { startEmulator, type Emulator } from "../emulator/server.ts";
import { connectionIds, loadDefaultSeed } from "../emulator/default-seed.ts";
import { kubectl, testKubeConfig, testKubeconfigPath, testKubectlPath } from "../controlplane/testenv.ts";
import { chartDir, helm, repoRoot } from "../unit/chart/helm.ts";
import { fill, markdownBlocks, notesBlocks, runBlock, type CommandBlock, type Page } from "../unit/docs/blocks.ts";
import { isReady, startKeyward, waitForObject, type RunningKeyward } from "./support/keyward.ts";
import type { KubeObject } from "../../src/engine/types.ts";

const TOKEN = "kw-docs-token-5b1e07c3";
const suffix = randomBytes(3).toString("hex");
const namespaces = { readme: `docs-readme-${suffix}`, gettingStarted: `docs-start-${suffix}`, notes: `docs-notes-${suffix}` };
const read = (file: string): string => readFileSync(join(repoRoot, file), "utf8");

const pages: Record<"readme" | "gettingStarted", Page> = {
  readme: markdownBlocks("README.md", read("README.md"), "Five minutes with keyward"),
  gettingStarted: markdownBlocks("docs/getting-started.md", read("docs/getting-started.md")),
};

let kc: KubeConfig;
let keyward: RunningKeyward;
const emulators: Partial<Record<keyof typeof namespaces, Emulator>> = {};
let binDir: string;
const workDirs: string[] = [];

function emulator(page: keyof typeof namespaces): Emulator {
  const e = emulators[page];
  if (!e) throw new Error(`no emulator for ${page}`);
  return e;
}

/** Runs every block of `blocks` in a fresh directory holding `files`; fails on the first that fails. */
async function runAll(blocks: CommandBlock[], files: Record<string, string>, placeholders: Record<string, string>): Promise<string[]> {
  const cwd = mkdtempSync(join(tmpdir(), "keyward-docs-"));
  workDirs.push(cwd);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(cwd, name), fill(text, placeholders));
  const ran: string[] = [];
  for (const block of blocks) {
    if (block.notRun !== undefined) continue;
    const result = await runBlock(fill(block.text, placeholders), { cwd, binDir, env: { KUBECONFIG: testKubeconfigPath() } });
    expect(result.code, `${block.where} failed:\n${block.text}\n${result.stderr}${result.stdout}`).toBe(0);
    ran.push(block.where);
  }
  return ran;
}

const annotation = (obj: KubeObject, key: string): string | undefined => obj.metadata.annotations?.[key];

/** The end state the README and the getting-started page promise: the ProviderConfig and the Project Ready, the requested sync handled. */
async function expectSyncHandled(page: "readme" | "gettingStarted"): Promise<void> {
  const ns = namespaces[page];
  await waitForObject(kc, ns, "providerconfigs", "default", {
    until: isReady,
    timeoutMs: 60_000,
    description: "ProviderConfig default Ready",
  });
  const project = await waitForObject(kc, ns, "projects", "payments", {
    until: isReady,
    timeoutMs: 60_000,
    description: "Project payments Ready",
  });
  expect(project.status?.["projectId"]).toEqual(expect.any(String));
  const sync = await waitForObject(kc, ns, "secretsyncs", "payments-monitoring", {
    until: (o) => {
      const requested = annotation(o, "keyward.dev/sync-requested-at");
      return isReady(o) && requested !== undefined && o.status?.["lastHandledSyncRequest"] === requested;
    },
    timeoutMs: 90_000,
    description: "SecretSync payments-monitoring Ready with its requested sync handled",
  });
  const syncId = String(sync.status?.["syncId"]);
  const triggers = emulator(page)
    .requests()
    .filter((r) => r.operation === "triggerSecretSync" && r.path.includes(syncId));
  expect(triggers).toHaveLength(1);
}

beforeAll(async () => {
  kc = testKubeConfig();
  binDir = mkdtempSync(join(tmpdir(), "keyward-docs-bin-"));
  workDirs.push(binDir);
  symlinkSync(testKubectlPath(), join(binDir, "kubectl"));
  // One service per page: the README and the getting-started page create the same project and sync.
  for (const page of Object.keys(namespaces) as (keyof typeof namespaces)[]) {
    emulators[page] = await startEmulator({ tokens: [TOKEN], seed: loadDefaultSeed(), jobDelayMs: 200 });
  }
  // The notes assume the namespace exists; the pages create theirs.
  expect((await kubectl(["create", "namespace", namespaces.notes])).code).toBe(0);
  // keyward's closed default: allowedBaseUrls unset, only the Secrets' annotations allow a URL.
  keyward = await startKeyward(kc, { namespaces: Object.values(namespaces), allowedBaseUrls: null, resyncIntervalMs: 2_000 });
});

afterAll(async () => {
  for (const ns of Object.values(namespaces)) await kubectl(["delete", "namespace", ns, "--wait=false", "--ignore-not-found"]);
  await keyward?.stop();
  for (const e of Object.values(emulators)) await e.close();
  for (const dir of workDirs) rmSync(dir, { recursive: true, force: true });
});

describe("the docs a new user follows, executed", () => {
  it("the README's five minutes: every block runs, and ends with the Project Ready and the requested sync handled", async () => {
    const ran = await runAll(
      pages.readme.commands,
      // "secretsync.yaml  # e.g. config/samples/secretsync-monitoring.yaml, your connection's id"
      { "secretsync.yaml": read("config/samples/secretsync-monitoring.yaml") },
      { "team-a": namespaces.readme, "<access token>": TOKEN, "https://secrets.example.com": emulator("readme").url },
    );
    expect(ran).toHaveLength(2);
    await expectSyncHandled("readme");
  });

  it("docs/getting-started.md: every block but the image build runs, and ends with the requested sync handled", async () => {
    expect(pages.gettingStarted.commands.filter((b) => b.notRun !== undefined).map((b) => b.text)).toEqual([
      expect.stringMatching(/^docker build /),
    ]);
    expect(pages.gettingStarted.files.map((f) => f.name)).toEqual(["providerconfig.yaml", "project.yaml", "secretsync.yaml"]);
    const ran = await runAll(pages.gettingStarted.commands, Object.fromEntries(pages.gettingStarted.files.map((f) => [f.name, f.text])), {
      "team-a": namespaces.gettingStarted,
      "<access token>": TOKEN,
      "https://secrets.example.com": emulator("gettingStarted").url,
      "<the connection's id at the service>": connectionIds.monitoring,
    });
    expect(ran.length).toBeGreaterThanOrEqual(6);
    await expectSyncHandled("gettingStarted");
  });

  it("the chart's notes: the Next block pasted as printed gives a Ready ProviderConfig, and the rest runs", async () => {
    const install = await helm([
      ...["install", "kw", chartDir, "-n", "keyward-system", "--dry-run=server", "--kubeconfig", testKubeconfigPath()],
      "--take-ownership",
    ]);
    expect(install.code, install.stderr).toBe(0);
    const blocks = notesBlocks(install.stdout.slice(install.stdout.indexOf("NOTES:")));
    const next = blocks.find((b) => b.text.includes("kind: ProviderConfig"));
    expect(next).toBeDefined();
    // No keyward Deployment runs on this control plane (keyward runs in-process): the kind e2e runs these.
    const here = blocks.map((b) =>
      /rollout status|logs deployment/.test(b.text) ? { ...b, notRun: "the Deployment runs in the kind e2e only" } : b,
    );
    const ran = await runAll(
      here,
      {},
      { "<namespace>": namespaces.notes, "<access token>": TOKEN, "<service URL>": emulator("notes").url },
    );
    expect(ran).toContain(next?.where);
    expect(ran.length).toBeGreaterThanOrEqual(2);
    const pc = await waitForObject(kc, namespaces.notes, "providerconfigs", "default", {
      until: isReady,
      timeoutMs: 60_000,
      description: "the notes' ProviderConfig Ready",
    });
    expect(pc.status?.conditions?.find((c) => c.type === "Ready")?.reason).toBe("Connected");
  }, 200_000); // past the block's own `kubectl wait --timeout=2m`, so a ProviderConfig never Ready fails with kubectl's words
});
