// keyward's process: configuration, logger, health and metrics endpoints, leader election,
// start, and graceful shutdown on SIGTERM (stop taking work, finish in-flight reconciles, exit).
import { once } from "node:events";
import { collectDefaultMetrics } from "prom-client";
import { loadConfig, usage, type Config } from "./config.ts";
import { createLogger, type Logger } from "./log.ts";
import { guardUncaughtExceptions } from "./process-guard.ts";
import { loadKubeConfig, createKube } from "./kube/client.ts";
import type { KubeSource } from "./kube/kubeconfig.ts";
import { runLeaderElection } from "./kube/lease.ts";
import { awaitNoShards } from "./shard/leases.ts";
import { shardReplica, type ShardReplica } from "./shard/replica.ts";
import { createOperator, type Operator } from "./operator.ts";
import { setResponseBudget } from "./api/http.ts";
import { startEndpoints, type Health } from "./endpoints.ts";
import { createMetricsAuthorizer } from "./kube/metrics-auth.ts";
import { releaseFinalizers, stopDeployment } from "./uninstall.ts";
import { startConversionWebhook, type ConversionWebhook } from "./webhook/webhook.ts";
import { readFileSync, existsSync } from "node:fs";
import { hostname } from "node:os";
import { randomUUID } from "node:crypto";

function podNamespace(): string {
  const path = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";
  return existsSync(path) ? readFileSync(path, "utf8").trim() : "default";
}

async function run(config: Config, log: Logger): Promise<void> {
  const loaded = loadKubeConfig({
    ...(config.kubeconfig ? { kubeconfigPath: config.kubeconfig } : {}),
    execTimeoutMs: config.execPluginTimeout,
  });
  const kc = { ...loaded, requestTimeoutMs: config.kubeRequestTimeout };
  // POD_NAME is unique in a cluster; without it, a random suffix keeps two processes on one host
  // from both believing they hold a lease.
  // It is also a label value and a Lease name with sharding: lowercase, at most 63 characters.
  const identity =
    config.identity ??
    `${hostname()
      .toLowerCase()
      .replace(/[^a-z0-9-]/g, "-")
      .slice(0, 50)}-${randomUUID().slice(0, 8)}`;
  const leaseNamespace = config.leaderElectionNamespace ?? podNamespace();
  // With sharding nothing is sent unless this replica holds its shard Lease (docs/sharding.md).
  const replica = config.sharding ? replicaOf(config, kc, identity, leaseNamespace, log) : undefined;
  const operator: Operator = createOperator({
    holderNamespace: leaseNamespace,
    ...(replica ? { shard: replica.shard } : {}),
    kc,
    log,
    namespaces: config.namespaces,
    concurrency: config.concurrency,
    ...(config.maxInFlightPerNamespace !== undefined ? { maxInFlightPerNamespace: config.maxInFlightPerNamespace } : {}),
    maxRequestTimeoutMs: config.maxRequestTimeout,
    kubeApiLimit: { qps: config.kubeApiQps, burst: config.kubeApiBurst },
    resyncIntervalMs: config.resyncInterval,
    // In-flight reconciles get most of the shutdown budget; the rest is for the lease and exit.
    stopGraceMs: Math.max(1_000, config.shutdownTimeout - 5_000),
    // ClusterProviderConfigs read their Secrets in one namespace: the flag's, else keyward's own.
    allowedBaseUrls: config.allowedBaseUrls,
    accessTokenNamespaces: config.accessTokenNamespaces,
    maxResponseBytes: config.maxResponseBytes,
    ...(config.clusterProviderConfigs
      ? { clusterProviderConfigs: { credentialsNamespace: config.credentialsNamespace ?? podNamespace() } }
      : {}),
  });
  // The process's own figures (resident memory, heap, handles, event-loop delay, GC), here and not
  // in createOperator: one process, one set, however many operators a test starts in its own.
  collectDefaultMetrics({ register: operator.metrics.registry });
  const health: Health = { ready: false };
  const servers = await startEndpoints({
    metricsPort: config.metricsPort,
    healthPort: config.healthPort,
    bindAddress: config.bindAddress,
    registry: operator.metrics.registry,
    health,
    ...(config.metricsAuth === "kubernetes" ? { authorizer: createMetricsAuthorizer({ access: kc }) } : {}),
  });
  const webhook = conversionWebhook(config, kc, log);
  // Listening before anything starts, so a SIGTERM during start is a graceful stop too.
  const stopSignal = Promise.race([once(process, "SIGTERM").then(() => "SIGTERM"), once(process, "SIGINT").then(() => "SIGINT")]);
  let starting: Promise<void> | undefined;
  let started = false;
  const startOperator = async (): Promise<void> => {
    await operator.start();
    started = true;
    health.ready = true;
  };

  const startOrExit = (): Promise<void> =>
    startOperator().catch((err: unknown) => {
      log.fatal({ err: String(err) }, "could not start");
      process.exit(1);
    });

  const leases = runLeases({
    config,
    kc,
    log,
    identity,
    leaseNamespace,
    operator,
    replica,
    start: () => {
      starting = startOrExit();
    },
  });
  if (leases.standbyReady) health.ready = true; // a standby replica is healthy and ready; it just does not reconcile

  const signal = await stopSignal;
  log.info({ signal }, "shutting down: no new work, finishing in-flight reconciles");
  health.ready = false;
  const timer = setTimeout(() => {
    log.error("shutdown timed out; exiting");
    process.exit(1);
  }, config.shutdownTimeout);
  timer.unref();
  // A start still in progress finishes first, so its controllers are stopped, not orphaned.
  if (starting) await starting.catch(() => undefined);
  leases.stopSharder();
  if (started) await operator.stop();
  await leases.release();
  await Promise.all([...servers.map((s) => new Promise((resolve) => s.close(resolve))), webhook?.stop()]);
  log.info("bye");
}

/** The conversion webhook (src/webhook) when configured: every replica serves it, before and apart from leader election. */
function conversionWebhook(config: Config, kc: KubeSource, log: Logger): ConversionWebhook | undefined {
  const common = { kube: createKube(kc), log, port: config.webhookPort, bindAddress: config.bindAddress };
  if (config.webhookCertDir) return startConversionWebhook({ ...common, certDir: config.webhookCertDir });
  if (!config.webhookService) return undefined;
  return startConversionWebhook({
    ...common,
    selfSigned: { namespace: podNamespace(), service: config.webhookService, secretName: config.webhookSecret },
  });
}

interface LeaseDeps {
  config: Config;
  kc: KubeSource;
  log: Logger;
  identity: string;
  leaseNamespace: string;
  operator: Operator;
  /** With sharding: this replica's membership (src/shard/replica.ts). */
  replica: ShardReplica | undefined;
  /** Starts reconciling (exits the process when that fails). */
  start: () => void;
}

interface Leases {
  /** A standby replica (leader election without sharding) is ready while it waits. */
  standbyReady: boolean;
  /** Stops the sharder, and a start still waiting after joining the shards. */
  stopSharder(): void;
  /** Releases the shard Lease first (the leader hands this replica's share on at once), then leadership. */
  release(): Promise<void>;
}

/** This sharded replica: its Shard before the operator, its Leases through the process's own access. */
function replicaOf(config: Config, kc: KubeSource, identity: string, leaseNamespace: string, log: Logger): ShardReplica {
  const group = config.leaderElectionId;
  return shardReplica({
    kube: createKube(kc),
    leaseNamespace,
    group,
    identity,
    namespaces: config.namespaces,
    ...leaseTimes(config),
    logger: log,
  });
}

function leaseTimes(config: Config): { leaseDurationMs: number; renewDeadlineMs: number; retryPeriodMs: number } {
  return { leaseDurationMs: config.leaseDuration, renewDeadlineMs: config.renewDeadline, retryPeriodMs: config.retryPeriod };
}

/**
 * Who reconciles what: without leader election, this process everything; with it, the leader
 * everything; with sharding (docs/sharding.md), every replica its own share while it holds its
 * shard Lease, and the leader also assigns the shares (src/shard/replica.ts).
 */
function runLeases(d: LeaseDeps): Leases {
  const { config, log } = d;
  const exitOnLoss = (what: string): void => {
    // A replica that lost its lease must not keep reconciling next to the one that took over.
    log.warn(`lost ${what}; exiting`);
    process.exit(1);
  };
  if (!config.leaderElect) {
    d.start();
    return { standbyReady: false, stopSharder: () => undefined, release: () => Promise.resolve() };
  }
  if (d.replica) {
    const membership = d.replica.run({
      kinds: d.operator.kinds,
      registry: d.operator.metrics.registry,
      start: d.start,
      lost: exitOnLoss,
      fatal: (err) => {
        log.fatal({ err: String(err) }, "could not start the sharder");
        process.exit(1);
      },
    });
    return { standbyReady: false, stopSharder: () => membership.stop(), release: () => membership.release() };
  }
  const kube = createKube(d.kc);
  const waiting = new AbortController();
  const election = runLeaderElection({
    kube,
    namespace: d.leaseNamespace,
    identity: d.identity,
    ...leaseTimes(config),
    logger: log,
    name: config.leaderElectionId,
    onStartedLeading: () => {
      // Sharding turned off while sharded replicas still run: they may still be reconciling their
      // shares, so this leader waits until the sharding marker they keep alive is dead.
      void awaitNoShards({
        kube,
        namespace: d.leaseNamespace,
        group: config.leaderElectionId,
        leaseDurationMs: config.leaseDuration,
        pollMs: config.retryPeriod,
        signal: waiting.signal,
        logger: log,
      }).then((clear) => {
        if (clear) d.start();
      });
    },
    onStoppedLeading: () => exitOnLoss("leadership"),
  });
  return { standbyReady: true, stopSharder: () => waiting.abort(), release: () => election.stop() };
}

/**
 * `keyward uninstall [flags]`: releases keyward's finalizers in the namespaces the flags name
 * (src/uninstall.ts); with --stop-deployment (the chart's pre-delete hook) it first scales
 * keyward's Deployment to 0 and waits for its pods to go.
 */
async function uninstall(config: Config, log: Logger): Promise<void> {
  const kc = loadKubeConfig(config.kubeconfig ? { kubeconfigPath: config.kubeconfig } : {});
  const kube = createKube(kc);
  if (config.stopDeployment) await stopDeployment(kube, config.stopDeployment, log);
  const released = await releaseFinalizers({
    kube,
    namespaces: config.namespaces,
    clusterProviderConfigs: config.clusterProviderConfigs,
    log,
  });
  log.info({ released: released.length }, "released keyward's finalizers");
}

export async function main(argv: string[]): Promise<void> {
  const mode = argv[0] === "uninstall" ? "uninstall" : "run";
  if (mode === "uninstall") argv = argv.slice(1);
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(`${usage}\n`);
    return;
  }
  let config: Config;
  try {
    config = loadConfig(argv, process.env);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${usage}\n`);
    process.exitCode = 2;
    return;
  }
  const log = createLogger({ level: config.logLevel });
  guardUncaughtExceptions(log);
  if (mode === "uninstall") await uninstall(config, log);
  else {
    // One budget for the response bodies of every service client of this process.
    setResponseBudget(config.responseBudgetBytes, config.maxResponseBytes);
    await run(config, log);
  }
}

if (import.meta.url === `file://${process.argv[1] ?? ""}` || process.argv[1]?.endsWith("main.ts") || process.argv[1]?.endsWith("main.js")) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`keyward: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
