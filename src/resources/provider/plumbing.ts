// The provider plumbing of one operator: the connector (one API client per config and
// credential), the providerConfigRef resolver every kind connects through and, when served,
// ClusterProviderConfigs. The one file of provider/ that knows the two provider kinds: it joins
// what each supplies (ProviderConfig's resolver, ClusterProviderConfig's connect) over one
// connector, so the entry point builds the plumbing without naming a kind.
import { Counter, Histogram } from "prom-client";
import type { Logger } from "../../log.ts";
import type { Kube } from "../../kube/client.ts";
import type { EventRecorder } from "../../kube/events.ts";
import type { Metrics } from "../../engine/metrics.ts";
import { createProviderResolver } from "../providerconfig.ts";
import { createClusterProviderConfigs, type ClusterProviderConfigs } from "../clusterproviderconfig.ts";
import { createConnector } from "./connector.ts";
import type { ProviderResolver } from "./resolver.ts";

export interface PlumbingOptions {
  /** The base URLs provider configs may name (--allowed-base-urls); empty: each Secret's annotation says. */
  allowedBaseUrls?: readonly string[];
  /** The largest service response body read (--max-response-bytes); default the client's. */
  maxResponseBytes?: number;
  /** The ceiling on a provider config's spec.timeoutSeconds (--max-request-timeout), in ms. */
  maxRequestTimeoutMs?: number;
  /** Serve ClusterProviderConfigs, reading their Secrets from `credentialsNamespace` only. */
  clusterProviderConfigs?: { credentialsNamespace: string };
  /** How often a ClusterProviderConfig's connection is checked again. */
  resyncIntervalMs: number;
  /** The fence on service calls (sharding): no call is sent while it does not admit. */
  admit?: () => boolean;
}

export interface ProviderPlumbing {
  providers: ProviderResolver;
  /** ClusterProviderConfigs, when served. */
  cluster: ClusterProviderConfigs | undefined;
}

export function providerPlumbing(
  opts: PlumbingOptions,
  d: { kube: Kube; log: Logger; events: EventRecorder; metrics: Metrics },
): ProviderPlumbing {
  const connector = createConnector({
    log: d.log,
    onRequest: apiMetrics(d.metrics),
    allowedBaseUrls: opts.allowedBaseUrls ?? [],
    ...(opts.maxResponseBytes !== undefined ? { maxResponseBytes: opts.maxResponseBytes } : {}),
    ...(opts.maxRequestTimeoutMs !== undefined ? { maxRequestTimeoutMs: opts.maxRequestTimeoutMs } : {}),
    ...(opts.admit ? { admit: opts.admit } : {}),
  });
  let cluster: ClusterProviderConfigs | undefined;
  const providers = createProviderResolver({ kube: d.kube, log: d.log, connector, cluster: () => cluster?.connect });
  if (opts.clusterProviderConfigs) {
    cluster = createClusterProviderConfigs({
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
