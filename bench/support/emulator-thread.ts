// Worker-thread entry for the engine benchmark: the emulator on its own V8 isolate and event
// loop, apart from the bench's. Its request log holds at most 20,000 entries, fewer than a
// 10,000-object run makes, so this thread drains it every 100 ms into counts by method and
// operation (draining and clearing in one synchronous step, so no request is lost).
import { parentPort, workerData } from "node:worker_threads";
import { startEmulator } from "../../test/emulator/server.ts";

const port = parentPort;
if (!port) throw new Error("emulator-thread.ts runs only as a worker thread");
const { token } = workerData as { token: string };
// Started programmatically, so no rate limit: the benchmark measures keyward, not the limiter.
const emulator = await startEmulator({ tokens: [token] });
/** "GET listProjects 200" → count. */
const counts = new Map<string, number>();
const drain = (): void => {
  const requests = emulator.requests();
  emulator.clearRequests();
  for (const r of requests) {
    const key = `${r.method} ${r.operation} ${r.status}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
};
const timer = setInterval(drain, 100);
port.on("message", (message: unknown) => {
  if (message === "close") {
    clearInterval(timer);
    void emulator.close().finally(() => port.close());
  } else if (message === "counts") {
    drain();
    port.postMessage({ counts: [...counts] });
  }
});
port.postMessage({ url: emulator.url });
