// How keyward reaches the apiserver: its access (URL, TLS, credential — kubeconfig.ts) and the
// shared informers whose caches reads go to.
import { existsSync, readFileSync } from "node:fs";
import type { KubeObject, ObjectKey } from "./types.ts";
import { accessFrom, loadKubeAccess, type KubeAccess, type KubeSource, type LoadOptions } from "./kubeconfig.ts";

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
/** keyward's own Deployment and its pods: `keyward uninstall --stop-deployment` scales it to 0 and waits for them. */
export const deploymentKind: KindRef = { group: "apps", version: "v1", plural: "deployments", kind: "Deployment" };
export const podKind: KindRef = { group: "", version: "v1", plural: "pods", kind: "Pod" };
export const namespaceKind: KindRef = { group: "", version: "v1", plural: "namespaces", kind: "Namespace", clusterScoped: true };
export const crdKind: KindRef = {
  group: "apiextensions.k8s.io",
  version: "v1",
  plural: "customresourcedefinitions",
  kind: "CustomResourceDefinition",
  clusterScoped: true,
};

/** One kind's cache, as a reader sees it (an informer of informer.ts). */
export interface CachedKind {
  hasSynced(): boolean;
  get(key: ObjectKey): KubeObject | undefined;
  /** The cache holds a share of the kind only (sharding): a miss is not proof of absence. */
  partial?: boolean;
}

/**
 * What reads from the caches need of the informers: the cache of a kind (and label selector), if
 * one is kept. Declared here, where it is used, and met by informer.ts's InformerFactory, so this
 * module does not import informer.ts (which imports this one).
 */
export interface CacheReader {
  peek(kind: KindRef, labelSelector?: string): CachedKind | undefined;
}

export interface Kube {
  readonly access: KubeAccess;
  /**
   * The caches reads go to (readCached): the operator's shared informers, given when this Kube is
   * made (withCache) and never changed after. Absent (createKube), every read goes to the apiserver.
   */
  readonly cache?: CacheReader;
}

/** An explicit path, else $KUBECONFIG, else the in-cluster service account, else ~/.kube/config. */
/** The process's own namespace: its pod's, else "default" (a process outside a cluster). */
export function podNamespace(): string {
  const path = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";
  return existsSync(path) ? readFileSync(path, "utf8").trim() : "default";
}

export function loadKubeConfig(opts: LoadOptions = {}): KubeAccess {
  return loadKubeAccess(opts);
}

/** From keyward's own access, or from a kubeconfig another library loaded (tests use client-node's). */
export function createKube(source: KubeSource): Kube {
  return { access: accessFrom(source) };
}

/**
 * The same access, reading through `cache`: the operator makes its informers from a Kube without
 * one (they list and watch, they read no cache) and hands this one to everything that reads.
 */
export function withCache(kube: Kube, cache: CacheReader): Kube {
  return Object.freeze({ access: kube.access, cache });
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
