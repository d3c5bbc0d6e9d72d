// Counts the connections undici opens in this thread (client-node's requests and keyward's own
// service client both go through undici), by protocol: https = the apiserver, http = the
// emulator. A client that reuses its connections opens a handful; one that does not opens one
// per request.
import { subscribe, unsubscribe } from "node:diagnostics_channel";

export interface ConnectionCounter {
  /** Connections opened since the counter started, by URL protocol ("https:", "http:"). */
  opened(): Map<string, number>;
  stop(): void;
}

export function countConnections(): ConnectionCounter {
  const opened = new Map<string, number>();
  const onConnected = (message: unknown): void => {
    const protocol = (message as { connectParams?: { protocol?: string } }).connectParams?.protocol ?? "?";
    opened.set(protocol, (opened.get(protocol) ?? 0) + 1);
  };
  subscribe("undici:client:connected", onConnected);
  return {
    opened: () => new Map(opened),
    stop: () => {
      unsubscribe("undici:client:connected", onConnected);
    },
  };
}
