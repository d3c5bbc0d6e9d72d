// Child processes of the control plane: started with their output in log files, recorded in
// a JSON file beside their data, and stopped with SIGTERM then SIGKILL. Nothing may outlive
// its owner: a watchdog kills the children when the owning process is gone, and records whose
// owner died are reaped the next time a control plane starts.
import { spawn } from "node:child_process";
import { existsSync, openSync, closeSync, readFileSync } from "node:fs";
import { readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";

export interface RecordedProcess {
  name: string;
  pid: number;
  /** The executable, to tell our process from an unrelated one that reused its pid. */
  exe: string;
}

export interface ControlPlaneRecord {
  /** The process whose exit ends the control plane; null when it runs detached (CLI `up`). */
  ownerPid: number | null;
  watchdogPid: number | null;
  server: string;
  kubeconfigPath: string;
  dir: string;
  binDir: string;
  processes: RecordedProcess[];
}

export const recordFileName = "controlplane.json";

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** True while the process exists and is not a zombie waiting to be reaped. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return true; // no /proc (macOS): trust kill(0)
  }
}

/** Whether pid still runs `exe` (where /proc can tell; elsewhere assume it does). */
function isSameProcess(recorded: RecordedProcess): boolean {
  if (!isAlive(recorded.pid)) return false;
  try {
    const argv0 = readFileSync(`/proc/${recorded.pid}/cmdline`, "utf8").split("\0")[0];
    return argv0 === recorded.exe;
  } catch {
    return existsSync("/proc/self") ? false : true;
  }
}

export interface StartedProcess {
  name: string;
  pid: number;
  exe: string;
  logPath: string;
  /** Resolves with the exit code (or signal) when the process ends. */
  exited: Promise<string>;
}

export function startProcess(name: string, exe: string, args: string[], logPath: string, detached: boolean): StartedProcess {
  const logFd = openSync(logPath, "a");
  try {
    // Its own process group, so a terminal's Ctrl-C reaches the owner, which stops it in order.
    const child = spawn(exe, args, { detached: true, stdio: ["ignore", logFd, logFd] });
    const exited = new Promise<string>((resolve) => {
      child.on("error", (error) => resolve(`failed to start: ${error.message}`));
      child.on("exit", (code, signal) => resolve(signal === null ? `exit code ${code ?? "?"}` : `signal ${signal}`));
    });
    if (child.pid === undefined) throw new Error(`could not start ${name} (${exe})`);
    if (detached) child.unref();
    return { name, pid: child.pid, exe, logPath, exited };
  } finally {
    closeSync(logFd);
  }
}

/**
 * Stops processes one at a time, the last started first (the apiserver before the etcd it
 * needs for a clean shutdown): SIGTERM, then SIGKILL if it still runs after `graceMs`.
 */
export async function terminate(startOrder: RecordedProcess[], graceMs = 10_000): Promise<void> {
  for (const proc of [...startOrder].reverse()) {
    if (!isSameProcess(proc)) continue;
    signal(proc.pid, "SIGTERM");
    if (await exitsWithin(proc.pid, graceMs)) continue;
    signal(proc.pid, "SIGKILL");
    await exitsWithin(proc.pid, 5000);
  }
}

async function exitsWithin(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (isAlive(pid)) {
    if (Date.now() >= deadline) return false;
    await sleep(50);
  }
  return true;
}

/** For process 'exit' handlers, which cannot wait. */
export function killNow(processes: RecordedProcess[]): void {
  for (const proc of processes) if (isSameProcess(proc)) signal(proc.pid, "SIGKILL");
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // already gone
  }
}

// Arguments: owner pid, directory to remove ("" for none), then pids, last started first.
const watchdogScript = `
owner=$1; dir=$2; shift 2
while kill -0 "$owner" 2>/dev/null; do sleep 1; done
for pid in "$@"; do
  kill -TERM "$pid" 2>/dev/null
  i=0
  while kill -0 "$pid" 2>/dev/null && [ $i -lt 10 ]; do sleep 0.5; i=$((i+1)); done
  kill -KILL "$pid" 2>/dev/null
done
if [ -n "$dir" ]; then rm -rf -- "$dir"; fi
`;

/**
 * A detached shell that outlives `ownerPid` by at most a few seconds: when the owner is gone
 * (a crashed or killed test runner), it kills the children and removes `removeDir`.
 */
export function startWatchdog(ownerPid: number, startOrder: number[], removeDir: string | undefined): number | null {
  const pids = [...startOrder].reverse().map(String);
  const child = spawn("/bin/sh", ["-c", watchdogScript, "keyward-controlplane-watchdog", String(ownerPid), removeDir ?? "", ...pids], {
    detached: true,
    stdio: "ignore",
  });
  child.on("error", () => undefined);
  child.unref();
  return child.pid ?? null;
}

/** Ends a watchdog without letting it act (its children are stopped, or watched by a new one). */
export function stopWatchdog(pid: number): void {
  if (isAlive(pid)) signal(pid, "SIGKILL");
}

export async function writeRecord(record: ControlPlaneRecord): Promise<void> {
  await writeFile(join(record.dir, recordFileName), `${JSON.stringify(record, null, 2)}\n`);
}

export async function readRecord(dir: string): Promise<ControlPlaneRecord | undefined> {
  try {
    return JSON.parse(await readFile(join(dir, recordFileName), "utf8")) as ControlPlaneRecord;
  } catch {
    return undefined;
  }
}

export function recordIsRunning(record: ControlPlaneRecord): boolean {
  return record.processes.length > 0 && record.processes.every(isSameProcess);
}

/**
 * Stops the control planes under `root` whose owner process has died, and removes their
 * directories (and directories that never got a record, once they are an hour old).
 */
export async function reapStale(root: string): Promise<void> {
  let entries: string[];
  try {
    entries = await readdir(root);
  } catch {
    return;
  }
  for (const entry of entries) {
    const dir = join(root, entry);
    const record = await readRecord(dir);
    if (record === undefined) {
      const age = await stat(dir).then(
        (s) => Date.now() - s.mtimeMs,
        () => 0,
      );
      if (age > 3_600_000) await rm(dir, { recursive: true, force: true });
      continue;
    }
    if (record.ownerPid === null || isAlive(record.ownerPid)) continue;
    await terminate(record.processes, 5000);
    await rm(dir, { recursive: true, force: true });
  }
}
