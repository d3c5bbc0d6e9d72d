// A slow service holds no more than its namespace's share of the workers, and no request waits
// longer than the cluster admin's ceiling. A real apiserver, two emulators over HTTP (one per
// namespace, each with its own ProviderConfig) and keyward in-process with 4 workers per
// controller, as the chart runs it.
// - Namespace A's service answers its connection check and holds every other request for 10
//   minutes; A's ProviderConfig asks for the longest timeout (300 s) and the ceiling allows it.
//   20 Projects in A, then 5 in B: B's five become Ready while A's requests are still held, and
//   A holds at most its cap (2) of them. (Before: A's first 4 passes took all 4 workers until
//   their 300 s timeout, and B waited behind them.)
// - With the ceiling at 2 s, a ProviderConfig asking 300 s gets 2 s: its Ready condition says so,
//   and a Project's request to a service that never answers fails with a timeout while the
//   service is still holding it.
import { spawn } from "node:child_process";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { createLogger } from "../../src/log.ts";
import { createOperator, type Operator } from "../../src/operator.ts";
import { startEmulator, type Emulator } from "../emulator/server.ts";
import { createTestNamespace, testKubeConfig, testKubeconfigPath, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import { freePort } from "../controlplane/controlplane.ts";
import { condition, createCustom, credentialsLabels, getCustom, isReady, projectObject, waitForObject } from "./support/keyward.ts";

const TOKEN_A = "kw-share-token-namespace-a-7c1e";
const TOKEN_B = "kw-share-token-namespace-b-2f9a";
/** Far longer than any wait of this file: a held request is never answered while it runs. */
const HOLD_MS = 10 * 60_000;
/** Every request but the connection check (list-projects). */
const ALL_BUT_CHECK = "^(?!/api/v1/projects$)";

let kc: KubeConfig;
const running: Array<() => Promise<unknown>> = [];

function startOperator(namespaces: string[], allowed: string[], maxRequestTimeoutMs: number): Operator {
  const sink = new Writable({ write: (_chunk, _enc, cb) => cb() });
  const operator = createOperator({
    kc,
    log: createLogger({ level: "warn" }, sink),
    namespaces,
    concurrency: 4,
    resyncIntervalMs: 600_000,
    allowedBaseUrls: allowed,
    maxRequestTimeoutMs,
    stopGraceMs: 1_000,
  });
  running.push(() => operator.stop());
  return operator;
}

async function provider(namespace: string, url: string, token: string): Promise<void> {
  await kc
    .makeApiClient(CoreV1Api)
    .createNamespacedSecret({ namespace, body: { metadata: { name: "default-token", labels: credentialsLabels }, stringData: { token } } });
  await createCustom(kc, namespace, "providerconfigs", {
    apiVersion: "keyward.dev/v1alpha1",
    kind: "ProviderConfig",
    metadata: { name: "default" },
    spec: {
      baseUrl: url,
      credentialsSecretRef: { name: "default-token" },
      rateLimit: { requestsPerSecond: 200, burst: 200 },
      timeoutSeconds: 300,
    },
  });
}

const providerReady = (namespace: string) =>
  waitForObject(kc, namespace, "providerconfigs", "default", {
    until: isReady,
    timeoutMs: 60_000,
    description: `${namespace}'s ProviderConfig Ready`,
  });

async function started<T>(what: () => Promise<T>, stop: (value: T) => Promise<unknown>): Promise<T> {
  const value = await what();
  running.push(() => stop(value));
  return value;
}

beforeAll(() => {
  kc = testKubeConfig();
});

afterAll(async () => {
  for (const step of running.reverse()) await step().catch(() => undefined);
});

describe("a namespace whose service holds every request", () => {
  it("holds at most its share of the workers: the other namespace's Projects are all Ready while A's requests are still held", async () => {
    const emA: Emulator = await started(
      () => startEmulator({ tokens: [TOKEN_A] }),
      (e) => e.close(),
    );
    const emB: Emulator = await started(
      () => startEmulator({ tokens: [TOKEN_B] }),
      (e) => e.close(),
    );
    const a: TestNamespace = await started(
      () => createTestNamespace("share-a"),
      (n) => n.cleanup(),
    );
    const b: TestNamespace = await started(
      () => createTestNamespace("share-b"),
      (n) => n.cleanup(),
    );
    const operator = startOperator([a.name, b.name], [emA.url, emB.url], 300_000);
    await operator.start();

    await provider(a.name, emA.url, TOKEN_A);
    await providerReady(a.name);
    emA.setFaults({ match: { pathPattern: ALL_BUT_CHECK }, latencyMs: HOLD_MS });
    const aNames = Array.from({ length: 20 }, (_, i) => `a-${i}`);
    for (const name of aNames) await createCustom(kc, a.name, "projects", projectObject(name, { name, slug: `share-${name}` }));
    await waitFor(() => Promise.resolve(emA.heldRequests() >= 2 ? true : undefined), {
      timeoutMs: 60_000,
      description: "A's first passes held by its service",
    });

    await provider(b.name, emB.url, TOKEN_B);
    const bNames = Array.from({ length: 5 }, (_, i) => `b-${i}`);
    for (const name of bNames) await createCustom(kc, b.name, "projects", projectObject(name, { name, slug: `share-${name}` }));
    for (const name of bNames) {
      await waitForObject(kc, b.name, "projects", name, { until: isReady, timeoutMs: 60_000, description: `B's Project ${name} Ready` });
    }

    // A's requests were never answered: held still, no more of them than A's share of the 4
    // workers, none applied (a held request is handled only after its latency), no A Project Ready.
    expect(emA.heldRequests()).toBeGreaterThanOrEqual(1);
    expect(emA.heldRequests()).toBeLessThanOrEqual(2);
    expect(emA.requests().filter((r) => r.operation !== "listProjects")).toHaveLength(0);
    const aReady = await Promise.all(aNames.map(async (n) => isReady(await getCustom(kc, a.name, "projects", n))));
    expect(aReady.filter(Boolean)).toHaveLength(0);
    expect(emB.requests().filter((r) => r.operation === "createProject")).toHaveLength(5);
  });
});

/** keyward as a process (src/main.ts), configured through its environment as the chart's Deployment does. */
async function startProcess(env: Record<string, string>): Promise<void> {
  const [metricsPort, healthPort] = [await freePort(), await freePort()];
  const child = spawn(process.execPath, ["src/main.ts"], {
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      KUBECONFIG: testKubeconfigPath(),
      // The chart's defaults: 4 workers, its V8 heap flags, and its way of passing settings.
      CONCURRENCY: "4",
      NODE_OPTIONS: "--max-semi-space-size=1 --max-old-space-size=160",
      METRICS_PORT: String(metricsPort),
      HEALTH_PORT: String(healthPort),
      BIND_ADDRESS: "127.0.0.1",
      METRICS_AUTH: "localhost",
      RESYNC_INTERVAL: "10m",
      LOG_LEVEL: "warn",
      ...env,
    },
  });
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  running.push(async () => {
    child.kill("SIGKILL");
    await exited;
  });
  await waitFor(
    async () => {
      const ok = await fetch(`http://127.0.0.1:${healthPort}/readyz`).then(
        (r) => r.status === 200,
        () => false,
      );
      return ok ? true : undefined;
    },
    { timeoutMs: 60_000, description: "keyward's /readyz" },
  );
}

describe("keyward as a process, configured as the chart does", () => {
  it("a namespace whose service holds every request holds 2 of the 4 workers; the other namespace's Projects are all Ready meanwhile", async () => {
    const emA: Emulator = await started(
      () => startEmulator({ tokens: [TOKEN_A] }),
      (e) => e.close(),
    );
    const emB: Emulator = await started(
      () => startEmulator({ tokens: [TOKEN_B] }),
      (e) => e.close(),
    );
    const a: TestNamespace = await started(
      () => createTestNamespace("share-pa"),
      (n) => n.cleanup(),
    );
    const b: TestNamespace = await started(
      () => createTestNamespace("share-pb"),
      (n) => n.cleanup(),
    );
    // The longest ceiling, so A's calls stay outstanding for the whole test.
    await startProcess({
      WATCH_NAMESPACES: `${a.name},${b.name}`,
      ALLOWED_BASE_URLS: `${emA.url},${emB.url}`,
      MAX_REQUEST_TIMEOUT: "300s",
    });

    await provider(a.name, emA.url, TOKEN_A);
    await providerReady(a.name);
    emA.setFaults({ match: { pathPattern: ALL_BUT_CHECK }, latencyMs: HOLD_MS });
    const aNames = Array.from({ length: 20 }, (_, i) => `pa-${i}`);
    for (const name of aNames) await createCustom(kc, a.name, "projects", projectObject(name, { name, slug: `share-${name}` }));
    await waitFor(() => Promise.resolve(emA.heldRequests() >= 2 ? true : undefined), {
      timeoutMs: 60_000,
      description: "A's first passes held by its service",
    });

    await provider(b.name, emB.url, TOKEN_B);
    const bNames = Array.from({ length: 5 }, (_, i) => `pb-${i}`);
    for (const name of bNames) await createCustom(kc, b.name, "projects", projectObject(name, { name, slug: `share-${name}` }));
    for (const name of bNames) {
      await waitForObject(kc, b.name, "projects", name, { until: isReady, timeoutMs: 60_000, description: `B's Project ${name} Ready` });
    }
    expect(emA.heldRequests()).toBeLessThanOrEqual(2);
    expect(emA.requests().filter((r) => r.operation !== "listProjects")).toHaveLength(0);
    const aReady = await Promise.all(aNames.map(async (n) => isReady(await getCustom(kc, a.name, "projects", n))));
    expect(aReady.filter(Boolean)).toHaveLength(0);
  });
});

describe("the cluster admin's ceiling on request timeouts", () => {
  it("cuts a ProviderConfig's 300 s to the ceiling: Ready says so, and a request the service holds fails with a timeout while still held", async () => {
    const em: Emulator = await started(
      () => startEmulator({ tokens: [TOKEN_A] }),
      (e) => e.close(),
    );
    const ns: TestNamespace = await started(
      () => createTestNamespace("share-cap"),
      (n) => n.cleanup(),
    );
    const operator = startOperator([ns.name], [em.url], 2_000);
    await operator.start();

    await provider(ns.name, em.url, TOKEN_A);
    const pc = await providerReady(ns.name);
    expect(condition(pc, "Ready")?.message).toContain("requests time out after 2 s, not the 300 s asked");

    em.setFaults({ match: { pathPattern: ALL_BUT_CHECK }, latencyMs: HOLD_MS });
    await createCustom(kc, ns.name, "projects", projectObject("capped", { name: "capped", slug: "share-capped" }));
    const failed = await waitForObject(kc, ns.name, "projects", "capped", {
      until: (o) => condition(o, "Synced")?.status === "False",
      timeoutMs: 60_000,
      description: "the Project's request timed out at the ceiling",
    });
    expect(condition(failed, "Synced")?.message).toMatch(/timed out/);
    // The service never answered: each timed-out request is still held there (or was dropped
    // when keyward left), none was handled.
    expect(em.requests().filter((r) => r.operation !== "listProjects")).toHaveLength(0);
  });
});
