// Worker-thread entry for the engine benchmark: the emulator on its own V8 isolate, so its
// state (hundreds of projects) and its request log stay out of the heap figures measured on
// keyward's thread, and it gets a core of its own like a remote service would.
import { parentPort, workerData } from "node:worker_threads";
import { startEmulator } from "../../test/emulator/server.ts";

const port = parentPort;
if (!port) throw new Error("emulator-thread.ts runs only as a worker thread");
const { token } = workerData as { token: string };
// Started programmatically, so no rate limit: the benchmark measures keyward, not the limiter.
const emulator = await startEmulator({ tokens: [token] });
port.on("message", (message: unknown) => {
  if (message === "close") void emulator.close().finally(() => port.close());
});
port.postMessage({ url: emulator.url });
