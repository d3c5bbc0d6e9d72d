// npm run control-plane -- up | down | env | status | build
//   up      start a control plane that keeps running in the background (no-op when already up)
//   down    stop it and remove its data
//   env     print `export KUBECONFIG=…` and `export PATH=<bin dir>:$PATH` for `eval`
//   status  say whether it runs (exit 0) or not (exit 1)
//   build   only make sure the binaries are built (or found in KUBEBUILDER_ASSETS)
import { join } from "node:path";
import { ensureBinaries, repoRoot } from "./binaries.ts";
import { startControlPlane, stopControlPlaneIn, stopRecord } from "./controlplane.ts";
import { readRecord, recordIsRunning, type ControlPlaneRecord } from "./processes.ts";

const stateDir = join(process.env.KEYWARD_STATE_DIR ?? join(repoRoot, ".keyward"), "controlplane");

const shellQuote = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`;

async function running(): Promise<ControlPlaneRecord | undefined> {
  const record = await readRecord(stateDir);
  return record !== undefined && recordIsRunning(record) ? record : undefined;
}

async function up(): Promise<number> {
  const current = await running();
  if (current !== undefined) {
    console.log(`control plane already up at ${current.server}\nkubeconfig: ${current.kubeconfigPath}`);
    return 0;
  }
  // Whatever a previous `up` left behind (a crashed apiserver, a rebooted machine) goes first.
  const stale = await readRecord(stateDir);
  if (stale !== undefined) await stopRecord(stale, false);
  const binaries = await ensureBinaries({ allTools: true });
  const log = (line: string) => process.stderr.write(`[control-plane] ${line}\n`);
  const plane = await startControlPlane({ dir: stateDir, binaries, detached: true, log });
  console.log(`control plane up at ${plane.server}\nkubeconfig: ${plane.kubeconfigPath}`);
  console.log(`use it from a shell: eval "$(npm run -s control-plane -- env)"`);
  return 0;
}

async function down(): Promise<number> {
  const stopped = await stopControlPlaneIn(stateDir);
  console.log(stopped ? "control plane stopped" : "no control plane was recorded");
  return 0;
}

async function env(): Promise<number> {
  const current = await running();
  if (current === undefined) {
    console.error("no control plane is running: npm run control-plane -- up");
    return 1;
  }
  console.log(`export KUBECONFIG=${shellQuote(current.kubeconfigPath)}`);
  console.log(`export PATH=${shellQuote(current.binDir)}:"$PATH"`);
  return 0;
}

async function status(): Promise<number> {
  const current = await running();
  if (current === undefined) {
    console.log("control plane: down");
    return 1;
  }
  const processes = current.processes.map((p) => `${p.name} (pid ${p.pid})`).join(", ");
  console.log(`control plane: up at ${current.server}\nkubeconfig: ${current.kubeconfigPath}\nprocesses: ${processes}`);
  return 0;
}

async function build(): Promise<number> {
  const binaries = await ensureBinaries({ allTools: true });
  console.log(`binaries (${binaries.source}) in ${binaries.binDir}`);
  return 0;
}

const commands: Record<string, () => Promise<number>> = { up, down, env, status, build };
const command = commands[process.argv[2] ?? ""];
if (command === undefined) {
  console.error("usage: npm run control-plane -- up | down | env | status | build");
  process.exitCode = 2;
} else {
  try {
    process.exitCode = await command();
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exitCode = 1;
  }
}
