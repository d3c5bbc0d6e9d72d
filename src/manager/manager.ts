// The manager (controller-runtime's Manager): one object for one keyward process. It owns the
// apiserver access, the operator built over its caches (src/operator.ts, src/manager/caches.ts),
// the metrics, the leases (leader election and, with sharding, this replica's membership:
// leases.ts) and the lifecycle (lifecycle.ts: start, stop with its grace, the release order).
import { collectDefaultMetrics } from "prom-client";
import type { Config } from "../config.ts";
import type { Logger } from "../log.ts";
import { loadKubeConfig, podNamespace } from "../kube/client.ts";
import type { KubeSource } from "../kube/kubeconfig.ts";
import type { ShardReplica } from "../shard/replica.ts";
import { createOperator, type Operator, type OperatorOptions } from "../operator.ts";
import { processIdentity, replicaOf, runLeases } from "./leases.ts";
import { runLifecycle } from "./lifecycle.ts";

export interface Manager {
  operator: Operator;
  /** Runs until SIGTERM or SIGINT, then stops gracefully. */
  run(): Promise<void>;
}

export function createManager(config: Config, log: Logger): Manager {
  const loaded = loadKubeConfig({
    ...(config.kubeconfig ? { kubeconfigPath: config.kubeconfig } : {}),
    execTimeoutMs: config.execPluginTimeout,
  });
  const kc = { ...loaded, requestTimeoutMs: config.kubeRequestTimeout };
  const identity = processIdentity(config);
  const leaseNamespace = config.leaderElectionNamespace ?? podNamespace();
  // With sharding nothing is sent unless this replica holds its shard Lease (docs/sharding.md).
  const replica = config.sharding ? replicaOf(config, kc, identity, leaseNamespace, log) : undefined;
  const operator = createOperator(operatorOptions(config, { kc, log, leaseNamespace, replica }));
  // The process's own figures (resident memory, heap, handles, event-loop delay, GC), here and not
  // in createOperator: one process, one set, however many operators a test starts in its own.
  collectDefaultMetrics({ register: operator.metrics.registry });
  return {
    operator,
    run: () =>
      runLifecycle({
        config,
        log,
        kc,
        operator,
        leases: (start) => runLeases({ config, kc, log, identity, leaseNamespace, operator, replica, start }),
      }),
  };
}

function operatorOptions(
  config: Config,
  d: { kc: KubeSource; log: Logger; leaseNamespace: string; replica: ShardReplica | undefined },
): OperatorOptions {
  return {
    holderNamespace: d.leaseNamespace,
    ...(d.replica ? { shard: d.replica.shard } : {}),
    kc: d.kc,
    log: d.log,
    namespaces: config.namespaces,
    concurrency: config.concurrency,
    ...(config.maxInFlightPerNamespace !== undefined ? { maxInFlightPerNamespace: config.maxInFlightPerNamespace } : {}),
    maxRequestTimeoutMs: config.maxRequestTimeout,
    kubeApiLimit: { qps: config.kubeApiQps, burst: config.kubeApiBurst },
    resyncIntervalMs: config.resyncInterval,
    // In-flight reconciles get most of the shutdown budget; the rest is for the lease and exit.
    stopGraceMs: Math.max(1_000, config.shutdownTimeout - 5_000),
    allowedBaseUrls: config.allowedBaseUrls,
    accessTokenNamespaces: config.accessTokenNamespaces,
    maxResponseBytes: config.maxResponseBytes,
    // ClusterProviderConfigs read their Secrets in one namespace: the flag's, else keyward's own.
    ...(config.clusterProviderConfigs
      ? { clusterProviderConfigs: { credentialsNamespace: config.credentialsNamespace ?? podNamespace() } }
      : {}),
  };
}
