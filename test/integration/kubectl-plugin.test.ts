// The kubectl plugin (bin/kubectl-keyward.cjs) end to end: found and run by the real kubectl
// through its plugin mechanism (a PATH entry named kubectl-keyward), against a real kube-apiserver,
// keyward in-process and the emulator. Exit codes, stdout and stderr are what is checked.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Emulator } from "../emulator/server.ts";
import { loadDefaultSeed } from "../emulator/default-seed.ts";
import { createTestNamespace, kubectl, type TestNamespace } from "../controlplane/testenv.ts";
import { createCustom, getCustom, isReady, startTestEnv, waitForObject, type KeywardTestEnv } from "./support/keyward.ts";
import { installPlugin, type InstalledPlugin } from "./support/plugin.ts";
import type { KubeObject } from "../../src/engine/types.ts";

const TOKEN = "kw-plugin-token-7f3a9c2e51";
const seed = loadDefaultSeed();
const DEMO_PROJECT = "a1b2c3d4-0005-4a00-8000-000000000001";
const APP_PLATFORM_CONNECTION = (() => {
  const c = seed.connections?.find((x) => x.app === "app-platform-host");
  if (!c) throw new Error("the default seed has no app-platform connection");
  return c.id;
})();

let env: KeywardTestEnv;
let kc: KubeConfig;
let emulator: Emulator;
let ns: string;
let empty: TestNamespace;
let installed: InstalledPlugin;
let binDir: string;

/** `kubectl keyward <args>`: the real kubectl finds the plugin on PATH and runs it. */
const plugin = (args: string[], extraEnv: Record<string, string> = {}) => installed.run(args, extraEnv);

const syncObject = (name: string, annotations: Record<string, string> = {}): object => ({
  apiVersion: "keyward.dev/v1alpha1",
  kind: "SecretSync",
  metadata: { name, annotations },
  spec: {
    projectId: DEMO_PROJECT,
    destination: "app-platform",
    connectionId: APP_PLATFORM_CONNECTION,
    environment: "dev",
    secretPath: "/app",
    isAutoSyncEnabled: false,
    destinationConfig: { appId: `app-${name}`, appName: name },
  },
});

const status = (obj: KubeObject | undefined): Record<string, unknown> => obj?.status ?? {};

async function readySync(name: string): Promise<string> {
  const obj = await waitForObject(kc, ns, "secretsyncs", name, {
    until: isReady,
    timeoutMs: 60_000,
    description: `SecretSync ${name} Ready`,
  });
  const id = status(obj)["syncId"];
  if (typeof id !== "string") throw new Error(`SecretSync ${name} has no syncId`);
  return id;
}

const calls = (operation: string, syncId: string): number =>
  emulator.requests().filter((r) => r.operation === operation && r.path.includes(syncId)).length;

/** The value the plugin printed for the annotation it set. */
function requestedValue(stdout: string, annotation: string): string {
  const m = new RegExp(`${annotation.replace(/[./]/g, "\\$&")}=(\\S+)\\)`).exec(stdout);
  if (!m?.[1]) throw new Error(`no ${annotation} value in: ${stdout}`);
  return m[1];
}

/** The table rows of `kubectl keyward status` as objects keyed by the header. */
function parseTable(stdout: string): Record<string, string>[] {
  const [header, ...lines] = stdout.trimEnd().split("\n");
  const names = (header ?? "").split(/\s{2,}/);
  return lines.map((line) => Object.fromEntries(line.split(/\s{2,}/).map((cell, i) => [names[i] ?? `col${i}`, cell])));
}

beforeAll(async () => {
  env = await startTestEnv({
    prefix: "kubectl-plugin",
    token: TOKEN,
    emulator: { seed, jobDelayMs: 400 },
    keyward: { resyncIntervalMs: 2_000 },
  });
  ({ kc, emulator } = env);
  ns = env.ns.name;
  empty = await createTestNamespace("kubectl-plugin-empty");
  env.onStop(() => empty.cleanup());
  installed = installPlugin();
  env.onStop(() => Promise.resolve(installed.remove()));
  binDir = installed.binDir;

  await createCustom(kc, ns, "projects", {
    apiVersion: "keyward.dev/v1alpha1",
    kind: "Project",
    metadata: { name: "shop" },
    spec: { name: "Shop", slug: "plugin-shop" },
  });
  for (const name of ["good", "flaky", "held"]) await createCustom(kc, ns, "secretsyncs", syncObject(name));
  await createCustom(kc, ns, "secretsyncs", syncObject("paused", { "keyward.dev/paused": "true" }));
  await waitForObject(kc, ns, "projects", "shop", { until: isReady, timeoutMs: 60_000, description: "Project shop Ready" });
  await Promise.all(["good", "flaky", "held"].map(readySync));
});

afterAll(() => env?.stop());

describe("kubectl keyward sync", () => {
  it("--wait follows the job of its own request to success", async () => {
    const id = await readySync("good");
    const before = calls("triggerSecretSync", id);
    const r = await plugin(["sync", "good", "--wait", "-n", ns]);
    expect(r.code, r.stderr).toBe(0);
    const value = requestedValue(r.stdout, "keyward.dev/sync-requested-at");
    expect(r.stdout).toMatch(/the sync job \S+ of SecretSync \S+\/good succeeded at /);
    expect(r.stderr).toContain("keyward called sync-secrets");
    const obj = await getCustom(kc, ns, "secretsyncs", "good");
    expect(obj?.metadata.annotations?.["keyward.dev/sync-requested-at"]).toBe(value);
    expect(status(obj)["lastHandledSyncRequest"]).toBe(value);
    expect(status(obj)["syncStatus"]).toBe("succeeded");
    expect(calls("triggerSecretSync", id)).toBe(before + 1);
  });

  it("--wait exits 1 with the service's message when that job fails, though the job before it succeeded", async () => {
    const id = await readySync("flaky");
    const ok = await plugin(["sync", "flaky", "--wait", "-n", ns]);
    expect(ok.code, ok.stderr).toBe(0);
    emulator.setJobOutcome({ syncId: id, action: "sync", outcome: "failed", message: "destination refused the write: quota exceeded" });
    // The service holds the trigger 3 s: meanwhile the status still shows the last job, which
    // succeeded; only the job of this request's value counts.
    emulator.setFaults({ match: { method: "POST", pathPattern: "/sync-secrets$" }, latencyMs: 3_000 });
    const r = await plugin(["sync", "flaky", "--wait", "--timeout", "90s", "-n", ns]).finally(() => emulator.setFaults({}));
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stderr).toMatch(/error: the sync job \S+ of SecretSync \S+\/flaky failed: destination refused the write: quota exceeded/);
    const obj = await getCustom(kc, ns, "secretsyncs", "flaky");
    expect(status(obj)["lastHandledSyncRequest"]).toBe(requestedValue(r.stdout, "keyward.dev/sync-requested-at"));
    expect(status(obj)["syncStatus"]).toBe("failed");
  });

  it("without --wait only sets a fresh annotation value", async () => {
    const before = await getCustom(kc, ns, "secretsyncs", "held");
    const r = await plugin(["sync", "secretsync/held", "--namespace", ns]);
    expect(r.code, r.stderr).toBe(0);
    const value = requestedValue(r.stdout, "keyward.dev/sync-requested-at");
    expect(value).not.toBe(before?.metadata.annotations?.["keyward.dev/sync-requested-at"]);
    const after = await getCustom(kc, ns, "secretsyncs", "held");
    expect(after?.metadata.annotations?.["keyward.dev/sync-requested-at"]).toBe(value);
  });

  it("--wait on a paused SecretSync warns and times out with exit 4", async () => {
    const r = await plugin(["sync", "paused", "--wait", "--timeout", "3s", "-n", ns]);
    expect(r.code, r.stdout + r.stderr).toBe(4);
    expect(r.stderr).toContain("is paused (keyward.dev/paused=true)");
    expect(r.stderr).toMatch(
      /error: timed out after 3s waiting for the sync of SecretSync \S+\/paused: keyward has not handled the request yet/,
    );
  });

  it("names a SecretSync that does not exist, exit 3", async () => {
    for (const args of [
      ["sync", "no-such-sync", "-n", ns],
      ["remove-secrets", "no-such-sync", "--wait", "-n", ns],
    ]) {
      const r = await plugin(args);
      expect(r.code, r.stderr).toBe(3);
      expect(r.stderr).toContain(`error: SecretSync "no-such-sync" not found in namespace "${ns}"`);
    }
  });
});

describe("kubectl keyward remove-secrets", () => {
  it("--wait follows the remove job to success, and a failed one to exit 1 with the service's message", async () => {
    const id = await readySync("good");
    const before = calls("removeSecretSyncSecrets", id);
    const r = await plugin(["remove-secrets", "good", "--wait", "-n", ns]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/the remove-secrets job \S+ of SecretSync \S+\/good succeeded at /);
    const value = requestedValue(r.stdout, "keyward.dev/remove-secrets-requested-at");
    const obj = await getCustom(kc, ns, "secretsyncs", "good");
    expect(status(obj)["lastHandledRemoveSecretsRequest"]).toBe(value);
    expect(status(obj)["removeStatus"]).toBe("succeeded");
    expect(calls("removeSecretSyncSecrets", id)).toBe(before + 1);

    emulator.setJobOutcome({ syncId: id, action: "remove", outcome: "failed", message: "destination is locked" });
    const failed = await plugin(["remove-secrets", "good", "--wait", "-n", ns]);
    expect(failed.code, failed.stdout + failed.stderr).toBe(1);
    expect(failed.stderr).toMatch(/error: the remove-secrets job \S+ of SecretSync \S+\/good failed: destination is locked/);
  });
});

describe("kubectl keyward status", () => {
  it("-A lists every keyward resource with Ready, reason, service id and last sync", async () => {
    await waitForObject(kc, ns, "secretsyncs", "flaky", {
      until: (o) => status(o)["syncStatus"] === "failed",
      timeoutMs: 60_000,
      description: "flaky failed",
    });
    const r = await plugin(["status", "-A"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.split("\n")[0]).toMatch(/^KIND\s+NAMESPACE\s+NAME\s+READY\s+REASON\s+SERVICE-ID\s+(SHARD\s+)?LAST-SYNC$/);
    const rows = parseTable(r.stdout).filter((row) => row["NAMESPACE"] === ns);
    const byName = (kind: string, name: string): Record<string, string> | undefined =>
      rows.find((row) => row["KIND"] === kind && row["NAME"] === name);

    expect(byName("ProviderConfig", "default")).toMatchObject({ READY: "True", "SERVICE-ID": "-" });
    const project = await getCustom(kc, ns, "projects", "shop");
    expect(byName("Project", "shop")).toMatchObject({
      READY: "True",
      REASON: "Available",
      "SERVICE-ID": String(status(project)["projectId"]),
    });
    const good = await getCustom(kc, ns, "secretsyncs", "good");
    expect(byName("SecretSync", "good")).toMatchObject({ "SERVICE-ID": String(status(good)["syncId"]) });
    expect(byName("SecretSync", "good")?.["LAST-SYNC"]).toMatch(/^\d+[smhd]$/);
    expect(byName("SecretSync", "flaky")).toMatchObject({ READY: "False", REASON: "JobFailed" });
    expect(byName("SecretSync", "paused")).toMatchObject({ REASON: "ReconcilePaused" });
    expect(rows.map((row) => `${row["KIND"] ?? ""}/${row["NAME"] ?? ""}`).sort()).toEqual(
      ["ProviderConfig/default", "Project/shop", "SecretSync/flaky", "SecretSync/good", "SecretSync/held", "SecretSync/paused"].sort(),
    );
  });

  it("uses the kubeconfig context's namespace like kubectl, and says when a namespace has none", async () => {
    const flat = await kubectl(["config", "view", "--raw", "--flatten", "--minify"]);
    expect(flat.code, flat.stderr).toBe(0);
    const kubeconfig = join(binDir, "kubeconfig");
    writeFileSync(kubeconfig, flat.stdout, { mode: 0o600 });
    const set = await kubectl(["config", "set-context", "--current", `--namespace=${ns}`, `--kubeconfig=${kubeconfig}`]);
    expect(set.code, set.stderr).toBe(0);

    const r = await plugin(["status"], { KUBECONFIG: kubeconfig });
    expect(r.code, r.stderr).toBe(0);
    const rows = parseTable(r.stdout);
    expect(new Set(rows.map((row) => row["NAMESPACE"]))).toEqual(new Set([ns]));
    expect(rows).toHaveLength(6);

    const none = await plugin(["status", "-n", empty.name, `--kubeconfig=${kubeconfig}`]);
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toBe("");
    expect(none.stderr).toContain(`No keyward resources found in namespace "${empty.name}".`);
  });
});

describe("kubectl keyward usage", () => {
  it("exits 2 with a hint for usage errors, 0 for --help", async () => {
    for (const args of [
      [],
      ["frobnicate"],
      ["sync"],
      ["sync", "a", "b"],
      ["status", "-n", "a", "-A"],
      ["sync", "good", "--timeout", "5m"],
      ["status", "--bogus"],
    ]) {
      const r = await plugin(args);
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(/^error: .+\nSee 'kubectl keyward --help'\.\n$/);
    }
    const help = await plugin(["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("kubectl keyward sync <secretsync> [--wait");
    expect(help.stdout).toContain("Exit codes:");
  });

  it("shows up in kubectl plugin list", async () => {
    const r = await installed.spawnWithPath("kubectl", ["plugin", "list"]);
    expect(r.stdout).toContain(join(binDir, "kubectl-keyward"));
  });
});
