// The claim rule: one holder per external object. Only the holder of an external id acts on it
// (updates, actions, deletion); any other resource of the kind naming it is ExternalIdClaimed and
// changes nothing. Who holds, in this order:
//
//   state      what is seen                                          who may act
//   Held       this resource's status records the id                  this resource
//   HeldBy     another live resource holds the id's lock, or another  that resource
//              resource's status records it (the oldest, if several)
//   Free       neither                                                the first to take the lock
//   Stale      the lock names a resource that is gone (another UID)   the first to take it over
//
// A status record is a holding only because it was earned: by the resource's own create (a fresh
// id no one else can name) or by taking the lock. Naming an id in metadata alone (an export, a
// restore, an annotation written by hand, a paused resource) holds nothing against anyone.
//
// Taking a holding is decided by writes, never by reading caches:
// - an adopter (any id but its own create's answer) takes a Lease per (kind, id) in keyward's own
//   namespace, created atomically (the apiserver answers 409 to the second), taken over from a gone
//   holder only at the version read (a 409 again if two try); then it lists, fresh from the
//   apiserver, the resources announcing the id (the external-id-digest label) and steps back if one
//   does: a creator that announced first;
// - a creator announces its new id (the label and keyward.dev/external-id, in the write that would
//   record it anyway) before it acts, then reads the lock: an adopter that took it in the moment
//   between the service's answer and the announcement holds the object, and the creator steps back.
// Whichever of the two writes came first, the other's read sees it: two resources never both act.
// Both may step back (each saw the other's write); the next pass settles it. The lock is released
// when its holder is finalized.
import { createHash } from "node:crypto";
import { resourcePath, type KindRef, type Kube } from "../kube/client.ts";
import { getObject, isConflict, isKubeNotFound } from "../kube/objects.ts";
import { kubeJson } from "../kube/rest.ts";
import { leaseKind } from "../kube/lease.ts";
import { listAll } from "../kube/watch.ts";
import { ANNOTATION_CREATE_STARTED, createState } from "./create-rule.ts";
import type { KubeObject, ObjectKey } from "./types.ts";

/** The label announcing which external object a resource holds or is recording: a digest of its id (label values are short). */
export const EXTERNAL_ID_LABEL = "keyward.dev/external-id-digest";

export function idDigest(id: string): string {
  return createHash("sha256").update(id).digest("hex").slice(0, 40);
}

/**
 * How long a creator's announcement without a status record counts against an adopter: the
 * create call and the record after it take at most the longest request timeout (300 s) and a few
 * writes; an announcement older than this is a resource that never recorded (a copy, a hand edit).
 */
export const ANNOUNCEMENT_MS = 10 * 60_000;

/**
 * Whether `o` holds `id` or is recording it: its status records it, or it announced it (label and
 * annotation) with a create-started mark of its own written less than ANNOUNCEMENT_MS before `now`.
 */
export function announces(o: KubeObject, idField: string, id: string, now: number): boolean {
  if (o.status?.[idField] === id) return true;
  const annotations = o.metadata.annotations ?? {};
  if (annotations[ANNOTATION_EXTERNAL_ID] !== id || o.metadata.labels?.[EXTERNAL_ID_LABEL] !== idDigest(id)) return false;
  if (createState(annotations, undefined, o.metadata.uid) !== "Started") return false;
  const at = Date.parse(annotations[ANNOTATION_CREATE_STARTED]?.split(" ")[0] ?? "");
  return Number.isFinite(at) && now - at < ANNOUNCEMENT_MS;
}

/**
 * Which external object a resource is (crossplane's external-name): the id of a kind whose id the
 * service assigns, kept in metadata because backups, `kubectl get -o yaml` and exports keep
 * metadata and drop status. Mirrored from status by keyward; read back when status lacks it, and
 * then only a name to check, never a holding.
 */
export const ANNOTATION_EXTERNAL_ID = "keyward.dev/external-id";

export type LockState = { state: "Free" } | { state: "Held" } | { state: "HeldBy"; holder: ObjectKey } | { state: "Stale" };

/** How a lock names its holder: namespace/name/uid. */
export function holderIdentity(o: Pick<KubeObject, "metadata">): string {
  return `${o.metadata.namespace ?? ""}/${o.metadata.name}/${o.metadata.uid ?? ""}`;
}

function parseIdentity(identity: string | undefined): (ObjectKey & { uid: string }) | undefined {
  const parts = identity?.split("/");
  if (parts?.length !== 3) return undefined;
  const [namespace, name, uid] = parts as [string, string, string];
  return name && uid ? { namespace, name, uid } : undefined;
}

/**
 * The lock's state for `self`: who it names, and whether that one is alive (`live`: the resource
 * at that key still has that UID). Pure: the model test drives it.
 */
export function lockState(holder: string | undefined, self: Pick<KubeObject, "metadata">, live: boolean): LockState {
  if (holder === undefined) return { state: "Free" };
  if (holder === holderIdentity(self)) return { state: "Held" };
  const key = parseIdentity(holder);
  if (!key || !live) return { state: "Stale" };
  return { state: "HeldBy", holder: { namespace: key.namespace, name: key.name } };
}

/**
 * The resource holding `id` by its status record, other than `self`: the oldest (creation time,
 * then UID) of those recording it. An id named in metadata alone counts for nothing.
 */
export function externalIdHolder(self: KubeObject, candidates: readonly KubeObject[], idField: string, id: string): KubeObject | undefined {
  const order = (o: KubeObject): string => `${o.metadata.creationTimestamp ?? ""} ${o.metadata.uid ?? ""}`;
  const holders = candidates.filter((o) => o.metadata.uid !== self.metadata.uid && o.status?.[idField] === id);
  return holders.sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0))[0];
}

/**
 * externalIdHolder over this replica's objects (`own`, whole) and, with sharding, every replica's
 * objects that name the id (`everywhere`, metadata only: claims.ts). One found in metadata only is
 * read whole (`read`) before it counts — its status is not in metadata — so the rule is judged on it
 * exactly as on a cached one: `counts` (not ObserveOnly), gone or replaced (another UID) left out.
 */
export async function claimHolder(
  self: KubeObject,
  own: readonly KubeObject[],
  everywhere: readonly KubeObject[],
  claim: { idField: string; id: string },
  opts: { counts: (o: KubeObject) => boolean; read: (o: KubeObject) => Promise<KubeObject | undefined> },
): Promise<KubeObject | undefined> {
  const naming = everywhere.filter(
    (o) =>
      o.metadata.annotations?.[ANNOTATION_EXTERNAL_ID] === claim.id &&
      o.metadata.uid !== self.metadata.uid &&
      !own.some((c) => c.metadata.uid === o.metadata.uid),
  );
  const read: KubeObject[] = [];
  for (const o of naming) {
    const whole = await opts.read(o);
    if (whole && whole.metadata.uid === o.metadata.uid && opts.counts(whole)) read.push(whole);
  }
  return externalIdHolder(self, [...own.filter(opts.counts), ...read], claim.idField, claim.id);
}

export interface HolderLocks {
  /** Takes the lock on `id` for `self` (or finds it already taken by `self`), or names its live holder. */
  acquire(ref: KindRef, id: string, self: KubeObject): Promise<{ held: true } | { held: false; holder: ObjectKey }>;
  /** The lock's state for `self` as the apiserver has it now. */
  state(ref: KindRef, id: string, self: KubeObject): Promise<LockState>;
  /** Lets go of the lock on `id` when `self` holds it (its finalizer). */
  release(ref: KindRef, id: string, self: KubeObject): Promise<void>;
  /** The resources of the kind labelled with `id`'s digest, fresh from the apiserver (every watched namespace). */
  labelled(ref: KindRef, id: string): Promise<KubeObject[]>;
}

interface Lease {
  metadata: {
    name: string;
    namespace?: string;
    resourceVersion?: string;
    uid?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: { holderIdentity?: string };
}

/** The lock's Lease name: the kind and a digest of the id (ids are the service's, of any shape). */
export function lockName(ref: KindRef, id: string): string {
  return `keyward-holds-${ref.kind.toLowerCase()}-${createHash("sha256").update(id).digest("hex").slice(0, 32)}`;
}

export const HOLDS_LABEL = "keyward.dev/holds";

/** The locks as Leases in `namespace` (keyward's own); `watched`: the namespaces keyward serves (none: all). */
export function holderLocks(kube: Kube, namespace: string, watched: readonly string[]): HolderLocks {
  const path = (name?: string): string => resourcePath(leaseKind, namespace, name);
  const read = (name: string): Promise<Lease | undefined> =>
    kubeJson<Lease>(kube.access, { path: path(name) }).catch((err: unknown) =>
      isKubeNotFound(err) ? undefined : Promise.reject(err as Error),
    );
  const body = (ref: KindRef, id: string, self: KubeObject, metadata?: Lease["metadata"]): Lease => ({
    metadata: {
      ...metadata,
      name: lockName(ref, id),
      labels: { ...metadata?.labels, [HOLDS_LABEL]: ref.kind.toLowerCase(), "app.kubernetes.io/managed-by": "keyward" },
      annotations: { ...metadata?.annotations, [ANNOTATION_EXTERNAL_ID]: id },
    },
    spec: { holderIdentity: holderIdentity(self) },
  });
  const live = async (ref: KindRef, identity: string | undefined): Promise<boolean> => {
    const key = parseIdentity(identity);
    if (!key) return false;
    const o = await getObject(kube, ref, { namespace: key.namespace, name: key.name });
    return o?.metadata.uid === key.uid;
  };
  const stateOf = async (ref: KindRef, lease: Lease | undefined, self: KubeObject): Promise<LockState> => {
    const holder = lease?.spec?.holderIdentity;
    const state = lockState(holder, self, true);
    return state.state === "HeldBy" && !(await live(ref, holder)) ? { state: "Stale" } : state;
  };
  const create = async (ref: KindRef, id: string, self: KubeObject): Promise<boolean> => {
    try {
      await kubeJson(kube.access, {
        method: "POST",
        path: path(),
        body: { apiVersion: "coordination.k8s.io/v1", kind: "Lease", ...body(ref, id, self) },
      });
      return true;
    } catch (err) {
      if (isConflict(err)) return false;
      throw err;
    }
  };
  return {
    async acquire(ref, id, self) {
      if (await create(ref, id, self)) return { held: true };
      const lease = await read(lockName(ref, id));
      const state = await stateOf(ref, lease, self);
      if (state.state === "Held") return { held: true };
      if (state.state === "HeldBy") return { held: false, holder: state.holder };
      // Free (deleted since the 409) or Stale: taken on the version read; a 409 means another took
      // it first, and the caller's pass is retried to judge again.
      if (!lease) return (await create(ref, id, self)) ? { held: true } : Promise.reject(conflict());
      await kubeJson(kube.access, {
        method: "PUT",
        path: path(lease.metadata.name),
        body: { apiVersion: "coordination.k8s.io/v1", kind: "Lease", ...body(ref, id, self, lease.metadata) },
      });
      return { held: true };
    },
    state: async (ref, id, self) => stateOf(ref, await read(lockName(ref, id)), self),
    async labelled(ref, id) {
      const labelSelector = `${EXTERNAL_ID_LABEL}=${idDigest(id)}`;
      const scopes = watched.length === 0 ? [undefined] : watched;
      const lists = await Promise.all(scopes.map((ns) => listAll(kube, resourcePath(ref, ns), { labelSelector })));
      return lists.flatMap((l) => l.items);
    },
    async release(ref, id, self) {
      const lease = await read(lockName(ref, id));
      if (lease?.spec?.holderIdentity !== holderIdentity(self)) return;
      await kubeJson(kube.access, {
        method: "DELETE",
        path: path(lease.metadata.name),
        body: { apiVersion: "v1", kind: "DeleteOptions", preconditions: { resourceVersion: lease.metadata.resourceVersion } },
      }).catch((err: unknown) => (isKubeNotFound(err) || isConflict(err) ? undefined : Promise.reject(err as Error)));
    },
  };
}

function conflict(): Error {
  return Object.assign(new Error("the holder lock was taken by another meanwhile"), { statusCode: 409 });
}
