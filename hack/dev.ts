// npm run dev: the local default. Brings up the control plane (built from source the first
// time) and the emulator, installs the CRDs, applies the samples of every kind, runs keyward
// and shows the resources' status until Ctrl-C. With --once it exits when every sample is Ready.
import { execFile, spawn } from "node:child_process";
import { mkdirSync, readFileSync, createWriteStream } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { startEmulator } from "../test/emulator/server.ts";
import { createLogger } from "../src/log.ts";
import { loadKubeConfig } from "../src/kube/client.ts";
import { createOperator } from "../src/operator.ts";
import { installCrdsWithWebhook } from "../test/controlplane/crds-with-webhook.ts";
import { prepareEmulatorState } from "./dev-state.ts";

const run = promisify(execFile);
const root = resolve(import.meta.dirname, "..");
const stateDir = join(root, ".keyward");
const EMULATOR_PORT = Number(process.env["EMULATOR_PORT"] ?? 8090);
const NAMESPACE = process.env["DEV_NAMESPACE"] ?? "default";
const once = process.argv.includes("--once");

function runInherit(cmd: string, args: string[]): Promise<void> {
  return new Promise((res, rej) => {
    const p = spawn(cmd, args, { stdio: ["ignore", "inherit", "inherit"], cwd: root });
    p.on("exit", (code) => (code === 0 ? res() : rej(new Error(`${cmd} ${args.join(" ")} exited with ${code}`))));
  });
}

async function controlPlaneEnv(): Promise<{ kubeconfig: string; path: string }> {
  await runInherit(process.execPath, ["test/controlplane/cli.ts", "up"]);
  const { stdout } = await run(process.execPath, ["test/controlplane/cli.ts", "env"], { cwd: root });
  const kubeconfig = /export KUBECONFIG='?([^'\n]+)'?/.exec(stdout)?.[1];
  const binDir = /export PATH='?([^':\n]+)/.exec(stdout)?.[1];
  if (!kubeconfig) throw new Error(`could not read the control plane's kubeconfig from:\n${stdout}`);
  return { kubeconfig, path: binDir ? `${binDir}:${process.env["PATH"] ?? ""}` : (process.env["PATH"] ?? "") };
}

async function main(): Promise<void> {
  mkdirSync(stateDir, { recursive: true });
  const cp = await controlPlaneEnv();
  const env = { ...process.env, KUBECONFIG: cp.kubeconfig, PATH: cp.path };
  const kubectl = (args: string[]): Promise<{ stdout: string }> => run("kubectl", args, { env, cwd: root });

  // The emulator's state is kept across runs only against the same control plane.
  const clusterUid = (await kubectl(["get", "namespace", "default", "-o", "jsonpath={.metadata.uid}"])).stdout.trim();
  if (prepareEmulatorState(stateDir, clusterUid) === "reset") {
    console.log("a new control plane: the emulator starts from its seed (the old .keyward/emulator.json was for another one)");
  }
  const seed = JSON.parse(readFileSync(join(root, "test/emulator/seed.default.json"), "utf8")) as Parameters<
    typeof startEmulator
  >[0]["seed"];
  const emulator = await startEmulator({
    port: EMULATOR_PORT,
    tokens: ["dev-token"],
    persistPath: join(stateDir, "emulator.json"),
    ...(seed ? { seed } : {}),
  });
  console.log(`emulator at ${emulator.url} (token: dev-token, state in .keyward/emulator.json)`);

  // Both versions, as a release serves them: the samples are v1beta1, converted by keyward's
  // webhook, run here beside the operator.
  const crds = await installCrdsWithWebhook({ kubeconfig: cp.kubeconfig, kubectl: "kubectl", env });
  await kubectl(["apply", "-n", NAMESPACE, "-k", "config/samples/"]);
  console.log(`CRDs installed; samples applied in namespace ${NAMESPACE}`);

  const logFile = join(stateDir, "keyward.log");
  const log = createLogger({ level: process.env["LOG_LEVEL"] ?? "info" }, createWriteStream(logFile, { flags: "a" }));
  const operator = createOperator({
    kc: loadKubeConfig({ kubeconfigPath: cp.kubeconfig }),
    log,
    namespaces: [NAMESPACE],
    concurrency: 4,
    resyncIntervalMs: 30_000,
    clusterProviderConfigs: { credentialsNamespace: NAMESPACE },
  });
  await operator.start();
  console.log(
    `keyward running (logs: .keyward/keyward.log). Ctrl-C stops keyward and the emulator; \`npm run control-plane -- down\` stops the control plane.\n`,
  );

  let stopping = false;
  const stop = async (code: number): Promise<void> => {
    if (stopping) return;
    stopping = true;
    await operator.stop();
    await crds.stop();
    await emulator.close();
    process.exit(code);
  };
  process.on("SIGINT", () => void stop(0));
  process.on("SIGTERM", () => void stop(0));

  for (let i = 0; ; i++) {
    const { stdout } = await kubectl(["get", "keyward", "-n", NAMESPACE]);
    console.log(`${new Date().toISOString()}\n${stdout}`);
    const { stdout: json } = await kubectl(["get", "keyward", "-n", NAMESPACE, "-o", "json"]);
    const items = (JSON.parse(json) as { items: Array<{ status?: { conditions?: Array<{ type: string; status: string }> } }> }).items;
    const allReady = items.length > 0 && items.every((o) => o.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"));
    if (once && allReady) return stop(0);
    if (once && i > 60) {
      console.error("not every sample became Ready");
      return stop(1);
    }
    await new Promise((r) => setTimeout(r, 5_000));
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
