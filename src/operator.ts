// Wires the kinds of the registry (src/resources/registry.ts) into controllers: one controller
// per kind, one reconcile per object key, the secondary watches derived from what each refers to.
// Used by main.ts and, in-process, by the integration tests.
import { Counter, Gauge, Histogram } from "prom-client";
import type { Logger } from "./log.ts";
import { createKube, withCache, type KindRef, type Kube } from "./kube/client.ts";
import { createRequestLimiter, DEFAULT_KUBE_API_LIMIT, limitRequests, type RequestLimit } from "./kube/rest.ts";
import type { Shard } from "./shard/shard.ts";
import { createEventRecorder, type EventRecorder } from "./kube/events.ts";
import { createController, type Controller, type ControllerOptions, type SecondaryWatch } from "./engine/controller.ts";
import { defaultMaxInFlightPerNamespace } from "./engine/queue.ts";
import { ANNOTATION_EXTERNAL_ID } from "./engine/holder.ts";
import { CREATE_GUARD_ANNOTATIONS } from "./engine/create-rule.ts";
import { managedReconciler, type ManagedDeps } from "./engine/managed.ts";
import { type ManagedModule } from "./engine/module.ts";
import { createInformerFactory, type InformerFactory, type SharedInformer } from "./kube/informer.ts";
import { EXTERNAL_ID_LABEL, holderLocks, type HolderLocks } from "./engine/holder.ts";
import { claimIndex, claimMetadata, claimWakeWatch, createClaimWaits, type ClaimIndex, type ClaimWaits } from "./engine/claims.ts";
import { createMetrics, type Metrics } from "./engine/metrics.ts";
import type { KubeObject, ReconcileFn } from "./engine/types.ts";
import type { KubeSource } from "./kube/kubeconfig.ts";
import * as providerConfig from "./resources/providerconfig.ts";
import { createConnector } from "./resources/provider/connector.ts";
import type { ProviderResolver } from "./resources/provider/resolver.ts";
import * as clusterProviderConfig from "./resources/clusterproviderconfig.ts";
import * as project from "./resources/project.ts";
import { managedModuleOf, type Kind, type KindDeps } from "./resources/kind.ts";
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

function apiMetrics(metrics: Metrics): (info: { operation: string; status: number | "error"; durationMs: number }) => void {
  const requests = new Counter({
    name: "keyward_api_requests_total",
    help: "Requests to the service by operation and HTTP status (error: no response)",
    labelNames: ["operation", "status"],
    registers: [metrics.registry],
  });
  const duration = new Histogram({
    name: "keyward_api_request_duration_seconds",
    help: "Duration of requests to the service by operation",
    labelNames: ["operation"],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [metrics.registry],
  });
  return (info) => {
    requests.inc({ operation: info.operation, status: String(info.status) });
    duration.observe({ operation: info.operation }, info.durationMs / 1000);
  };
}

export function createOperator(opts: OperatorOptions): Operator {
  const direct = operatorAccess(opts);
  const served = opts.kinds ?? kinds;
  const metrics = opts.metrics ?? createMetrics();
  const log = opts.log;
  const caches = operatorCaches(direct, opts, served, metrics);
  const { informers, claims } = caches;
  const kube = withCache(direct, informers);
  const events = createEventRecorder(kube, { component: "keyward", logger: log });
  const { providers, cluster } = providerPlumbing(opts, { kube, log, events, metrics });
  const { shard } = opts;
  const locks = holderLocks(direct, opts.holderNamespace ?? "default", opts.namespaces);
  const managed = managedFactory({ kube, events, log, metrics, informers, claims, shard, locks });
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
  const controllers = controllerParts.map(({ kind, parts }) =>
    createController(controllerOptions(kind, parts, { opts, kube, log, metrics, informers, claims, clusterServed: cluster !== undefined })),
  );
  const names = controllerParts.map(({ kind }) => kind.ref.kind.toLowerCase());
  const following = shard ? controllerParts.flatMap(({ kind }, i) => shard.follow(kind.ref, controllers[i] as Controller) ?? []) : [];

  return {
    metrics,
    kube,
    kinds: controllerParts.map(({ kind }) => kind.ref),
    async start() {
      await cluster?.start();
      await Promise.all(controllers.map((c) => c.start()));
      log.info({ controllers: names, namespaces: opts.namespaces }, "keyward started");
    },
    async stop() {
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
function operatorAccess(opts: OperatorOptions): Kube {
  const shared = createKube(opts.kc);
  const direct: Kube = opts.shard ? { access: opts.shard.fenced(shared.access) } : shared;
  // Every apiserver request of the operator but its watches waits its turn, fairly between kinds.
  limitRequests(direct.access, createRequestLimiter(opts.kubeApiLimit ?? DEFAULT_KUBE_API_LIMIT));
  return direct;
}

interface OperatorCaches {
  /** One list+watch and one cache per kind, shared by every controller and lookup. */
  informers: InformerFactory;
  /** Sharding: unselected informers for rules that span namespaces (every replica's objects); else `informers`. */
  everywhere: InformerFactory;
  /** Sharding: the claim rule's view of every replica's objects of the kinds with guardCreate. */
  claims: ClaimViews | undefined;
  stop(): void;
}

function operatorCaches(kube: Kube, opts: OperatorOptions, served: readonly Kind[], metrics: Metrics): OperatorCaches {
  const base = {
    namespaces: opts.namespaces,
    logger: opts.log,
    onRestart: (kind: KindRef) => metrics.informerRestarts.inc({ kind: kind.kind }),
  };
  const informers = createInformerFactory(kube, {
    ...base,
    ...(opts.shard ? { selection: opts.shard.selection(served.map((k) => k.ref)) } : {}),
  });
  const everywhere = opts.shard ? createInformerFactory(kube, base) : informers;
  const claims = opts.shard ? claimViews(kube, opts, metrics) : undefined;
  cachedObjectsGauge(metrics, served, informers);
  return {
    informers,
    everywhere,
    claims,
    stop() {
      informers.stop();
      if (everywhere !== informers) everywhere.stop();
      claims?.stop();
    },
  };
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
    clusterServed: boolean;
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
    ownLabels: [EXTERNAL_ID_LABEL],
    watches: [...(parts.watches ?? []), ...derivedWatches(kind, d.clusterServed), ...(d.claims?.watches(kind.ref) ?? [])],
    ...(opts.stopGraceMs !== undefined ? { stopGraceMs: opts.stopGraceMs } : {}),
  };
}

interface ClaimViews {
  /** The claim view of a kind with guardCreate (made on first use) and who waits for whom there. */
  of(ref: KindRef): NonNullable<ManagedDeps["claims"]>;
  /** The wake-up watch of a kind given a view (none for the others): it starts the view. */
  watches(ref: KindRef): SecondaryWatch[];
  stop(): void;
}

/**
 * Sharding: the claim rule's view of every replica's objects of each kind with guardCreate
 * (src/engine/claims.ts): cluster-wide, metadata only, trimmed to what the rule reads; made when
 * the kind's reconciler is, started by its wake-up watch. Without sharding there is none.
 */
function claimViews(kube: Kube, opts: OperatorOptions, metrics: Metrics): ClaimViews {
  const factory = createInformerFactory(kube, {
    namespaces: opts.namespaces,
    logger: opts.log,
    onRestart: (kind) => metrics.informerRestarts.inc({ kind: kind.kind }),
    metadataOnly: true,
    transform: claimMetadata,
  });
  const made = new Map<string, { kind: string; view: SharedInformer; index: ClaimIndex; waits: ClaimWaits }>();
  const id = (ref: KindRef): string => `${ref.group}/${ref.plural}`;
  new Gauge({
    name: "keyward_claim_view_objects",
    help: "Objects in the claim view of each kind with a service-assigned id (sharding: every replica's, metadata only)",
    labelNames: ["kind"],
    registers: [metrics.registry],
    collect() {
      this.reset();
      for (const parts of made.values()) this.set({ kind: parts.kind }, parts.view.size());
    },
  });
  return {
    of(ref) {
      let parts = made.get(id(ref));
      if (!parts) {
        const view = factory.get(ref);
        parts = { kind: ref.kind, view, index: claimIndex(view), waits: createClaimWaits() };
        made.set(id(ref), parts);
      }
      const { index, waits } = parts;
      return { naming: (id) => index.naming(id), wait: (key, holder) => waits.wait(key, holder), release: (key) => waits.release(key) };
    },
    watches(ref) {
      const parts = made.get(id(ref));
      return parts ? [claimWakeWatch(ref, parts.view, parts.waits)] : [];
    },
    stop: () => factory.stop(),
  };
}

/**
 * keyward_informer_cached_objects{kind}: what each kind's cache holds, read at scrape time. With
 * sharding it is this replica's share, the figure its memory follows.
 */
function cachedObjectsGauge(metrics: Metrics, served: readonly Kind[], informers: InformerFactory): void {
  new Gauge({
    name: "keyward_informer_cached_objects",
    help: "Objects in keyward's cache of each of its kinds (with sharding: this replica's share)",
    labelNames: ["kind"],
    registers: [metrics.registry],
    collect() {
      this.reset();
      for (const k of served) {
        const informer = informers.peek(k.ref);
        if (informer) this.set({ kind: k.ref.kind }, informer.size());
      }
    },
  });
}

/**
 * The connector (API clients per credential), the providerConfigRef resolver every kind connects
 * through and, when served, ClusterProviderConfigs.
 */
function providerPlumbing(
  opts: OperatorOptions,
  d: { kube: Kube; log: Logger; events: EventRecorder; metrics: Metrics },
): { providers: ProviderResolver; cluster: clusterProviderConfig.ClusterProviderConfigs | undefined } {
  const connector = createConnector({
    log: d.log,
    onRequest: apiMetrics(d.metrics),
    allowedBaseUrls: opts.allowedBaseUrls ?? [],
    ...(opts.maxResponseBytes !== undefined ? { maxResponseBytes: opts.maxResponseBytes } : {}),
    ...(opts.maxRequestTimeoutMs !== undefined ? { maxRequestTimeoutMs: opts.maxRequestTimeoutMs } : {}),
    // The fence on service calls (src/shard/fence.ts).
    ...(opts.shard ? { admit: opts.shard.holds } : {}),
  });
  let cluster: clusterProviderConfig.ClusterProviderConfigs | undefined;
  const providers = providerConfig.createProviderResolver({ kube: d.kube, log: d.log, connector, cluster: () => cluster?.connect });
  if (opts.clusterProviderConfigs) {
    cluster = clusterProviderConfig.createClusterProviderConfigs({
      kube: d.kube,
      log: d.log,
      events: d.events,
      connector,
      providers: () => providers,
      credentialsNamespace: opts.clusterProviderConfigs.credentialsNamespace,
      recheckMs: opts.resyncIntervalMs,
    });
  }
  return { providers, cluster };
}

/**
 * How old a shared listing may be for a steady resync pass: the resync spreads its passes over a
 * tenth of the interval, so half of it (at most 30 s) serves a whole resync with one or two lists.
 */
function listingTtl(resyncIntervalMs: number): number {
  return Math.min(30_000, Math.max(1, Math.floor(resyncIntervalMs / 2)));
}

/**
 * The wake-ups a kind gets from what it refers to (controller-runtime's Watches, derived from the
 * descriptor): a ProviderConfig's change (and, with ClusterProviderConfigs served, a
 * ClusterProviderConfig's or a namespace's labels) wakes its users, a Project's its dependents.
 */
function derivedWatches(kind: Kind, clusterServed: boolean): SecondaryWatch[] {
  return [
    ...(kind.refers.providerConfig ? [providerConfig.dependentsWatch] : []),
    ...(kind.refers.project ? [project.dependentsWatch] : []),
    ...(kind.refers.providerConfig && clusterServed ? [clusterProviderConfig.usersWatch, clusterProviderConfig.namespaceWatch] : []),
  ];
}
