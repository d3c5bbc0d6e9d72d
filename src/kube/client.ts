// How keyward reaches the apiserver: the kubeconfig it loads and the typed API clients.
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import type { InformerFactory } from "./informer.ts";
import { CoordinationV1Api, CoreV1Api, CustomObjectsApi, EventsV1Api, KubeConfig } from "@kubernetes/client-node";

/** Names a resource type: group "" is the core group (Secrets, ConfigMaps, ...). */
export interface KindRef {
  group: string;
  version: string;
  plural: string;
  kind: string;
  /** A cluster-scoped kind (Namespace, ClusterProviderConfig): listed and watched cluster-wide, keys have namespace "". */
  clusterScoped?: boolean;
}

/** Core v1 Secrets, as a KindRef for the generic object helpers. */
export const secretKind: KindRef = { group: "", version: "v1", plural: "secrets", kind: "Secret" };

/** Core v1 Namespaces (cluster-scoped): their labels decide which may use a ClusterProviderConfig. */
export const namespaceKind: KindRef = { group: "", version: "v1", plural: "namespaces", kind: "Namespace", clusterScoped: true };

export interface Kube {
  kc: KubeConfig;
  /** The operator's shared informers, when it runs them: reads go to their caches. */
  informers?: InformerFactory;
  custom: CustomObjectsApi;
  core: CoreV1Api;
  coordination: CoordinationV1Api;
  events: EventsV1Api;
}

const serviceAccountTokenPath = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/** An explicit path, else $KUBECONFIG, else the in-cluster service account, else ~/.kube/config. */
export function loadKubeConfig(opts: { kubeconfigPath?: string } = {}): KubeConfig {
  const kc = new KubeConfig();
  if (opts.kubeconfigPath) {
    kc.loadFromFile(opts.kubeconfigPath);
  } else if (process.env["KUBECONFIG"]) {
    // loadFromDefault merges a path list in $KUBECONFIG the way kubectl does.
    kc.loadFromDefault();
  } else if (process.env["KUBERNETES_SERVICE_HOST"] && existsSync(serviceAccountTokenPath)) {
    kc.loadFromCluster();
  } else {
    kc.loadFromDefault();
  }
  return kc;
}

type DispatcherFactory = (cluster: unknown, agentOptions: Record<string, unknown>) => unknown;
const reusing = Symbol("keyward.reusingDispatchers");

/**
 * client-node 2.0 builds a new undici Agent for every request, so no connection to the
 * apiserver is ever reused: every request pays a TCP and TLS handshake and the process grows by
 * the sockets it leaves behind (measured in bench/engine.bench.ts: one new connection per
 * request, ~800 KB RSS per object). One dispatcher per distinct TLS identity fixes that; a
 * rotated certificate or CA gives a new key and so a new dispatcher.
 */
export function reuseConnections(kc: KubeConfig): KubeConfig {
  const target = kc as unknown as { createDispatcher: DispatcherFactory; [reusing]?: true };
  if (target[reusing]) return kc;
  const create = target.createDispatcher.bind(kc);
  const cache = new Map<string, unknown>();
  target.createDispatcher = (cluster, agentOptions) => {
    const key = dispatcherKey(cluster, agentOptions);
    if (!cache.has(key)) cache.set(key, create(cluster, agentOptions));
    return cache.get(key);
  };
  target[reusing] = true;
  return kc;
}

function dispatcherKey(cluster: unknown, agentOptions: Record<string, unknown>): string {
  const hash = createHash("sha256");
  const c = (cluster ?? {}) as { name?: string; server?: string; proxyUrl?: string };
  hash.update(JSON.stringify([c.name, c.server, c.proxyUrl]));
  for (const field of ["ca", "cert", "key", "pfx", "passphrase", "rejectUnauthorized", "servername"]) {
    const value = agentOptions[field];
    hash.update(`|${field}=`);
    if (value !== undefined) hash.update(Buffer.isBuffer(value) ? value : JSON.stringify(value));
  }
  return hash.digest("hex");
}

export function createKube(kc: KubeConfig): Kube {
  reuseConnections(kc);
  return {
    kc,
    custom: kc.makeApiClient(CustomObjectsApi),
    core: kc.makeApiClient(CoreV1Api),
    coordination: kc.makeApiClient(CoordinationV1Api),
    events: kc.makeApiClient(EventsV1Api),
  };
}

export function apiVersionOf(kind: KindRef): string {
  return kind.group === "" ? kind.version : `${kind.group}/${kind.version}`;
}

/**
 * The REST path of a kind's collection (optionally in one namespace) or of one object and
 * one of its subresources: /api/v1/namespaces/ns/secrets/x, /apis/g/v/namespaces/ns/plural/x/status.
 */
export function resourcePath(kind: KindRef, namespace?: string, name?: string, subresource?: string): string {
  const root = kind.group === "" ? `/api/${kind.version}` : `/apis/${kind.group}/${kind.version}`;
  const ns = namespace ? `/namespaces/${encodeURIComponent(namespace)}` : "";
  const object = name ? `/${encodeURIComponent(name)}` : "";
  const sub = name && subresource ? `/${subresource}` : "";
  return `${root}${ns}/${kind.plural}${object}${sub}`;
}
