// keyward in a child process, for tests that kill it for real (SIGKILL) in the middle of a
// reconcile. Run as a script:
//   node test/integration/support/keyward-process.ts <kubeconfig> <namespace> [resyncMs]
// Logs (pino JSON lines) go to stdout; "keyward started" appears there once the informers have
// synced. SIGTERM stops it gracefully. spawnKeyward() starts one from a test.
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { loadKubeConfig } from "../../../src/kube/client.ts";
import { createLogger } from "../../../src/log.ts";
import { createOperator } from "../../../src/operator.ts";

export interface KeywardProcess {
  child: ChildProcess;
  /** stdout lines so far (log records). */
  logs: string[];
  /** Resolves once keyward logged "keyward started". */
  started: Promise<void>;
  /** Resolves with the exit signal or code once the process is gone. */
  exited: Promise<string>;
  /** SIGKILL: no shutdown, no last status write. */
  kill(): Promise<string>;
  /** SIGTERM: graceful stop. */
  stop(): Promise<string>;
}

/**
 * The keyward processes of one test file, one after another (a test kills one and starts the
 * next): `start` spawns and waits for it to have started, `stopAll` stops whatever still runs.
 */
export function keywardProcesses(kubeconfigPath: () => string, namespace: () => string, opts: { resyncIntervalMs?: number } = {}) {
  const processes: KeywardProcess[] = [];
  return {
    async start(): Promise<KeywardProcess> {
      const child = spawnKeyward(kubeconfigPath(), namespace(), opts);
      processes.push(child);
      await child.started;
      return child;
    },
    /** The one started last. */
    latest: (): KeywardProcess | undefined => processes.at(-1),
    all: (): readonly KeywardProcess[] => processes,
    async stopAll(): Promise<void> {
      for (const p of processes) if (p.child.exitCode === null && p.child.signalCode === null) await p.stop();
    },
  };
}

const script = fileURLToPath(import.meta.url);

export function spawnKeyward(kubeconfigPath: string, namespace: string, opts: { resyncIntervalMs?: number } = {}): KeywardProcess {
  const child = spawn(process.execPath, [script, kubeconfigPath, namespace, String(opts.resyncIntervalMs ?? 3_000)], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const logs: string[] = [];
  let buffered = "";
  let markStarted: () => void = () => undefined;
  const started = new Promise<void>((resolve) => (markStarted = resolve));
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    buffered += chunk;
    const lines = buffered.split("\n");
    buffered = lines.pop() ?? "";
    for (const line of lines.filter(Boolean)) {
      logs.push(line);
      if (line.includes('"keyward started"')) markStarted();
    }
  });
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => logs.push(...chunk.split("\n").filter(Boolean)));
  const exited = new Promise<string>((resolve) => child.on("exit", (code, signal) => resolve(signal ?? String(code))));
  return {
    child,
    logs,
    started: Promise.race([
      started,
      exited.then((how) => Promise.reject(new Error(`keyward exited (${how}) before it started:\n${logs.slice(-20).join("\n")}`))),
    ]),
    exited,
    kill: () => {
      child.kill("SIGKILL");
      return exited;
    },
    stop: () => {
      child.kill("SIGTERM");
      return exited;
    },
  };
}

async function main(): Promise<void> {
  const [kubeconfigPath, namespace, resync] = process.argv.slice(2);
  if (!kubeconfigPath || !namespace) throw new Error("usage: keyward-process.ts <kubeconfig> <namespace> [resyncMs]");
  const operator = createOperator({
    kc: loadKubeConfig({ kubeconfigPath }),
    log: createLogger({ level: "debug" }, process.stdout),
    namespaces: [namespace],
    concurrency: 4,
    resyncIntervalMs: Number(resync ?? 3_000),
    // As startKeyward: the tests' emulators listen on random ports and their Secrets pin no URL.
    allowedBaseUrls: ["*"],
  });
  process.on("SIGTERM", () => {
    void operator.stop().then(() => process.exit(0));
  });
  await operator.start();
}

if (process.argv[1] === script) {
  main().catch((err: unknown) => {
    process.stderr.write(`keyward-process failed: ${String(err)}\n`);
    process.exit(1);
  });
}
