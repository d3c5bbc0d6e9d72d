// The builder (controller-runtime's builder): one controller per served kind of the registry
// (src/resources/registry.ts), one reconcile per object key, each kind's watches its own, the
// wake-ups the kinds it refers to declare (referrerWatches) and its claim view's. Over the
// manager's caches (src/manager/caches.ts); used by the manager (src/manager/manager.ts) and,
// in-process, by the integration tests.
import type { Logger } from "./log.ts";
import { createKube, withCache, type KindRef, type Kube } from "./kube/client.ts";
import { createRequestLimiter, DEFAULT_KUBE_API_LIMIT, limitRequests, type RequestLimit } from "./kube/rest.ts";
import type { Shard } from "./shard/shard.ts";
import { createEventRecorder, type EventRecorder } from "./kube/events.ts";
import { createController, type Controller, type ControllerOptions } from "./engine/controller.ts";
import { defaultMaxInFlightPerNamespace } from "./engine/queue.ts";
import {
  ANNOTATION_EXTERNAL_ID,
  EXTERNAL_ID_LABEL,
  holderLocks,
  NATURAL_KEY_LABEL,
  sweepLocksEvery,
  type HolderLocks,
} from "./engine/holder.ts";
import { CREATE_GUARD_ANNOTATIONS } from "./engine/create-rule.ts";
import { managedReconciler } from "./engine/managed.ts";
import { type ManagedModule } from "./engine/module.ts";
import type { InformerFactory } from "./kube/informer.ts";
import { createMetrics, type Metrics } from "./engine/metrics.ts";
import type { KubeObject, ReconcileFn } from "./engine/types.ts";
import type { KubeSource } from "./kube/kubeconfig.ts";
import { createCaches, type ClaimViews } from "./manager/caches.ts";
import { providerPlumbing, type PlumbingOptions } from "./resources/provider/plumbing.ts";
import { managedModuleOf, referrerWatches, type Kind, type KindDeps } from "./resources/kind.ts";
import { kinds, projectDependents, providerConfigUsers } from "./resources/registry.ts";

export interface OperatorOptions {
  /** keyward's own access (loadKubeConfig), or a kubeconfig another library loaded. */
  kc: KubeSource;
  log: Logger;
  namespaces: string[];
  concurrency: number;
  /**
   * The most keys of one namespace a controller works on at once (--max-in-flight-per-namespace);
   * default defaultMaxInFlightPerNamespace: half the workers, or all with one watched namespace.
   */
  maxInFlightPerNamespace?: number;
  /** The ceiling on a ProviderConfig's spec.timeoutSeconds (--max-request-timeout), in ms. */
  maxRequestTimeoutMs?: number;
  /** The client-side apiserver limit (--kube-api-qps, --kube-api-burst); default DEFAULT_KUBE_API_LIMIT. */
  kubeApiLimit?: RequestLimit;
  resyncIntervalMs: number;
  metrics?: Metrics;
  /** How long stop() lets in-flight reconciles run before aborting them. */
  stopGraceMs?: number;
  /** Serve ClusterProviderConfigs (watched cluster-wide), reading their Secrets from `credentialsNamespace` only. */
  clusterProviderConfigs?: { credentialsNamespace: string };
  /**
   * The base URLs provider configs may name (--allowed-base-urls). Empty (the default): a token
   * goes only where its Secret's keyward.dev/allowed-base-urls annotation says; `["*"]`: anywhere.
   */
  allowedBaseUrls?: readonly string[];
  /**
   * Where the claim rule's locks live (src/engine/holder.ts): keyward's own namespace, as its
   * Leases. Default "default" (an operator started in a test or a bench).
   */
  holderNamespace?: string;
  /** How often the claim rule's locks whose resources are gone are swept (holder.ts); default 10 minutes. */
  lockSweepIntervalMs?: number;
  /**
   * The clock the engine dates create-started marks by and judges their age with; default the
   * system's. Tests move it to reach windows of minutes (holder.ts KEY_CONFIRM_MS).
   */
  clock?: () => Date;
  /** The namespaces whose AccessTokens are served (--access-token-namespaces); empty or absent: every watched namespace. */
  accessTokenNamespaces?: readonly string[];
  /** The largest service response body read (--max-response-bytes); default the client's 16 MiB. */
  maxResponseBytes?: number;
  /** The kinds served; default the registry (src/resources/registry.ts). Tests add a test-only kind. */
  kinds?: readonly Kind[];
  /**
   * Sharding (docs/sharding.md, src/shard/shard.ts): this replica. Namespaced kinds are watched
   * with its shard label only; a cluster-scoped kind is cached whole (every replica reads them) and
   * reconciled by the leader only. While it does not hold its shard Lease, no pass starts and no
   * apiserver write or service call is sent. Absent: every object is this process's.
   */
  shard?: Shard;
}

export interface Operator {
  metrics: Metrics;
  kube: Kube;
  /** The kinds with a controller (what a sharder assigns). */
  kinds: readonly KindRef[];
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function createOperator(opts: OperatorOptions): Operator {
  const metrics = opts.metrics ?? createMetrics();
  const direct = operatorAccess(opts, metrics);
  const served = opts.kinds ?? kinds;
  const log = opts.log;
  const caches = createCaches(direct, { namespaces: opts.namespaces, log, metrics, served: served.map((k) => k.ref), shard: opts.shard });
  const { informers, claims } = caches;
  const kube = withCache(direct, informers);
  const events = createEventRecorder(kube, { component: "keyward", logger: log });
  const { providers, cluster } = providerPlumbing(plumbingOptions(opts), { kube, log, events, metrics });
  const { shard } = opts;
  const locks = holderLocks(direct, opts.holderNamespace ?? "default", opts.namespaces);
  const managed = managedFactory({ kube, events, log, metrics, informers, claims, shard, locks, clock: opts.clock });
  const deps: Omit<KindDeps, "managed"> = {
    kube,
    events,
    log,
    metrics,
    providers,
    cluster,
    cached: (ref) => informers.get(ref).list(),
    everywhere: (ref) => caches.everywhere.get(ref),
    resyncIntervalMs: opts.resyncIntervalMs,
    listingTtlMs: listingTtl(opts.resyncIntervalMs),
    providerConfigUsers: providerConfigUsers(served),
    projectDependents: projectDependents(served),
    accessTokenNamespaces: opts.accessTokenNamespaces ?? [],
    ...(shard ? { ownership: shard } : {}),
  };
  const controllerParts = served.flatMap((k) => {
    // What the Kind declares (its reasons, external id, durable fields) goes with its managed reconciler.
    const parts = k.controller({ ...deps, managed: (module, peers) => managed(managedModuleOf(k, module), peers) });
    return parts ? [{ kind: k, parts }] : [];
  });
  const on = controllerParts.map(({ kind }) => kind);
  const controllers = controllerParts.map(({ kind, parts }) =>
    createController(controllerOptions(kind, parts, { opts, kube, log, metrics, informers, claims, on })),
  );
  const names = controllerParts.map(({ kind }) => kind.ref.kind.toLowerCase());
  let sweeps: { stop(): void } | undefined;
  const following = shard ? controllerParts.flatMap(({ kind }, i) => shard.follow(kind.ref, controllers[i] as Controller) ?? []) : [];

  return {
    metrics,
    kube,
    kinds: controllerParts.map(({ kind }) => kind.ref),
    async start() {
      await cluster?.start();
      await Promise.all(controllers.map((c) => c.start()));
      sweeps = sweepLocksEvery({
        locks,
        kinds: controllerParts.map(({ kind }) => kind.ref),
        intervalMs: opts.lockSweepIntervalMs ?? 10 * 60_000,
        leads: () => shard?.leadership.leads() ?? true,
        log,
      });
      log.info({ controllers: names, namespaces: opts.namespaces }, "keyward started");
    },
    async stop() {
      sweeps?.stop();
      await Promise.all(controllers.map((c) => c.stop()));
      for (const off of following) off();
      caches.stop();
      cluster?.stop();
      await events.flush();
      log.info("keyward stopped");
    },
  };
}

/**
 * The operator's apiserver access. Sharded, a fenced access of its own (same connections and
 * credential): the fence and the rate limit hold for the operator's requests, never for the Lease
 * renewals and the sharder's patches main.ts sends from the same kubeconfig.
 */
function operatorAccess(opts: OperatorOptions, metrics: Metrics): Kube {
  const shared = createKube(opts.kc);
  const direct: Kube = opts.shard ? { access: opts.shard.fenced(shared.access) } : shared;
  // Every apiserver request of the operator but its watches waits its turn, fairly between kinds.
  limitRequests(
    direct.access,
    createRequestLimiter(opts.kubeApiLimit ?? DEFAULT_KUBE_API_LIMIT, undefined, {
      onWait: (reason) => metrics.kubeApiWaits.inc({ reason }),
      onThrottled: () => metrics.kubeApiThrottled.inc(),
    }),
  );
  return direct;
}

type ManagedFactory = <S, T, C, E>(module: ManagedModule<S, T, C, E>, peers?: () => KubeObject[]) => ReconcileFn;

/** Builds a kind's managed reconciler over the operator's caches (and, sharding, its claim view and share). */
function managedFactory(d: {
  kube: Kube;
  events: EventRecorder;
  log: Logger;
  metrics: Metrics;
  informers: InformerFactory;
  claims: ClaimViews | undefined;
  shard: Shard | undefined;
  locks: HolderLocks;
  clock: (() => Date) | undefined;
}): ManagedFactory {
  return (module, peers) => {
    const claimed = module.guardCreate ? d.claims?.of(module.ref) : undefined;
    return managedReconciler(module, {
      kube: d.kube,
      events: d.events,
      log: d.log,
      metrics: d.metrics,
      cache: d.informers.get(module.ref),
      ...(peers ? { peers } : {}),
      ...(d.shard ? { ownership: d.shard } : {}),
      ...(claimed ? { claims: claimed } : {}),
      locks: d.locks,
      ...(d.clock ? { now: d.clock } : {}),
    });
  };
}

/** A kind's controller: its reconcile, its watches (its own, derived, the claim view's), its share. */
function controllerOptions(
  kind: Kind,
  parts: NonNullable<ReturnType<Kind["controller"]>>,
  d: {
    opts: OperatorOptions;
    kube: Kube;
    log: Logger;
    metrics: Metrics;
    informers: InformerFactory;
    claims: ClaimViews | undefined;
    /** The kinds whose controller is on: the ones whose wake-ups are given. */
    on: readonly Kind[];
  },
): ControllerOptions {
  const { opts } = d;
  const name = kind.ref.kind.toLowerCase();
  const logger = d.log.child({ controller: name });
  const cache = d.informers.get(kind.ref);
  return {
    name,
    kube: d.kube,
    kind: kind.ref,
    reconcile: opts.shard ? opts.shard.sharded(parts.reconcile, { kind: kind.ref, kube: d.kube, cache, logger }) : parts.reconcile,
    concurrency: opts.concurrency,
    maxInFlightPerNamespace: opts.maxInFlightPerNamespace ?? defaultMaxInFlightPerNamespace(opts.concurrency, opts.namespaces),
    resyncIntervalMs: opts.resyncIntervalMs,
    namespaces: opts.namespaces,
    logger,
    metrics: d.metrics,
    informers: d.informers,
    ownAnnotations: [
      ...CREATE_GUARD_ANNOTATIONS,
      ANNOTATION_EXTERNAL_ID,
      ...Object.values(kind.actions ?? {}).map((a) => a.handledAnnotation),
      // The annotations the kind says keyward writes on its own objects.
      ...(kind.metadata ?? []).filter((m) => m.what === "annotation" && m.by === "keyward" && m.on === undefined).map((m) => m.key),
    ],
    ownLabels: [EXTERNAL_ID_LABEL, NATURAL_KEY_LABEL],
    watches: [...(parts.watches ?? []), ...referrerWatches(kind, d.on), ...(d.claims?.watches(kind.ref) ?? [])],
    ...(opts.stopGraceMs !== undefined ? { stopGraceMs: opts.stopGraceMs } : {}),
  };
}

/**
 * How old a shared listing may be for a steady resync pass: the resync spreads its passes over a
 * tenth of the interval, so half of it (at most 30 s) serves a whole resync with one or two lists.
 */
function listingTtl(resyncIntervalMs: number): number {
  return Math.min(30_000, Math.max(1, Math.floor(resyncIntervalMs / 2)));
}

function plumbingOptions(opts: OperatorOptions): PlumbingOptions {
  return {
    resyncIntervalMs: opts.resyncIntervalMs,
    ...(opts.allowedBaseUrls ? { allowedBaseUrls: opts.allowedBaseUrls } : {}),
    ...(opts.maxResponseBytes !== undefined ? { maxResponseBytes: opts.maxResponseBytes } : {}),
    ...(opts.maxRequestTimeoutMs !== undefined ? { maxRequestTimeoutMs: opts.maxRequestTimeoutMs } : {}),
    ...(opts.clusterProviderConfigs ? { clusterProviderConfigs: opts.clusterProviderConfigs } : {}),
    // The fence on service calls (src/shard/fence.ts).
    ...(opts.shard ? { admit: opts.shard.holds } : {}),
  };
}
