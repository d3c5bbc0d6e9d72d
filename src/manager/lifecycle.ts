// The manager's lifecycle: health and metrics endpoints up before anything starts, reconciling
// started when the leases say so, and on SIGTERM or SIGINT a graceful stop within the shutdown
// budget — no new work, in-flight reconciles finished, then the Leases released (the shard Lease
// first, then leadership) and the endpoints closed.
import { once } from "node:events";
import type { Config } from "../config.ts";
import type { Logger } from "../log.ts";
import type { KubeAccess } from "../kube/kubeconfig.ts";
import { createMetricsAuthorizer } from "../kube/metrics-auth.ts";
import { startEndpoints, type Health } from "../endpoints.ts";
import type { Operator } from "../operator.ts";
import type { Leases } from "./leases.ts";

export interface LifecycleDeps {
  config: Config;
  log: Logger;
  kc: KubeAccess;
  operator: Operator;
  /** Takes the leases; `start` starts reconciling once they allow it. */
  leases: (start: () => void) => Leases;
}

export async function runLifecycle(d: LifecycleDeps): Promise<void> {
  const { config, log } = d;
  const health: Health = { ready: false };
  const servers = await startEndpoints({
    metricsPort: config.metricsPort,
    healthPort: config.healthPort,
    bindAddress: config.bindAddress,
    registry: d.operator.metrics.registry,
    health,
    ...(config.metricsAuth === "kubernetes" ? { authorizer: createMetricsAuthorizer({ access: d.kc }) } : {}),
  });
  // Listening before anything starts, so a SIGTERM during start is a graceful stop too.
  const stopSignal = Promise.race([once(process, "SIGTERM").then(() => "SIGTERM"), once(process, "SIGINT").then(() => "SIGINT")]);
  const starter = operatorStarter(d.operator, health, log);
  const leases = d.leases(() => starter.start());
  if (leases.standbyReady) health.ready = true; // a standby replica is healthy and ready; it just does not reconcile

  const signal = await stopSignal;
  log.info({ signal }, "shutting down: no new work, finishing in-flight reconciles");
  health.ready = false;
  await shutdown(config, log, { starter, leases, servers });
}

/**
 * The release order: the start still in progress finishes (so its controllers are stopped, not
 * orphaned), the sharder stops, the operator stops within its grace, then the Leases go (the shard
 * Lease first, then leadership) and the endpoints close; past the shutdown budget, the process exits.
 */
async function shutdown(
  config: Config,
  log: Logger,
  d: { starter: OperatorStarter; leases: Leases; servers: { close(cb: () => void): unknown }[] },
): Promise<void> {
  const timer = setTimeout(() => {
    log.error("shutdown timed out; exiting");
    process.exit(1);
  }, config.shutdownTimeout);
  timer.unref();
  await d.starter.settled();
  d.leases.stopSharder();
  await d.starter.stop();
  await d.leases.release();
  await Promise.all(d.servers.map((s) => new Promise<void>((resolve) => s.close(resolve))));
  log.info("bye");
}

interface OperatorStarter {
  start(): void;
  /** Resolves once a start in progress has finished (or failed). */
  settled(): Promise<void>;
  /** Stops the operator if it started. */
  stop(): Promise<void>;
}

/** Starts the operator once (exiting the process when that fails), and stops it if it started. */
function operatorStarter(operator: Operator, health: Health, log: Logger): OperatorStarter {
  let starting: Promise<void> | undefined;
  let started = false;
  return {
    start() {
      starting = operator.start().then(
        () => {
          started = true;
          health.ready = true;
        },
        (err: unknown) => {
          log.fatal({ err: String(err) }, "could not start");
          process.exit(1);
        },
      );
    },
    async settled() {
      if (starting) await starting.catch(() => undefined);
    },
    async stop() {
      if (started) await operator.stop();
    },
  };
}
