// Leader election on a coordination.k8s.io/v1 Lease, with client-go's leaderelection rules:
// - a lease is free when it has no holder, or when its record has not changed for
//   leaseDuration as measured on this replica's own clock since it last saw it change (so
//   clock skew between replicas does not matter);
// - every write carries the read resourceVersion, so two candidates cannot both win;
// - the leader renews every retryPeriod and gives up when it could not renew for renewDeadline;
// - stop() releases the lease (empty holder, 1 s duration) so a successor takes over at once.
import { V1MicroTime, type V1Lease, type V1LeaseSpec } from "@kubernetes/client-node";
import type { Logger } from "../log.ts";
import type { Kube } from "./client.ts";
import { isConflict, isNotFound } from "./objects.ts";
import { errorSummary } from "./rest.ts";

export interface LeaderElectionOptions {
  kube: Kube;
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  onStartedLeading: () => void;
  /** Called when leadership is lost (not renewed within renewDeadline); not on stop(). */
  onStoppedLeading: () => void;
  logger: Logger;
}

export interface LeaderElection {
  /** Stops campaigning and, when leading, releases the lease. */
  stop(): Promise<void>;
  isLeader(): boolean;
}

interface Observed {
  resourceVersion: string | undefined;
  at: number;
}

export function runLeaderElection(opts: LeaderElectionOptions): LeaderElection {
  const log = opts.logger.child({ lease: `${opts.namespace}/${opts.name}`, identity: opts.identity });
  const durationSeconds = Math.max(1, Math.ceil(opts.leaseDurationMs / 1000));
  const wake = new AbortController();
  let leader = false;
  let observed: Observed = { resourceVersion: undefined, at: 0 };

  const read = async (): Promise<V1Lease | undefined> => {
    try {
      return await opts.kube.coordination.readNamespacedLease({ namespace: opts.namespace, name: opts.name });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  };

  const observe = (lease: V1Lease, now: number): void => {
    if (lease.metadata?.resourceVersion !== observed.resourceVersion) {
      observed = { resourceVersion: lease.metadata?.resourceVersion, at: now };
    }
  };

  const create = async (now: number): Promise<boolean> => {
    const at = new V1MicroTime(now);
    const spec: V1LeaseSpec = {
      holderIdentity: opts.identity,
      leaseDurationSeconds: durationSeconds,
      acquireTime: at,
      renewTime: at,
      leaseTransitions: 0,
    };
    const created = await opts.kube.coordination.createNamespacedLease({
      namespace: opts.namespace,
      body: { metadata: { name: opts.name, namespace: opts.namespace }, spec },
    });
    observe(created, now);
    return true;
  };

  const tryAcquireOrRenew = async (): Promise<boolean> => {
    const now = Date.now();
    const lease = await read();
    if (!lease) return create(now);
    observe(lease, now);
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? "";
    const heldForMs = (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (holder !== "" && holder !== opts.identity && observed.at + heldForMs > now) return false;
    const mine = holder === opts.identity;
    const at = new V1MicroTime(now);
    const next: V1LeaseSpec = {
      ...spec,
      holderIdentity: opts.identity,
      leaseDurationSeconds: durationSeconds,
      renewTime: at,
      acquireTime: mine && spec.acquireTime ? new V1MicroTime(spec.acquireTime) : at,
      leaseTransitions: (spec.leaseTransitions ?? 0) + (mine ? 0 : 1),
    };
    const updated = await opts.kube.coordination.replaceNamespacedLease({
      namespace: opts.namespace,
      name: opts.name,
      body: { ...lease, spec: next },
    });
    observe(updated, now);
    return true;
  };

  const attempt = async (): Promise<boolean> => {
    try {
      return await tryAcquireOrRenew();
    } catch (err) {
      // A conflict means another candidate wrote first: not an error, just not us this time.
      if (!isConflict(err)) log.warn({ err: errorSummary(err) }, "lease update failed");
      return false;
    }
  };

  const release = async (): Promise<void> => {
    try {
      const lease = await read();
      if (lease?.spec?.holderIdentity !== opts.identity) return;
      const now = new V1MicroTime(Date.now());
      await opts.kube.coordination.replaceNamespacedLease({
        namespace: opts.namespace,
        name: opts.name,
        body: { ...lease, spec: { ...lease.spec, holderIdentity: "", leaseDurationSeconds: 1, renewTime: now } },
      });
      log.info("released the lease");
    } catch (err) {
      log.warn({ err: errorSummary(err) }, "could not release the lease; it expires on its own");
    }
  };

  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      if (wake.signal.aborted) {
        resolve();
        return;
      }
      const timer = setTimeout(resolve, ms);
      wake.signal.addEventListener("abort", () => {
        clearTimeout(timer);
        resolve();
      }, { once: true });
    });

  const campaign = async (): Promise<void> => {
    while (!wake.signal.aborted && !(await attempt())) {
      // client-go's JitterUntil(retryPeriod, 1.2): wait between 1x and 2.2x the retry period.
      await sleep(opts.retryPeriodMs * (1 + 1.2 * Math.random()));
    }
    if (wake.signal.aborted) return;
    leader = true;
    log.info("became leader");
    callSafely(opts.onStartedLeading, log, "onStartedLeading");
    let renewedAt = Date.now();
    while (!wake.signal.aborted) {
      await sleep(opts.retryPeriodMs);
      if (wake.signal.aborted) return;
      if (await attempt()) {
        renewedAt = Date.now();
      } else if (Date.now() - renewedAt >= opts.renewDeadlineMs) {
        leader = false;
        log.warn("could not renew the lease within the renew deadline; leadership lost");
        callSafely(opts.onStoppedLeading, log, "onStoppedLeading");
        return;
      }
    }
  };

  const running = campaign();

  return {
    isLeader: () => leader,
    stop: async () => {
      wake.abort();
      await running;
      if (leader) {
        leader = false;
        await release();
      }
    },
  };
}

function callSafely(fn: () => void, log: Logger, name: string): void {
  try {
    fn();
  } catch (err) {
    log.error({ err: errorSummary(err) }, `${name} threw`);
  }
}
