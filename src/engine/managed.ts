// The generic managed-resource reconciler (crossplane-runtime's managed.Reconciler, in small):
// read the object, resolve its connection, observe the service, then create, update or delete
// the difference, and write what was seen into status. Kinds supply only observe / create /
// update / delete; everything about finalizers, create-pending guards, conditions, events and
// requeue intent lives here, once.
import type { Logger } from "../log.ts";
import type { Kube, KindRef } from "../kube/client.ts";
import { getObject, isConflict, isKubeNotFound, patchMetadata, type MetadataChange } from "../kube/objects.ts";
import { errorSummary } from "../kube/rest.ts";
import { keyOf } from "../kube/keys.ts";
import { slim, type SharedInformer } from "../kube/informer.ts";
import type { EventRecorder } from "../kube/events.ts";
import type { Classification } from "../lib/classified.ts";
import { statusEqual } from "./conditions.ts";
import { writeStatus, type ConditionsToSet } from "./status.ts";
import { progressReasons } from "./kind.ts";
import { engineReasons } from "./reasons.ts";
import { createWrittenObjects, type WrittenObjects } from "./written.ts";
import { createSpecCache, type SpecCache } from "./spec-cache.ts";
import { kindGauge, type Metrics } from "./metrics.ts";
import {
  ANNOTATION_EXTERNAL_ID,
  claimHolder,
  EXTERNAL_ID_LABEL,
  externalIdHolder,
  foundByClaimRead,
  idDigest,
  keyAnnounced,
  keyConfirms,
  keyDigest,
  NATURAL_KEY_LABEL,
  releaseOnDelete,
  rivalry,
  type HolderLocks,
} from "./holder.ts";
import {
  ANNOTATION_CREATE_STARTED,
  LEGACY_CREATE_PENDING,
  LEGACY_CREATE_SUCCEEDED,
  copiedCreate,
  createStartedMark,
  createState,
  markAfterFailure,
  releaseWhileStarted,
} from "./create-rule.ts";
import { ANNOTATION_PAUSED, FINALIZER, withDurableFields, durableAnnotations, type DurableField, type DurableFields } from "./meta.ts";
import { classifyError, mayHaveLanded, specErrorMessage, throttleDelay } from "./errors.ts";
import {
  derivedContext,
  takesLocks,
  type ManagedContext,
  type ManagedModule,
  type Observation,
  type Readiness,
  type StatusPatch,
} from "./module.ts";
import {
  done,
  gone,
  requeueAfter,
  retryable,
  terminal,
  throttled,
  actsOn,
  type KubeObject,
  type ObjectKey,
  type Ownership,
  type Outcome,
  type ReconcileFn,
} from "./types.ts";

function outcomeFor(c: Classification): Outcome {
  const err = new Error(`${c.reason}: ${c.message}`);
  return c.retryable ? retryable(err, c.retryAfterMs) : terminal(err);
}

export interface ManagedDeps {
  kube: Kube;
  events: EventRecorder;
  log: Logger;
  now?: () => Date;
  /** The objects of the same kind keyward knows (its informer cache), for kinds that must not fight over one external object. */
  peers?: () => KubeObject[];
  /**
   * Sharding, a kind with guardCreate: the claim rule's view of every replica's objects of the
   * kind (claims.ts), and who waits for whom. Absent: the rule sees `peers` or the cache only.
   */
  claims?: {
    /** The objects of the kind in the watched namespaces whose keyward.dev/external-id is `id`, metadata only (claimMetadata). */
    naming(id: string): KubeObject[];
    /** `key` is held back by `holder`: a change of the holder (its deletion) wakes it. */
    wait(key: ObjectKey, holder: ObjectKey): void;
    /** `key` waits for no one. */
    release(key: ObjectKey): void;
  };
  /**
   * The kind's informer: objects are read from its cache (with keyward's own writes layered
   * over it until the cache catches up). Absent: every pass reads the apiserver.
   */
  cache?: SharedInformer;
  /** For keyward_resource_ready{kind,namespace,name}. */
  metrics?: Metrics;
  /** The claim rule's locks (holder.ts): absent, a claim is judged on the caches alone. */
  locks?: HolderLocks;
  /** Which objects a pass acts on, and how it writes them (types.ts Ownership); absent: every object. */
  ownership?: Ownership;
}

/** What a pass needs beyond the reconciler's deps: the kind's progress reasons and the status fields it keeps in metadata. */
type RunDeps = ManagedDeps & { progress: ReadonlySet<string>; durable: DurableFields; specs: SpecCache<unknown> };

/** The kind's status fields kept in annotations: its guarded id (keyward.dev/external-id) and its own. */
function durableFieldsOf(module: ManagedModule<unknown, unknown, unknown>): DurableFields {
  const fields: Record<string, DurableField> = { ...module.durable };
  if (module.guardCreate) fields[ANNOTATION_EXTERNAL_ID] = module.guardCreate.idField;
  return fields;
}

/** 1 while an object's Ready condition is True, else 0; one series per object, gone with it. */
function readyGauge(metrics: Metrics | undefined) {
  if (!metrics) return undefined;
  return kindGauge(metrics, {
    name: "keyward_resource_ready",
    help: "Whether a keyward resource is Ready (1) or not (0), per object",
    labelNames: ["kind", "namespace", "name"],
  });
}

/** Builds the ReconcileFn a controller runs for one kind. */
export function managedReconciler<Spec, Status, Conn, External>(
  module: ManagedModule<Spec, Status, Conn, External>,
  deps: ManagedDeps,
): ReconcileFn {
  // Specs are parsed once per object generation, not per pass.
  const specs = createSpecCache((raw) => module.parseSpec(raw));
  // The kind's progress reasons, worked out once per reconciler, not per pass.
  const runDeps: RunDeps = {
    ...deps,
    progress: progressReasons(engineReasons, module.reasons ?? {}),
    durable: durableFieldsOf(module as ManagedModule<unknown, unknown, unknown>),
    specs,
  };
  const written = createWrittenObjects();
  const ready = readyGauge(deps.metrics);
  const releaseLocks = takesLocks(module) && deps.locks ? releaseOnDelete(deps.locks, module.ref, deps.log) : () => undefined;
  deps.cache?.subscribe((type, obj) => {
    if (type !== "delete") return written.seen(obj);
    written.forget(obj.metadata);
    releaseLocks(obj);
  });
  const forget = (key: ObjectKey): void => {
    deps.claims?.release(key);
    module.forget?.(key);
    written.forget(key);
    specs.forget(key);
    ready?.remove({ kind: module.ref.kind, namespace: key.namespace, name: key.name });
  };
  const reconcile: ReconcileFn = async (key, signal) => {
    const obj = (await readObject(deps, module.ref, key, written)) as KubeObject<unknown, Partial<Status>> | undefined;
    const series = { kind: module.ref.kind, namespace: key.namespace, name: key.name };
    // Gone, or not this process's as read: nothing is called or written for it here.
    if (!obj || !actsOn(deps.ownership, obj as KubeObject)) {
      forget(key);
      return gone();
    }
    const run = new Run(module, runDeps, key, obj, signal);
    try {
      return await run.reconcile();
    } finally {
      if (!run.heldBack) deps.claims?.release(key);
      // What a pass leaves (a copy for the next pass, the ready series) is kept only while the
      // object is in the cache: one that left it mid-pass (deleted, or gone from this process's
      // share) is not brought back. A delete event still to come drops the copy, and the
      // pass it queues (after this one) forgets the rest. The copy is kept as the cache keeps
      // objects (slim): the same shape whichever copy a pass reads.
      const cached = deps.cache?.get(key);
      if (!deps.cache || cached) {
        if (run.current !== obj) written.remember(slim(run.current as KubeObject, module.ref), cached);
        const condition = run.current.status?.conditions?.find((c) => c.type === "Ready");
        if (condition) ready?.set(series, condition.status === "True" ? 1 : 0);
      }
    }
  };
  reconcile.forget = forget;
  return reconcile;
}

async function readObject(deps: ManagedDeps, ref: KindRef, key: ObjectKey, written: WrittenObjects): Promise<KubeObject | undefined> {
  if (!deps.cache) return getObject(deps.kube, ref, key);
  const latest = written.latest(key, deps.cache.get(key));
  return latest === "stale" ? getObject(deps.kube, ref, key) : latest;
}

// One pass over one object. A small class keeps the per-pass state (the object, the pending
// status) together; it is created and dropped within a single reconcile.
class Run<Spec, Status, Conn, External> {
  private readonly module: ManagedModule<Spec, Status, Conn, External>;
  private readonly deps: RunDeps;
  private readonly key: ObjectKey;
  private obj: KubeObject<unknown, Partial<Status>>;
  /** Set once the pass records an action's own Event, which then also tells of the Ready change. */
  private actionEvent = false;
  private logger: Logger | undefined;
  private kindStatus: Partial<Status>;
  private readonly signal: AbortSignal;
  private readonly progress: ReadonlySet<string>;
  private requestedRequeueMs: number | undefined;
  /** The guarded id came from keyward.dev/external-id, not from status: see ManagedContext.idFromMetadata. */
  private readonly idFromMetadata: boolean;
  /** That id until observe finds the object it names as this resource's: never mirrored into status before. */
  private unconfirmedId: string | undefined;
  /** Another resource holds the external id this pass found (ExternalIdClaimed). */
  heldBack = false;
  /** The id whose lock this resource holds, as this pass found (holder.ts). */
  private lockedId: string | undefined;
  /** The id whose lock this pass took (acquired, not found held). */
  private lockTaken: string | undefined;
  /** A write of this pass found the object gone from the apiserver. */
  private deleted = false;
  /** The spec as this pass parsed it (undefined before, or when it does not parse). */
  private spec: Spec | undefined;

  constructor(
    module: ManagedModule<Spec, Status, Conn, External>,
    deps: RunDeps,
    key: ObjectKey,
    obj: KubeObject<unknown, Partial<Status>>,
    signal: AbortSignal,
  ) {
    this.signal = signal;
    this.progress = deps.progress;
    this.module = module;
    this.deps = deps;
    this.key = key;
    this.obj = obj;
    const { status, restored } = withDurableFields(deps.durable, obj.metadata.annotations, kindFields(obj.status ?? {}));
    this.kindStatus = status as Partial<Status>;
    const guard = module.guardCreate;
    this.idFromMetadata = guard !== false && restored.includes(guard.idField);
    if (this.idFromMetadata && guard) this.unconfirmedId = status[guard.idField] as string;
  }

  /**
   * The pass's logger, made when first used: most passes log nothing (a pino child per pass was a
   * few percent of keyward's CPU in steady state, bench/RESULTS.md).
   */
  private get log(): Logger {
    return (this.logger ??= this.deps.log.child({ kind: this.module.ref.kind, namespace: this.key.namespace, name: this.key.name }));
  }

  /** The object as the last write of this pass left it. */
  get current(): KubeObject<unknown, Partial<Status>> {
    return this.obj;
  }

  async reconcile(): Promise<Outcome> {
    try {
      return await this.pass();
    } finally {
      // Deleted under this pass (no finalizer held it): a lock the pass took goes with it, for the
      // delete event's release may have run before the lock was taken (holder.ts).
      if (this.deleted && this.lockTaken !== undefined) await this.releaseTaken(this.lockTaken);
    }
  }

  private async releaseTaken(id: string): Promise<void> {
    await this.deps.locks?.release(this.module.ref, id, this.obj as KubeObject).catch((err: unknown) => {
      this.log.warn({ err: errorSummary(err) }, "could not release the holder lock of a deleted resource; the sweep will");
    });
  }

  private async pass(): Promise<Outcome> {
    const meta = this.obj.metadata;
    const deleting = meta.deletionTimestamp !== undefined;
    const hasFinalizer = (meta.finalizers ?? []).includes(FINALIZER);
    if (deleting && !hasFinalizer) return done();
    if (meta.annotations?.[ANNOTATION_PAUSED] === "true") {
      // Nothing was observed: an id from metadata stays unchecked, so it stays out of status.
      this.forgetUnconfirmedId();
      await this.writeStatus({
        synced: {
          type: "Synced",
          status: "False",
          reason: "ReconcilePaused",
          message: `reconciling is paused by the ${ANNOTATION_PAUSED} annotation`,
        },
      });
      return done();
    }
    let spec: Spec;
    try {
      spec = this.deps.specs.parse(this.obj) as Spec;
      this.spec = spec;
    } catch (err) {
      return this.fail({ reason: "InvalidSpec", message: specErrorMessage(err), retryable: false });
    }
    try {
      const holder = this.observesOnly(spec) ? undefined : await this.externalIdHolder();
      // Being deleted, an id another resource holds is not this one's to clean up: it is dropped.
      if (holder) this.forgetUnconfirmedId();
      if (holder && !deleting) return await this.fail(claimedBy(holder, this.module.ref.kind));
      return deleting ? await this.finalize(spec) : await this.sync(spec, hasFinalizer);
    } catch (err) {
      // Someone wrote the object since it was read: the newer version's event brings the key
      // back (and the queue's backoff spaces out repeats); nothing to report. The 409 itself is
      // the outcome's error, so the controller logs it as the lost race it is.
      if (isConflict(err)) return retryable(err as Error);
      const turn = throttleDelay(err);
      if (turn !== undefined) return this.deferred(turn);
      return this.fail(classifyError(err));
    }
  }

  /**
   * Observe found an external object (its id in the observation). Held already — this resource's
   * status records the id, earned by its own create or a claim — it goes on. Otherwise (adopted by
   * its slug or name, spec.syncId, an id from metadata, a pending create found by its natural key)
   * it becomes this resource's only by the claim rule (holder.ts): no other resource of the kind
   * records it, and this one takes its lock. Returns the rival when it is another resource: its
   * holder, or one whose create of the natural key may be what committed (`creating`).
   * A create's own answer never comes here: its id is new.
   */
  private async claim(obs: Observation<Status, External>, spec: Spec): Promise<Rival | undefined> {
    const guard = this.module.guardCreate;
    if (!guard || this.observesOnly(spec)) return undefined;
    const id = obs.exists ? obs.status[guard.idField] : undefined;
    if (typeof id !== "string" || id === "") return undefined;
    if ((this.obj.status as Record<string, unknown> | undefined)?.[guard.idField] === id) return undefined;
    const recorded = await this.holderOf(guard.idField, id);
    if (recorded) return { key: keyOf(recorded) };
    const locks = this.deps.locks;
    if (!locks) return undefined;
    const key = this.naturalKey(spec);
    if (this.deps.claims && key !== undefined) {
      // A holder recorded in status alone (a Project keyward created) is in no cache of another
      // replica's objects, and the claim view shows only keyward.dev/external-id: read fresh first,
      // and a holder found is waited for without taking its lock, which would otherwise name this
      // resource to every other adopter of the id until it stepped back.
      const holder = await this.announcedElsewhere(locks, guard.idField, id, key);
      if (holder && !holder.creating) return { key: this.heldBy(holder.key) };
    }
    const lock = await locks.acquire(this.module.ref, id, this.obj as KubeObject);
    if (!lock.held) return { key: this.heldBy(lock.holder) };
    this.lockedId = this.lockTaken = id;
    // A creator that announced the id (or the natural key) before the lock was taken holds it, or
    // may (holder.ts): read fresh from the apiserver, not from a cache that may lag its
    // announcement. The lock goes back.
    const rival = await this.announcedElsewhere(locks, guard.idField, id, key);
    if (!rival) return undefined;
    await locks.release(this.module.ref, id, this.obj as KubeObject);
    this.lockedId = this.lockTaken = undefined;
    if (!rival.creating) return { key: this.heldBy(rival.key) };
    // Two pending creates of one key would each wait for the other: this one withdraws its own
    // announcement, and the next pass the lock decides.
    if (this.obj.metadata.labels?.[NATURAL_KEY_LABEL] !== undefined) await this.patchMeta({ labels: { [NATURAL_KEY_LABEL]: null } });
    return rival;
  }

  /** Another resource of the kind announcing `id` or the natural key `key` now (holder.ts rivalry), as the apiserver has them. */
  private async announcedElsewhere(locks: HolderLocks, idField: string, id: string, key: string | undefined): Promise<Rival | undefined> {
    const now = this.now().getTime();
    const rivals = (await locks.claimants(this.module.ref, { idField, id, key }))
      .filter(
        (o) =>
          o.metadata.uid !== this.obj.metadata.uid &&
          o.metadata.annotations?.[ANNOTATION_PAUSED] !== "true" &&
          !this.observesOnly(o.spec as Spec),
      )
      .map((o) => ({ key: keyOf(o), rivalry: rivalry(o, { idField, id, key }, now) }));
    const holder = rivals.find((r) => r.rivalry === "holder");
    if (holder) return { key: holder.key };
    const creating = rivals.find((r) => r.rivalry === "creating");
    return creating ? { key: creating.key, creating: true } : undefined;
  }

  /** The natural key the external object should have (guardCreate.naturalKey), for a kind that has one. */
  private naturalKey(spec: Spec | undefined): string | undefined {
    const key = this.module.guardCreate ? this.module.guardCreate.naturalKey : undefined;
    return key && spec !== undefined ? key.of(spec, this.obj.metadata) : undefined;
  }

  /**
   * A creator's half of the claim rule (holder.ts): its new id announced (the metadata its status
   * write would record first anyway), then the lock read. An adopter that took the lock in the
   * moment between the service's answer and the announcement holds the object: this resource
   * records nothing of it and steps back, its create still pending (the next pass finds the object
   * by its natural key and the claim rule keeps it with its holder). A kind with a natural key
   * announced it with the mark, before the call: while that mark counts (KEY_CONFIRM_MS) every
   * adopter steps back for it, and the status write records the id with no write or read more.
   */
  private async announceCreated(id: unknown, spec: Spec): Promise<ObjectKey | undefined> {
    const guard = this.module.guardCreate;
    const locks = this.deps.locks;
    if (!guard || !locks || typeof id !== "string" || id === "") return undefined;
    const key = this.naturalKey(spec);
    if (key !== undefined && keyConfirms(this.obj as KubeObject, guard.idField, key, this.now().getTime())) return undefined;
    await this.recordDurable(true);
    const lock = await locks.state(this.module.ref, id, this.obj as KubeObject);
    if (lock.state !== "HeldBy") return undefined;
    await this.patchMeta({ annotations: { [ANNOTATION_EXTERNAL_ID]: null }, labels: { [EXTERNAL_ID_LABEL]: null } });
    this.mergeStatus({ [guard.idField]: null } as StatusPatch<Status>);
    return this.heldBy(lock.holder);
  }

  /** ManagedContext.hold: the lock on `id`, taken for this resource or held by another. */
  private async holdLock(id: string): Promise<ObjectKey | undefined> {
    // Its deletions would not release what it takes.
    if (!takesLocks(this.module)) throw new Error(`${this.module.ref.kind} takes locks but does not declare holds`);
    const locks = this.deps.locks;
    if (!locks) return undefined;
    const lock = await locks.acquire(this.module.ref, id, this.obj as KubeObject);
    if (!lock.held) return this.heldBy(lock.holder);
    this.lockedId = this.lockTaken = id;
    return undefined;
  }

  /** `holder` holds what this resource names: its change wakes this one (claims.ts). */
  private heldBy(holder: ObjectKey): ObjectKey {
    this.heldBack = true;
    this.deps.claims?.wait(this.key, holder);
    return holder;
  }

  /**
   * Who holds `id` by its status record among the other resources of the kind (externalIdHolder):
   * this replica's (peers, else the cache) and, with sharding, the other replicas' (claimHolder).
   * An ObserveOnly one only reads, so it neither holds an id against a resource that manages it nor
   * is held back by one. A holder found is waited for: its change wakes this object (claims.ts).
   */
  private async holderOf(idField: string, id: string): Promise<KubeObject | undefined> {
    const own = this.deps.peers?.() ?? this.deps.cache?.list() ?? [];
    const counts = (o: KubeObject): boolean => !this.observesOnly(o.spec as Spec);
    const self = this.obj as KubeObject;
    const claims = this.deps.claims;
    const holder = claims
      ? await claimHolder(
          self,
          own,
          claims.naming(id),
          { idField, id },
          { counts, read: (o) => getObject(this.deps.kube, this.module.ref, keyOf(o)) },
        )
      : externalIdHolder(self, own.filter(counts), idField, id);
    if (holder) this.heldBy(keyOf(holder));
    return holder;
  }

  private observesOnly(spec: Spec | undefined): boolean {
    return spec !== undefined && (this.module.observeOnly?.(spec) ?? false);
  }

  /**
   * Another resource of the kind recording the external id this object read from metadata: checked
   * before observe, so no call is made for an id another holds (the lock comes after observe has
   * confirmed the id with this resource's own credential: see claim).
   */
  private async externalIdHolder(): Promise<ObjectKey | undefined> {
    const guard = this.module.guardCreate;
    if (this.unconfirmedId === undefined || !guard) return undefined;
    const holder = await this.holderOf(guard.idField, this.unconfirmedId);
    return holder ? keyOf(holder) : undefined;
  }

  /** After observe: it found the object the id from metadata names as this resource's (it checked the natural key), or the id goes. */
  private confirmId(obs: Observation<Status, External>): void {
    const guard = this.module.guardCreate;
    if (guard && obs.exists && obs.status[guard.idField] === this.unconfirmedId) this.unconfirmedId = undefined;
    else this.forgetUnconfirmedId();
  }

  /**
   * An id from metadata that observe did not confirm (the object is gone, is another's, or the
   * pass failed first) leaves the pass's status: written there, it would pass for keyward's own
   * record on the next pass and skip the check.
   */
  private forgetUnconfirmedId(): void {
    const guard = this.module.guardCreate;
    if (guard && this.unconfirmedId !== undefined && this.kindStatus[guard.idField] === this.unconfirmedId) {
      this.mergeStatus({ [guard.idField]: null } as StatusPatch<Status>);
    }
    this.unconfirmedId = undefined;
  }

  private async context(spec: Spec): Promise<ManagedContext<Spec, Status, Conn>> {
    const log = (): Logger => this.log;
    const conn = await this.module.connect({
      kube: this.deps.kube,
      namespace: this.key.namespace,
      spec,
      get log() {
        return log();
      },
      signal: this.signal,
    });
    const annotations = this.obj.metadata.annotations ?? {};
    return {
      key: this.key,
      obj: this.obj,
      spec,
      status: this.kindStatus,
      conn,
      kube: this.deps.kube,
      get log() {
        return log();
      },
      createPending:
        this.module.guardCreate !== false &&
        createState(annotations, this.kindStatus[this.module.guardCreate.idField], this.obj.metadata.uid) === "Started",
      createCopied:
        this.module.guardCreate !== false &&
        this.module.guardCreate.naturalKey !== undefined &&
        copiedCreate(annotations, this.kindStatus[this.module.guardCreate.idField], this.obj.metadata.uid),
      idFromMetadata: this.idFromMetadata,
      observeOnly: this.module.observeOnly?.(spec) ?? false,
      event: (type, reason, message) => this.deps.events.record(this.obj, type, reason, message),
      peers: () => (this.deps.peers?.() ?? []).filter((o) => o.metadata.uid !== this.obj.metadata.uid),
      saveStatus: async (status) => {
        this.mergeStatus(status);
        await this.writeStatus({});
      },
      requeueAfter: (ms) => {
        this.requestedRequeueMs = Math.min(ms, this.requestedRequeueMs ?? ms);
      },
      hold: (id) => this.holdLock(id),
      recording: (ref, idField, id) => this.deps.locks?.claimants(ref, { idField, id }) ?? Promise.resolve([]),
    };
  }

  private async sync(spec: Spec, hasFinalizer: boolean): Promise<Outcome> {
    const needsFinalizer = this.needsFinalizer(spec);
    if (!needsFinalizer && hasFinalizer) await this.patchMeta({ finalizers: { remove: FINALIZER } });
    const c = await this.context(spec);
    const observed = await this.module.observe(c);
    const rival = await this.claim(observed, spec);
    if (rival) {
      this.forgetUnconfirmedId();
      return this.fail(rival.creating ? creatingElsewhere(rival.key, this.module.ref.kind) : claimedBy(rival.key, this.module.ref.kind));
    }
    this.mergeStatus(observed.status);
    this.confirmId(observed);
    // A create adds the finalizer in the same patch as its pending mark.
    if (!observed.exists) return this.whenAbsent(c, observed, needsFinalizer && !hasFinalizer);
    // The scope the cleanup will need rides in the finalizer's write, before any call of this pass.
    // An object gone by then (deleted before it held the finalizer) is not acted for: no update,
    // no action on an external object it found.
    if (needsFinalizer && !hasFinalizer) {
      const scope = this.module.scope ? this.kindStatus[this.module.scope.field] : undefined;
      if (!(await this.patchMeta({ finalizers: { add: FINALIZER }, annotations: this.scopeRecord(scope, true) }))) return gone();
    }
    return this.reconcileExisting(c, observed);
  }

  private async reconcileExisting(c: ManagedContext<Spec, Status, Conn>, observed: Observation<Status, External>): Promise<Outcome> {
    let obs = observed;
    if (c.createPending) {
      // The create landed before a crash and observe found it by its natural key: it is ours.
      // The status write below records its id, which confirms the create.
      c.event("Normal", "Created", "found the external object created before a restart; recorded it");
    } else if (c.idFromMetadata) {
      c.event("Normal", "ExternalIdFound", `found the external object ${ANNOTATION_EXTERNAL_ID} names; recorded it in status`);
    } else if (c.createCopied) {
      c.event(
        "Normal",
        "ExternalIdFound",
        "found the external object its natural key names, created by the resource this one was restored from; recorded it in status",
      );
    }
    if (!obs.upToDate && !c.observeOnly && this.module.update) {
      // An update may change the natural key: the id goes into metadata first (holder.ts).
      if (this.module.guardCreate && this.module.guardCreate.naturalKey) await this.recordDurable();
      const updated = await this.module.update(c, obs);
      this.mergeStatus(updated);
      c.event("Normal", "Updated", `updated ${obs.diff?.length ? obs.diff.join(", ") : "the external object"} to match the spec`);
      obs = { ...obs, upToDate: true };
    }
    if (!c.observeOnly && this.module.act) this.mergeStatus(await this.module.act(derivedContext(c, { status: this.kindStatus }), obs));
    const readiness = obs.readiness ?? AVAILABLE;
    await this.writeStatus({
      ready: { type: "Ready", status: readiness.ready ? "True" : "False", reason: readiness.reason, message: readiness.message },
      synced: syncedCondition(obs, c.observeOnly),
    });
    const after = [obs.requeueAfterMs, this.requestedRequeueMs].filter((ms) => ms !== undefined);
    return after.length === 0 ? done() : requeueAfter(Math.min(...after));
  }

  private async whenAbsent(
    c: ManagedContext<Spec, Status, Conn>,
    obs: Observation<Status, External>,
    addFinalizer: boolean,
  ): Promise<Outcome> {
    const canCreate = !c.observeOnly && this.module.create !== undefined && (obs.canCreate ?? true);
    if (!canCreate) {
      const absent = obs.absent ?? { reason: "NotFound", message: "the external object does not exist" };
      await this.writeStatus({
        ready: { type: "Ready", status: "False", reason: absent.reason, message: absent.message },
        synced: {
          type: "Synced",
          status: c.observeOnly ? "True" : "False",
          reason: c.observeOnly ? "ObserveOnly" : absent.reason,
          message: absent.message,
        },
      });
      return obs.requeueAfterMs === undefined ? done() : requeueAfter(obs.requeueAfterMs);
    }
    return this.create(c, addFinalizer);
  }

  private async create(c: ManagedContext<Spec, Status, Conn>, addFinalizer: boolean): Promise<Outcome> {
    const create = this.module.create;
    if (!create) return done();
    const guard = this.module.guardCreate;
    const scope = guard && this.module.createScope ? await this.module.createScope(c) : undefined;
    const key = this.naturalKey(c.spec);
    const mark: MetadataChange = {
      ...(guard ? this.createStarted(scope, key, addFinalizer) : {}),
      ...(addFinalizer ? { finalizers: { add: FINALIZER } } : {}),
    };
    // The object read may be gone already: deleted before this pass added the finalizer (the
    // apiserver let it go at once) while the pass read a copy or waited on observe. Nothing is
    // created for it: a create now would be left at the service with no resource to delete it.
    if ((guard || addFinalizer) && !(await this.patchMeta(mark, true))) return gone();
    // An id left in status by an external object that is gone would hide the mark after a crash:
    // it goes now, after the mark's precondition held (a write only on this rare path).
    if (guard && this.kindStatus[guard.idField] !== undefined) {
      this.mergeStatus({ [guard.idField]: null } as StatusPatch<Status>);
      await this.writeStatus({});
    }
    let created: Observation<Status, External>;
    try {
      created = await create(c, scope);
    } catch (err) {
      // The mark goes only once no attempt's outcome is unknown (create-rule.ts): this one refused
      // and none before it. keyward's own annotation change wakes nothing; the failure waits for a
      // spec change or the resync.
      const began = c.createPending ? "Started" : "NotStarted";
      if (guard && markAfterFailure(began, mayHaveLanded(err)) === "remove") {
        await this.patchMeta({
          annotations: { [ANNOTATION_CREATE_STARTED]: null },
          ...(key === undefined ? {} : { labels: { [NATURAL_KEY_LABEL]: null } }),
        });
      }
      throw err;
    }
    this.mergeStatus(created.status);
    const adopted = guard ? await this.announceCreated(created.status[guard.idField], c.spec) : undefined;
    if (adopted) return this.fail(claimedBy(adopted, this.module.ref.kind));
    this.actionEvent = true;
    // Its status write records the id, which confirms the create: no write of its own.
    const outcome = await this.reconcileExisting(derivedContext(c, { status: this.kindStatus, createPending: false }), {
      ...created,
      exists: true,
    });
    const readiness = created.readiness ?? AVAILABLE;
    c.event("Normal", "Created", `created the external object; ${readiness.ready ? "it is available" : readiness.message}`);
    return outcome;
  }

  /**
   * The create-started mark's change: recorded before the call, in one patch with the finalizer,
   * and only on the version of the object this pass read (a resourceVersion precondition: a stale
   * read is a 409, never a second create). If keyward dies after the service accepted the create
   * but before the id reached status, the next pass finds the object by its natural key. The
   * natural key's label rides in it: adopters step back for it (holder.ts).
   */
  private createStarted(scope: string | undefined, key: string | undefined, addFinalizer: boolean): MetadataChange {
    return {
      annotations: {
        [ANNOTATION_CREATE_STARTED]: createStartedMark(this.now(), this.obj.metadata.uid, scope),
        [LEGACY_CREATE_PENDING]: null,
        [LEGACY_CREATE_SUCCEEDED]: null,
        // An id of an external object that is gone: the create about to run replaces it.
        [ANNOTATION_EXTERNAL_ID]: null,
        ...this.scopeRecord(scope, addFinalizer),
      },
      labels: { [EXTERNAL_ID_LABEL]: null, ...(key === undefined ? {} : { [NATURAL_KEY_LABEL]: keyDigest(key) }) },
    };
  }

  private async finalize(spec: Spec): Promise<Outcome> {
    // Released without a word to the service when deletion does not call it: so deletionPolicy
    // Retain stays an escape hatch even when the ProviderConfig or its Secret is already gone.
    if (!this.needsFinalizer(spec)) {
      await this.patchMeta({ finalizers: { remove: FINALIZER } });
      return done();
    }
    const c = await this.context(spec);
    const obs = await this.module.observe(c);
    const rival = (await this.claim(obs, spec)) ?? (await this.lockedByAnother(obs, spec));
    if (rival?.creating) {
      // Another's create may be what committed, or this one's: letting go now, both could go and
      // leave the object with neither (holder.ts). The deletion waits for that resource.
      const pending = creatingElsewhere(rival.key, this.module.ref.kind);
      await this.writeStatus({ ready: { type: "Ready", status: "False", reason: pending.reason, message: pending.message } });
      return requeueAfter(CREATING_RETRY_MS);
    }
    if (rival) {
      // Never this resource's (another holds it): released without a call.
      c.event("Warning", "ExternalIdClaimed", `${claimedBy(rival.key, this.module.ref.kind).message}; released without deleting it`);
      await this.patchMeta({ finalizers: { remove: FINALIZER } });
      return done();
    }
    this.mergeStatus(obs.status);
    this.confirmId(obs);
    if (obs.exists && this.module.delete) {
      const result = await this.module.delete(c, obs);
      if (!result.done) {
        await this.writeStatus({ ready: { type: "Ready", status: "False", reason: result.reason, message: result.message } });
        return requeueAfter(result.requeueAfterMs);
      }
      c.event("Normal", "Deleted", "deleted the external object");
      // Found by its natural key while a create was unconfirmed: that was one attempt's commit,
      // and a later attempt, sent when this one had not yet landed, may commit now that the key
      // is free again (seed 16 of the soak: two creates of one sync landed, the first deleted).
      if (c.createPending) {
        const waiting = await this.waitForLateCommit();
        if (waiting) return waiting;
      }
    } else if (!obs.exists && obs.vanished) {
      await this.writeStatus({ ready: { type: "Ready", status: "False", reason: obs.vanished.reason, message: obs.vanished.message } });
      c.event("Warning", obs.vanished.reason, obs.vanished.message);
    } else if (!obs.exists && c.createPending) {
      // A create whose outcome is unknown may still commit (create-rule.ts): released now, the
      // resource would leave what it commits behind.
      const waiting = await this.waitForLateCommit();
      if (waiting) return waiting;
    }
    await this.releaseLock();
    await this.patchMeta({ finalizers: { remove: FINALIZER } });
    return done();
  }

  /**
   * Being deleted while its create is unconfirmed: until the late-commit window after the last
   * attempt's mark has passed, the resource stays, Ready False CreatePending, and looks again.
   * The id of what this pass found and deleted is not kept, so the next pass looks by the natural
   * key (create-rule.ts). Undefined once the window has passed.
   */
  private async waitForLateCommit(): Promise<Outcome | undefined> {
    const late = releaseWhileStarted(this.obj.metadata.annotations?.[ANNOTATION_CREATE_STARTED], this.now().getTime());
    if (late === "release") return undefined;
    const guard = this.module.guardCreate;
    if (guard) this.mergeStatus({ [guard.idField]: null } as StatusPatch<Status>);
    const message = `a create whose outcome is unknown may still commit at the service; the deletion looks for it again until ${Math.ceil(late.wait / 1000)} s from now, then lets the resource go`;
    await this.writeStatus({ ready: { type: "Ready", status: "False", reason: "CreatePending", message } });
    return requeueAfter(Math.min(late.wait, 5_000));
  }

  /**
   * Being deleted, a resource that records the id still deletes nothing while the id's lock names
   * another live resource that records it too (two records left by a keyward before the lock): the
   * lock decides. A holder that does not record it is an adopter between its lock and its read of
   * the announcements: it steps back on this resource's record (its status, which that read lists
   * by), which stays until the deletion, so the deletion goes on (else the object would outlive
   * both). An id this resource names but does not record, and announces by no label, is not found
   * by that read: the lock decides then. Reads on deletion only.
   */
  private async lockedByAnother(obs: Observation<Status, External>, spec: Spec): Promise<Rival | undefined> {
    const guard = this.module.guardCreate;
    const id = guard && obs.exists ? obs.status[guard.idField] : undefined;
    if (!guard || !this.deps.locks || this.lockedId !== undefined || typeof id !== "string" || id === "" || this.observesOnly(spec)) {
      return undefined;
    }
    const lock = await this.deps.locks.state(this.module.ref, id, this.obj as KubeObject);
    if (lock.state === "Held") this.lockedId = id;
    if (lock.state !== "HeldBy") return undefined;
    // Only a record the adopter's fresh read finds (holder.ts foundByClaimRead) makes it step back.
    if (!foundByClaimRead(this.obj, { idField: guard.idField, id, key: this.naturalKey(spec) })) return { key: lock.holder };
    const holder = await getObject(this.deps.kube, this.module.ref, lock.holder);
    return holder?.status?.[guard.idField] === id ? { key: lock.holder } : undefined;
  }

  /** The finalizer's last step: the id's lock, if this resource holds one, goes with it (any other goes on the delete event). */
  private async releaseLock(): Promise<void> {
    if (this.lockedId !== undefined) await this.deps.locks?.release(this.module.ref, this.lockedId, this.obj as KubeObject);
  }

  /**
   * The credential's rate limit turned a call away: back at the turn it gave, with no condition,
   * Event or status write for it (at scale most passes would otherwise write "RateLimited" and
   * then write it away again). Only what this pass learned before (a created object's id) is
   * recorded.
   */
  private async deferred(turnMs: number): Promise<Outcome> {
    this.forgetUnconfirmedId();
    if (!statusEqual(kindFields(this.obj.status ?? {}), this.kindStatus)) {
      try {
        await this.writeStatus({});
      } catch (err) {
        this.log.warn({ err: String(err) }, "could not record what the pass learned before it was held back");
      }
    }
    return throttled(turnMs);
  }

  private async fail(c: Classification): Promise<Outcome> {
    this.forgetUnconfirmedId();
    this.log.warn({ reason: c.reason, retryable: c.retryable }, c.message);
    const wasSynced = this.obj.status?.conditions?.find((x) => x.type === "Synced");
    if (wasSynced?.reason !== c.reason || wasSynced.message !== c.message) {
      this.deps.events.record(this.obj, "Warning", c.reason, c.message);
    }
    try {
      await this.writeStatus({ synced: { type: "Synced", status: "False", reason: c.reason, message: c.message } });
    } catch (err) {
      this.log.warn({ err: String(err) }, "could not record the failure in status");
    }
    return outcomeFor(c);
  }

  /** Fields set to undefined keep their value; fields set to null are removed from status. */
  private mergeStatus(next: StatusPatch<Status>): void {
    const merged: Record<string, unknown> = { ...this.kindStatus };
    for (const [key, value] of Object.entries(next)) {
      if (value === null) Reflect.deleteProperty(merged, key);
      else if (value !== undefined) merged[key] = value;
    }
    this.kindStatus = merged as Partial<Status>;
  }

  /**
   * Every status write is preceded by the metadata that must outlive the cluster (the external id,
   * handled action values), when it differs: written first, so status never holds an id that a
   * backup taken right after would lose. A write only when a value is new (a create, an action, the
   * first pass after an upgrade from a keyward that kept them in status alone).
   */
  private async writeStatus(conditions: ConditionsToSet): Promise<void> {
    await this.recordDurable();
    this.obj = (await writeStatus({
      kube: this.deps.kube,
      ref: this.module.ref,
      obj: this.obj,
      kindStatus: this.kindStatus,
      conditions,
      now: this.now(),
      // A pass that records an action's own Event (Created) tells the Ready change in it.
      ...(this.actionEvent ? {} : { events: this.deps.events }),
      progress: this.progress,
      exact: this.exact,
    }).catch((err: unknown) => {
      if (isKubeNotFound(err)) this.deleted = true;
      throw err;
    })) as KubeObject<unknown, Partial<Status>>;
  }

  /**
   * The metadata that must outlive the cluster, and a new id's label: one patch, only when something
   * differs. `announceId`: the id goes in whatever the natural key says (a creator whose mark no
   * longer counts).
   */
  private async recordDurable(announceId = false): Promise<void> {
    const scope = this.module.scope ? this.kindStatus[this.module.scope.field] : undefined;
    const recordsId = announceId || this.idInMetadata();
    const durable = recordsId ? this.deps.durable : withoutId(this.deps.durable);
    const annotations = { ...durableAnnotations(durable, this.kindStatus), ...this.scopeRecord(scope, false) };
    const labels = recordsId ? this.idLabel() : undefined;
    if (Object.keys(annotations).length > 0 || labels) await this.patchMeta({ annotations, ...(labels ? { labels } : {}) });
  }

  /**
   * Whether the id goes into metadata: always for a kind without a natural key; for one with, only
   * when the key its create announced no longer names the object alone (holder.ts keyAnnounced):
   * an adoption, a rename at the service or in the spec. Not judged without a spec (it did not
   * parse): nothing is written then. A holder whose key no longer names its object is still found
   * by the claim rule's fresh read, by its status record (holder.ts claimFieldSelector), on every
   * replica.
   */
  private idInMetadata(): boolean {
    const guard = this.module.guardCreate;
    if (!guard || !guard.naturalKey) return true;
    const desired = this.naturalKey(this.spec);
    if (desired === undefined) return false;
    const observed = this.kindStatus[guard.naturalKey.field];
    return !keyAnnounced(this.obj, typeof observed === "string" ? observed : undefined, desired);
  }

  /**
   * The annotation recording the scope (module.scope) as `value`, for an object that holds the
   * finalizer or gets it in the same write (`adding`): only a deletion that calls the service reads
   * it back. Nothing while the value is unknown.
   */
  private scopeRecord(value: unknown, adding: boolean): Record<string, string> {
    const scope = this.module.scope;
    const holds = adding || (this.obj.metadata.finalizers ?? []).includes(FINALIZER);
    return scope && holds && typeof value === "string" && value !== "" ? { [scope.annotation]: value } : {};
  }

  /** The label announcing the guarded id status records (holder.ts), for the claim rule's fresh reads. */
  private idLabel(): Record<string, string> | undefined {
    const guard = this.module.guardCreate;
    const id = guard ? this.kindStatus[guard.idField] : undefined;
    // Only with a new id, in the patch that records it anyway: an object recorded before the label
    // existed is found by its status in the caches, so an upgrade costs no write per object.
    const recording = typeof id === "string" && id !== "" && this.obj.metadata.annotations?.[ANNOTATION_EXTERNAL_ID] !== id;
    return recording ? { [EXTERNAL_ID_LABEL]: idDigest(id) } : undefined;
  }

  /** Every write only on the version this pass holds: the Ownership's write policy. */
  private get exact(): boolean {
    return this.deps.ownership?.exactWrites === true;
  }

  /**
   * `exact`: only on the version this pass holds (a 409 otherwise, which ends the pass); always so
   * when the Ownership says. False when the object is gone from the apiserver (a 404).
   */
  private async patchMeta(change: MetadataChange, exact = false): Promise<boolean> {
    const patched = await patchMetadata(this.deps.kube, this.module.ref, this.key, change, {
      base: this.obj as KubeObject,
      exact: exact || this.exact,
    });
    if (patched) this.obj = patched as KubeObject<unknown, Partial<Status>>;
    else this.deleted = true;
    return patched !== undefined;
  }

  /** ObserveOnly never calls the service, so it never needs a finalizer, whatever the kind says. */
  private needsFinalizer(spec: Spec): boolean {
    return this.module.needsFinalizer(spec) && !(this.module.observeOnly?.(spec) ?? false);
  }

  private now(): Date {
    return this.deps.now?.() ?? new Date();
  }
}

/** Another resource of the kind found by the claim rule: its holder, or one whose create may be what committed. */
interface Rival {
  key: ObjectKey;
  creating?: true;
}

/** How soon a resource waiting for another's pending create looks again: that create's status write follows its answer. */
const CREATING_RETRY_MS = 5_000;

function creatingElsewhere(rival: ObjectKey, kind: string): Classification {
  const where = rival.namespace ? `${rival.namespace}/${rival.name}` : rival.name;
  return {
    reason: "CreatePending",
    message: `${kind} ${where} is creating the external object with this natural key (its create's outcome is not recorded yet); this resource waits for it`,
    retryable: true,
    retryAfterMs: CREATING_RETRY_MS,
  };
}

/** The durable fields without the guarded id's annotation (a natural key names the object). */
function withoutId(fields: DurableFields): DurableFields {
  const { [ANNOTATION_EXTERNAL_ID]: _id, ...rest } = fields;
  return rest;
}

function claimedBy(holder: ObjectKey, kind: string): Classification {
  const where = holder.namespace ? `${holder.namespace}/${holder.name}` : holder.name;
  return {
    reason: "ExternalIdClaimed",
    message: `${ANNOTATION_EXTERNAL_ID} names an external object that ${kind} ${where} already manages; this resource changes nothing until the annotation is removed or that resource lets it go`,
    retryable: false,
  };
}

const AVAILABLE: Readiness = { ready: true, reason: "Available", message: "the external object is available" };

function syncedCondition(obs: Observation<unknown>, observeOnly: boolean): ConditionsToSet["synced"] {
  if (observeOnly) {
    return obs.upToDate
      ? { type: "Synced", status: "True", reason: "ObserveOnly", message: "observed; the external object matches the spec" }
      : {
          type: "Synced",
          status: "False",
          reason: "ObserveOnly",
          message: `observed; differs from the spec in ${obs.diff?.join(", ") ?? "some fields"} (managementPolicy ObserveOnly: not changed)`,
        };
  }
  return { type: "Synced", status: "True", reason: "ReconcileSuccess", message: "the external object matches the spec" };
}

function kindFields(status: Record<string, unknown>): Record<string, unknown> {
  const { conditions: _c, observedGeneration: _g, ...rest } = status;
  return rest;
}
