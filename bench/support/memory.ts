// Memory samples taken after a full garbage collection, so "before" and "after" compare live
// objects rather than whatever garbage happened to be waiting.
import { getHeapSpaceStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { setTimeout as sleep } from "node:timers/promises";

export interface MemorySample {
  rss: number;
  heapUsed: number;
  /** heapUsed without code, bytecode and read-only spaces: the JS objects themselves. */
  objectHeap: number;
}

// The V8 spaces that hold JS objects (the rest holds compiled code, bytecode and read-only
// roots, which grow as the JIT warms up, not with the number of objects).
const objectSpaces = new Set(["new_space", "old_space", "new_large_object_space", "large_object_space"]);

let gc: (() => void) | undefined;

// `npm run bench` starts node without --expose-gc; turning the flag on at run time makes the
// next new context carry a `gc` global, which is then callable from here.
function fullGc(): void {
  if (!gc) {
    setFlagsFromString("--expose-gc");
    gc = runInNewContext("gc") as () => void;
  }
  gc();
  gc();
}

function sampleOnce(): MemorySample {
  fullGc();
  const { rss, heapUsed } = process.memoryUsage();
  const objectHeap = getHeapSpaceStatistics()
    .filter((s) => objectSpaces.has(s.space_name))
    .reduce((sum, s) => sum + s.space_used_size, 0);
  return { rss, heapUsed, objectHeap };
}

/** The median of three samples half a second apart, each after a full GC. */
export async function sampleMemory(): Promise<MemorySample> {
  const samples: MemorySample[] = [];
  for (let i = 0; i < 3; i++) {
    if (i > 0) await sleep(500);
    samples.push(sampleOnce());
  }
  const mid = (pick: (s: MemorySample) => number): number => samples.map(pick).sort((a, b) => a - b)[1] ?? Number.NaN;
  return { rss: mid((s) => s.rss), heapUsed: mid((s) => s.heapUsed), objectHeap: mid((s) => s.objectHeap) };
}

export const mb = (bytes: number): string => (bytes / (1024 * 1024)).toFixed(1);
export const kb = (bytes: number): string => (bytes / 1024).toFixed(1);

export interface PeakMemory {
  /** Whole process (keyward's thread and the emulator's) when sampling started. */
  startRss: number;
  peakRss: number;
  startHeapUsed: number;
  /** V8 heap of this thread only: keyward and the bench's own watcher. */
  peakHeapUsed: number;
}

/**
 * Samples process.memoryUsage() every intervalMs until stop(), with no GC in between: the
 * high-water mark a container's memory limit would have to allow, garbage included.
 */
export function samplePeak(intervalMs = 100): { stop(): PeakMemory } {
  const first = process.memoryUsage();
  const peak: PeakMemory = { startRss: first.rss, peakRss: first.rss, startHeapUsed: first.heapUsed, peakHeapUsed: first.heapUsed };
  const sample = (): void => {
    const { rss, heapUsed } = process.memoryUsage();
    peak.peakRss = Math.max(peak.peakRss, rss);
    peak.peakHeapUsed = Math.max(peak.peakHeapUsed, heapUsed);
  };
  const timer = setInterval(sample, intervalMs);
  return {
    stop: () => {
      clearInterval(timer);
      sample();
      return { ...peak };
    },
  };
}
