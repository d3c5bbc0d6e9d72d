// keyward replicas with sharding on, as separate processes of src/main.ts (the sharding tests):
// each with its own identity, leader election in `leaseNamespace`, short Lease times and its own
// metrics port; stdout/stderr kept as log lines.
import { spawn, type ChildProcess } from "node:child_process";
import { freePort } from "../../controlplane/controlplane.ts";
import { testKubeconfigPath } from "../../controlplane/testenv.ts";
import { boundLoads, createRing, type Ring } from "../../../src/lib/ring.ts";
import { shardKey } from "../../../src/shard/sharder.ts";

export interface Replica {
  identity: string;
  child: ChildProcess;
  logs: string[];
  metricsPort: number;
  started: Promise<void>;
  exited: Promise<string>;
}

export interface ReplicaOptions {
  namespaces: readonly string[];
  leaseNamespace: string;
  /** More flags, after the defaults (a later flag wins). */
  args?: readonly string[];
  /** --allowed-base-urls '*' (default true); false: keyward's default, a token's Secret says where it may go. */
  anyBaseUrl?: boolean;
}

export async function startReplica(identity: string, opts: ReplicaOptions): Promise<Replica> {
  const metricsPort = await freePort();
  const args = [
    "src/main.ts",
    ...["--namespaces", opts.namespaces.join(",")],
    ...["--sharding", "true", "--leader-elect", "true", "--leader-election-namespace", opts.leaseNamespace, "--identity", identity],
    ...["--lease-duration", "6s", "--renew-deadline", "4s", "--retry-period", "1s", "--resync-interval", "10m"],
    ...["--metrics-port", String(metricsPort), "--health-port", String(await freePort())],
    ...["--bind-address", "127.0.0.1", "--metrics-auth", "localhost"],
    ...(opts.anyBaseUrl === false ? [] : ["--allowed-base-urls", "*"]),
    ...(opts.args ?? []),
  ];
  const child = spawn(process.execPath, args, {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, KUBECONFIG: testKubeconfigPath() },
  });
  const logs: string[] = [];
  let markStarted: () => void = () => undefined;
  const started = new Promise<void>((resolve) => (markStarted = resolve));
  let partial = "";
  const take = (chunk: Buffer): void => {
    const lines = (partial + chunk.toString("utf8")).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines.filter(Boolean)) {
      logs.push(line);
      if (line.includes('"keyward started"')) markStarted();
    }
  };
  child.stdout?.on("data", take);
  child.stderr?.on("data", take);
  const exited = new Promise<string>((resolve) => child.on("exit", (code, signal) => resolve(signal ?? String(code))));
  return {
    identity,
    child,
    logs,
    metricsPort,
    started: Promise.race([
      started,
      exited.then((how) => Promise.reject(new Error(`${identity} exited (${how}):\n${logs.slice(-20).join("\n")}`))),
    ]),
    exited,
  };
}

export const alive = (r: Replica): boolean => r.child.exitCode === null && r.child.signalCode === null;

export async function stopReplicas(replicas: readonly Replica[]): Promise<void> {
  for (const r of replicas.filter(alive)) {
    r.child.kill("SIGTERM");
    await r.exited;
  }
}

/** The shares the sharder assigns: the ring of `members` with bounded loads over `namespaces` (those holding objects). */
export function shares(members: readonly string[], namespaces: readonly string[]): Ring {
  return boundLoads(
    createRing(members),
    namespaces.map((namespace) => shardKey({ metadata: { namespace, name: "x" } })),
  );
}

/** The replica `shares` give a namespace's objects. */
export function shareOwner(of: Ring, namespace: string): string | undefined {
  return of.ownerOf(shardKey({ metadata: { namespace, name: "x" } }));
}

/**
 * An identity `${prefix}-N` that, joining `others`, takes at least `min` of `namespaces` from them
 * and leaves at least `keep` where they were.
 */
export function joiningIdentity(prefix: string, others: readonly string[], namespaces: readonly string[], min = 1, keep = 1): string {
  for (let i = 0; i < 200; i++) {
    const candidate = `${prefix}-${String(i)}`;
    const after = shares([...others, candidate], namespaces);
    const moved = namespaces.filter((n) => shareOwner(after, n) === candidate).length;
    if (moved >= min && namespaces.length - moved >= keep) return candidate;
  }
  throw new Error("no identity takes the namespaces asked");
}
