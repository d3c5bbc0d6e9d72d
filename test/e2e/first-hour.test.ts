// A platform engineer's first hour, on the kind cluster: from a cluster without keyward's CRDs,
// one `helm install` of the release's packaged chart with providerConfig.create, then every
// command block of the chart's notes, the README's five minutes and docs/getting-started.md run
// verbatim against the in-cluster emulator (test/integration/docs-executed.test.ts runs the same
// blocks on the local control plane). It runs first (test/e2e/sequencer.ts): it removes keyward's
// CRDs to start from an empty cluster.
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectionIds } from "../emulator/default-seed.ts";
import { fill, markdownBlocks, notesBlocks, runBlock, type CommandBlock } from "../unit/docs/blocks.ts";
import {
  context,
  createNamespace,
  deployEmulator,
  emulatorRequests,
  emulatorToken,
  helm,
  kubectl,
  kubectlJson,
  kubectlResult,
  ready,
  repoRoot,
  uninstallKeyward,
  waitFor,
  type Emulator,
  type KubeObject,
  type List,
} from "./support.ts";

const release = "kw-first";
const systemNs = "kw-first-system";
// One service per page: the README and the getting-started page create the same project and sync.
const emulatorNs = { readme: "kw-first-emulator", gettingStarted: "kw-first-emulator-start" };
const docsNs = { readme: "kw-first-readme", gettingStarted: "kw-first-start", notes: "kw-first-notes" };
const read = (file: string): string => readFileSync(join(repoRoot, file), "utf8");

let emulator: Emulator;
let startEmulator: Emulator;
let binDir: string;
const workDirs: string[] = [];

async function runAll(blocks: CommandBlock[], files: Record<string, string>, placeholders: Record<string, string>): Promise<string[]> {
  const cwd = mkdtempSync(join(tmpdir(), "keyward-e2e-docs-"));
  workDirs.push(cwd);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(cwd, name), fill(text, placeholders));
  const ran: string[] = [];
  for (const block of blocks.filter((b) => b.notRun === undefined)) {
    const result = await runBlock(fill(block.text, placeholders), {
      cwd,
      binDir,
      env: { KUBECONFIG: context().kubeconfig },
      timeoutMs: 300_000,
    });
    expect(result.code, `${block.where} failed:\n${block.text}\n${result.stderr}${result.stdout}`).toBe(0);
    ran.push(block.where);
  }
  return ran;
}

async function readyObject(namespace: string, resource: string, name: string): Promise<KubeObject> {
  return waitFor(
    `${resource} ${namespace}/${name} Ready`,
    async () => {
      const obj = await kubectlJson(["-n", namespace, "get", resource, name]);
      return ready(obj)?.status === "True" ? obj : undefined;
    },
    180_000,
  );
}

/** The Project Ready and the sync the page requested handled once at the service. */
async function expectSyncHandled(namespace: string, service: Emulator): Promise<void> {
  await readyObject(namespace, "providerconfigs.keyward.dev", "default");
  await readyObject(namespace, "projects.keyward.dev", "payments");
  const sync = await waitFor(
    "the requested sync handled",
    async () => {
      const obj = await kubectlJson(["-n", namespace, "get", "secretsyncs.v1alpha1.keyward.dev", "payments-monitoring"]);
      const requested = obj.metadata.annotations?.["keyward.dev/sync-requested-at"];
      return requested !== undefined && obj.status?.["lastHandledSyncRequest"] === requested ? obj : undefined;
    },
    180_000,
  );
  const syncId = String(sync.status?.["syncId"]);
  const triggers = (await emulatorRequests(service)).filter((r) => r.operation === "triggerSecretSync" && r.path.includes(syncId));
  expect(triggers).toHaveLength(1);
}

beforeAll(async () => {
  binDir = mkdtempSync(join(tmpdir(), "keyward-e2e-bin-"));
  workDirs.push(binDir);
  symlinkSync(context().kubectl, join(binDir, "kubectl"));
  // The kubectl plugin as its users install it, and the node its first line asks for.
  symlinkSync(join(repoRoot, "bin", "kubectl-keyward.cjs"), join(binDir, "kubectl-keyward"));
  symlinkSync(process.execPath, join(binDir, "node"));
  await uninstallKeyward(release, systemNs);
  // An empty cluster, as far as keyward goes: no CRDs (their objects go with them).
  const crds = (await kubectlJson<List>(["get", "crd"])).items.filter((c) => c.metadata.name.endsWith(".keyward.dev"));
  for (const crd of crds) {
    // No keyward runs to remove its finalizers from an earlier run's objects: the CRD's deletion would wait for ever.
    const objects = (await kubectlJson<List>(["get", crd.metadata.name, "-A"])).items.filter(
      (o) => (o.metadata.finalizers ?? []).length > 0,
    );
    for (const o of objects) {
      const where = o.metadata.namespace ? ["-n", o.metadata.namespace] : [];
      await kubectlResult([
        ...where,
        "patch",
        crd.metadata.name,
        o.metadata.name,
        "--type",
        "merge",
        "-p",
        '{"metadata":{"finalizers":null}}',
      ]);
    }
  }
  if (crds.length > 0) await kubectl(["delete", "crd", "--wait", "--timeout=180s", ...crds.map((c) => c.metadata.name)]);
  await createNamespace(emulatorNs.readme);
  emulator = await deployEmulator(emulatorNs.readme);
  await createNamespace(emulatorNs.gettingStarted);
  startEmulator = await deployEmulator(emulatorNs.gettingStarted);
  for (const ns of Object.values(docsNs)) await kubectlResult(["delete", "namespace", ns, "--wait", "--ignore-not-found"]);
  await createNamespace(systemNs);
}, 900_000);

afterAll(async () => {
  await uninstallKeyward(release, systemNs);
  for (const dir of workDirs) rmSync(dir, { recursive: true, force: true });
}, 300_000);

describe("a platform engineer's first hour", () => {
  it("one helm install with providerConfig.create, on a cluster without keyward's CRDs, ends with a Ready ProviderConfig", async () => {
    expect((await kubectlJson<List>(["get", "crd"])).items.filter((c) => c.metadata.name.endsWith(".keyward.dev"))).toEqual([]);
    const before = await runBlock("kubectl keyward check -A\n", { cwd: binDir, binDir, env: { KUBECONFIG: context().kubeconfig } });
    expect(before.code).toBe(1);
    expect(before.stdout).toMatch(/^FAIL {2}CRD providerconfigs\.keyward\.dev is missing$/m);
    // The token Secret, marked and pinned to the service's URL, as docs/install.md says.
    await kubectl(["-n", systemNs, "create", "secret", "generic", "keyward-token", `--from-literal=token=${emulatorToken}`]);
    await kubectl(["-n", systemNs, "label", "secret", "keyward-token", "keyward.dev/credentials=true"]);
    await kubectl(["-n", systemNs, "annotate", "secret", "keyward-token", `keyward.dev/allowed-base-urls=${emulator.baseUrl}`]);
    const out = await helm([
      ...["install", release, context().keywardChart, "-n", systemNs, "--wait", "--timeout", "5m"],
      ...[
        "--set",
        "providerConfig.create=true",
        "--set",
        `providerConfig.baseUrl=${emulator.baseUrl}`,
        "--set",
        "providerConfig.secretName=keyward-token",
      ],
    ]);
    const pc = await readyObject(systemNs, "providerconfigs.keyward.dev", "default");
    expect(pc.metadata.annotations?.["helm.sh/hook"]).toBe("post-install,post-upgrade");
    // The notes of that install: every block runs (rollout status, logs, the ProviderConfig's row).
    const ran = await runAll(notesBlocks(out.slice(out.indexOf("NOTES:"))), {}, {});
    expect(ran.length).toBeGreaterThanOrEqual(3);
    // docs/install.md: the plugin's check after an install.
    await runAll([{ where: "docs/install.md", text: "kubectl keyward check -A --wait --timeout 3m\n" }], {}, {});
    // The controller stopped: check fails and names it.
    const deployment = `deployment/${release}-keyward`;
    await kubectl(["-n", systemNs, "scale", deployment, "--replicas=0"]);
    await waitFor(
      "keyward's pods gone",
      async () =>
        (
          await kubectlJson<List>([
            "-n",
            systemNs,
            "get",
            "pods",
            "-l",
            `app.kubernetes.io/name=keyward,app.kubernetes.io/instance=${release}`,
          ])
        ).items.length === 0
          ? true
          : undefined,
      180_000,
    );
    const down = await runBlock("kubectl keyward check -A\n", { cwd: binDir, binDir, env: { KUBECONFIG: context().kubeconfig } });
    expect(down.code).toBe(1);
    expect(down.stdout).toMatch(/^FAIL {2}controller: no keyward pod/m);
    // The conversion webhook runs apart: with the operator at 0, a read naming no version (v1beta1) still works.
    expect(down.stdout).toMatch(
      new RegExp(`^ok {4}conversion webhook \\(Service ${systemNs}/${release}-keyward-webhook\\) answers: objects of`, "m"),
    );
    const unqualified = await kubectlJson<{ apiVersion: string }>(["-n", systemNs, "get", "providerconfigs.keyward.dev", "default"]);
    expect(unqualified.apiVersion).toBe("keyward.dev/v1beta1");
    await kubectl(["-n", systemNs, "scale", deployment, "--replicas=1"]);
    await kubectl(["-n", systemNs, "rollout", "status", deployment, "--timeout=180s"]);
  }, 900_000);

  it("the notes without providerConfig.create: the Next block pasted as printed gives a Ready ProviderConfig", async () => {
    await kubectl(["create", "namespace", docsNs.notes]);
    const out = await helm([
      "upgrade",
      release,
      context().keywardChart,
      "-n",
      systemNs,
      "--reuse-values",
      "--set",
      "providerConfig.create=false",
      "--dry-run=server",
    ]);
    const blocks = notesBlocks(out.slice(out.indexOf("NOTES:")));
    expect(blocks.some((b) => b.text.includes("kind: ProviderConfig"))).toBe(true);
    await runAll(blocks, {}, { "<namespace>": docsNs.notes, "<access token>": emulatorToken, "<service URL>": emulator.baseUrl });
    await readyObject(docsNs.notes, "providerconfigs.keyward.dev", "default");
  }, 600_000);

  it("the README's five minutes, verbatim, end with the requested sync handled", async () => {
    const page = markdownBlocks("README.md", read("README.md"), "Five minutes with keyward");
    await runAll(
      page.commands,
      { "secretsync.yaml": read("config/samples/secretsync-monitoring.yaml") },
      { "team-a": docsNs.readme, "<access token>": emulatorToken, "https://secrets.example.com": emulator.baseUrl },
    );
    await expectSyncHandled(docsNs.readme, emulator);
  }, 600_000);

  it("docs/getting-started.md, verbatim, ends with the requested sync handled", async () => {
    const page = markdownBlocks("docs/getting-started.md", read("docs/getting-started.md"));
    const files = Object.fromEntries(page.files.map((f) => [f.name, f.text]));
    await runAll(page.commands, files, {
      "team-a": docsNs.gettingStarted,
      "<access token>": emulatorToken,
      "https://secrets.example.com": startEmulator.baseUrl,
      "<the connection's id at the service>": connectionIds.monitoring,
    });
    await expectSyncHandled(docsNs.gettingStarted, startEmulator);
  }, 600_000);
});
