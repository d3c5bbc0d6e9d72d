// The emulator in a worker thread (emulator-thread.ts), reached over its HTTP admin API.
import { Worker } from "node:worker_threads";
import type { RecordedRequest } from "../../test/emulator/server.ts";

export interface EmulatorThread {
  url: string;
  requests(): Promise<RecordedRequest[]>;
  clearRequests(): Promise<void>;
  /** Back to an empty state: no projects, an empty request log. */
  reset(): Promise<void>;
  /** V8 heap used by the emulator's thread, in bytes. */
  heapUsed(): Promise<number>;
  close(): Promise<void>;
}

export async function startEmulatorThread(token: string): Promise<EmulatorThread> {
  const worker = new Worker(new URL("./emulator-thread.ts", import.meta.url), { workerData: { token } });
  const exited = new Promise<void>((resolve) => worker.once("exit", () => { resolve(); }));
  const url = await new Promise<string>((resolve, reject) => {
    worker.once("message", (message: { url: string }) => { resolve(message.url); });
    worker.once("error", reject);
    void exited.then(() => { reject(new Error("the emulator thread exited before it listened")); });
  });
  const admin = async (method: "GET" | "POST" | "DELETE", path: string): Promise<unknown> => {
    const response = await fetch(`${url}/_emulator/${path}`, { method });
    if (!response.ok) throw new Error(`emulator admin ${method} ${path}: HTTP ${response.status}`);
    return response.json();
  };
  return {
    url,
    requests: async () => ((await admin("GET", "requests")) as { requests: RecordedRequest[] }).requests,
    clearRequests: async () => {
      await admin("DELETE", "requests");
    },
    reset: async () => {
      await admin("POST", "reset");
    },
    heapUsed: async () => (await worker.getHeapStatistics()).used_heap_size,
    close: async () => {
      worker.postMessage("close");
      const timer = setTimeout(() => void worker.terminate(), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
