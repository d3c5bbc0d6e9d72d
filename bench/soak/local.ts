// The soak's local site: keyward as processes of src/main.ts (one, or replicas with sharding)
// against a control plane of the soak's own (kube-apiserver + etcd, restarted during the run) and
// the emulator in the soak's process. Each process reaches the apiserver through a TCP proxy of its
// own (a kubeconfig naming it), so the soak can cut one process's connections.
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { setTimeout as sleep } from "node:timers/promises";
import { ensureBinaries, repoRoot } from "../../test/controlplane/binaries.ts";
import { startControlPlane, type ControlPlane } from "../../test/controlplane/controlplane.ts";
import { waitForCrdsEstablished } from "../../test/controlplane/crds-established.ts";
import { loadDefaultSeed } from "../../test/emulator/default-seed.ts";
import { startEmulator } from "../../test/emulator/server.ts";
import { startKeyward, type KeywardProcess } from "../support/keyward.ts";
import { rssBytes } from "../support/proc.ts";
import type { ServiceState } from "./judge.ts";
import type { KeywardConfig, KeywardSample, ServiceAdmin, Site } from "./site.ts";
import { startProxyThread, type TcpProxy } from "./tcp-proxy.ts";

const execFileAsync = promisify(execFile);

interface Replica {
  identity: string;
  proc: KeywardProcess | undefined;
  /** Its way to the apiserver (its own kubeconfig points here), to cut its connections. */
  proxy: TcpProxy;
  /** Scaled down: stopped for good, the supervisor leaves it stopped. */
  removed: boolean;
  starts: number;
  /** The soak is killing or restarting it: the supervisor leaves it alone. */
  busy: boolean;
}

export interface LocalSiteOptions {
  /** Path prefix of keyward's log files (`<base>-<identity>.log`). */
  base: string;
  /** Lease duration of leader election and shard Leases (default 6 s; the renew deadline is two thirds of it). */
  leaseSeconds?: number;
  /** keyward's entry point (default src/main.ts): a patched copy proves the soak catches a broken build. */
  keywardScript?: string;
  log: (line: string) => void;
  /** Marks an event on the health plot (a process that exited by itself and was restarted). */
  note: (what: string) => void;
}

export async function localSite(options: LocalSiteOptions): Promise<Site> {
  const { log } = options;
  const plane = await startControlPlane({ binaries: await ensureBinaries({ log }), withControllerManager: false, log });
  const cleanup: Array<() => Promise<unknown>> = [() => plane.stop()];
  const replicas: Replica[] = [];
  let config: KeywardConfig | undefined;
  let selfExits = 0;
  let stopped = false;
  let supervisor: Promise<void> | undefined;

  // Short Leases make failover quick; a busy machine may need longer ones (renewals answered late).
  const leaseSeconds = options.leaseSeconds ?? 6;
  const kubeconfigDir = mkdtempSync(join(tmpdir(), "keyward-soak-kubeconfig-"));
  cleanup.push(() => Promise.resolve(rmSync(kubeconfigDir, { recursive: true, force: true })));
  const apiserverUrl = new URL(plane.server);
  const kubeconfigText = readFileSync(plane.kubeconfigPath, "utf8");
  if (!kubeconfigText.includes(plane.server)) throw new Error("the control plane's kubeconfig does not name its server");
  const proxies = startProxyThread();
  cleanup.push(() => proxies.close());
  const newReplica = async (identity: string): Promise<Replica> => {
    const proxy = await proxies.open(apiserverUrl.hostname, Number(apiserverUrl.port));
    writeFileSync(join(kubeconfigDir, identity), kubeconfigText.replaceAll(plane.server, `https://127.0.0.1:${proxy.port}`), {
      mode: 0o600,
    });
    return { identity, proc: undefined, proxy, removed: false, starts: 0, busy: false };
  };
  const startReplica = async (r: Replica): Promise<void> => {
    if (!config) throw new Error("keyward is not configured");
    r.starts += 1;
    const sharded = config.replicas > 1;
    const extraArgs = sharded
      ? ["--sharding", "true", "--leader-elect", "true", "--leader-election-namespace", "default", "--identity", r.identity]
      : [];
    r.proc = await startKeyward({
      entry: "src",
      ...(options.keywardScript ? { script: options.keywardScript } : {}),
      kubeconfigPath: join(kubeconfigDir, r.identity),
      namespace: config.namespaces.join(","),
      resyncInterval: "60s",
      logPath: `${options.base}-${r.identity}.log`,
      extraArgs: [
        ...extraArgs,
        ...(config.clusterProviderConfigs
          ? ["--cluster-provider-configs", "true", "--credentials-namespace", config.credentialsNamespace]
          : []),
        "--lease-duration",
        `${leaseSeconds}s`,
        "--renew-deadline",
        `${Math.max(1, Math.round((leaseSeconds * 2) / 3))}s`,
        "--retry-period",
        "1s",
      ],
    });
    await r.proc.waitReady(120_000);
  };
  const restart = async (r: Replica): Promise<void> => {
    await startReplica(r).catch((error: unknown) => log(`restart of ${r.identity} failed: ${String(error)}`));
  };
  const active = (): Replica[] => replicas.filter((r) => !r.removed);
  let nextIdentity = 0;
  const join_ = async (): Promise<Replica> => {
    const r = await newReplica(`soak-r${nextIdentity++}`);
    r.busy = true;
    replicas.push(r);
    await startReplica(r).catch((error: unknown) => log(`start of ${r.identity} failed: ${String(error)}`));
    r.busy = false;
    return r;
  };

  const site: Site = {
    on: "local",
    kubeconfigPath: plane.kubeconfigPath,
    kubectl: plane.binaries.kubectl ?? "kubectl",
    leaderLease: { namespace: "default", name: "keyward-leader" },
    async open(tokens): Promise<ServiceAdmin> {
      await installCrds(plane);
      const emu = await startEmulator({ tokens: [...tokens], seed: loadDefaultSeed(), jobDelayMs: 200 });
      cleanup.unshift(() => emu.close());
      return {
        url: emu.url,
        takeRequests: () => {
          const taken = emu.requests();
          emu.clearRequests();
          return Promise.resolve(taken);
        },
        setFaults: (faults) => Promise.resolve(emu.setFaults(faults)),
        seed: (seed) => Promise.resolve(emu.seed(seed)),
        state: async () => (await (await fetch(`${emu.url}/_emulator/state`)).json()) as ServiceState,
      };
    },
    async startKeyward(c): Promise<void> {
      config = c;
      for (let i = 0; i < c.replicas; i++) replicas.push(await newReplica(`soak-r${nextIdentity++}`));
      cleanup.unshift(async () => {
        for (const r of replicas) await r.proc?.stop(10_000);
      });
      // A replica that exits before it is ready (a leader whose first renewals a busy apiserver
      // answered too late exits by design) is started again by the supervisor below, as a kubelet would.
      await Promise.all(
        replicas.map((r) => startReplica(r).catch((error: unknown) => log(`start of ${r.identity} failed: ${String(error)}`))),
      );
      supervisor = (async () => {
        while (!stopped) {
          for (const r of replicas) {
            // Checked and taken at once, item by item: a kill may have taken it meanwhile, and two
            // starts of one replica would leave a second process of its identity behind.
            if (r.busy || r.removed || r.proc?.hasExited() !== true) continue;
            r.busy = true;
            selfExits += 1;
            options.note(`${r.identity} exited; restarted`);
            await sleep(1_000);
            await restart(r);
            r.busy = false;
          }
          await sleep(1_000);
        }
      })();
    },
    killable: () =>
      Promise.resolve(
        active()
          .filter((x) => !x.busy && x.proc?.hasExited() === false)
          .map((x) => x.identity),
      ),
    async kill(identity, random): Promise<string> {
      const r = replicas.find((x) => x.identity === identity);
      if (!r) return `no ${identity}`;
      r.busy = true;
      await r.proc?.kill();
      await sleep(1_000 + random.int(4_000));
      await restart(r);
      r.busy = false;
      return `SIGKILL ${identity}`;
    },
    restartApiserver: () => plane.restartApiserver(),
    async sample(): Promise<KeywardSample[]> {
      const out: KeywardSample[] = [];
      for (const r of replicas) {
        const proc = r.proc;
        if (!proc) continue;
        try {
          out.push({ identity: r.identity, pid: proc.pid, rssBytes: rssBytes(proc.pid), metrics: await proc.metrics() });
        } catch {
          // exited or restarting
        }
      }
      return out;
    },
    selfExits: () => Promise.resolve(selfExits),
    async cut(random) {
      const targets = active().filter((r) => r.proc !== undefined);
      if (targets.length === 0) return undefined;
      const r = random.pick(targets);
      return { identity: r.identity, connections: await r.proxy.cut() };
    },
    scale: {
      size: () => active().length,
      join: async () => (await join_()).identity,
      async leave(random) {
        const candidates = active().filter((x) => !x.busy);
        if (candidates.length === 0) return undefined;
        const r = random.pick(candidates);
        r.busy = true;
        r.removed = true;
        await r.proc?.stop(15_000);
        r.proc = undefined;
        r.busy = false;
        return r.identity;
      },
    },
    async close(): Promise<void> {
      stopped = true;
      await supervisor;
      for (const step of cleanup) await step().catch(() => undefined);
    },
  };
  return site;
}

async function installCrds(plane: ControlPlane): Promise<void> {
  const dir = join(repoRoot, "crds");
  const files = readdirSync(dir)
    .filter((name) => /\.ya?ml$/.test(name) && !name.startsWith("kustomization"))
    .flatMap((name) => ["-f", join(dir, name)]);
  const kubectl = plane.binaries.kubectl ?? "kubectl";
  const run = async (args: string[]): Promise<string> =>
    (await execFileAsync(kubectl, ["--kubeconfig", plane.kubeconfigPath, ...args])).stdout;
  await run(["apply", "--server-side", ...files]);
  await waitForCrdsEstablished(run, files);
}
