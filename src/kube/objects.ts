// Reading and patching one object of any kind: whole-status writes through /status, metadata
// (annotations, finalizers) with optimistic concurrency, and the error predicates for
// client-node 2.x (ApiException carries the HTTP status in .code).
import { ApiException, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import type { KubeObject, ObjectKey, ObjectMeta } from "../engine/types.ts";
import { resourcePath, type KindRef, type Kube } from "./client.ts";
import { kubeJson } from "./rest.ts";

/**
 * Request options that make a generated client's patch a JSON merge patch. client-node 2.x
 * otherwise sends the first content type the OpenAPI lists, application/json-patch+json.
 */
export const mergePatchOptions = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

/** How many times patchMetadata re-reads and retries after a 409 before giving up. */
export const METADATA_CONFLICT_RETRIES = 5;

export function statusCodeOf(err: unknown): number | undefined {
  if (err instanceof ApiException) return err.code;
  if (typeof err === "object" && err !== null) {
    const { code, statusCode } = err as { code?: unknown; statusCode?: unknown };
    if (typeof code === "number") return code;
    if (typeof statusCode === "number") return statusCode;
  }
  return undefined;
}

export const isNotFound = (err: unknown): boolean => statusCodeOf(err) === 404;
export const isConflict = (err: unknown): boolean => statusCodeOf(err) === 409;

/** The object, or undefined when it does not exist. */
export async function getObject(kube: Kube, kind: KindRef, key: ObjectKey): Promise<KubeObject | undefined> {
  try {
    if (kind.group === "") {
      return await kubeJson<KubeObject>(kube.kc, { path: resourcePath(kind, key.namespace, key.name) });
    }
    return (await kube.custom.getNamespacedCustomObject({
      group: kind.group,
      version: kind.version,
      namespace: key.namespace,
      plural: kind.plural,
      name: key.name,
    })) as KubeObject;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

async function mergePatch(kube: Kube, kind: KindRef, key: ObjectKey, body: object, subresource?: "status"): Promise<KubeObject> {
  if (kind.group === "") {
    return kubeJson<KubeObject>(kube.kc, {
      method: "PATCH",
      path: resourcePath(kind, key.namespace, key.name, subresource),
      body,
      contentType: PatchStrategy.MergePatch,
    });
  }
  const param = {
    group: kind.group,
    version: kind.version,
    namespace: key.namespace,
    plural: kind.plural,
    name: key.name,
    body,
  };
  const patched: unknown =
    subresource === "status"
      ? await kube.custom.patchNamespacedCustomObjectStatus(param, mergePatchOptions)
      : await kube.custom.patchNamespacedCustomObject(param, mergePatchOptions);
  return patched as KubeObject;
}

/**
 * Replace the object's whole status through the /status subresource. A merge patch replaces
 * lists (conditions) whole but merges maps, so every key the old status has and the new one
 * lacks is sent as null: the stored status ends up exactly `status`.
 */
export async function patchStatus(
  kube: Kube,
  kind: KindRef,
  obj: { metadata: ObjectMeta; status?: object },
  status: object,
): Promise<KubeObject> {
  const key = { namespace: obj.metadata.namespace, name: obj.metadata.name };
  const before = (obj.status ?? {}) as Record<string, unknown>;
  return mergePatch(kube, kind, key, { status: replacingPatch(before, status as Record<string, unknown>) }, "status");
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

/**
 * Change annotations, labels and/or one finalizer. Finalizers are a list, which a merge patch can only
 * replace whole, so a finalizer change reads the object fresh and sends the new list with the
 * read resourceVersion as a precondition; on 409 it reads again and retries (bounded).
 * Returns the patched object, the unchanged object when there was nothing to do, or
 * undefined when the object does not exist.
 */
export async function patchMetadata(
  kube: Kube,
  kind: KindRef,
  key: ObjectKey,
  change: MetadataChange,
): Promise<KubeObject | undefined> {
  const maps: Record<string, unknown> = {};
  if (change.annotations && Object.keys(change.annotations).length > 0) maps["annotations"] = change.annotations;
  if (change.labels && Object.keys(change.labels).length > 0) maps["labels"] = change.labels;
  const hasMaps = Object.keys(maps).length > 0;
  if (!change.finalizers?.add && !change.finalizers?.remove) {
    if (!hasMaps) return getObject(kube, kind, key);
    return notFoundAsUndefined(mergePatch(kube, kind, key, { metadata: maps }));
  }
  for (let attempt = 0; ; attempt++) {
    const current = await getObject(kube, kind, key);
    if (!current) return undefined;
    const finalizers = nextFinalizers(current.metadata.finalizers ?? [], change.finalizers);
    if (!finalizers && !hasMaps) return current;
    const metadata: Record<string, unknown> = { resourceVersion: current.metadata.resourceVersion, ...maps };
    if (finalizers) metadata["finalizers"] = finalizers;
    try {
      return await mergePatch(kube, kind, key, { metadata });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      if (!isConflict(err) || attempt >= METADATA_CONFLICT_RETRIES) throw err;
    }
  }
}

/** The new finalizer list, or undefined when the change is already in place. */
function nextFinalizers(current: string[], change: { add?: string; remove?: string }): string[] | undefined {
  let next = current;
  if (change.remove && next.includes(change.remove)) next = next.filter((f) => f !== change.remove);
  if (change.add && !next.includes(change.add)) next = [...next, change.add];
  return next === current ? undefined : next;
}

async function notFoundAsUndefined(promise: Promise<KubeObject>): Promise<KubeObject | undefined> {
  try {
    return await promise;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}
