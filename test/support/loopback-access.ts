// A KubeAccess for a test's own loopback HTTP server standing in for an apiserver: plain HTTP,
// a fresh undici pool, and the credential and deadline the test chooses.
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Agent } from "undici";
import type { KubeAccess } from "../../src/kube/kubeconfig.ts";

/** The URL `server` listens on (it must be listening). */
export function serverUrl(server: Server): string {
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

export function loopbackAccess(server: string, opts: { authorization?: string; requestTimeoutMs?: number } = {}): KubeAccess {
  const newDispatcher = (): Agent => new Agent();
  return {
    server,
    dispatcher: newDispatcher(),
    newDispatcher,
    authorization: () => Promise.resolve(opts.authorization),
    namespace: undefined,
    source: "test",
    ...(opts.requestTimeoutMs !== undefined ? { requestTimeoutMs: opts.requestTimeoutMs } : {}),
  };
}
