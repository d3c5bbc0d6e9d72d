// How keyward's apiserver client talks to a real kube-apiserver: every request and every watch as
// a stream of one HTTP/2 connection. HTTP/1.1 for requests was measured (bench/RESULTS.md): less
// CPU per request, but the connections a burst opens cost tens of MB per replica, and capped they
// slowed a sharded create. Observed through undici's diagnostics channel: each new connection and
// the protocol its TLS handshake agreed.
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { createServer, connect, type AddressInfo, type Server, type Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKube } from "../../../src/kube/client.ts";
import { KubeTimeoutError, kubeJson, MERGE_PATCH } from "../../../src/kube/rest.ts";
import { watchOnce } from "../../../src/kube/watch.ts";
import { createTestNamespace, testKubeConfig, type TestNamespace } from "../../controlplane/testenv.ts";

let ns!: TestNamespace;

beforeAll(async () => {
  ns = await createTestNamespace("kube-transport");
});

afterAll(async () => {
  await ns?.cleanup();
});

/** The ALPN protocol of every connection undici opens while `run` runs. */
async function connectionsDuring(run: () => Promise<unknown>): Promise<string[]> {
  const protocols: string[] = [];
  const onConnected = (message: unknown): void => {
    const socket = (message as { socket?: TLSSocket }).socket;
    protocols.push(String(socket?.alpnProtocol));
  };
  subscribe("undici:client:connected", onConnected);
  try {
    await run();
  } finally {
    unsubscribe("undici:client:connected", onConnected);
  }
  return protocols;
}

describe("the apiserver client's connections", () => {
  it("runs concurrent requests and watches as streams of one HTTP/2 connection", async () => {
    const kube = createKube(testKubeConfig());
    const path = `/api/v1/namespaces/${ns.name}/configmaps`;
    let resourceVersion = "";
    const requests = await connectionsDuring(async () => {
      const lists = await Promise.all(
        Array.from({ length: 4 }, () => kubeJson<{ metadata: { resourceVersion: string } }>(kube.access, { path })),
      );
      resourceVersion = lists[0]?.metadata.resourceVersion ?? "";
    });
    expect(requests).toEqual(["h2"]);

    const signal = new AbortController().signal;
    const watches = await connectionsDuring(() =>
      Promise.all(
        Array.from({ length: 3 }, () => watchOnce(kube, path, { resourceVersion, timeoutSeconds: 1, signal, onEvent: () => undefined })),
      ),
    );
    expect(watches).toEqual([]);
  });

  it("names keyward as the field manager of its writes (its User-Agent)", async () => {
    const kube = createKube(testKubeConfig());
    const path = `/api/v1/namespaces/${ns.name}/configmaps`;
    await kubeJson(kube.access, { method: "POST", path, body: { metadata: { name: "agent" }, data: { a: "1" } } });
    await kubeJson(kube.access, { method: "PATCH", path: `${path}/agent`, body: { data: { b: "2" } }, contentType: MERGE_PATCH });
    const cm = await kubeJson<{ metadata: { managedFields?: { manager?: string; operation?: string }[] } }>(kube.access, {
      path: `${path}/agent`,
    });
    expect(cm.metadata.managedFields?.map((f) => [f.manager, f.operation])).toEqual([["keyward", "Update"]]);
  });
});

/**
 * A TCP relay to the apiserver that can go silent: `silence()` stops carrying bytes on every
 * connection open now, both ways, without closing any (an apiserver gone without a FIN, or a load
 * balancer that failed over and drops the old flows); connections made after it are carried.
 */
async function relayTo(server: string): Promise<{ url: string; connections: () => number; silence: () => void; close: () => void }> {
  const target = new URL(server);
  const open: Array<{ client: Socket; upstream: Socket; silent: boolean }> = [];
  const relay: Server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    const flow = { client, upstream, silent: false };
    open.push(flow);
    client.on("data", (chunk) => {
      if (!flow.silent) upstream.write(chunk);
    });
    upstream.on("data", (chunk) => {
      if (!flow.silent) client.write(chunk);
    });
    const end = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
  });
  await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
  return {
    url: `https://127.0.0.1:${(relay.address() as AddressInfo).port}`,
    connections: () => open.length,
    silence: () => {
      for (const flow of open) flow.silent = true;
    },
    close: () => {
      for (const flow of open) flow.client.destroy();
      relay.close();
    },
  };
}

describe("an apiserver connection that goes silent", () => {
  it("fails the request in flight with KubeTimeoutError, and the next one goes over a new connection", async () => {
    const base = createKube(testKubeConfig()).access;
    const relay = await relayTo(base.server);
    // The apiserver's certificate names 127.0.0.1, whatever the port: the relay is trusted as it is.
    const access = { ...base, server: relay.url, dispatcher: base.newDispatcher(), requestTimeoutMs: 500 };
    try {
      const path = `/api/v1/namespaces/${ns.name}`;
      await expect(kubeJson<{ metadata: { name: string } }>(access, { path })).resolves.toMatchObject({ metadata: { name: ns.name } });
      expect(relay.connections()).toBe(1);

      relay.silence();
      await expect(kubeJson(access, { path })).rejects.toBeInstanceOf(KubeTimeoutError);
      // The timed-out stream made undici ping the connection; unanswered, it is closed, and the
      // next request is carried by a new one instead of waiting on the dead one until it times out.
      await expect(kubeJson<{ metadata: { name: string } }>(access, { path })).resolves.toMatchObject({ metadata: { name: ns.name } });
      expect(relay.connections()).toBe(2);
    } finally {
      await access.dispatcher.destroy();
      relay.close();
    }
  });
});
