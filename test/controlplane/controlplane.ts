// A real control plane on 127.0.0.1, as controller-runtime's envtest runs one: etcd,
// kube-apiserver (RBAC, client-certificate or token admin in system:masters, service-account
// keys) and, by default, kube-controller-manager for garbage collection and namespace
// deletion. No kubelet, no nodes, no containers.
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { ensureBinaries, type Binaries } from "./binaries.ts";
import { httpsGet, writeKubeconfig } from "./kubeconfig.ts";
import { adminUser, choosePkiMode, createPki, type Pki, type PkiMode } from "./pki.ts";
import {
  killNow,
  reapStale,
  readRecord,
  sleep,
  startProcess,
  startWatchdog,
  stopWatchdog,
  terminate,
  writeRecord,
  type ControlPlaneRecord,
  type StartedProcess,
} from "./processes.ts";

export interface ControlPlaneOptions {
  /** Where data, logs, certificates and the kubeconfig go; default: a new temp directory. */
  dir?: string;
  apiserverPort?: number;
  etcdPort?: number;
  /** Garbage collection, namespace deletion, service accounts, cluster-role aggregation. Default true. */
  withControllerManager?: boolean;
  /** Default: ensureBinaries(). */
  binaries?: Binaries;
  /** Children outlive this process (the CLI's `up`): no watchdog, no exit handler. */
  detached?: boolean;
  /** stop() leaves `dir` in place (logs, data). */
  keepDir?: boolean;
  /** Default: openssl when the CLI exists. */
  pki?: PkiMode;
  /** Progress lines; default: none. */
  log?: (line: string) => void;
  /** Appended to kube-apiserver's flags, e.g. `--watch-cache=false`. */
  extraApiserverArgs?: string[];
}

export interface ControlPlane {
  kubeconfigPath: string;
  /** https://127.0.0.1:<port> */
  server: string;
  /** etcd's client URL, http://127.0.0.1:<port> (no TLS, no auth): for tests that act on storage itself. */
  etcdUrl: string;
  dir: string;
  binaries: Binaries;
  pki: PkiMode;
  stop: () => Promise<void>;
  /**
   * Stops kube-apiserver alone (SIGTERM, waiting for it to exit); etcd and the controller
   * manager keep running. For tests of clients that must survive the API going away.
   */
  stopApiserver: () => Promise<void>;
  /** Starts kube-apiserver again with the same flags, port, certificates and etcd; resolves at /readyz. */
  startApiserver: () => Promise<void>;
  /** stopApiserver() then startApiserver(). */
  restartApiserver: () => Promise<void>;
}

/** Control planes started without a `dir` live here, so a later start can reap abandoned ones. */
export const runsRoot = join(tmpdir(), "keyward-controlplane");

const readyTimeoutMs = 180_000;

export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  await reapStale(runsRoot);
  const binaries = options.binaries ?? (await ensureBinaries());
  const portsGiven = options.apiserverPort !== undefined || options.etcdPort !== undefined;
  // Free ports are found by binding port 0 and closing it; another process can take one in
  // between, so a start that lost that race is tried again on new ports.
  for (let attempt = 1; ; attempt++) {
    const dir = options.dir !== undefined ? resolve(options.dir) : await newRunDir();
    try {
      return await startIn(dir, binaries, options);
    } catch (error) {
      const retry = !portsGiven && attempt < 3 && error instanceof StartError && error.portConflict;
      if (!retry) throw error;
      options.log?.(`port conflict, retrying: ${error.message.split("\n")[0] ?? ""}`);
    }
  }
}

async function newRunDir(): Promise<string> {
  await mkdir(runsRoot, { recursive: true });
  return mkdtemp(join(runsRoot, "run-"));
}

class StartError extends Error {
  readonly portConflict: boolean;
  constructor(message: string, portConflict: boolean) {
    super(message);
    this.portConflict = portConflict;
  }
}

interface Ports {
  etcd: number;
  etcdPeer: number;
  apiserver: number;
  controllerManager: number;
}

async function choosePorts(options: ControlPlaneOptions): Promise<Ports> {
  return {
    etcd: options.etcdPort ?? (await freePort()),
    etcdPeer: await freePort(),
    apiserver: options.apiserverPort ?? (await freePort()),
    controllerManager: await freePort(),
  };
}

export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

interface Launch {
  dir: string;
  binaries: Binaries;
  options: ControlPlaneOptions;
  ports: Ports;
  record: ControlPlaneRecord;
}

const apiserverName = "kube-apiserver";

async function startIn(dir: string, binaries: Binaries, options: ControlPlaneOptions): Promise<ControlPlane> {
  await mkdir(join(dir, "logs"), { recursive: true });
  const ports = await choosePorts(options);
  const server = `https://127.0.0.1:${ports.apiserver}`;
  const kubeconfigPath = join(dir, "kubeconfig");
  const record: ControlPlaneRecord = {
    ownerPid: options.detached === true ? null : process.pid,
    watchdogPid: null,
    server,
    kubeconfigPath,
    dir,
    binDir: binaries.binDir,
    processes: [],
  };
  const launch: Launch = { dir, binaries, options, ports, record };
  const onExit = () => killNow(record.processes);
  if (options.detached !== true) process.on("exit", onExit);
  const pkiMode = options.pki ?? (await choosePkiMode());
  let pki: Pki;
  try {
    pki = await createPki(join(dir, "pki"), pkiMode);
    await startEtcd(launch);
    await startApiserver(launch, pki);
    await writeKubeconfig(kubeconfigPath, server, await pki.caPem(), adminUser, pki.admin);
    if (options.withControllerManager !== false) await startControllerManager(launch, pki);
    await processesChanged(launch);
  } catch (error) {
    process.off("exit", onExit);
    await terminate(record.processes, 5000);
    if (options.keepDir !== true) await rm(dir, { recursive: true, force: true });
    throw error;
  }
  options.log?.(`control plane ready at ${server} (kubeconfig ${kubeconfigPath})`);
  return {
    kubeconfigPath,
    server,
    etcdUrl: `http://127.0.0.1:${ports.etcd}`,
    dir,
    binaries,
    pki: pkiMode,
    stop: async () => {
      process.off("exit", onExit);
      await stopRecord(record, options.keepDir === true);
    },
    stopApiserver: () => stopApiserverOf(launch),
    startApiserver: () => restartApiserverOf(launch, pki),
    restartApiserver: async () => {
      await stopApiserverOf(launch);
      await restartApiserverOf(launch, pki);
    },
  };
}

/**
 * The record file and the watchdog follow the processes that run: the watchdog knows its pids
 * from its arguments, so a new set of pids needs a new watchdog (started before the old one is
 * killed, so the children are never unwatched).
 */
async function processesChanged(launch: Launch): Promise<void> {
  const { record, options } = launch;
  if (options.detached !== true) {
    const removeDir = options.keepDir === true ? undefined : launch.dir;
    const previous = record.watchdogPid;
    record.watchdogPid = startWatchdog(
      process.pid,
      record.processes.map((p) => p.pid),
      removeDir,
    );
    if (previous !== null) stopWatchdog(previous);
  }
  await writeRecord(record);
}

async function stopApiserverOf(launch: Launch): Promise<void> {
  const { record } = launch;
  const running = record.processes.find((p) => p.name === apiserverName);
  if (running === undefined) return;
  await terminate([running]);
  record.processes = record.processes.filter((p) => p !== running);
  await processesChanged(launch);
}

async function restartApiserverOf(launch: Launch, pki: Pki): Promise<void> {
  const { record } = launch;
  if (record.processes.some((p) => p.name === apiserverName)) throw new Error("kube-apiserver is already running");
  // Right after etcd, where it was: stop() and the watchdog stop processes in reverse order.
  const position = record.processes.findIndex((p) => p.name === "etcd") + 1;
  try {
    await startApiserver(launch, pki, position);
  } catch (error) {
    const failed = record.processes.filter((p) => p.name === apiserverName);
    await terminate(failed, 5000);
    record.processes = record.processes.filter((p) => p.name !== apiserverName);
    await processesChanged(launch);
    throw error;
  }
  await processesChanged(launch);
}

/** Stops what a record names (used by stop() and by the CLI's `down`). */
export async function stopRecord(record: ControlPlaneRecord, keepDir: boolean): Promise<void> {
  if (record.watchdogPid !== null) stopWatchdog(record.watchdogPid);
  await terminate(record.processes);
  if (!keepDir) await rm(record.dir, { recursive: true, force: true });
}

/** Stops the control plane recorded in `dir`, if any; true when there was one. */
export async function stopControlPlaneIn(dir: string, keepDir = false): Promise<boolean> {
  const record = await readRecord(dir);
  if (record === undefined) return false;
  await stopRecord(record, keepDir);
  return true;
}

/** Starts a process and records it at `position` in start order (default: last). */
async function launchProcess(
  launch: Launch,
  name: string,
  exe: string | undefined,
  args: string[],
  position?: number,
): Promise<StartedProcess> {
  if (exe === undefined) throw new Error(`no ${name} binary in ${launch.binaries.binDir}`);
  const started = startProcess(name, exe, args, join(launch.dir, "logs", `${name}.log`), launch.options.detached === true);
  const { processes } = launch.record;
  processes.splice(position ?? processes.length, 0, { name, pid: started.pid, exe });
  await writeRecord(launch.record);
  return started;
}

async function startEtcd(launch: Launch): Promise<void> {
  const { ports } = launch;
  const peer = `http://127.0.0.1:${ports.etcdPeer}`;
  const client = `http://127.0.0.1:${ports.etcd}`;
  const etcd = await launchProcess(launch, "etcd", launch.binaries.etcd, [
    "--name=keyward",
    `--data-dir=${join(launch.dir, "etcd")}`,
    `--listen-client-urls=${client}`,
    `--advertise-client-urls=${client}`,
    `--listen-peer-urls=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=keyward=${peer}`,
    // A test cluster: losing data on a power cut is fine, waiting on fsync is not.
    "--unsafe-no-fsync=true",
    "--log-level=warn",
  ]);
  await waitReady(etcd, "etcd /health", async () => {
    const res = await fetch(`${client}/health`);
    const body = (await res.json()) as { health?: string };
    return res.ok && body.health === "true";
  });
}

function apiserverArgs(launch: Launch, pki: Pki): string[] {
  const { ports } = launch;
  const args = [
    `--etcd-servers=http://127.0.0.1:${ports.etcd}`,
    `--secure-port=${ports.apiserver}`,
    "--bind-address=127.0.0.1",
    // There is no default route here, so the apiserver cannot pick an address by itself.
    "--advertise-address=127.0.0.1",
    "--service-cluster-ip-range=10.0.0.0/24",
    "--authorization-mode=RBAC",
    "--allow-privileged=true",
    "--profiling=false",
    // The loopback address is not a valid endpoint of the `kubernetes` Service; nothing here needs one.
    "--endpoint-reconciler-type=none",
    ...pki.apiserverFlags,
  ];
  // Without the controller manager nothing creates `default` service accounts.
  if (launch.options.withControllerManager === false) args.push("--disable-admission-plugins=ServiceAccount");
  args.push(...(launch.options.extraApiserverArgs ?? []));
  return args;
}

async function startApiserver(launch: Launch, pki: Pki, position?: number): Promise<void> {
  const apiserver = await launchProcess(launch, apiserverName, launch.binaries.kubeApiserver, apiserverArgs(launch, pki), position);
  const base = `https://127.0.0.1:${launch.ports.apiserver}`;
  await waitReady(apiserver, "kube-apiserver /readyz and /livez", async () => {
    const tls = { caPem: await pki.caPem(), credential: pki.admin };
    const ready = await httpsGet(`${base}/readyz`, tls);
    if (ready.status !== 200) return false;
    return (await httpsGet(`${base}/livez`, tls)).status === 200;
  });
}

async function startControllerManager(launch: Launch, pki: Pki): Promise<void> {
  const kubeconfig = join(launch.dir, "pki", "controller-manager.kubeconfig");
  const server = `https://127.0.0.1:${launch.ports.apiserver}`;
  await writeKubeconfig(kubeconfig, server, await pki.caPem(), "system:kube-controller-manager", pki.controllerManager);
  const kcm = await launchProcess(launch, "kube-controller-manager", launch.binaries.kubeControllerManager, [
    `--kubeconfig=${kubeconfig}`,
    `--authentication-kubeconfig=${kubeconfig}`,
    `--authorization-kubeconfig=${kubeconfig}`,
    // No front proxy here: do not look up (and keep logging about) its request-header CA.
    "--authentication-skip-lookup=true",
    "--bind-address=127.0.0.1",
    `--secure-port=${launch.ports.controllerManager}`,
    `--cert-dir=${join(launch.dir, "pki", "controller-manager")}`,
    "--leader-elect=false",
    "--use-service-account-credentials=false",
    // The controllers that need no nodes and matter to an operator's tests. serviceaccount-token
    // fills kubernetes.io/service-account-token Secrets (the chart's scraper token) with a token
    // signed by the apiserver's service-account key.
    "--controllers=garbagecollector,namespace,serviceaccount,serviceaccount-token,clusterrole-aggregation",
    `--service-account-private-key-file=${join(pki.dir, "sa.key")}`,
  ]);
  await waitReady(kcm, "kube-controller-manager /healthz", async () => {
    const res = await httpsGet(`https://127.0.0.1:${launch.ports.controllerManager}/healthz`, { caPem: undefined });
    return res.status === 200;
  });
}

/** Polls `check` until it returns true; fails fast, with the log's tail, if the process exits. */
async function waitReady(proc: StartedProcess, what: string, check: () => Promise<boolean>): Promise<void> {
  let exitedWith: string | undefined;
  void proc.exited.then((how) => (exitedWith = how));
  const deadline = Date.now() + readyTimeoutMs;
  while (Date.now() < deadline) {
    if (exitedWith !== undefined) throw await startFailure(proc, `${proc.name} exited (${exitedWith}) before ${what} answered`);
    if (await check().catch(() => false)) return;
    await sleep(200);
  }
  throw await startFailure(proc, `${what} not ready after ${readyTimeoutMs / 1000}s`);
}

async function startFailure(proc: StartedProcess, message: string): Promise<StartError> {
  const log = await readFile(proc.logPath, "utf8").catch(() => "");
  const tail = log.split("\n").slice(-30).join("\n");
  const portConflict = /address already in use/i.test(log);
  return new StartError(`${message}; last lines of ${proc.logPath}:\n${tail}`, portConflict);
}
