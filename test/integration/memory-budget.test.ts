// A tenant who may create Secrets cannot push keyward out of its memory limit: keyward as a
// process (src/main.ts) configured as the chart's Deployment is (its V8 flags and response budget
// from charts/keyward/values.yaml), a real apiserver, and in namespace A 60 Secrets of 1 MiB
// marked as credentials (the label anyone who may create a Secret can set), listed at start and
// watched while keyward runs. Its peak resident set (VmHWM) stays under the chart's memory
// limit, it never exits, and namespace B's Project becomes Ready on its own service (its
// credentials Secret holds more than the cache keeps, so its token is read on use). (Before:
// every marked Secret was cached whole and listed in pages of 500, and keyward's peak passed the
// limit: an OOM kill in the chart.)
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { chartValues, mib } from "../unit/chart/memory-budget.ts";
import { startEmulator, type Emulator } from "../emulator/server.ts";
import { createTestNamespace, testKubeConfig, testKubeconfigPath, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import { freePort } from "../controlplane/controlplane.ts";
import { createCustom, credentialsLabels, isReady, projectObject, waitForObject } from "./support/keyward.ts";

const TOKEN_B = "kw-memory-token-namespace-b-5d21";
const SECRETS = 60;
const SECRET_BYTES = 1024 * 1024 - 4096;

const values = chartValues();
const LIMIT_KIB = mib(values.resources.limits.memory) * 1024;

let kc: KubeConfig;
const running: Array<() => Promise<unknown>> = [];

beforeAll(() => {
  kc = testKubeConfig();
});

afterAll(async () => {
  for (const step of running.reverse()) await step().catch(() => undefined);
});

/** VmHWM (peak resident set) of a process, in KiB. */
function peakRssKib(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1]);
}

async function started<T>(what: () => Promise<T>, stop: (value: T) => Promise<unknown>): Promise<T> {
  const value = await what();
  running.push(() => stop(value));
  return value;
}

async function markedSecrets(namespace: string, from: number, to: number): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  const blob = Buffer.alloc(SECRET_BYTES, 7).toString("base64");
  for (let i = from; i < to; i++) {
    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: `big-${i}`, labels: credentialsLabels }, data: { token: blob } },
    });
  }
}

async function startProcess(env: Record<string, string>): Promise<{ child: ChildProcess; exits: () => number }> {
  const [metricsPort, healthPort] = [await freePort(), await freePort()];
  const child = spawn(process.execPath, ["src/main.ts"], {
    stdio: ["ignore", "ignore", "pipe"],
    env: {
      ...process.env,
      KUBECONFIG: testKubeconfigPath(),
      CONCURRENCY: "4",
      NODE_OPTIONS: values.nodeOptions,
      MAX_RESPONSE_BYTES: values.maxResponseBytes,
      RESPONSE_BUDGET_BYTES: values.responseBudgetBytes,
      METRICS_PORT: String(metricsPort),
      HEALTH_PORT: String(healthPort),
      BIND_ADDRESS: "127.0.0.1",
      METRICS_AUTH: "localhost",
      RESYNC_INTERVAL: "10m",
      LOG_LEVEL: "warn",
      ...env,
    },
  });
  let stderr = "";
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr = (stderr + chunk).slice(-2000)));
  let exits = 0;
  const exited = new Promise<void>((resolve) =>
    child.on("exit", () => {
      exits += 1;
      resolve();
    }),
  );
  running.push(async () => {
    child.kill("SIGKILL");
    await exited;
  });
  await waitFor(
    async () => {
      if (exits > 0) throw new Error(`keyward exited while starting: ${stderr}`);
      const ok = await fetch(`http://127.0.0.1:${healthPort}/readyz`).then(
        (r) => r.status === 200,
        () => false,
      );
      return ok ? true : undefined;
    },
    { timeoutMs: 120_000, description: "keyward's /readyz" },
  );
  return { child, exits: () => exits };
}

describe("marked Secrets of 1 MiB in one namespace", () => {
  it("keep keyward within the chart's memory limit, running, and the other namespace's Project Ready", { timeout: 400_000 }, async () => {
    expect(LIMIT_KIB).toBeGreaterThan(0);
    const emB: Emulator = await started(
      () => startEmulator({ tokens: [TOKEN_B] }),
      (e) => e.close(),
    );
    const a: TestNamespace = await started(
      () => createTestNamespace("mem-a"),
      (n) => n.cleanup(),
    );
    const b: TestNamespace = await started(
      () => createTestNamespace("mem-b"),
      (n) => n.cleanup(),
    );
    // Half before keyward starts (its first list), half while it watches.
    await markedSecrets(a.name, 0, SECRETS / 2);
    const keyward = await startProcess({ WATCH_NAMESPACES: `${a.name},${b.name}`, ALLOWED_BASE_URLS: emB.url });
    const pid = keyward.child.pid ?? 0;
    await markedSecrets(a.name, SECRETS / 2, SECRETS);

    await kc.makeApiClient(CoreV1Api).createNamespacedSecret({
      namespace: b.name,
      // Past what the cache keeps of a Secret's data (16 KiB), ahead of the token: the token is read from the apiserver on use.
      body: {
        metadata: { name: "default-token", labels: credentialsLabels },
        stringData: { "ca-padding": "p".repeat(64 * 1024), token: TOKEN_B },
      },
    });
    await createCustom(kc, b.name, "providerconfigs", {
      apiVersion: "keyward.dev/v1alpha1",
      kind: "ProviderConfig",
      metadata: { name: "default" },
      spec: { baseUrl: emB.url, credentialsSecretRef: { name: "default-token" } },
    });
    await createCustom(kc, b.name, "projects", projectObject("b-0", { name: "b-0", slug: "mem-b-0" }));
    await waitForObject(kc, b.name, "projects", "b-0", { until: isReady, timeoutMs: 120_000, description: "B's Project Ready" });

    expect(keyward.exits()).toBe(0);
    const peak = peakRssKib(pid);
    console.info(`keyward's peak RSS: ${Math.round(peak / 1024)} MiB (limit ${values.resources.limits.memory})`);
    expect(peak, `peak RSS ${Math.round(peak / 1024)} MiB against the chart's limit ${values.resources.limits.memory}`).toBeLessThan(
      LIMIT_KIB,
    );
  });
});
