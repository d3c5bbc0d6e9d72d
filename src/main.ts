// keyward's process: configuration, logger, health and metrics endpoints, leader election,
// start, and graceful shutdown on SIGTERM (stop taking work, finish in-flight reconciles, exit).
import { once } from "node:events";
import { loadConfig, usage, type Config } from "./config.ts";
import { createLogger, type Logger } from "./log.ts";
import { loadKubeConfig, createKube } from "./kube/client.ts";
import { runLeaderElection } from "./kube/lease.ts";
import { createOperator, type Operator } from "./operator.ts";
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
  const operator: Operator = createOperator({
    kc,
    log,
    namespaces: config.namespaces,
    concurrency: config.concurrency,
    resyncIntervalMs: config.resyncInterval,
    // In-flight reconciles get most of the shutdown budget; the rest is for the lease and exit.
    stopGraceMs: Math.max(1_000, config.shutdownTimeout - 5_000),
    // ClusterProviderConfigs read their Secrets in one namespace: the flag's, else keyward's own.
    allowedBaseUrls: config.allowedBaseUrls,
    maxResponseBytes: config.maxResponseBytes,
    ...(config.clusterProviderConfigs
      ? { clusterProviderConfigs: { credentialsNamespace: config.credentialsNamespace ?? podNamespace() } }
      : {}),
  });
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
  let election: { stop(): Promise<void> } | undefined;
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

  if (config.leaderElect) {
    election = runLeaderElection({
      kube: createKube(kc),
      namespace: config.leaderElectionNamespace ?? podNamespace(),
      name: config.leaderElectionId,
      // POD_NAME is unique in a cluster; without it, a random suffix keeps two processes on
      // one host from both believing they hold the lease.
      identity: config.identity ?? `${hostname()}-${randomUUID().slice(0, 8)}`,
      leaseDurationMs: config.leaseDuration,
      renewDeadlineMs: config.renewDeadline,
      retryPeriodMs: config.retryPeriod,
      logger: log,
      onStartedLeading: () => {
        starting = startOrExit();
      },
      onStoppedLeading: () => {
        // A replica that lost its lease must not keep reconciling next to the new leader.
        log.warn("lost leadership; exiting");
        process.exit(1);
      },
    });
    health.ready = true; // a standby replica is healthy and ready; it just does not reconcile
  } else {
    starting = startOrExit();
  }

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
  if (started) await operator.stop();
  if (election) await election.stop();
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  log.info("bye");
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
  if (mode === "uninstall") await uninstall(config, log);
  else await run(config, log);
}

if (import.meta.url === `file://${process.argv[1] ?? ""}` || process.argv[1]?.endsWith("main.ts") || process.argv[1]?.endsWith("main.js")) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`keyward: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
