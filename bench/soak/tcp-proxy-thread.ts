// Worker-thread entry of bench/soak/tcp-proxy.ts: the proxies, on an event loop of their own.
import { parentPort } from "node:worker_threads";
import { startTcpProxy } from "./tcp-proxy.ts";

const port = parentPort;
if (!port) throw new Error("tcp-proxy-thread.ts runs only as a worker thread");
const proxies = new Map<number, Awaited<ReturnType<typeof startTcpProxy>>>();
port.on("message", (m: { id: number; type: string; targetHost?: string; targetPort?: number; proxy?: number }) => {
  void (async () => {
    try {
      if (m.type === "open") {
        const proxy = await startTcpProxy(m.targetHost ?? "127.0.0.1", m.targetPort ?? 0);
        proxies.set(m.id, proxy);
        port.postMessage({ id: m.id, port: proxy.port });
      } else if (m.type === "cut") {
        port.postMessage({ id: m.id, cut: proxies.get(m.proxy ?? -1)?.cut() ?? 0 });
      } else if (m.type === "close") {
        await Promise.all([...proxies.values()].map((p) => p.close()));
        port.postMessage({ id: m.id });
      }
    } catch (error) {
      port.postMessage({ id: m.id, error: String(error) });
    }
  })();
});
