// A sharded replica's life (docs/sharding.md): its Shard, made before the operator; then its shard
// Lease, the join handshake before it reconciles, and its campaign for the leader Lease, whose
// holder also leads the cluster-scoped kinds and runs the sharder. Its Leases and the sharder go
// through the process's own access, never the operator's fenced one.
import { randomUUID } from "node:crypto";
import type { Registry } from "prom-client";
import type { Logger } from "../log.ts";
import type { KindRef, Kube } from "../kube/client.ts";
import { runLeaderElection, type LeaderElection, type LeaseTimes } from "../kube/lease.ts";
import { awaitJoin, HANDSHAKE_ANNOTATION, runShardLease, shardLeasePrefix } from "./leases.ts";
import { createShard, type Shard } from "./shard.ts";
import { createSharder, shardMetrics, type Sharder } from "./sharder.ts";

export interface ReplicaOptions extends LeaseTimes {
  /** The process's own access: the Leases and the sharder's label patches are never fenced. */
  kube: Kube;
  /** Where the Leases are (keyward's own namespace). */
  leaseNamespace: string;
  /** The leader election id: the leader Lease's name and the shard Leases' prefix. */
  group: string;
  identity: string;
  /** The watched namespaces (empty: all): what the sharder assigns. */
  namespaces: readonly string[];
  logger: Logger;
}

export interface ReplicaRun {
  /** The kinds with a controller: what the sharder assigns. */
  kinds: readonly KindRef[];
  /** Where the sharder's gauges go. */
  registry: Registry;
  /** Starts reconciling: called once the leader acknowledged this incarnation. */
  start: () => void;
  /** The shard Lease or the leader Lease was lost: the process must stop acting at once. */
  lost: (what: string) => void;
  /** The sharder could not start. */
  fatal: (err: unknown) => void;
}

export interface ShardReplica {
  /** This replica as the operator takes it; it holds nothing until run. */
  shard: Shard;
  run(r: ReplicaRun): { stop(): void; release(): Promise<void> };
}

export function shardReplica(o: ReplicaOptions): ShardReplica {
  const log = o.logger;
  const times = { leaseDurationMs: o.leaseDurationMs, renewDeadlineMs: o.renewDeadlineMs, retryPeriodMs: o.retryPeriodMs };
  const lease = { kube: o.kube, namespace: o.leaseNamespace, identity: o.identity, ...times, logger: log };
  let shardLease: LeaderElection | undefined;
  const shard = createShard({ identity: o.identity, holds: () => shardLease?.holds() ?? false });
  return {
    shard,
    run(r) {
      // A replica reconciles only once the leader acknowledged this process's incarnation on its shard
      // Lease (the join handshake): had this identity been taken for gone (a crash, a restart under
      // the same pod name), a sharder pass may still be moving its objects away, and the leader
      // acknowledges only after every pass planned before it saw this incarnation has ended.
      const joining = new AbortController();
      const incarnation = randomUUID();
      shardLease = runShardLease({
        ...lease,
        group: o.group,
        incarnation,
        onJoined: () => {
          log.info({ incarnation }, "joined the shards; reconciling once the leader acknowledges this incarnation");
          void awaitJoin({
            kube: o.kube,
            namespace: o.leaseNamespace,
            shardLease: `${shardLeasePrefix(o.group)}${o.identity}`,
            leaderLease: o.group,
            incarnation,
            pollMs: o.retryPeriodMs,
            fallbackMs: o.leaseDurationMs + o.retryPeriodMs,
            signal: joining.signal,
            logger: log,
          }).then((joined) => {
            if (joined) r.start();
          });
        },
        onLost: () => r.lost("the shard lease"),
      });
      let sharder: Sharder | undefined;
      const election = runLeaderElection({
        ...lease,
        name: o.group,
        // Its replicas wait for this leader's acknowledgement of their joins (leases.ts).
        annotations: { [HANDSHAKE_ANNOTATION]: o.identity },
        onStartedLeading: () => {
          // Cluster-scoped kinds are the leader's. Losing the leader Lease ends the process
          // (onStoppedLeading), so this is never taken back.
          shard.lead();
          sharder = createSharder({
            kube: o.kube,
            kinds: r.kinds,
            namespaces: o.namespaces,
            leaseNamespace: o.leaseNamespace,
            leasePrefix: shardLeasePrefix(o.group),
            pollMs: o.retryPeriodMs,
            // Gone for good: a Lease nobody renewed for 20 lease durations (a released one at once).
            staleAfterMs: 20 * o.leaseDurationMs,
            logger: log,
            onPass: shardMetrics(r.registry),
          });
          sharder.start().catch(r.fatal);
        },
        onStoppedLeading: () => r.lost("leadership"),
      });
      return {
        stop() {
          joining.abort();
          sharder?.stop();
        },
        // The shard Lease first: the leader hands this replica's share on at once.
        async release() {
          await shardLease?.stop();
          await election.stop();
        },
      };
    },
  };
}
