// A TCP proxy between one keyward process and the kube-apiserver, so the soak can cut that
// process's connections (its watch streams among them) without a hook in keyward: TLS passes
// through untouched, and cut() destroys every open pair at once, as a network blip or a load
// balancer dropping idle streams would.
import { connect, createServer, type Socket } from "node:net";

export interface TcpProxy {
  port: number;
  /** Destroys every open connection; returns how many there were. */
  cut(): number;
  close(): Promise<void>;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
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
