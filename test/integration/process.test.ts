// keyward as a process (src/main.ts): configuration errors, health and metrics endpoints,
// graceful shutdown on SIGTERM.
import { spawn, type ChildProcess } from "node:child_process";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { KubeConfig } from "@kubernetes/client-node";
import { testKubeconfigPath, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import { freePort } from "../controlplane/controlplane.ts";
import { createCustom, isReady, mergePatchCustom, startTestEnv, waitForObject, type TestEnv } from "./support/keyward.ts";

const TOKEN = "kw-process-token-88e1";
let env: TestEnv | undefined;
let kc: KubeConfig;
let ns: TestNamespace;

beforeAll(async () => {
  env = await startTestEnv({ prefix: "process", token: TOKEN, keyward: false });
  ({ kc, ns } = env);
});

afterAll(() => env?.stop());

function run(args: string[]): { child: ChildProcess; output: () => string; exited: Promise<number | string> } {
  const child = spawn(process.execPath, ["src/main.ts", ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, KUBECONFIG: testKubeconfigPath() },
  });
  let out = "";
  child.stdout?.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | string>((resolve) => child.on("exit", (code, signal) => resolve(code ?? signal ?? "?")));
  return { child, output: () => out, exited };
}

async function get(url: string): Promise<{ status: number; body: string }> {
  try {
    const r = await fetch(url);
    return { status: r.status, body: await r.text() };
  } catch {
    return { status: 0, body: "" };
  }
}

it("refuses a bad setting with a clear message and exit code 2", async () => {
  const p = run(["--concurrency", "zero"]);
  expect(await p.exited).toBe(2);
  expect(p.output()).toMatch(/--concurrency \/ CONCURRENCY/);
});

it("serves health, readiness and controller-runtime metrics, and stops gracefully on SIGTERM", async () => {
  const [metricsPort, healthPort] = [await freePort(), await freePort()];
  // localhost: /metrics without a token (metrics-auth.test.ts covers the reviewed default).
  const p = run([
    "--namespaces",
    ns.name,
    "--metrics-port",
    String(metricsPort),
    "--health-port",
    String(healthPort),
    "--bind-address",
    "127.0.0.1",
    "--metrics-auth",
    "localhost",
    "--resync-interval",
    "5s",
  ]);
  try {
    await waitFor(async () => ((await get(`http://127.0.0.1:${healthPort}/readyz`)).status === 200 ? true : undefined), {
      timeoutMs: 30_000,
      description: "/readyz 200",
    });
    expect((await get(`http://127.0.0.1:${healthPort}/healthz`)).status).toBe(200);
    await createCustom(kc, ns.name, "projects", {
      apiVersion: "keyward.dev/v1alpha1",
      kind: "Project",
      metadata: { name: "proc" },
      spec: { slug: "process-project" },
    });
    await waitForObject(kc, ns.name, "projects", "proc", { until: isReady, timeoutMs: 30_000, description: "Project Ready" });
    const metrics = await waitFor(
      async () => {
        const m = await get(`http://127.0.0.1:${metricsPort}/metrics`);
        return m.body.includes('keyward_api_requests_total{operation="createProject",status="200"}') ? m.body : undefined;
      },
      { timeoutMs: 30_000, description: "API metrics" },
    );
    expect(metrics).toMatch(/controller_runtime_reconcile_total\{controller="project",result="(success|requeue_after)"\} [1-9]/);
    expect(metrics).toContain("controller_runtime_reconcile_time_seconds_bucket");
    expect(metrics).toContain('workqueue_depth{name="project"}');
    // The process's own health, as long runs watch it (npm run soak).
    expect(metrics).toMatch(/^process_resident_memory_bytes [1-9]/m);
    expect(metrics).toMatch(/^nodejs_heap_size_used_bytes [1-9]/m);
    expect(metrics).toMatch(/^nodejs_active_handles_total [1-9]/m);
    expect(metrics).toMatch(/^nodejs_eventloop_lag_p99_seconds /m);
    expect(metrics).not.toContain(TOKEN);
  } finally {
    p.child.kill("SIGTERM");
  }
  expect(await p.exited).toBe(0);
  expect(p.output()).toContain("shutting down");
  expect(p.output()).not.toContain(TOKEN);
});

it("cuts a reconcile stuck on the service short at shutdown and still exits 0", async () => {
  const environment = env;
  if (!environment) throw new Error("no test environment");
  // The service holds every create for a minute, longer than the client's timeout; the shutdown
  // budget is 8 s (grace 3 s), so only cancelling the call lets keyward exit in time.
  await mergePatchCustom(kc, ns.name, "providerconfigs", "default", { spec: { timeoutSeconds: 120 } });
  environment.emulator.setFaults({ match: { method: "POST", pathPattern: "^/api/v2/workspace$" }, latencyMs: 60_000 });
  const p = run([
    "--namespaces",
    ns.name,
    "--metrics-port",
    String(await freePort()),
    "--health-port",
    String(await freePort()),
    "--bind-address",
    "127.0.0.1",
    "--shutdown-timeout",
    "8s",
  ]);
  try {
    await createCustom(kc, ns.name, "projects", {
      apiVersion: "keyward.dev/v1alpha1",
      kind: "Project",
      metadata: { name: "stuck" },
      spec: { slug: "stuck-project" },
    });
    // The create-started mark is written just before the create call goes out.
    await waitForObject(kc, ns.name, "projects", "stuck", {
      until: (o) => o?.metadata.annotations?.["keyward.dev/create-started"] !== undefined,
      timeoutMs: 30_000,
      description: "create in flight",
    });
    await new Promise((r) => setTimeout(r, 500));
  } finally {
    p.child.kill("SIGTERM");
  }
  expect(await p.exited).toBe(0);
  expect(p.output()).not.toContain("shutdown timed out");
  environment.emulator.setFaults({});
});
