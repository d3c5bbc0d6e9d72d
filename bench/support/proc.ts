// A process's own figures from /proc (Linux): CPU seconds (utime + stime), current RSS (VmRSS)
// and its high-water mark (VmHWM). Used on keyward's child process, so the figures are
// keyward's alone, not the bench's or the emulator's.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

let ticks: number | undefined;

/** Clock ticks per second (getconf CLK_TCK; 100 on Linux when getconf is missing). */
function clockTicks(): number {
  if (ticks === undefined) {
    try {
      ticks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    } catch {
      ticks = 100;
    }
  }
  return ticks;
}

/** utime + stime of pid, in seconds (its own, not its children's). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // comm (field 2) may hold spaces: the fields after it start past the last ")".
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // fields[0] is state (field 3); utime and stime are fields 14 and 15.
  return (Number(fields[11]) + Number(fields[12])) / clockTicks();
}

type StatusKey = "VmRSS" | "VmHWM" | "RssAnon" | "RssFile";

/** The field `key` of a /proc/<pid>/status text, in bytes. */
function kbField(status: string, pid: number, key: StatusKey): number {
  const m = new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(status);
  if (!m?.[1]) throw new Error(`/proc/${pid}/status has no ${key}`);
  return Number(m[1]) * 1024;
}

const readStatus = (pid: number): string => readFileSync(`/proc/${pid}/status`, "utf8");
const statusKb = (pid: number, key: StatusKey): number => kbField(readStatus(pid), pid, key);

/** Resident set size now, in bytes. */
export const rssBytes = (pid: number): number => statusKb(pid, "VmRSS");
/** Peak resident set size since the process started, in bytes. */
export const peakRssBytes = (pid: number): number => statusKb(pid, "VmHWM");

/**
 * The resident set now, split: anonymous (the JavaScript heap, malloc, stacks) and file-backed
 * (the runtime's binary and libraries paged in — for Node, about half of an idle process).
 */
export function residentSplit(pid: number): ResidentSplit {
  // One read, so both figures are of the same moment.
  const status = readStatus(pid);
  return { anon: kbField(status, pid, "RssAnon"), file: kbField(status, pid, "RssFile") };
}

export interface ResidentSplit {
  anon: number;
  file: number;
}

/** The pid of this process's child running `comm` (e.g. "kube-apiserver"), if any. */
export function childPid(comm: string): number | undefined {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (name === comm && ppid === process.pid) return Number(entry);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

/** Samples VmRSS every intervalMs until stop(): the largest seen (VmHWM is the exact peak). */
export function sampleRss(pid: number, intervalMs = 100): { stop(): number } {
  let max = 0;
  const sample = (): void => {
    try {
      max = Math.max(max, rssBytes(pid));
    } catch {
      // the process exited
    }
  };
  sample();
  const timer = setInterval(sample, intervalMs);
  return {
    stop: () => {
      clearInterval(timer);
      sample();
      return max;
    },
  };
}
