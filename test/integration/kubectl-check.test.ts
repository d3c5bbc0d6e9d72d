// `kubectl keyward check` (bin/kubectl-keyward.cjs) run by the real kubectl against the real
// apiserver, keyward in-process with its closed default and the emulator: a good install exits 0
// with one ok line per check; a ProviderConfig its Secret does not allow, or whose Secret is not
// marked, fails with the command that fixes it; --wait waits for the fix, and times out with
// exit 4. keyward runs in this process, not in a pod: a Pod labelled as keyward's, with the
// chart's ServiceAccount, roles and settings (helm template, applied), its status set Ready
// through the status subresource (no kubelet here), and the Lease it holds stand for the
// Deployment's pod. The kind e2e (test/e2e/check.test.ts) checks a real release's.
import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KubeConfig } from "@kubernetes/client-node";
import { loadDefaultSeed } from "../emulator/default-seed.ts";
import { createTestNamespace, kubectl, testKubeconfigPath, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import { createCustom, credentialsLabels, startTestEnv, waitForObject, type KeywardTestEnv } from "./support/keyward.ts";
import { installPlugin, type InstalledPlugin } from "./support/plugin.ts";
import { deploymentEnv, parseYamlDocuments, renderChart, type Doc } from "../unit/chart/helm.ts";
import type { KubeObject } from "../../src/engine/types.ts";

const TOKEN = "kw-check-token-3e9a41";
const POD = "keyward-check-0";

let env: KeywardTestEnv;
let kc: KubeConfig;
let ns: string;
let controller: TestNamespace;
let plugin: InstalledPlugin;
/** The chart's RBAC objects and ServiceAccount for the release `controller.name`. */
let rbac: Doc[];
let leaseName: string;
let serviceAccount: string;

const check = (args: string[]) => plugin.run(["check", ...args]);
const readyReason = (o: KubeObject): string | undefined => o.status?.conditions?.find((c) => c.type === "Ready")?.reason;

async function applyRbac(docs: Doc[]): Promise<void> {
  const r = await kubectl(["-n", controller.name, "apply", "-f", "-"], {
    input: JSON.stringify({ apiVersion: "v1", kind: "List", items: docs }),
  });
  expect(r.code, r.stderr).toBe(0);
}

/** The release's leader Lease, held by `holder` and last renewed at `renewed`. */
function lease(holder: string, renewed: Date): object {
  return {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: { name: leaseName },
    spec: { holderIdentity: holder, leaseDurationSeconds: 3600, renewTime: renewed.toISOString().replace("Z", "000Z") },
  };
}

async function podReady(ready: boolean): Promise<void> {
  const status = {
    phase: "Running",
    conditions: [{ type: "Ready", status: ready ? "True" : "False", lastTransitionTime: new Date().toISOString() }],
  };
  const r = await kubectl([
    "-n",
    controller.name,
    "patch",
    "pod",
    POD,
    "--subresource=status",
    "--type=merge",
    "-p",
    JSON.stringify({ status }),
  ]);
  expect(r.code, r.stderr).toBe(0);
}

/** A ProviderConfig at the emulator using Secret `secret`, made with `labels` and `annotations`. */
async function providerConfig(name: string, labels: Record<string, string>, annotations: Record<string, string>): Promise<void> {
  const secret = { apiVersion: "v1", kind: "Secret", metadata: { name, labels, annotations }, stringData: { token: TOKEN } };
  expect((await kubectl(["-n", ns, "apply", "-f", "-"], { input: JSON.stringify(secret) })).code).toBe(0);
  await createCustom(kc, ns, "providerconfigs", {
    apiVersion: "keyward.dev/v1alpha1",
    kind: "ProviderConfig",
    metadata: { name },
    spec: { baseUrl: env.emulator.url, credentialsSecretRef: { name, key: "token" } },
  });
}

beforeAll(async () => {
  // keyward's closed default: a Secret's annotation alone says where its token may go.
  env = await startTestEnv({
    prefix: "kubectl-check",
    token: TOKEN,
    emulator: { seed: loadDefaultSeed() },
    keyward: { allowedBaseUrls: null },
  });
  ({ kc } = env);
  ns = env.ns.name;
  plugin = installPlugin();
  controller = await createTestNamespace("kubectl-check-ctl");
  // The release `controller.name` as the chart renders it: its ServiceAccount and roles applied,
  // its pod's settings (leader election on, the Lease's name, every namespace watched) on the Pod.
  const docs = parseYamlDocuments(
    await renderChart({
      release: controller.name,
      namespace: controller.name,
      setJson: { crds: { enabled: false }, rbac: { aggregateToDefaultRoles: false } },
    }),
  );
  const settings = deploymentEnv(docs);
  leaseName = settings["LEADER_ELECTION_ID"] ?? "";
  expect(settings["LEADER_ELECT"]).toBe("true");
  rbac = docs.filter((d) => ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"].includes(d.kind));
  serviceAccount = rbac.find((d) => d.kind === "ServiceAccount")?.metadata.name ?? "";
  await applyRbac(rbac);
  const pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: POD, labels: { "app.kubernetes.io/name": "keyward", "app.kubernetes.io/instance": controller.name } },
    spec: {
      serviceAccountName: serviceAccount,
      containers: [{ name: "keyward", image: "keyward:test", env: Object.entries(settings).map(([name, value]) => ({ name, value })) }],
    },
  };
  expect((await kubectl(["-n", controller.name, "create", "-f", "-"], { input: JSON.stringify(pod) })).code).toBe(0);
  await podReady(true);
  // Renewed now, for an hour: this Lease stands for a leader that keeps renewing it.
  expect((await kubectl(["-n", controller.name, "apply", "-f", "-"], { input: JSON.stringify(lease(POD, new Date())) })).code).toBe(0);
  await waitForObject(kc, ns, "providerconfigs", "default", {
    until: (o) => readyReason(o) === "Connected",
    timeoutMs: 60_000,
    description: "ProviderConfig default Ready",
  });
});

afterAll(async () => {
  await kubectl(["-n", controller.name, "delete", "pod", POD, "--grace-period=0", "--force", "--wait=false"]);
  for (const d of rbac ?? []) if (d.kind.startsWith("Cluster")) await kubectl(["delete", d.kind, d.metadata.name, "--ignore-not-found"]);
  await controller?.cleanup();
  plugin?.remove();
  await env?.stop();
});

describe("kubectl keyward check", () => {
  it("on a good install: exit 0, one ok line for the CRDs, the controller and each ProviderConfig", async () => {
    const r = await check(["-n", ns]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^ok {4}CRDs: all 7 of keyward\.dev present, Established, of this version$/m);
    expect(r.stdout).toMatch(
      new RegExp(`^ok {4}controller: .*${controller.name}/${POD}.*; ${POD} leads \\(Lease ${controller.name}/${leaseName}\\)$`, "m"),
    );
    expect(r.stdout).toMatch(
      new RegExp(`^ok {4}RBAC: ServiceAccount ${controller.name}/${serviceAccount} may do the \\d+ things keyward does$`, "m"),
    );
    expect(r.stdout).toMatch(new RegExp(`^ok {4}ProviderConfig ${ns}/default Ready \\(Connected\\)$`, "m"));
    expect(r.stdout).not.toMatch(/^FAIL/m);
  });

  it("the controller's ServiceAccount without the grants keyward needs: exit 1, naming them and how to see its access", async () => {
    const binding = rbac.find((d) => d.kind === "ClusterRoleBinding" && d.metadata.name === `${controller.name}-keyward`);
    expect(binding).toBeDefined();
    await kubectl(["delete", "clusterrolebinding", binding?.metadata.name ?? ""]);
    try {
      const r = await check(["-n", ns]);
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(
        new RegExp(
          `^FAIL {2}RBAC: ServiceAccount ${controller.name}/${serviceAccount} may not get/list/watch/patch/update providerconfigs\\.keyward\\.dev \\(cluster-wide\\), .* and \\d+ more$`,
          "m",
        ),
      );
      expect(r.stdout).toContain(
        `fix: restore the roles the chart grants it (helm upgrade its release); see: kubectl auth can-i --list --as=system:serviceaccount:${controller.name}:${serviceAccount}`,
      );
    } finally {
      await applyRbac(rbac);
    }
    expect((await check(["-n", ns])).code).toBe(0);
  });

  it("the leader Lease held by a pod that is gone: exit 1, no pod leads", async () => {
    const apply = (o: object) => kubectl(["-n", controller.name, "apply", "-f", "-"], { input: JSON.stringify(o) });
    await apply(lease("keyward-check-gone", new Date()));
    try {
      const r = await check(["-n", ns]);
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(
        new RegExp(
          `^FAIL {2}controller: no keyward pod of ${controller.name}/${controller.name} leads: Lease ${controller.name}/${leaseName} is held by keyward-check-gone, not a running pod of it$`,
          "m",
        ),
      );
      // Held by the Ready pod, which stopped renewing it ten minutes ago.
      await apply(lease(POD, new Date(Date.now() - 10 * 60_000 - 2 * 3600_000)));
      const stale = await check(["-n", ns]);
      expect(stale.code).toBe(1);
      expect(stale.stdout).toMatch(
        new RegExp(
          `^FAIL {2}controller: no keyward pod of .* leads: ${POD} holds Lease ${controller.name}/${leaseName} but last renewed it `,
          "m",
        ),
      );
    } finally {
      await apply(lease(POD, new Date()));
    }
  });

  it("a ProviderConfig whose Secret does not allow its URL: exit 1, the reason and the command that fixes it", async () => {
    await providerConfig("pinned", credentialsLabels, { "keyward.dev/allowed-base-urls": "https://elsewhere.example.test" });
    await waitForObject(kc, ns, "providerconfigs", "pinned", {
      until: (o) => readyReason(o) === "BaseUrlNotAllowed",
      timeoutMs: 60_000,
      description: "BaseUrlNotAllowed",
    });
    const r = await check(["-n", ns]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(new RegExp(`^FAIL {2}ProviderConfig ${ns}/pinned not Ready: BaseUrlNotAllowed: `, "m"));
    const fix = new RegExp(
      `^ {6}fix: allow its URL on the token's Secret: (kubectl -n ${ns} annotate --overwrite secret pinned keyward\\.dev/allowed-base-urls=\\S+) `,
      "m",
    ).exec(r.stdout);
    expect(fix?.[1]).toContain(env.emulator.url);
    // The others still pass.
    expect(r.stdout).toMatch(new RegExp(`^ok {4}ProviderConfig ${ns}/default Ready`, "m"));
  });

  it("--wait waits until the printed fix is applied, then exits 0", async () => {
    // Streamed, so the fix is applied only once the check has said it is waiting.
    const child = spawn("kubectl", ["keyward", "check", "-n", ns, "--wait", "--timeout", "90s"], {
      env: { ...process.env, PATH: plugin.path, KUBECONFIG: testKubeconfigPath() },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
    child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
    const exited = new Promise<number>((resolve) => child.on("close", (code) => resolve(code ?? -1)));
    await waitFor(() => Promise.resolve(/^waiting: .*pinned not Ready: BaseUrlNotAllowed/m.test(stderr) ? true : undefined), {
      timeoutMs: 60_000,
      description: "check --wait saying what it waits for",
    });
    const printed = await check(["-n", ns]);
    const command = /fix: allow its URL on the token's Secret: (kubectl .*?) \(/.exec(printed.stdout)?.[1];
    expect(command).toBeDefined();
    // Run as printed, by the kubectl on the plugin's PATH.
    const words = (command ?? "").split(" ");
    const fixed = await plugin.spawnWithPath(words[0] ?? "kubectl", words.slice(1), { KUBECONFIG: testKubeconfigPath() });
    expect(fixed.code, fixed.stderr).toBe(0);
    expect(await exited, stdout + stderr).toBe(0);
    expect(stdout).toMatch(new RegExp(`^ok {4}ProviderConfig ${ns}/pinned Ready \\(Connected\\)$`, "m"));
  });

  it("--wait with a failure nobody fixes: exit 4 after --timeout, with the last findings", async () => {
    await providerConfig("unmarked", {}, { "keyward.dev/allowed-base-urls": env.emulator.url });
    await waitForObject(kc, ns, "providerconfigs", "unmarked", {
      until: (o) => readyReason(o) === "CredentialsNotMarked",
      timeoutMs: 60_000,
      description: "CredentialsNotMarked",
    });
    const r = await check(["-n", ns, "--wait", "--timeout", "3s"]);
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(/timed out after 3s with 1 check\(s\) failing/);
    expect(r.stdout).toContain(
      `fix: mark the token's Secret as credentials: kubectl -n ${ns} label secret unmarked keyward.dev/credentials=true`,
    );
  });

  it("the controller's pod not Ready: exit 1, naming the pod to look at", async () => {
    await podReady(false);
    try {
      const r = await check(["-n", ns]);
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(
        new RegExp(`^FAIL {2}controller: no keyward pod is Ready \\(.*${controller.name}/${POD} Running.*\\)$`, "m"),
      );
      expect(r.stdout).toMatch(/^ {6}fix: kubectl -n \S+ describe pod \S+; kubectl -n \S+ logs \S+$/m);
    } finally {
      await podReady(true);
    }
  });

  it("checks ClusterProviderConfigs with -A only: one not Ready fails -A, never a namespace's check", async () => {
    const name = `${ns}-cluster`;
    const cpc = {
      apiVersion: "keyward.dev/v1alpha1",
      kind: "ClusterProviderConfig",
      metadata: { name },
      spec: { baseUrl: "http://127.0.0.1:9", credentialsSecretRef: { name: "absent", key: "token" }, namespaces: [ns] },
    };
    const applied = await kubectl(["apply", "-f", "-"], { input: JSON.stringify(cpc) });
    expect(applied.code, applied.stderr).toBe(0);
    try {
      // (The namespace may hold other tests' failing ProviderConfigs: only the lines are compared.)
      const namespaced = await check(["-n", ns]);
      expect(namespaced.stdout).toMatch(/^(ok|FAIL) +ProviderConfig /m);
      expect(namespaced.stdout).not.toContain(`ClusterProviderConfig ${name}`);
      const everywhere = await check(["-A"]);
      expect(everywhere.code).toBe(1);
      expect(everywhere.stdout).toMatch(new RegExp(`^FAIL {2}ClusterProviderConfig ${name} not Ready`, "m"));
    } finally {
      await kubectl([
        "patch",
        "clusterproviderconfigs.v1alpha1.keyward.dev",
        name,
        "--type=merge",
        "-p",
        '{"metadata":{"finalizers":null}}',
      ]);
      await kubectl(["delete", "clusterproviderconfigs.v1alpha1.keyward.dev", name, "--ignore-not-found"]);
    }
  });

  it("refuses arguments it does not take", async () => {
    expect((await check(["extra"])).code).toBe(2);
    expect((await check(["-n", ns, "-A"])).code).toBe(2);
    expect((await check(["--timeout", "5s"])).code).toBe(2);
  });
});
