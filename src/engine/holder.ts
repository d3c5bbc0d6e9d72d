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
//   apiserver, the resources recording the id (its status field, one of the CRD's selectableFields)
//   or announcing it (the external-id-digest label), and steps back if one does: a creator that
//   announced first, or a holder this replica does not cache (sharding);
// - a creator announces its new id (the label and keyward.dev/external-id, in the write that would
//   record it anyway) before it acts, then reads the lock: an adopter that took it in the moment
//   between the service's answer and the announcement holds the object, and the creator steps back.
// Whichever of the two writes came first, the other's read sees it: two resources never both act.
// Both may step back (each saw the other's write); the next pass settles it.
//
// A kind whose natural key is the object's own (a project's slug: the service keeps it unique,
// and a pass derives it from the object alone) announces it earlier instead: the create-started
// mark's write carries the key's digest label (keyward.dev/natural-key-digest), before the call.
// An adopter learns the id only from the service, so only after the create committed, so after
// that write: its fresh read always sees the announcement, and it steps back (`creating`). The
// creator then needs neither the id's announcement nor the lock read: its status write records
// the id (three apiserver writes per create: mark, status, Event), provided it lands while its
// mark still counts (KEY_CONFIRM_MS; after that it announces the id and reads the lock as above).
// Two resources with the same key may both be creating, each unsure whether its attempt landed:
// each then steps back for the other's announcement, so a pending creator that steps back
// withdraws its own (the label goes): the next pass, the lock decides. Being deleted, a resource
// that steps back for a creating one waits for it instead of letting go (else both could go,
// and the object with neither).
//
// The id goes into metadata too (keyward.dev/external-id and its digest label) whenever the
// announced key no longer names the object alone: an adoption, a rename at the service or in the
// spec (before the update is sent), a stale mark. While it does, the object's natural key
// (spec and name, which backups keep) and its create-started mark say which object it is.
//
// A lock lives as long as its holder, and no longer. It goes (release, releaseGone, sweep):
//   by its holder    the finalizer's last step; a pass that took it and then found its resource
//                    deleted (before the finalizer was on); a claim that stepped back
//   on the delete    the resource's delete event: every lock naming its UID, once the apiserver
//                    confirms the resource gone (no finalizer ran: deletionPolicy Retain,
//                    ObserveOnly, an id it no longer names)
//   by the sweep     Stale locks the two above missed (a crash between a lock and its finalizer,
//                    deletions while keyward was away): each lock read, then the kind's UIDs
//                    listed, then deleted at the version read if its holder's UID is not among them
// Each delete is conditional on the version read: a lock taken over meanwhile stays.
import { createHash } from "node:crypto";
import { resourcePath, type KindRef, type Kube } from "../kube/client.ts";
import { getObject, isConflict, isKubeNotFound } from "../kube/objects.ts";
import { keyOf } from "../kube/keys.ts";
import { errorSummary, kubeJson } from "../kube/rest.ts";
import type { Logger } from "../log.ts";
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

/** The label a create announces its natural key by (a digest: label values are short), for a kind whose key is the object's own. */
export const NATURAL_KEY_LABEL = "keyward.dev/natural-key-digest";

export function keyDigest(key: string): string {
  return createHash("sha256").update(`natural-key ${key}`).digest("hex").slice(0, 40);
}

/**
 * How long after its mark a creator that announced its natural key may still record its answer
 * without announcing the id: its status write must land while the mark counts (ANNOUNCEMENT_MS),
 * and may take the apiserver's request timeout (30 s) and clocks apart by some seconds.
 */
export const KEY_CONFIRM_MS = ANNOUNCEMENT_MS - 2 * 60_000;

/**
 * A create-started mark of `o`'s own (its UID) written less than `windowMs` before `now`, with no
 * id recorded (`id`: what status records, or undefined to ask of the mark alone).
 */
function startedWithin(o: KubeObject, id: unknown, now: number, windowMs: number): boolean {
  const annotations = o.metadata.annotations ?? {};
  if (createState(annotations, id, o.metadata.uid) !== "Started") return false;
  const at = Date.parse(annotations[ANNOTATION_CREATE_STARTED]?.split(" ")[0] ?? "");
  return Number.isFinite(at) && now - at < windowMs;
}

/**
 * `o` announced the natural key `key` (its label) with a create-started mark of its own written
 * less than `windowMs` before `now`, and records no id (one gone at the service is cleared before
 * a create).
 */
function announcesKey(o: KubeObject, idField: string, key: string, now: number, windowMs: number): boolean {
  return o.metadata.labels?.[NATURAL_KEY_LABEL] === keyDigest(key) && startedWithin(o, o.status?.[idField], now, windowMs);
}

/**
 * A creator that announced `key` (its label) with a mark that still lets it record its answer on
 * that announcement alone (KEY_CONFIRM_MS).
 */
export function keyConfirms(o: KubeObject, idField: string, key: string, now: number): boolean {
  return announcesKey(o, idField, key, now, KEY_CONFIRM_MS);
}

/**
 * The labels, and their values, by which the claim rule's fresh read finds the resources announcing
 * `id` (or, a kind with one, the natural key `key`): HolderLocks.claimants lists by them, and by
 * the status field that records the id (claimFieldSelector).
 */
export function claimLabels(id: string, key: string | undefined): [label: string, value: string][] {
  return [[EXTERNAL_ID_LABEL, idDigest(id)], ...(key === undefined ? [] : [[NATURAL_KEY_LABEL, keyDigest(key)] as [string, string]])];
}

/**
 * The field selector listing the resources whose status records `id` (`status.<idField>`, one of
 * the kind's CRD selectableFields: src/crd). It finds a holder wherever it is reconciled, by the
 * record itself: a replica's cache holds only its share, and a holder created under its natural
 * key carries no id in metadata.
 */
export function claimFieldSelector(idField: string, id: string): string {
  // The apiserver's field selector syntax: `\`, `,` and `=` in a value are escaped with `\`.
  return `status.${idField}=${id.replace(/[\\,=]/g, (c) => `\\${c}`)}`;
}

/** Whether the claim rule's fresh read for `id` (or the natural key `key`) finds `o`: by its status record or one of claimLabels. */
export function foundByClaimRead(
  o: Pick<KubeObject, "metadata" | "status">,
  claim: { idField: string; id: string; key?: string | undefined },
): boolean {
  if (o.status?.[claim.idField] === claim.id) return true;
  return claimLabels(claim.id, claim.key).some(([label, value]) => o.metadata.labels?.[label] === value);
}

/**
 * What an adopter that took the lock on `id` makes of another resource `o`, as the apiserver has it
 * now: `holder` if o's status records the id, or o announced the id (label and annotation) with
 * a create-started mark of its own younger than ANNOUNCEMENT_MS; `creating` if o announced the
 * natural key `key` the object has (its label) with such a mark: a create of o's may be the one
 * that committed. Undefined: o is no rival.
 */
export function rivalry(o: KubeObject, claim: { idField: string; id: string; key?: string | undefined }, now: number): Rivalry | undefined {
  const { idField, id, key } = claim;
  if (o.status?.[idField] === id) return "holder";
  const labels = o.metadata.labels ?? {};
  const announcedId = o.metadata.annotations?.[ANNOTATION_EXTERNAL_ID] === id && labels[EXTERNAL_ID_LABEL] === idDigest(id);
  if (announcedId && startedWithin(o, undefined, now, ANNOUNCEMENT_MS)) return "holder";
  if (key !== undefined && announcesKey(o, idField, key, now, ANNOUNCEMENT_MS)) return "creating";
  return undefined;
}

export type Rivalry = "holder" | "creating";

/**
 * Whether the natural key `o` announced (its label) names its external object alone: its own
 * create announced it, and the object still has that key (`observed`) as the spec wants it
 * (`desired`). Otherwise the id goes into metadata, announced as a kind without a key announces it.
 */
export function keyAnnounced(o: Pick<KubeObject, "metadata">, observed: string | undefined, desired: string): boolean {
  const label = o.metadata.labels?.[NATURAL_KEY_LABEL];
  return label !== undefined && observed === desired && label === keyDigest(desired);
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

/** The label naming the UID of a lock's holder, so every lock a resource holds is found by one list. */
export const HOLDER_UID_LABEL = "keyward.dev/holder-uid";

/**
 * The sweep's judgement (pure: the model test drives it): of `locks`, read before `live` (the UIDs
 * of the kind's resources, listed after the locks), those whose holder is gone. A UID is never
 * reused, so a holder missing from a later list was deleted before it; one in a namespace the list
 * did not cover (`listed`) is not judged.
 */
export function staleLocks<L extends { holder?: string | undefined }>(
  locks: readonly L[],
  live: ReadonlySet<string>,
  listed: (namespace: string) => boolean,
): L[] {
  return locks.filter((l) => {
    const key = parseIdentity(l.holder);
    if (!key) return true;
    return listed(key.namespace) && !live.has(key.uid);
  });
}

export interface HolderLocks {
  /** Takes the lock on `id` for `self` (or finds it already taken by `self`), or names its live holder. */
  acquire(ref: KindRef, id: string, self: KubeObject): Promise<{ held: true } | { held: false; holder: ObjectKey }>;
  /** The lock's state for `self` as the apiserver has it now. */
  state(ref: KindRef, id: string, self: KubeObject): Promise<LockState>;
  /** Lets go of the lock on `id` when `self` holds it (a claim stepping back, its finalizer, a pass finding it deleted). */
  release(ref: KindRef, id: string, self: KubeObject): Promise<void>;
  /**
   * Lets go of every lock naming one of `gone` (their UIDs), each once the apiserver confirms its
   * resource gone: the delete events' step, one list for them all. Returns how many.
   */
  releaseGone(ref: KindRef, gone: readonly KubeObject[]): Promise<number>;
  /** Deletes every lock of the served kinds whose holder is gone (staleLocks). Returns how many; `signal` stops it between requests. */
  sweep(kinds: readonly KindRef[], signal?: AbortSignal): Promise<number>;
  /**
   * The resources of the kind the claim rule's fresh read finds for `id` (foundByClaimRead): those
   * whose status records it, or labelled with its digest or the natural key `key`'s, fresh from the
   * apiserver (every watched namespace).
   */
  claimants(ref: KindRef, claim: { idField: string; id: string; key?: string | undefined }): Promise<KubeObject[]>;
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

/** The lock Leases in keyward's namespace: each delete conditional on the version read. */
function leaseStore(kube: Kube, namespace: string) {
  const path = (name?: string): string => resourcePath(leaseKind, namespace, name);
  const remove = (lease: Lease): Promise<boolean> =>
    kubeJson(kube.access, {
      method: "DELETE",
      path: path(lease.metadata.name),
      body: { apiVersion: "v1", kind: "DeleteOptions", preconditions: { resourceVersion: lease.metadata.resourceVersion } },
    }).then(
      () => true,
      // Gone already, or taken over since it was read (another holder now): left as it is.
      (err: unknown) => (isKubeNotFound(err) || isConflict(err) ? false : Promise.reject(err as Error)),
    );
  return {
    read: (name: string): Promise<Lease | undefined> =>
      kubeJson<Lease>(kube.access, { path: path(name) }).catch((err: unknown) =>
        isKubeNotFound(err) ? undefined : Promise.reject(err as Error),
      ),
    /** Creates `lease`; false when one of its name exists (409). */
    create: (lease: Lease): Promise<boolean> =>
      kubeJson(kube.access, { method: "POST", path: path(), body: { apiVersion: "coordination.k8s.io/v1", kind: "Lease", ...lease } }).then(
        () => true,
        (err: unknown) => (isConflict(err) ? false : Promise.reject(err as Error)),
      ),
    /** Replaces a Lease at the version its metadata carries (a 409 when another wrote it since). */
    replace: (lease: Lease): Promise<unknown> =>
      kubeJson(kube.access, {
        method: "PUT",
        path: path(lease.metadata.name),
        body: { apiVersion: "coordination.k8s.io/v1", kind: "Lease", ...lease },
      }),
    list: async (labelSelector: string, signal?: AbortSignal): Promise<Lease[]> =>
      (await listAll(kube, path(), { labelSelector, ...(signal ? { signal } : {}) })).items,
    async removeAll(leases: readonly Lease[], signal?: AbortSignal): Promise<number> {
      let removed = 0;
      for (const l of leases) {
        signal?.throwIfAborted();
        if (await remove(l)) removed++;
      }
      return removed;
    },
  };
}

/** The locks as Leases in `namespace` (keyward's own); `watched`: the namespaces keyward serves (none: all). */
export function holderLocks(kube: Kube, namespace: string, watched: readonly string[]): HolderLocks {
  const store = leaseStore(kube, namespace);
  const scopes = watched.length === 0 ? [undefined] : watched;
  const body = (ref: KindRef, id: string, self: KubeObject, metadata?: Lease["metadata"]): Lease => ({
    metadata: {
      ...metadata,
      name: lockName(ref, id),
      labels: {
        ...metadata?.labels,
        [HOLDS_LABEL]: ref.kind.toLowerCase(),
        [HOLDER_UID_LABEL]: self.metadata.uid ?? "",
        "app.kubernetes.io/managed-by": "keyward",
      },
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
  return {
    async acquire(ref, id, self) {
      if (await store.create(body(ref, id, self))) return { held: true };
      const lease = await store.read(lockName(ref, id));
      const state = await stateOf(ref, lease, self);
      if (state.state === "Held") return { held: true };
      if (state.state === "HeldBy") return { held: false, holder: state.holder };
      // Free (deleted since the 409) or Stale: taken on the version read; a 409 means another took
      // it first, and the caller's pass is retried to judge again.
      if (!lease) return (await store.create(body(ref, id, self))) ? { held: true } : Promise.reject(conflict());
      await store.replace(body(ref, id, self, lease.metadata));
      return { held: true };
    },
    state: async (ref, id, self) => stateOf(ref, await store.read(lockName(ref, id)), self),
    async claimants(ref, { idField, id, key }) {
      const selectors = [
        ...claimLabels(id, key).map(([label, value]) => ({ labelSelector: `${label}=${value}` })),
        { fieldSelector: claimFieldSelector(idField, id) },
      ];
      const lists = await Promise.all(selectors.flatMap((selector) => scopes.map((ns) => listAll(kube, resourcePath(ref, ns), selector))));
      // One resource may be found by more than one selector: listed once.
      const seen = new Set<string>();
      return lists.flatMap((l) => l.items).filter((o) => !seen.has(o.metadata.uid ?? "") && seen.add(o.metadata.uid ?? ""));
    },
    async release(ref, id, self) {
      const lease = await store.read(lockName(ref, id));
      if (lease?.spec?.holderIdentity === holderIdentity(self)) await store.removeAll([lease]);
    },
    async releaseGone(ref, gone) {
      const withUid = gone.filter((o) => o.metadata.uid);
      if (withUid.length === 0) return 0;
      const uids = [...new Set(withUid.map((o) => o.metadata.uid))].join(",");
      const held = await store.list(`${HOLDS_LABEL}=${ref.kind.toLowerCase()},${HOLDER_UID_LABEL} in (${uids})`);
      let removed = 0;
      for (const obj of withUid) {
        const named = held.filter((l) => l.spec?.holderIdentity === holderIdentity(obj));
        if (named.length === 0) continue;
        // The delete event may be the resource leaving this replica's share, not the apiserver.
        if ((await getObject(kube, ref, keyOf(obj)))?.metadata.uid === obj.metadata.uid) continue;
        removed += await store.removeAll(named);
      }
      return removed;
    },
    sweep: (served, signal) => sweepStale(kube, store, scopes, served, signal),
  };
}

/** holderLocks' sweep: the locks first, then each kind's UIDs, so a holder missing from the later list was gone before it. */
async function sweepStale(
  kube: Kube,
  store: ReturnType<typeof leaseStore>,
  scopes: readonly (string | undefined)[],
  served: readonly KindRef[],
  signal: AbortSignal | undefined,
): Promise<number> {
  const leases = await store.list(HOLDS_LABEL, signal);
  const covered = (ns: string): boolean => scopes.includes(undefined) || scopes.includes(ns);
  let swept = 0;
  // One kind's failure (a list refused, a continue token expired) leaves the others swept.
  const failures: unknown[] = [];
  for (const ref of served) {
    const kind = ref.kind.toLowerCase();
    const locks = leases
      .filter((l) => l.metadata.labels?.[HOLDS_LABEL] === kind)
      .map((lease) => ({ lease, holder: lease.spec?.holderIdentity }));
    if (locks.length === 0) continue;
    try {
      const live = new Set<string>();
      for (const ns of scopes) {
        const listed = await listAll(kube, resourcePath(ref, ns), {
          metadataOnly: true,
          pageSize: 1000,
          transform: uidOnly,
          ...(signal ? { signal } : {}),
        });
        for (const o of listed.items) if (o.metadata.uid) live.add(o.metadata.uid);
      }
      swept += await store.removeAll(
        staleLocks(locks, live, covered).map((l) => l.lease),
        signal,
      );
    } catch (err) {
      if (signal?.aborted) throw err;
      failures.push(err);
    }
  }
  if (failures.length > 0)
    throw new AggregateError(
      failures,
      `the sweep of ${String(failures.length)} kind(s) failed after ${String(swept)} lock(s) were deleted`,
    );
  return swept;
}

function uidOnly(o: KubeObject): KubeObject {
  return { apiVersion: o.apiVersion, kind: o.kind, metadata: { name: o.metadata.name, uid: o.metadata.uid } } as KubeObject;
}

function conflict(): Error {
  return Object.assign(new Error("the holder lock was taken by another meanwhile"), { statusCode: 409 });
}

/**
 * A resource's delete event: the locks naming it go (releaseGone), whether or not a finalizer of
 * keyward's ran. Behind the events, in batches of the deletions seen meanwhile (a namespace deleted
 * at once is many: one list per batch, not per resource): a failure is logged and the sweep takes
 * what is left.
 */
export function releaseOnDelete(locks: HolderLocks, ref: KindRef, log: Logger): (gone: KubeObject) => void {
  const pending: KubeObject[] = [];
  let draining = false;
  const drain = async (): Promise<void> => {
    while (pending.length > 0) {
      const batch = pending.splice(0, RELEASE_BATCH);
      try {
        const released = await locks.releaseGone(ref, batch);
        if (released > 0) log.info({ kind: ref.kind, deleted: batch.length, released }, "released the holder locks of deleted resources");
      } catch (err) {
        log.warn(
          { kind: ref.kind, deleted: batch.length, err: errorSummary(err) },
          "could not release the holder locks of deleted resources; the sweep will",
        );
      }
    }
    // In the same turn as the last check: a deletion seen after it starts a drain of its own.
    draining = false;
  };
  return (gone) => {
    pending.push(gone);
    if (draining) return;
    draining = true;
    void drain();
  };
}

/** The most deleted resources one list of their locks names (a label selector of their UIDs: about 4 KB). */
export const RELEASE_BATCH = 100;

/**
 * The sweep's schedule: once as keyward starts (what went while it was away), then every
 * `intervalMs`, while `leads` (with sharding, the leader alone sweeps). A failed sweep is logged and
 * the next one tries again.
 */
export function sweepLocksEvery(o: {
  locks: HolderLocks;
  kinds: readonly KindRef[];
  intervalMs: number;
  leads: () => boolean;
  log: Logger;
}): { stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  // A sweep under way when keyward stops sends nothing more (a leader stepping down sweeps no longer).
  const stopping = new AbortController();
  // Not leading yet: looked at again soon, so a new leader sweeps without waiting a whole interval.
  const notLeading = Math.min(o.intervalMs, 15_000);
  const tick = async (): Promise<number> => {
    if (!o.leads()) return notLeading;
    const swept = await o.locks.sweep(o.kinds, stopping.signal);
    if (swept > 0) o.log.info({ swept }, "deleted holder locks whose resources are gone");
    return o.intervalMs;
  };
  const arm = (delayMs: number): void => {
    if (stopping.signal.aborted) return;
    timer = setTimeout(() => {
      void tick().then(arm, (err: unknown) => {
        if (stopping.signal.aborted) return;
        o.log.warn({ err: errorSummary(err) }, "could not sweep the holder locks; trying again later");
        arm(o.intervalMs);
      });
    }, delayMs);
    timer.unref();
  };
  arm(0);
  return {
    stop() {
      stopping.abort();
      clearTimeout(timer);
    },
  };
}
