// Two keyward processes with leader election against the real control plane: only the holder
// of the Lease reconciles; when it stops, the other takes over.
import { spawn, type ChildProcess } from "node:child_process";
import { afterAll, beforeAll, expect, it } from "vitest";
import { CoordinationV1Api, type KubeConfig } from "@kubernetes/client-node";
import type { Emulator } from "../emulator/server.ts";
import { testKubeconfigPath, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import { freePort } from "../controlplane/controlplane.ts";
import { isKubeNotFound } from "../../src/kube/objects.ts";
import { createCustom, isReady, startTestEnv, waitForObject, type TestEnv } from "./support/keyward.ts";

const TOKEN = "kw-leader-token-c3";
let env: TestEnv | undefined;
let kc: KubeConfig;
let emulator: Emulator;
let ns: TestNamespace;

interface Replica {
  identity: string;
  child: ChildProcess;
  logs: string[];
  exited: Promise<number | string>;
}

async function replica(identity: string): Promise<Replica> {
  const args = [
    "src/main.ts",
    "--namespaces",
    ns.name,
    "--leader-elect",
    "true",
    "--leader-election-namespace",
    ns.name,
    "--identity",
    identity,
    "--lease-duration",
    "6s",
    "--renew-deadline",
    "4s",
    "--retry-period",
    "1s",
    "--metrics-port",
    String(await freePort()),
    "--health-port",
    String(await freePort()),
    "--bind-address",
    "127.0.0.1",
  ];
  const child = spawn(process.execPath, args, {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, KUBECONFIG: testKubeconfigPath() },
  });
  const logs: string[] = [];
  child.stdout?.on("data", (d: Buffer) => logs.push(...d.toString().split("\n").filter(Boolean)));
  child.stderr?.on("data", (d: Buffer) => logs.push(...d.toString().split("\n").filter(Boolean)));
  const exited = new Promise<number | string>((resolve) => child.on("exit", (code, signal) => resolve(code ?? signal ?? "?")));
  return { identity, child, logs, exited };
}

const started = (r: Replica): boolean => r.logs.some((l) => l.includes('"keyward started"'));

async function holder(): Promise<string | undefined> {
  const api = kc.makeApiClient(CoordinationV1Api);
  try {
    const lease = await api.readNamespacedLease({ name: "keyward-leader", namespace: ns.name });
    return lease.spec?.holderIdentity ?? undefined;
  } catch (err) {
    if (isKubeNotFound(err)) return undefined; // no lease yet
    throw err;
  }
}

beforeAll(async () => {
  env = await startTestEnv({ prefix: "leader", token: TOKEN, keyward: false });
  ({ kc, emulator, ns } = env);
});

afterAll(() => env?.stop());

it("reconciles with one leader at a time and fails over when the leader stops", async () => {
  const a = await replica("replica-a");
  const b = await replica("replica-b");
  try {
    const leaderId = await waitFor(async () => holder(), { timeoutMs: 30_000, description: "a lease holder" });
    const [leader, standby] = leaderId === a.identity ? [a, b] : [b, a];
    await waitFor(() => Promise.resolve(started(leader) ? true : undefined), {
      timeoutMs: 30_000,
      description: "leader started its controllers",
    });
    await createCustom(kc, ns.name, "projects", {
      apiVersion: "keyward.dev/v1alpha1",
      kind: "Project",
      metadata: { name: "first" },
      spec: { slug: "leader-first" },
    });
    await waitForObject(kc, ns.name, "projects", "first", { until: isReady, timeoutMs: 30_000, description: "first Ready" });
    expect(started(standby)).toBe(false);

    leader.child.kill("SIGTERM");
    expect(await leader.exited).toBe(0);
    await waitFor(async () => ((await holder()) === standby.identity ? true : undefined), {
      timeoutMs: 30_000,
      description: "standby holds the lease",
    });
    await waitFor(() => Promise.resolve(started(standby) ? true : undefined), {
      timeoutMs: 30_000,
      description: "standby started its controllers",
    });
    await createCustom(kc, ns.name, "projects", {
      apiVersion: "keyward.dev/v1alpha1",
      kind: "Project",
      metadata: { name: "second" },
      spec: { slug: "leader-second" },
    });
    await waitForObject(kc, ns.name, "projects", "second", {
      until: isReady,
      timeoutMs: 30_000,
      description: "second Ready after failover",
    });
    expect(emulator.requests().filter((r) => r.operation === "createProject")).toHaveLength(2);
  } finally {
    a.child.kill("SIGTERM");
    b.child.kill("SIGTERM");
    await Promise.all([a.exited, b.exited]);
  }
});
