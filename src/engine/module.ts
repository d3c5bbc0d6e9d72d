// The contract between the engine and a kind (crossplane-runtime's ExternalClient, in small): a
// kind supplies parseSpec / connect / observe and, as it can, create / update / act / delete; the
// engine (managed.ts) runs the pass around them with a ManagedContext.
import type { Logger } from "../log.ts";
import type { Kube, KindRef } from "../kube/client.ts";
import type { ReasonTable } from "./kind.ts";
import type { KubeObject, ObjectKey, ObjectMeta } from "./types.ts";

/**
 * The pass's context with a newer status (and, after a create, createPending false): built as a
 * literal, so V8 keeps it a fast object, and its `log` getter reads the original's only when asked
 * (the pass's logger is a pino child made on first use; a spread would make it for every create).
 */
export function derivedContext<Spec, Status, Conn>(
  c: ManagedContext<Spec, Status, Conn>,
  fields: { status: Partial<Status>; createPending?: boolean },
): ManagedContext<Spec, Status, Conn> {
  return {
    key: c.key,
    obj: c.obj,
    spec: c.spec,
    status: fields.status,
    conn: c.conn,
    kube: c.kube,
    get log() {
      return c.log;
    },
    createPending: fields.createPending ?? c.createPending,
    createCopied: c.createCopied,
    idFromMetadata: c.idFromMetadata,
    observeOnly: c.observeOnly,
    event: c.event,
    peers: c.peers,
    saveStatus: c.saveStatus,
    requeueAfter: c.requeueAfter,
    hold: c.hold,
    recording: c.recording,
  };
}
export interface Readiness {
  ready: boolean;
  reason: string;
  message: string;
}

/** Status fields to record: an absent or undefined field keeps its value; null removes it. */
export type StatusPatch<S> = { [K in keyof S]?: S[K] | null };

export interface Observation<Status, External = unknown> {
  /** The external object exists (or, for a read-only kind, was found). */
  exists: boolean;
  /** The external object matches the spec; ignored when it does not exist. */
  upToDate: boolean;
  /** Fields to record in status (merged over the previous status; a null value removes the field). */
  status: StatusPatch<Status>;
  /** Names of the fields that differ, for the Updated event and logs. */
  diff?: string[];
  /** Readiness when the object exists; default: ready. */
  readiness?: Readiness;
  /** When the object does not exist: whether create may run (default: the kind has create). */
  canCreate?: boolean;
  /** Why the object is absent and cannot be created (Ready=False with this reason). */
  absent?: { reason: string; message: string };
  /**
   * Being deleted: the external object is gone though keyward did not delete it (say, with its
   * project). Recorded as a Warning Event and Ready=False before the resource is released, so
   * the release is never taken for the cleanup having run.
   */
  vanished?: { reason: string; message: string };
  /** Come back sooner than the resync, e.g. while a job at the service is running. */
  requeueAfterMs?: number;
  /** The external object as observe (or create) read it, for update in the same pass. */
  external?: External;
}

export type DeleteResult = { done: true } | { done: false; reason: string; message: string; requeueAfterMs: number };

export interface ManagedContext<Spec, Status, Conn> {
  key: ObjectKey;
  obj: KubeObject<unknown, Partial<Status>>;
  spec: Spec;
  /** The kind-specific part of the current status. */
  status: Partial<Status>;
  conn: Conn;
  kube: Kube;
  log: Logger;
  /** A create was recorded as pending and never confirmed: an object found by its natural key is ours. */
  createPending: boolean;
  /**
   * A kind whose natural key names its external object (guardCreate.naturalKey): the object
   * carries another object's create-started mark and no id, a copy (a backup restored) of one
   * that created, or was creating, the object of its natural key. That object, found by the key,
   * is this resource's to claim, as one named by keyward.dev/external-id would be (create-rule.ts
   * copiedCreate); the claim rule still decides.
   */
  createCopied: boolean;
  /**
   * The external id came from the keyward.dev/external-id annotation, not from this object's
   * status (a restore, an exported manifest, an id written by hand): observe must check that the
   * object it names matches the resource's natural key before treating it as its own, and throw
   * externalIdMismatch (or, while deleting, leave it alone) when it does not.
   */
  idFromMetadata: boolean;
  observeOnly: boolean;
  event: (type: "Normal" | "Warning", reason: string, message: string) => void;
  /** The other objects of this kind keyward knows (all watched namespaces). */
  peers: () => KubeObject[];
  /**
   * Merge into status and write it now, before a call whose effect must be found again after a
   * crash (a "pending" mark, like the create-pending annotation).
   */
  saveStatus: (status: StatusPatch<Status>) => Promise<void>;
  /** Look at the object again within `ms` (the earliest asked in a pass wins over the resync). */
  requeueAfter: (ms: number) => void;
  /**
   * The claim rule's lock for a kind whose external object is not an id the service assigns (a
   * member of a project): takes the lock on `id` for this resource, or names its live holder
   * (holder.ts). Held, it is released with this resource's finalizer.
   */
  hold: (id: string) => Promise<ObjectKey | undefined>;
  /**
   * The resources of `ref` that record the external id `id` in their status field `idField`, or
   * announce it (the claim rule's fresh read, holder.ts claimants), in every watched namespace,
   * fresh from the apiserver; none without the claim rule's locks.
   */
  recording: (ref: KindRef, idField: string, id: string) => Promise<KubeObject[]>;
}

export interface ManagedModule<Spec, Status, Conn, External = unknown> {
  ref: KindRef;
  /** The kind's own reasons beyond the engine's: its progress reasons are told as Normal Events. */
  reasons?: ReasonTable;
  /**
   * zod parse of spec; a thrown error becomes Synced=False InvalidSpec. Run once per object UID
   * and generation (spec-cache.ts): it must depend on the spec alone, and its result is shared by
   * the passes of that generation (never mutated).
   */
  parseSpec(raw: unknown): Spec;
  /** Deleting this object calls the service, so it needs a finalizer. */
  needsFinalizer(spec: Spec): boolean;
  /**
   * The service assigns the id on create: a create-started mark must precede the call, and
   * `idField` is the status field the id goes into (its presence confirms the create).
   * `naturalKey`: a key the service keeps unique that names the object and that a pass derives from
   * the resource alone (a project's slug): the mark's write announces it (holder.ts), which spares
   * the create the id's own announcement and the lock read.
   */
  guardCreate: false | { idField: keyof Status & string; naturalKey?: NaturalKey<Spec, Status> };
  /**
   * The kind takes the claim rule's lock on what is not an external id (ManagedContext.hold): its
   * deletions release locks as a guarded kind's do. A guarded kind takes them anyway.
   */
  holds?: boolean;
  /**
   * Status fields also kept in annotations (annotation → field), beside the guarded id, which is
   * always kept in keyward.dev/external-id: what must outlive the cluster (a handled action value).
   */
  durable?: Readonly<Record<string, (keyof Status & string) | { field: keyof Status & string; json: true }>>;
  /**
   * The scope the external object lives in (a project's id): the status field `field`, recorded in
   * `annotation` by the write that adds the finalizer (and by the status writes after, once it
   * differs), so that a deletion that can no longer resolve the scope still finds it. Never read
   * back into status: an annotation holds no claim.
   */
  scope?: { annotation: string; field: keyof Status & string };
  /** `signal` aborts when keyward is stopping and the reconcile has outrun its grace. */
  connect(input: { kube: Kube; namespace: string; spec: Spec; log: Logger; signal: AbortSignal }): Promise<Conn>;
  observe(c: ManagedContext<Spec, Status, Conn>): Promise<Observation<Status, External>>;
  /**
   * Creates the external object; the answer is the observation (no second pass): exists, its
   * status and readiness, and whether fields create cannot set still differ (update then runs
   * in the same pass).
   */
  create?: (c: ManagedContext<Spec, Status, Conn>, scope?: string) => Promise<Observation<Status, External>>;
  /**
   * With guardCreate, for an object whose natural key lives in a parent (a sync's name in its
   * project): the parent's id, resolved before the create-started mark, recorded in it
   * (create-rule.ts createScope) and handed to `create`, so a lookup while the create is pending
   * asks where it was sent even once nothing else can tell (the Project resource is gone).
   */
  createScope?: (c: ManagedContext<Spec, Status, Conn>) => Promise<string>;
  update?: (c: ManagedContext<Spec, Status, Conn>, obs: Observation<Status, External>) => Promise<StatusPatch<Status>>;
  /** Actions requested on the object (annotations), run once the object exists and is up to date. */
  act?: (c: ManagedContext<Spec, Status, Conn>, obs: Observation<Status, External>) => Promise<StatusPatch<Status>>;
  /** Called for an object being deleted whose external object exists. Absent: Retain. */
  delete?: (c: ManagedContext<Spec, Status, Conn>, obs: Observation<Status, External>) => Promise<DeleteResult>;
  /** spec.managementPolicy === "ObserveOnly" */
  observeOnly?: (spec: Spec) => boolean;
  /** The object is gone from Kubernetes: drop what the kind keeps per object (metric series, caches). */
  forget?: (key: ObjectKey) => void;
}

/** A natural key that names a kind's external object (guardCreate.naturalKey). */
export interface NaturalKey<Spec, Status> {
  /** The key the external object should have, from the spec and the resource's name. */
  of(spec: Spec, meta: Pick<ObjectMeta, "name">): string;
  /** The status field holding the key the external object has, as observed. */
  field: keyof Status & string;
}

/** The kind takes the claim rule's locks: guarded (its adoptions) or declaring `holds`. */
export function takesLocks(module: { guardCreate: false | object; holds?: boolean }): boolean {
  return module.guardCreate !== false || module.holds === true;
}
