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
import { awaitJoin, awaitNoShards, HANDSHAKE_ANNOTATION, runShardLease, shardLeasePrefix } from "./kube/shards.ts";
import { createSharder, shardMetrics, type Sharder } from "./engine/sharder.ts";
import { createOperator, type Operator } from "./operator.ts";
import { setResponseBudget } from "./api/http.ts";
import { startEndpoints, type Health } from "./endpoints.ts";
import { createMetricsAuthorizer } from "./kube/metrics-auth.ts";
import { releaseFinalizers, stopDeployment } from "./uninstall.ts";
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
  const fence = { holds: (): boolean => false };
  const operator: Operator = createOperator({
    holderNamespace: leaseNamespace,
    ...(config.sharding ? { shard: { identity, holds: () => fence.holds() } } : {}),
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
    start: () => {
      starting = startOrExit();
    },
  });
  fence.holds = () => leases.holds();
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
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  log.info("bye");
}

interface LeaseDeps {
  config: Config;
  kc: KubeSource;
  log: Logger;
  identity: string;
  leaseNamespace: string;
  operator: Operator;
  /** Starts reconciling (exits the process when that fails). */
  start: () => void;
}

interface Leases {
  /** With sharding: this replica holds its shard Lease now (renewed within its deadline, not taken over). */
  holds(): boolean;
  /** A standby replica (leader election without sharding) is ready while it waits. */
  standbyReady: boolean;
  /** Stops the sharder, and a start still waiting after joining the shards. */
  stopSharder(): void;
  /** Releases the shard Lease first (the leader hands this replica's share on at once), then leadership. */
  release(): Promise<void>;
}

/**
 * Who reconciles what: without leader election, this process everything; with it, the leader
 * everything; with sharding (docs/sharding.md), every replica its own share while it holds its
 * shard Lease, and the leader also assigns the shares.
 */
function runLeases(d: LeaseDeps): Leases {
  const { config, log } = d;
  const times = { leaseDurationMs: config.leaseDuration, renewDeadlineMs: config.renewDeadline, retryPeriodMs: config.retryPeriod };
  const exitOnLoss = (what: string) => (): void => {
    // A replica that lost its lease must not keep reconciling next to the one that took over.
    log.warn(`lost ${what}; exiting`);
    process.exit(1);
  };
  if (!config.leaderElect) {
    d.start();
    return { holds: () => true, standbyReady: false, stopSharder: () => undefined, release: () => Promise.resolve() };
  }
  const kube = createKube(d.kc);
  const lease = { kube, namespace: d.leaseNamespace, identity: d.identity, ...times, logger: log };
  // A replica reconciles only once the leader acknowledged this process's incarnation on its shard
  // Lease (the join handshake, docs/sharding.md): had this identity been taken for gone (a crash, a
  // restart under the same pod name), a sharder pass may still be moving its objects away, and the
  // leader acknowledges only after every pass planned before it saw this incarnation has ended.
  const joining = new AbortController();
  const incarnation = randomUUID();
  const shardLease = config.sharding
    ? runShardLease({
        ...lease,
        group: config.leaderElectionId,
        incarnation,
        onJoined: () => {
          log.info({ incarnation }, "joined the shards; reconciling once the leader acknowledges this incarnation");
          void awaitJoin({
            kube,
            namespace: d.leaseNamespace,
            shardLease: `${shardLeasePrefix(config.leaderElectionId)}${d.identity}`,
            leaderLease: config.leaderElectionId,
            incarnation,
            pollMs: config.retryPeriod,
            fallbackMs: config.leaseDuration + config.retryPeriod,
            signal: joining.signal,
            logger: log,
          }).then((joined) => {
            if (joined) d.start();
          });
        },
        onLost: exitOnLoss("the shard lease"),
      })
    : undefined;
  let sharder: Sharder | undefined;
  const election = runLeaderElection({
    ...lease,
    name: config.leaderElectionId,
    // Its replicas wait for this leader's acknowledgement of their joins (shards.ts).
    ...(config.sharding ? { annotations: { [HANDSHAKE_ANNOTATION]: d.identity } } : {}),
    onStartedLeading: () => {
      // Sharding turned off while sharded replicas still run: they may still be reconciling their
      // shares, so this leader waits until the sharding marker they keep alive is dead.
      if (!config.sharding) {
        void awaitNoShards({
          kube,
          namespace: d.leaseNamespace,
          group: config.leaderElectionId,
          leaseDurationMs: config.leaseDuration,
          pollMs: config.retryPeriod,
          signal: joining.signal,
          logger: log,
        }).then((clear) => {
          if (clear) d.start();
        });
        return;
      }
      // Cluster-scoped kinds are the leader's (docs/sharding.md). Losing the leader Lease ends the
      // process (onStoppedLeading), so this is never taken back.
      d.operator.lead();
      sharder = createSharder({
        kube,
        kinds: d.operator.kinds,
        namespaces: config.namespaces,
        leaseNamespace: d.leaseNamespace,
        leasePrefix: shardLeasePrefix(config.leaderElectionId),
        pollMs: config.retryPeriod,
        // Gone for good: a Lease nobody renewed for 20 lease durations (a released one at once).
        staleAfterMs: 20 * config.leaseDuration,
        logger: log,
        onPass: shardMetrics(d.operator.metrics.registry),
      });
      sharder.start().catch((err: unknown) => {
        log.fatal({ err: String(err) }, "could not start the sharder");
        process.exit(1);
      });
    },
    onStoppedLeading: exitOnLoss("leadership"),
  });
  return {
    holds: () => shardLease?.holds() ?? true,
    standbyReady: !config.sharding,
    stopSharder: () => {
      joining.abort();
      sharder?.stop();
    },
    async release() {
      await shardLease?.stop();
      await election.stop();
    },
  };
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
