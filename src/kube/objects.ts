// Reading and patching one object of any kind: whole-status writes through /status, metadata
// (annotations, finalizers) with optimistic concurrency, and the predicates on the HTTP status of
// an apiserver error (rest.ts's KubeApiError; client-node's ApiException, which tests use, too).
import type { KubeObject, ObjectKey, ObjectMeta } from "./types.ts";
import { resourcePath, type KindRef, type Kube } from "./client.ts";
import { keyOf } from "./keys.ts";
import { kubeJson, MERGE_PATCH } from "./rest.ts";

/** How many times patchMetadata re-reads and retries after a 409 before giving up. */
export const METADATA_CONFLICT_RETRIES = 5;

/**
 * The HTTP status an error carries: `code` (KubeApiError's, and client-node's ApiException's), else
 * a numeric `statusCode`; undefined for anything else (a timeout, a transport failure).
 */
export function statusCodeOf(err: unknown): number | undefined {
  if (typeof err === "object" && err !== null) {
    const { code, statusCode } = err as { code?: unknown; statusCode?: unknown };
    if (typeof code === "number") return code;
    if (typeof statusCode === "number") return statusCode;
  }
  return undefined;
}

/** The apiserver answered 404: the object (or its namespace, or its kind) does not exist. */
export const isKubeNotFound = (err: unknown): boolean => statusCodeOf(err) === 404;
export const isConflict = (err: unknown): boolean => statusCodeOf(err) === 409;

/** The object, or undefined when it does not exist. */
export async function getObject(kube: Kube, kind: KindRef, key: ObjectKey): Promise<KubeObject | undefined> {
  try {
    return await kubeJson<KubeObject>(kube.access, { path: resourcePath(kind, key.namespace, key.name) });
  } catch (err) {
    if (isKubeNotFound(err)) return undefined;
    throw err;
  }
}

/**
 * The object from the informer cache when `kube` reads through caches (withCache) and keyward
 * runs one for its kind (and it has synced), else from the apiserver. `labelSelector` names the
 * informer of a narrowed watch: an object missing from that cache may just lack the label, so a
 * miss there reads the apiserver.
 */
export async function readCached(kube: Kube, kind: KindRef, key: ObjectKey, labelSelector?: string): Promise<KubeObject | undefined> {
  const informer = kube.cache?.peek(kind, labelSelector);
  if (informer?.hasSynced()) {
    const cached = informer.get(key);
    // A share of the kind (sharding) or a selection: a miss is confirmed at the apiserver. During a
    // handover a namespace's objects sit on two replicas for a moment.
    if (cached || (labelSelector === undefined && informer.partial !== true)) return cached;
  }
  return getObject(kube, kind, key);
}

function mergePatch(kube: Kube, kind: KindRef, key: ObjectKey, body: object, subresource?: "status"): Promise<KubeObject> {
  return kubeJson<KubeObject>(kube.access, {
    method: "PATCH",
    path: resourcePath(kind, key.namespace, key.name, subresource),
    body,
    contentType: MERGE_PATCH,
  });
}

/**
 * Replace the object's whole status through the /status subresource. A merge patch replaces
 * lists (conditions) whole but merges maps, so every key the old status has and the new one
 * lacks is sent as null: the stored status ends up exactly `status`. `exact`: only on `obj`'s
 * resourceVersion, never over a newer version someone else wrote.
 */
export async function patchStatus(
  kube: Kube,
  kind: KindRef,
  obj: { metadata: ObjectMeta; status?: object },
  status: object,
  opts: { exact?: boolean } = {},
): Promise<KubeObject> {
  const key = keyOf(obj);
  const before = (obj.status ?? {}) as Record<string, unknown>;
  const body: Record<string, unknown> = { status: replacingPatch(before, status as Record<string, unknown>) };
  // exact: only onto the version `obj` is (a 409 when the object changed since).
  if (opts.exact) body["metadata"] = { resourceVersion: obj.metadata.resourceVersion };
  return mergePatch(kube, kind, key, body, "status");
}

/** A merge patch that turns `from` into `to`: `to` itself, plus null for every key dropped. */
export function replacingPatch(from: Record<string, unknown>, to: Record<string, unknown>): Record<string, unknown> {
  const patch: Record<string, unknown> = {};
  for (const key of Object.keys(from)) {
    if (to[key] === undefined) patch[key] = null;
  }
  for (const [key, value] of Object.entries(to)) {
    if (value === undefined) continue;
    const before = from[key];
    patch[key] = isMap(value) && isMap(before) ? replacingPatch(before, value) : value;
  }
  return patch;
}

function isMap(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export interface MetadataChange {
  /** A null value removes the annotation. */
  annotations?: Record<string, string | null>;
  /** A null value removes the label. */
  labels?: Record<string, string | null>;
  finalizers?: { add?: string; remove?: string };
}

export interface MetadataPatchOptions {
  /** The object as the caller holds it (its cache copy): no read before the patch. */
  base?: KubeObject;
  /** Apply only to `base`'s resourceVersion: a 409 when the object changed since, not retried. */
  exact?: boolean;
}

/**
 * Change annotations, labels and/or one finalizer. Finalizers are a list, which a merge patch
 * can only replace whole, so a finalizer change sends the new list with the base's
 * resourceVersion as a precondition; on 409 it reads the object again and retries (bounded),
 * unless `exact`. Returns the patched object, the base when there was nothing to do, or
 * undefined when the object does not exist.
 */
export async function patchMetadata(
  kube: Kube,
  kind: KindRef,
  key: ObjectKey,
  change: MetadataChange,
  opts: MetadataPatchOptions = {},
): Promise<KubeObject | undefined> {
  let current = opts.base ?? (await getObject(kube, kind, key));
  for (let attempt = 0; ; attempt++) {
    if (!current) return undefined;
    const metadata = metadataPatch(current.metadata, change);
    if (!metadata) return current;
    if (opts.exact || metadata["finalizers"] !== undefined) metadata["resourceVersion"] = current.metadata.resourceVersion;
    try {
      return await mergePatch(kube, kind, key, { metadata });
    } catch (err) {
      if (isKubeNotFound(err)) return undefined;
      if (!isConflict(err) || opts.exact || attempt >= METADATA_CONFLICT_RETRIES) throw err;
    }
    current = await getObject(kube, kind, key);
  }
}

/** The metadata part of a merge patch making the change, or undefined when it is already in place. */
function metadataPatch(meta: ObjectMeta, change: MetadataChange): Record<string, unknown> | undefined {
  const patch: Record<string, unknown> = {};
  const annotations = changedEntries(meta.annotations, change.annotations);
  const labels = changedEntries(meta.labels, change.labels);
  if (annotations) patch["annotations"] = annotations;
  if (labels) patch["labels"] = labels;
  const finalizers = change.finalizers ? nextFinalizers(meta.finalizers ?? [], change.finalizers) : undefined;
  if (finalizers) patch["finalizers"] = finalizers;
  return Object.keys(patch).length === 0 ? undefined : patch;
}

/** The entries of `change` that differ from `current` (null removes), or undefined when none do. */
function changedEntries(
  current: Record<string, string> | undefined,
  change: Record<string, string | null> | undefined,
): Record<string, string | null> | undefined {
  const out: Record<string, string | null> = {};
  for (const [k, v] of Object.entries(change ?? {})) {
    if (v === null ? current?.[k] !== undefined : current?.[k] !== v) out[k] = v;
  }
  return Object.keys(out).length === 0 ? undefined : out;
}

/** The new finalizer list, or undefined when the change is already in place. */
function nextFinalizers(current: string[], change: { add?: string; remove?: string }): string[] | undefined {
  let next = current;
  if (change.remove && next.includes(change.remove)) next = next.filter((f) => f !== change.remove);
  if (change.add && !next.includes(change.add)) next = [...next, change.add];
  return next === current ? undefined : next;
}
