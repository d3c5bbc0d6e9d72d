// The generic controller (controller-runtime's internal controller, in small): informers feed
// keys into a work queue, `concurrency` workers take keys and run the kind's reconcile, and
// the Outcome decides when the key comes back. Level-triggered: every add, update and delete
// just enqueues the key, and the reconcile reads the current state itself.
import type { Logger } from "../log.ts";
import type { Kube, KindRef } from "../kube/client.ts";
import { createInformerFactory, type InformerFactory, type SharedInformer } from "../kube/informer.ts";
import { keyString, parseKeyString } from "../kube/keys.ts";
import { errorSummary } from "../kube/rest.ts";
import { isConflict } from "../kube/objects.ts";
import { jitterInterval, type BackoffPolicy } from "../lib/backoff.ts";
import { queueObserver, trackActiveWorkers, type Metrics, type ReconcileResult } from "./metrics.ts";
import { createWorkQueue, type WorkQueue, type WorkQueueOptions } from "./queue.ts";
import { type KubeObject, type ObjectKey, type Outcome, type ReconcileFn } from "./types.ts";

export type WatchEventType = "add" | "update" | "delete";

export interface SecondaryWatch {
  kind: KindRef;
  /**
   * The keys of the primary objects to reconcile when this object changes. `primaries` are the
   * cached objects of the controller's own kind (a scan: give `refersTo` instead where a primary
   * names the object). Unused when `refersTo` is given.
   */
  mapToKeys: (obj: KubeObject, primaries?: () => KubeObject[]) => ObjectKey[];
  /**
   * The key (keyString) of the watched object a primary object refers to, if any. With it the
   * controller keeps an index, referenced key -> referrers, from the primary informer's events,
   * and an event of the watched kind costs O(its referrers), never a scan of the cache. It reads
   * the primary's spec (and name, namespace) only: an update that leaves metadata.generation as it
   * was (a status or metadata write, most events while creating) does not move the index.
   */
  refersTo?: (primary: KubeObject) => string | undefined;
  /**
   * Whether this event of the watched object matters to the primaries (controller-runtime's
   * predicates); absent: every event does. `old` is the cached copy before an update.
   */
  predicate?: (type: WatchEventType, obj: KubeObject, old?: KubeObject) => boolean;
  labelSelector?: string;
  /** An informer of its own instead of the factory's (sharding: a view of every replica's objects of the kind). */
  informer?: SharedInformer;
}

export interface ControllerOptions {
  name: string;
  kube: Kube;
  kind: KindRef;
  reconcile: ReconcileFn;
  concurrency: number;
  /** The most keys of one namespace in flight at once (queue.ts); absent: no cap. */
  maxInFlightPerNamespace?: number;
  resyncIntervalMs: number;
  /** Empty or absent: all namespaces. */
  namespaces?: string[];
  logger: Logger;
  metrics: Metrics;
  watches?: SecondaryWatch[];
  /** Informers shared with other controllers (one cache per kind); default: the controller's own. */
  informers?: InformerFactory;
  /** Annotations only keyward writes: a change to them alone is keyward's own write, never a reason to reconcile. */
  ownAnnotations?: readonly string[];
  /** Labels only keyward writes (the claim rule's announcement): likewise never a reason to reconcile. */
  ownLabels?: readonly string[];
  /** Per-key backoff for retryable outcomes. Default 1 s doubling to 5 min, equal jitter. */
  retryBackoff?: BackoffPolicy;
  /** Backoff for restarting a broken list/watch. */
  informerRestartBackoff?: { baseMs: number; maxMs: number };
  /** How long stop() lets in-flight reconciles run before aborting their signal. Default 25 s. */
  stopGraceMs?: number;
}

export interface Controller {
  /** Resolves once the informers have synced and the workers are running. */
  start(): Promise<void>;
  /** Stops taking work, waits for in-flight reconciles, then stops the informers. */
  stop(): Promise<void>;
  enqueue(key: ObjectKey): void;
  queueLength(): number;
  /** The primary kind's object as the informer last saw it. */
  cached(key: ObjectKey): KubeObject | undefined;
  /** Every cached object of the kind. */
  list(): KubeObject[];
}

export const DEFAULT_RETRY_BACKOFF: BackoffPolicy = { baseMs: 1000, maxMs: 5 * 60_000, jitter: "equal" };

function queueOptions(opts: ControllerOptions): WorkQueueOptions {
  return {
    backoff: opts.retryBackoff ?? DEFAULT_RETRY_BACKOFF,
    observer: queueObserver(opts.metrics, opts.name),
    ...(opts.maxInFlightPerNamespace === undefined ? {} : { maxInFlightPerNamespace: opts.maxInFlightPerNamespace }),
  };
}

export function createController(opts: ControllerOptions): Controller {
  const labels = { controller: opts.name };
  const active = trackActiveWorkers(opts.metrics, opts.name);
  const log = opts.logger;
  const queue = createWorkQueue(queueOptions(opts));
  const ownFactory = opts.informers === undefined;
  const factory =
    opts.informers ??
    createInformerFactory(opts.kube, {
      ...(opts.namespaces ? { namespaces: opts.namespaces } : {}),
      ...(opts.informerRestartBackoff ? { restartBackoff: opts.informerRestartBackoff } : {}),
      logger: opts.logger,
      onRestart: (kind) => opts.metrics.informerRestarts.inc({ kind: kind.kind }),
    });
  const { informers, unsubscribe } = subscribeInformers(opts, factory, queue);
  const primary = informers[0] as SharedInformer;
  const abort = new AbortController();
  let stopping = false;
  let workers: Promise<void>[] = [];
  let resync: { stop(): void } | undefined;

  const reconcileOnce = async (key: string): Promise<Outcome> => {
    try {
      return await opts.reconcile(parseKeyString(key), abort.signal);
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      // A 409 is a write that lost a race with another writer (a status write beside the sharder's
      // label patch, say): expected, and the next pass reads the newer version. logOutcome says so.
      if (!isConflict(err)) log.error({ key, err: errorSummary(err) }, "reconcile threw; retrying with backoff");
      return { type: "retryable", error };
    }
  };

  const processKey = async (key: string): Promise<void> => {
    active.inc();
    const endTimer = opts.metrics.reconcileTime.startTimer(labels);
    const outcome = await reconcileOnce(key);
    endTimer();
    active.dec();
    const result = settle(queue, opts.metrics, labels, key, outcome);
    opts.metrics.reconcileTotal.inc({ ...labels, result });
    logOutcome(log, key, outcome, queue.numRequeues(key));
  };

  const work = async (): Promise<void> => {
    for (;;) {
      const key = await queue.get();
      if (key === undefined) return;
      try {
        // Keys handed out after stop() began are let go unprocessed: the next leader or
        // start lists everything again anyway.
        if (!stopping) await processKey(key);
      } finally {
        queue.done(key);
      }
    }
  };

  return {
    async start() {
      await Promise.all(informers.map((i) => i.start()));
      opts.metrics.maxConcurrentReconciles.set(labels, opts.concurrency);
      workers = Array.from({ length: Math.max(1, opts.concurrency) }, () => work());
      if (opts.resyncIntervalMs > 0) resync = scheduleResync(opts.resyncIntervalMs, primary, queue);
      log.info({ kind: opts.kind.kind, objects: primary.list().length, workers: workers.length }, "controller started");
    },
    async stop() {
      if (stopping) return;
      stopping = true;
      resync?.stop();
      queue.shutDown();
      const grace = setTimeout(() => abort.abort(new Error("controller stopping")), opts.stopGraceMs ?? 25_000);
      grace.unref();
      await Promise.all(workers);
      clearTimeout(grace);
      for (const off of unsubscribe) off();
      if (ownFactory) factory.stop();
      log.info("controller stopped");
    },
    enqueue: (key) => queue.add(keyString(key)),
    queueLength: () => queue.len(),
    cached: (key) => primary.get(key),
    list: () => primary.list(),
  };
}

/** Outcome -> what the queue does next, and the result label controller-runtime would use. */
export function settle(queue: WorkQueue, metrics: Metrics, labels: { controller: string }, key: string, outcome: Outcome): ReconcileResult {
  switch (outcome.type) {
    case "done":
      queue.forget(key);
      // A requeue or retry an earlier pass asked for would only bring back a key that is gone.
      if (outcome.gone) queue.cancelDelayed(key);
      return "success";
    case "requeueAfter":
      queue.forget(key);
      queue.addAfter(key, outcome.afterMs);
      return "requeue_after";
    case "retryable":
      metrics.reconcileErrors.inc(labels);
      // Retry-After is a floor on the key's backoff (queue.ts retryDelay): a 0, a past date or
      // garbage from the service cannot turn a failing key into a hot loop.
      queue.addRateLimited(key, outcome.retryAfterMs);
      return "error";
    case "throttled":
      // The client's rate limit gave the key a turn; the worker is free for other keys (and other
      // namespaces) meanwhile. The failure count stays as it was: this is neither one nor a success.
      queue.addAfter(key, Math.max(1, outcome.afterMs));
      return "requeue_after";
    case "terminal":
      // No requeue: the next change of the object, or the resync, brings it back.
      metrics.reconcileErrors.inc(labels);
      metrics.terminalReconcileErrors.inc(labels);
      queue.forget(key);
      return "error";
  }
}

// Every interval (±10%), enqueue every cached key, spread over a tenth of the interval so
// hundreds of objects do not hit the service in the same second.
function scheduleResync(intervalMs: number, informer: SharedInformer, queue: WorkQueue): { stop(): void } {
  let timer: NodeJS.Timeout;
  const arm = (): void => {
    timer = setTimeout(
      () => {
        for (const obj of informer.list()) {
          queue.addAfter(keyString(obj.metadata), Math.floor(Math.random() * (intervalMs / 10)));
        }
        arm();
      },
      jitterInterval(intervalMs, 0.1),
    );
    timer.unref();
  };
  arm();
  return { stop: () => clearTimeout(timer) };
}

/**
 * Whether an update is keyward's own write and nothing else: status (keyward's status writes),
 * finalizers, and the annotations and labels only keyward writes (its create marks, the claim
 * rule's announcement). None of these
 * asks for a reconcile — the pass that wrote them already acted — and letting them enqueue would
 * make every failing pass wake itself at once and defeat its backoff. What does enqueue: a new
 * generation (spec), deletion, labels, and any other annotation (the user's requests, pause).
 */
export function onlyOwnChanges(
  old: KubeObject,
  obj: KubeObject,
  ownAnnotations: readonly string[] = [],
  ownLabels: readonly string[] = [],
): boolean {
  const a = old.metadata;
  const b = obj.metadata;
  return (
    a.generation === b.generation &&
    a.deletionTimestamp === b.deletionTimestamp &&
    sameRecord(a.labels, b.labels, ownLabels) &&
    sameRecord(a.annotations, b.annotations, ownAnnotations)
  );
}

/**
 * The two records hold the same entries, the keys in `ignored` left out. Runs on every update
 * event of the kind: no copies, no entry arrays.
 */
function sameRecord(
  a: Record<string, string> | undefined,
  b: Record<string, string> | undefined,
  ignored: readonly string[] = [],
): boolean {
  if (a === b) return true;
  let counted = 0;
  for (const key in a) {
    if (!Object.hasOwn(a, key) || ignored.includes(key)) continue;
    if (b === undefined || !Object.hasOwn(b, key) || b[key] !== a[key]) return false;
    counted += 1;
  }
  for (const key in b) {
    if (Object.hasOwn(b, key) && !ignored.includes(key)) counted -= 1;
  }
  return counted === 0;
}

function subscribeInformers(
  opts: ControllerOptions,
  factory: InformerFactory,
  queue: WorkQueue,
): { informers: SharedInformer[]; unsubscribe: (() => void)[] } {
  const primary = factory.get(opts.kind);
  const unsubscribe = [
    primary.subscribe((type, obj, old) => {
      if (type === "update" && old && onlyOwnChanges(old, obj, opts.ownAnnotations, opts.ownLabels)) return;
      queue.add(keyString(obj.metadata));
    }),
  ];
  const secondaries = (opts.watches ?? []).map((w) => {
    const informer = w.informer ?? factory.get(w.kind, w.labelSelector);
    const index = w.refersTo ? referrerIndex(w.refersTo) : undefined;
    if (index) {
      for (const obj of primary.list()) index.set(obj);
      unsubscribe.push(
        primary.subscribe((type, obj, old) => {
          if (type === "delete") index.remove(obj);
          else if (!old || !sameGeneration(old, obj)) index.set(obj);
        }),
      );
    }
    unsubscribe.push(
      informer.subscribe((type, obj, old) => {
        if (w.predicate && !w.predicate(type, obj, old)) return;
        if (index) {
          for (const key of index.referrers(keyString(obj.metadata))) queue.add(key);
          return;
        }
        for (const key of w.mapToKeys(obj, () => primary.list())) queue.add(keyString(key));
      }),
    );
    return informer;
  });
  return { informers: [primary, ...secondaries], unsubscribe };
}

/** The same spec, as the apiserver counts it (a spec change bumps metadata.generation). */
function sameGeneration(old: KubeObject, obj: KubeObject): boolean {
  return old.metadata.generation !== undefined && old.metadata.generation === obj.metadata.generation;
}

export interface ReferrerIndex {
  /** Records (or moves) what `primary` refers to now. */
  set(primary: KubeObject): void;
  remove(primary: KubeObject): void;
  /** The keys (keyString) of the primaries that refer to `target` (a keyString). */
  referrers(target: string): string[];
  /** How many primaries refer to anything (for tests). */
  size(): number;
}

/**
 * Referenced key -> the keys of its referrers, kept from the primary informer's events
 * (controller-runtime's field indexer, in small): a lookup costs O(referrers), and an update moves a
 * referrer only when what it refers to changed.
 */
export function referrerIndex(refersTo: (primary: KubeObject) => string | undefined): ReferrerIndex {
  const byTarget = new Map<string, Set<string>>();
  const targetOf = new Map<string, string>();
  const remove = (key: string): void => {
    const target = targetOf.get(key);
    if (target === undefined) return;
    targetOf.delete(key);
    const set = byTarget.get(target);
    set?.delete(key);
    if (set?.size === 0) byTarget.delete(target);
  };
  return {
    set(primary) {
      const key = keyString(primary.metadata);
      const target = refersTo(primary);
      if (targetOf.get(key) === target) return;
      remove(key);
      if (target === undefined) return;
      targetOf.set(key, target);
      let set = byTarget.get(target);
      if (!set) byTarget.set(target, (set = new Set()));
      set.add(key);
    },
    remove: (primary) => remove(keyString(primary.metadata)),
    referrers: (target) => [...(byTarget.get(target) ?? [])],
    size: () => targetOf.size,
  };
}

function logOutcome(log: Logger, key: string, outcome: Outcome, requeues: number): void {
  switch (outcome.type) {
    case "done":
      log.debug({ key, outcome: "done" }, "reconciled");
      return;
    case "requeueAfter":
      log.debug({ key, outcome: "requeueAfter", afterMs: outcome.afterMs }, "reconciled; looking again later");
      return;
    case "retryable":
      if (isConflict(outcome.error)) {
        log.info(
          { key, outcome: "retryable", err: errorSummary(outcome.error), requeues },
          "the object changed while it was reconciled; looking again",
        );
        return;
      }
      log.warn(
        { key, outcome: "retryable", err: outcome.error.message, retryAfterMs: outcome.retryAfterMs, requeues },
        "reconcile failed; retrying",
      );
      return;
    case "throttled":
      log.debug({ key, outcome: "throttled", afterMs: outcome.afterMs }, "held back by the rate limit of its credential; back at its turn");
      return;
    case "terminal":
      log.error({ key, outcome: "terminal", err: outcome.error.message }, "reconcile failed; waiting for a change");
  }
}
