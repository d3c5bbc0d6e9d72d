// TCP proxies between keyward processes and the kube-apiserver, so the soak can cut one process's
// connections (its watch streams among them) without a hook in keyward: TLS passes through
// untouched, and a cut resets every open connection at once, as a network blip or a load
// balancer dropping streams would. They run on a worker thread of their own: the soak's own
// event loop (the emulator, lists of thousands of objects) must not delay keyward's apiserver
// traffic, or its Lease renewals would miss their deadline for the soak's sake.
import { connect, createServer, type Socket } from "node:net";
import { Worker } from "node:worker_threads";

export interface TcpProxy {
  port: number;
  /** Resets every open connection; resolves with how many there were. */
  cut(): Promise<number>;
}

export interface ProxyThread {
  /** A new proxy to host:port, on a free loopback port. */
  open(targetHost: string, targetPort: number): Promise<TcpProxy>;
  close(): Promise<void>;
}

/** One proxy, on the calling thread (the worker below runs these). */
export async function startTcpProxy(
  targetHost: string,
  targetPort: number,
): Promise<{ port: number; cut(): number; close(): Promise<void> }> {
  const open = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(targetPort, targetHost);
    open.add(client);
    const drop = (): void => {
      open.delete(client);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  return {
    port,
    cut: () => {
      const n = open.size;
      // A reset, not a clean close: the client sees ECONNRESET mid-stream.
      for (const socket of [...open]) socket.resetAndDestroy();
      return n;
    },
    close: async () => {
      for (const socket of [...open]) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

type Reply = { id: number; port?: number; cut?: number; error?: string };

export function startProxyThread(): ProxyThread {
  const worker = new Worker(new URL("./tcp-proxy-thread.ts", import.meta.url));
  const waiting = new Map<number, (reply: Reply) => void>();
  let nextId = 0;
  worker.on("message", (reply: Reply) => {
    waiting.get(reply.id)?.(reply);
    waiting.delete(reply.id);
  });
  const ask = (id: number, message: Record<string, unknown>): Promise<Reply> =>
    new Promise((resolve, reject) => {
      waiting.set(id, (reply) => (reply.error === undefined ? resolve(reply) : reject(new Error(reply.error))));
      worker.postMessage({ ...message, id });
    });
  return {
    open: async (targetHost, targetPort) => {
      // The worker knows a proxy by the id of the message that opened it.
      const proxy = nextId++;
      const { port } = await ask(proxy, { type: "open", targetHost, targetPort });
      return { port: port ?? 0, cut: async () => (await ask(nextId++, { type: "cut", proxy })).cut ?? 0 };
    },
    close: async () => {
      await ask(nextId++, { type: "close" }).catch(() => undefined);
      await worker.terminate();
    },
  };
}
