// Shard Leases run in the test process (src/shard/leases.ts), without the rest of keyward: each
// records its joins and losses as events, and every one started is stopped by stopAll().
import type { Kube } from "../../../src/kube/client.ts";
import type { LeaderElection } from "../../../src/kube/lease.ts";
import { runShardLease } from "../../../src/shard/leases.ts";
import type { Logger } from "../../../src/log.ts";

export interface ShardLeaseHarness {
  /** Takes `identity`'s shard Lease; "<identity> joined" / "<identity> lost" go to `events`. */
  replica(identity: string, events: string[]): LeaderElection;
  stopAll(): Promise<void>;
}

export interface ShardLeaseTimes {
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  /** The replicas' monotonic clock (a frozen one takes the renew deadline out of a test). */
  monotonicNow?: () => number;
}

export function shardLeaseHarness(kube: Kube, namespace: string, logger: Logger, times: ShardLeaseTimes): ShardLeaseHarness {
  const running: LeaderElection[] = [];
  return {
    replica(identity, events) {
      const lease = runShardLease({
        kube,
        namespace,
        group: "keyward",
        identity,
        ...times,
        logger,
        onJoined: () => events.push(`${identity} joined`),
        onLost: () => events.push(`${identity} lost`),
      });
      running.push(lease);
      return lease;
    },
    async stopAll() {
      await Promise.all(running.map((r) => r.stop()));
    },
  };
}
