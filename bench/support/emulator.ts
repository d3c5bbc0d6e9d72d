// The emulator in a worker thread (emulator-thread.ts): its URL, its state reset over its HTTP
// admin API, and the running count of the requests it answered.
import { Worker } from "node:worker_threads";

/** "METHOD operation status" → requests answered since the emulator started. */
export type ServiceCounts = Map<string, number>;

export interface EmulatorThread {
  url: string;
  counts(): Promise<ServiceCounts>;
  /** Back to an empty state: no projects (the counts keep running). */
  reset(): Promise<void>;
  close(): Promise<void>;
}

export async function startEmulatorThread(token: string): Promise<EmulatorThread> {
  const worker = new Worker(new URL("./emulator-thread.ts", import.meta.url), { workerData: { token } });
  const exited = new Promise<void>((resolve) =>
    worker.once("exit", () => {
      resolve();
    }),
  );
  const url = await new Promise<string>((resolve, reject) => {
    worker.once("message", (message: { url: string }) => {
      resolve(message.url);
    });
    worker.once("error", reject);
    void exited.then(() => {
      reject(new Error("the emulator thread exited before it listened"));
    });
  });
  return {
    url,
    counts: () =>
      new Promise((resolve) => {
        worker.once("message", (message: { counts: Array<[string, number]> }) => {
          resolve(new Map(message.counts));
        });
        worker.postMessage("counts");
      }),
    reset: async () => {
      const response = await fetch(`${url}/_emulator/reset`, { method: "POST" });
      if (!response.ok) throw new Error(`emulator reset: HTTP ${response.status}`);
      await response.body?.cancel();
    },
    close: async () => {
      worker.postMessage("close");
      const timer = setTimeout(() => void worker.terminate(), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** What changed between two readings, without the keys that did not move. */
export function serviceDelta(before: ServiceCounts, after: ServiceCounts): ServiceCounts {
  const delta: ServiceCounts = new Map();
  for (const [key, value] of after) {
    const d = value - (before.get(key) ?? 0);
    if (d > 0) delta.set(key, d);
  }
  return delta;
}
