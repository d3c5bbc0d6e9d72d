// The manager's leases: who reconciles what. Without leader election, this process everything;
// with it, the leader everything; with sharding (docs/sharding.md), every replica its own share
// while it holds its shard Lease, and the leader also assigns the shares (src/shard/replica.ts).
// The Leases go through the process's own access, never the operator's fenced one.
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Config } from "../config.ts";
import type { Logger } from "../log.ts";
import { createKube } from "../kube/client.ts";
import type { KubeSource } from "../kube/kubeconfig.ts";
import { runLeaderElection, type LeaseTimes } from "../kube/lease.ts";
import { awaitNoShards } from "../shard/leases.ts";
import { shardReplica, type ShardReplica } from "../shard/replica.ts";
import type { Operator } from "../operator.ts";

export interface LeaseDeps {
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

export interface Leases {
  /** A standby replica (leader election without sharding) is ready while it waits. */
  standbyReady: boolean;
  /** Stops the sharder, and a start still waiting after joining the shards. */
  stopSharder(): void;
  /** Releases the shard Lease first (the leader hands this replica's share on at once), then leadership. */
  release(): Promise<void>;
}

/**
 * This process's name on its Leases: --identity (POD_NAME in the chart, unique in a cluster), else
 * the host name with a random suffix, so two processes on one host never both believe they hold a
 * lease. With sharding it is also a label value and a Lease name: lowercase, at most 63 characters.
 */
export function processIdentity(config: Pick<Config, "identity">): string {
  if (config.identity !== undefined) return config.identity;
  const host = hostname()
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, "-")
    .slice(0, 50);
  return `${host}-${randomUUID().slice(0, 8)}`;
}

/** This sharded replica: its Shard before the operator, its Leases through the process's own access. */
export function replicaOf(config: Config, kc: KubeSource, identity: string, leaseNamespace: string, log: Logger): ShardReplica {
  return shardReplica({
    kube: createKube(kc),
    leaseNamespace,
    group: config.leaderElectionId,
    identity,
    namespaces: config.namespaces,
    ...leaseTimes(config),
    logger: log,
  });
}

function leaseTimes(config: Config): LeaseTimes {
  return { leaseDurationMs: config.leaseDuration, renewDeadlineMs: config.renewDeadline, retryPeriodMs: config.retryPeriod };
}

export function runLeases(d: LeaseDeps): Leases {
  if (!d.config.leaderElect) {
    d.start();
    return { standbyReady: false, stopSharder: () => undefined, release: () => Promise.resolve() };
  }
  return d.replica ? shardedLeases(d, d.replica) : leaderLeases(d);
}

/** A replica that lost its lease must not keep reconciling next to the one that took over. */
function exitOnLoss(log: Logger): (what: string) => void {
  return (what) => {
    log.warn(`lost ${what}; exiting`);
    process.exit(1);
  };
}

function shardedLeases(d: LeaseDeps, replica: ShardReplica): Leases {
  const membership = replica.run({
    kinds: d.operator.kinds,
    registry: d.operator.metrics.registry,
    start: d.start,
    lost: exitOnLoss(d.log),
    fatal: (err) => {
      d.log.fatal({ err: String(err) }, "could not start the sharder");
      process.exit(1);
    },
  });
  return { standbyReady: false, stopSharder: () => membership.stop(), release: () => membership.release() };
}

function leaderLeases(d: LeaseDeps): Leases {
  const { config, log } = d;
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
    onStoppedLeading: () => exitOnLoss(log)("leadership"),
  });
  return { standbyReady: true, stopSharder: () => waiting.abort(), release: () => election.stop() };
}
