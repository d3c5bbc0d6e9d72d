// Wires the kinds into controllers: one controller per kind, one reconcile per object key.
// Used by main.ts and, in-process, by the integration tests.
import { Counter, Histogram } from "prom-client";
import type { Logger } from "./log.ts";
import { createKube, withCache, type Kube } from "./kube/client.ts";
import { createEventRecorder } from "./kube/events.ts";
import { createController } from "./engine/controller.ts";
import { ANNOTATION_CREATE_PENDING, ANNOTATION_CREATE_SUCCEEDED, managedReconciler, type ManagedModule } from "./engine/managed.ts";
import { createInformerFactory } from "./kube/informer.ts";
import { createMetrics, type Metrics } from "./engine/metrics.ts";
import type { KubeObject, ReconcileFn } from "./engine/types.ts";
import type { KubeSource } from "./kube/kubeconfig.ts";
import * as providerConfig from "./resources/providerconfig.ts";
import * as clusterProviderConfig from "./resources/clusterproviderconfig.ts";
import * as project from "./resources/project.ts";
import * as projectMembership from "./resources/projectmembership.ts";
import * as accessToken from "./resources/accesstoken.ts";
import * as certificateProfile from "./resources/certificateprofile.ts";
import * as secretSync from "./resources/secretsync.ts";

export interface OperatorOptions {
  /** keyward's own access (loadKubeConfig), or a kubeconfig another library loaded. */
  kc: KubeSource;
  log: Logger;
  namespaces: string[];
  concurrency: number;
  resyncIntervalMs: number;
  metrics?: Metrics;
  /** How long stop() lets in-flight reconciles run before aborting them. */
  stopGraceMs?: number;
  /** Serve ClusterProviderConfigs (watched cluster-wide), reading their Secrets from `credentialsNamespace` only. */
  clusterProviderConfigs?: { credentialsNamespace: string };
  /** The base URLs provider configs may name (--allowed-base-urls); empty allows every URL. */
  allowedBaseUrls?: readonly string[];
  /** The largest service response body read (--max-response-bytes); default the client's 16 MiB. */
  maxResponseBytes?: number;
}

export interface Operator {
  metrics: Metrics;
  kube: Kube;
  start(): Promise<void>;
  stop(): Promise<void>;
}

interface ControllerSpec {
  name: string;
  kind: typeof project.ref;
  reconcile: ReconcileFn;
  watches?: Parameters<typeof createController>[0]["watches"];
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
  const direct = createKube(opts.kc);
  const metrics = opts.metrics ?? createMetrics();
  const log = opts.log;
  // One list+watch and one cache per kind, shared by every controller and lookup.
  const informers = createInformerFactory(direct, {
    namespaces: opts.namespaces,
    logger: log,
    onRestart: (kind) => metrics.informerRestarts.inc({ kind: kind.kind }),
  });
  const kube = withCache(direct, informers);
  const events = createEventRecorder(kube, { component: "keyward", logger: log });
  const connector = providerConfig.createConnector({
    log,
    onRequest: apiMetrics(metrics),
    allowedBaseUrls: opts.allowedBaseUrls ?? [],
    ...(opts.maxResponseBytes !== undefined ? { maxResponseBytes: opts.maxResponseBytes } : {}),
  });
  let cluster: clusterProviderConfig.ClusterProviderConfigs | undefined;
  const providers = providerConfig.createProviderResolver({ kube, log, connector, cluster: () => cluster?.connect });
  if (opts.clusterProviderConfigs) {
    const { credentialsNamespace } = opts.clusterProviderConfigs;
    cluster = clusterProviderConfig.createClusterProviderConfigs({
      kube,
      log,
      events,
      connector,
      providers: () => providers,
      credentialsNamespace,
      recheckMs: opts.resyncIntervalMs,
    });
  }
  const managed = <S, T, C>(module: ManagedModule<S, T, C>, peers?: () => KubeObject[]): ReconcileFn =>
    managedReconciler(module, { kube, events, log, metrics, cache: informers.get(module.ref), ...(peers ? { peers } : {}) });

  // Filled once the controllers exist: a membership compares itself with the others it knows.
  let membershipPeers: () => KubeObject[] = () => [];
  const specs = controllerSpecs({
    kube,
    events,
    log,
    providers,
    metrics,
    managed,
    resyncIntervalMs: opts.resyncIntervalMs,
    membershipPeers: () => membershipPeers(),
    cluster,
  });

  const controllers = specs.map((s) =>
    createController({
      name: s.name,
      kube,
      kind: s.kind,
      reconcile: s.reconcile,
      concurrency: opts.concurrency,
      resyncIntervalMs: opts.resyncIntervalMs,
      namespaces: opts.namespaces,
      logger: log.child({ controller: s.name }),
      metrics,
      informers,
      ownAnnotations: [ANNOTATION_CREATE_PENDING, ANNOTATION_CREATE_SUCCEEDED],
      ...(s.watches ? { watches: s.watches } : {}),
      ...(opts.stopGraceMs !== undefined ? { stopGraceMs: opts.stopGraceMs } : {}),
    }),
  );

  const memberships = controllers[specs.findIndex((s) => s.name === "projectmembership")];
  if (memberships) membershipPeers = () => memberships.list();

  return {
    metrics,
    kube,
    async start() {
      await cluster?.start();
      await Promise.all(controllers.map((c) => c.start()));
      log.info({ controllers: specs.map((s) => s.name), namespaces: opts.namespaces }, "keyward started");
    },
    async stop() {
      await Promise.all(controllers.map((c) => c.stop()));
      informers.stop();
      cluster?.stop();
      await events.flush();
      log.info("keyward stopped");
    },
  };
}

interface SpecDeps {
  kube: Kube;
  events: ReturnType<typeof createEventRecorder>;
  log: Logger;
  providers: providerConfig.ProviderResolver;
  metrics: Metrics;
  managed: <S, T, C>(module: ManagedModule<S, T, C>, peers?: () => KubeObject[]) => ReconcileFn;
  resyncIntervalMs: number;
  membershipPeers: () => KubeObject[];
  cluster: clusterProviderConfig.ClusterProviderConfigs | undefined;
}

/**
 * How old a shared listing may be for a steady resync pass: the resync spreads its passes over a
 * tenth of the interval, so half of it (at most 30 s) serves a whole resync with one or two lists.
 */
function listingTtl(resyncIntervalMs: number): number {
  return Math.min(30_000, Math.max(1, Math.floor(resyncIntervalMs / 2)));
}

/** One controller per kind, with the secondary watches that requeue it. */
function controllerSpecs(d: SpecDeps): ControllerSpec[] {
  // With ClusterProviderConfigs served, a change of one, or of a namespace's labels, re-evaluates its users.
  const cluster = d.cluster ? [clusterProviderConfig.usersWatch, clusterProviderConfig.namespaceWatch] : [];
  const clusterController: ControllerSpec[] = d.cluster
    ? [{ name: "clusterproviderconfig", kind: clusterProviderConfig.ref, reconcile: d.cluster.reconcile }]
    : [];
  return [
    ...clusterController,
    {
      name: "providerconfig",
      kind: providerConfig.ref,
      reconcile: providerConfig.providerConfigReconciler({
        kube: d.kube,
        providers: d.providers,
        events: d.events,
        log: d.log,
        recheckMs: d.resyncIntervalMs,
        users: [project.ref, projectMembership.ref, secretSync.ref, accessToken.ref, certificateProfile.ref],
      }),
      watches: [providerConfig.credentialsSecretWatch],
    },
    {
      name: "project",
      kind: project.ref,
      reconcile: d.managed(
        project.projectModule({
          providers: d.providers,
          listingTtlMs: listingTtl(d.resyncIntervalMs),
          dependentKinds: [secretSync.ref, projectMembership.ref, certificateProfile.ref],
        }),
      ),
      watches: [providerConfig.dependentsWatch, ...cluster],
    },
    {
      name: "projectmembership",
      kind: projectMembership.ref,
      reconcile: d.managed(
        projectMembership.projectMembershipModule({ providers: d.providers, listingTtlMs: listingTtl(d.resyncIntervalMs) }),
        d.membershipPeers,
      ),
      watches: [providerConfig.dependentsWatch, project.dependentsWatch, ...cluster],
    },
    {
      name: "secretsync",
      kind: secretSync.ref,
      reconcile: d.managed(secretSync.secretSyncModule({ providers: d.providers, metrics: d.metrics })),
      watches: [providerConfig.dependentsWatch, project.dependentsWatch, ...cluster],
    },
    {
      name: "accesstoken",
      kind: accessToken.ref,
      reconcile: d.managed(accessToken.accessTokenModule({ providers: d.providers, metrics: d.metrics })),
      watches: [accessToken.secretWatch, providerConfig.dependentsWatch, ...cluster],
    },
    {
      name: "certificateprofile",
      kind: certificateProfile.ref,
      reconcile: d.managed(
        certificateProfile.certificateProfileModule({
          providers: d.providers,
          metrics: d.metrics,
          listingTtlMs: listingTtl(d.resyncIntervalMs),
        }),
      ),
      watches: [providerConfig.dependentsWatch, ...cluster],
    },
  ];
}
