// The informer through a real 410 Gone: its watch resumes from a resourceVersion etcd has
// compacted away, and it must relist, report everything it missed, and count a relist.
//
// How the 410 is made real and deterministic:
// - this file runs a control plane of its own with kube-apiserver's watch cache off, so watches
//   are served from etcd and a watch from a compacted revision is answered 410 (with the cache,
//   "too old" depends on the cache's window, which nothing here controls);
// - the informer reaches the apiserver through an HTTP CONNECT proxy (the kubeconfig's
//   proxy-url) that the test can make park new tunnels. Every request of the informer opens its
//   own tunnel (its Kube is built without keyward's connection reuse), so while its watch streams nothing new is opened; when the watch ends at its
//   short server-side timeout, the resume request is parked. While it waits, the test changes
//   objects and compacts etcd past the informer's last resourceVersion, then lets it through.
import { createServer, type IncomingMessage } from "node:http";
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KubeConfig } from "@kubernetes/client-node";
import { accessFrom } from "../../../src/kube/kubeconfig.ts";
import { createKube, resourcePath, type Kube } from "../../../src/kube/client.ts";
import { watchKind, type Informer, type InformerEventType } from "../../../src/kube/informer.ts";
import { listAll, watchOnce } from "../../../src/kube/watch.ts";
import { createLogger } from "../../../src/log.ts";
import type { KubeObject } from "../../../src/engine/types.ts";
import { ensureBinaries } from "../../controlplane/binaries.ts";
import { startControlPlane, type ControlPlane } from "../../controlplane/controlplane.ts";
import { waitFor, testApis, type TestApis } from "../../controlplane/testenv.ts";
import { createWidget, deleteWidget, widgetCrd, type WidgetCrd } from "../support/throwaway-crd.ts";

/**
 * A Kube whose every request opens its own connection (keyward's own access reuses one pool):
 * the parking proxy relies on the resume request arriving as a new tunnel.
 */
function freshConnectionKube(kc: KubeConfig): Kube {
  const access = accessFrom(kc);
  return {
    access: {
      ...access,
      get dispatcher() {
        return access.newDispatcher();
      },
    },
  };
}

interface TunnelProxy {
  url: string;
  /** From now on, new tunnels wait (accepted, unanswered) until release(). */
  hold(): void;
  /** Tunnels waiting since hold(). */
  parked(): number;
  release(): void;
  /** Resets every open tunnel (the client sees ECONNRESET mid-stream); how many sockets it reset. */
  cut(): number;
  close(): Promise<void>;
}

// A plain CONNECT proxy to one address: bytes pass through untouched (TLS end to end).
async function startTunnelProxy(target: URL): Promise<TunnelProxy> {
  const sockets = new Set<Socket>();
  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
  };
  let waiting: (() => void)[] | undefined;
  const server = createServer((_req, res) => res.writeHead(405).end());
  server.on("connect", (_req: IncomingMessage, client: Socket, head: Buffer) => {
    track(client);
    const open = (): void => {
      if (client.destroyed) return;
      const upstream = connect(Number(target.port), target.hostname, () => {
        client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
        upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      track(upstream);
      upstream.on("close", () => client.destroy());
      client.on("close", () => upstream.destroy());
    };
    if (waiting) waiting.push(open);
    else open();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    hold: () => {
      waiting = [];
    },
    parked: () => waiting?.length ?? 0,
    release: () => {
      const opens = waiting ?? [];
      waiting = undefined;
      for (const open of opens) open();
    },
    cut: () => {
      const open = [...sockets];
      for (const socket of open) socket.resetAndDestroy();
      return open.length;
    },
    close: async () => {
      waiting = undefined;
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function throughProxy(kc: KubeConfig, proxyUrl: string): KubeConfig {
  const proxied = new KubeConfig();
  proxied.loadFromOptions({
    clusters: kc.clusters.map((cluster) => ({ ...cluster, proxyUrl })),
    users: kc.users,
    contexts: kc.contexts,
    currentContext: kc.currentContext,
  });
  return proxied;
}

// etcd's gRPC gateway (JSON over HTTP; etcd 3.5+ serves it under /v3/).
async function etcdCall<T>(etcdUrl: string, path: string, body: unknown): Promise<T> {
  const res = await fetch(`${etcdUrl}${path}`, { method: "POST", body: JSON.stringify(body) });
  const text = await res.text();
  if (!res.ok) throw new Error(`etcd ${path}: HTTP ${res.status}: ${text}`);
  return JSON.parse(text) as T;
}

/** Compacts etcd at its current revision: every older revision is gone, for watches too. */
async function compactEtcd(etcdUrl: string): Promise<string> {
  const range = await etcdCall<{ header: { revision: string } }>(etcdUrl, "/v3/kv/range", {
    key: Buffer.from("/registry/").toString("base64"),
    keys_only: true,
    limit: 1,
  });
  await etcdCall(etcdUrl, "/v3/kv/compaction", { revision: range.header.revision, physical: true });
  return range.header.revision;
}

interface Recorded {
  type: InformerEventType;
  name: string;
}

interface RestartLine {
  msg: string;
  reason: string;
  attempt: number;
  resumeFrom?: string;
}

// A real control plane needs etcd at hand; an existing cluster (KEYWARD_E2E_KUBECONFIG) gives none.
const existingCluster = Boolean(process.env.KEYWARD_E2E_KUBECONFIG);

describe.skipIf(existingCluster)("informer after 410 Gone (watch served from etcd, etcd compacted)", () => {
  let plane!: ControlPlane;
  let kube!: Kube;
  let planeApis!: TestApis;
  let planeKc!: KubeConfig;
  let proxy!: TunnelProxy;
  let crd!: WidgetCrd;
  const namespace = "informer-gone";
  const informers: Informer[] = [];

  beforeAll(async () => {
    const binaries = await ensureBinaries();
    plane = await startControlPlane({ binaries, withControllerManager: false, extraApiserverArgs: ["--watch-cache=false"] });
    const kc = new KubeConfig();
    kc.loadFromFile(plane.kubeconfigPath);
    planeKc = kc;
    planeApis = testApis(kc);
    kube = createKube(kc);
    crd = widgetCrd(planeApis);
    await crd.create();
    await planeApis.core.createNamespace({ body: { metadata: { name: namespace } } });
    proxy = await startTunnelProxy(new URL(plane.server));
  });

  afterAll(async () => {
    for (const informer of informers) informer.stop();
    await proxy?.close();
    await plane?.stop();
  });

  const widget = (name: string): Promise<KubeObject> => createWidget(planeApis, crd.kind, namespace, name, { size: 1 });
  const hasEvent = (events: Recorded[], type: InformerEventType, name: string): Promise<true | undefined> =>
    Promise.resolve(events.some((e) => e.type === type && e.name === name) ? true : undefined);

  it(
    "relists when its resumed watch is answered 410, delivering what changed meanwhile, and counts a relist",
    { timeout: 300_000 },
    async () => {
      await widget("kept");
      await widget("doomed");
      await widget("steady");

      const events: Recorded[] = [];
      const restarts: string[] = [];
      const informer = watchKind(freshConnectionKube(throughProxy(planeKc, proxy.url)), crd.kind, {
        namespaces: [namespace],
        logger: createLogger({ level: "silent" }),
        restartBackoff: { baseMs: 50, maxMs: 500 },
        // Short watches, so the one in flight ends soon and the informer resumes from its last resourceVersion.
        watchTimeoutSeconds: 3,
        onEvent: (type, obj) => events.push({ type, name: obj.metadata.name }),
        onRestart: (reason) => restarts.push(reason),
      });
      informers.push(informer);
      await informer.start();
      expect(events.map((e) => `${e.type} ${e.name}`).sort()).toEqual(["add doomed", "add kept", "add steady"]);

      // One change seen live: the informer's last resourceVersion is now this object's.
      const live = await widget("live");
      await waitFor(() => hasEvent(events, "add", "live"), { timeoutMs: 60_000, description: "add of live" });
      const lastSeen = live.metadata.resourceVersion ?? "";

      // Cut it off: its current watch ends at the server's timeout and the resume request waits.
      proxy.hold();
      await waitFor(() => Promise.resolve(proxy.parked() > 0 ? true : undefined), {
        timeoutMs: 120_000,
        description: "the informer's resumed watch to reach the proxy",
      });
      const mark = events.length;

      // Meanwhile: an update, a create and a delete, then etcd compacted past all of them.
      await planeApis.custom.patchNamespacedCustomObject({
        group: crd.kind.group,
        version: crd.kind.version,
        namespace,
        plural: crd.kind.plural,
        name: "kept",
        body: [{ op: "replace", path: "/spec/size", value: 2 }],
      });
      await widget("born");
      await deleteWidget(planeApis, crd.kind, namespace, "doomed");
      const compactedAt = await compactEtcd(plane.etcdUrl);
      expect(BigInt(compactedAt)).toBeGreaterThan(BigInt(lastSeen));

      // The premise: a watch from the informer's last resourceVersion is now answered 410.
      const direct = await watchOnce(kube, resourcePath(crd.kind, namespace), {
        resourceVersion: lastSeen,
        timeoutSeconds: 10,
        signal: new AbortController().signal,
        onEvent: () => undefined,
      });
      expect(direct.end).toBe("gone");

      // Cut off, it has seen none of it and still holds the stale objects.
      expect(events.slice(mark)).toEqual([]);
      expect(informer.get({ namespace, name: "doomed" })).toBeDefined();
      expect(restarts).toEqual([]);

      proxy.release();
      await waitFor(() => hasEvent(events, "delete", "doomed"), { timeoutMs: 120_000, description: "delete of doomed after the relist" });
      await waitFor(() => hasEvent(events, "add", "born"), { timeoutMs: 60_000, description: "add of born after the relist" });
      await waitFor(() => hasEvent(events, "update", "kept"), { timeoutMs: 60_000, description: "update of kept after the relist" });

      // Exactly the difference: nothing for the objects that did not change.
      expect(
        events
          .slice(mark)
          .map((e) => `${e.type} ${e.name}`)
          .sort(),
      ).toEqual(["add born", "delete doomed", "update kept"]);
      // One restart, and it is the 410 relist, not a failure with backoff.
      expect(restarts).toEqual([expect.stringMatching(/410 Gone.*relist/)]);

      // The cache equals what the apiserver holds, object for object.
      const truth = await listAll(kube, resourcePath(crd.kind, namespace));
      const summary = (objs: KubeObject[]) => objs.map((o) => `${o.metadata.name}@${o.metadata.resourceVersion ?? ""}`).sort();
      expect(summary(informer.list())).toEqual(summary(truth.items));
      expect(informer.get({ namespace, name: "kept" })?.spec).toEqual({ size: 2 });
      expect(informer.get({ namespace, name: "doomed" })).toBeUndefined();

      // And it watches on from the fresh list.
      await widget("after");
      await waitFor(() => hasEvent(events, "add", "after"), { timeoutMs: 60_000, description: "add of after, watched after the relist" });
      expect(restarts).toHaveLength(1);
      informer.stop();
    },
  );
  it(
    "after a connection lost mid-watch, resumes from its last resourceVersion, and a healthy watch's loss starts the backoff again",
    { timeout: 300_000 },
    async () => {
      const restartLines: RestartLine[] = [];
      const logSink = {
        write: (line: string) => {
          const parsed = JSON.parse(line) as RestartLine;
          if (parsed.msg === "informer restarting its list/watch") restartLines.push(parsed);
        },
      };
      const events: Recorded[] = [];
      const informer = watchKind(freshConnectionKube(throughProxy(planeKc, proxy.url)), crd.kind, {
        namespaces: [namespace],
        logger: createLogger({ level: "warn" }, logSink),
        restartBackoff: { baseMs: 50, maxMs: 500 },
        watchTimeoutSeconds: 300,
        onEvent: (type, obj) => events.push({ type, name: obj.metadata.name }),
      });
      informers.push(informer);
      await informer.start();
      const known = events.length;

      // Four cuts in a row, each of a watch that had delivered a change: before, every cut counted
      // one more failure (the fourth waited up to 8 times the first) and relisted from scratch.
      const seenAt: string[] = [];
      for (let i = 0; i < 4; i += 1) {
        const made = await widget(`cut-${i}`);
        await waitFor(() => hasEvent(events, "add", `cut-${i}`), { timeoutMs: 60_000, description: `add of cut-${i}` });
        seenAt.push(made.metadata.resourceVersion ?? "");
        expect(proxy.cut()).toBeGreaterThan(0);
        await deleteWidget(planeApis, crd.kind, namespace, `cut-${i}`);
        await waitFor(() => hasEvent(events, "delete", `cut-${i}`), { timeoutMs: 60_000, description: `delete of cut-${i}` });
      }

      expect(restartLines.map((l) => ({ attempt: l.attempt, resumeFrom: l.resumeFrom }))).toEqual(
        seenAt.map((rv) => ({ attempt: 0, resumeFrom: rv })),
      );
      // Resumed, never relisted: no event but the changes made, each once.
      expect(events.slice(known).map((e) => `${e.type} ${e.name}`)).toEqual(
        [0, 1, 2, 3].flatMap((i) => [`add cut-${i}`, `delete cut-${i}`]),
      );
      const truth = await listAll(kube, resourcePath(crd.kind, namespace));
      const names = (objs: KubeObject[]) => objs.map((o) => o.metadata.name).sort();
      expect(names(informer.list())).toEqual(names(truth.items));
      informer.stop();
    },
  );
});
