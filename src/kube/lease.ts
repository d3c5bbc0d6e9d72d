// Leader election on a coordination.k8s.io/v1 Lease, with client-go's leaderelection rules:
// - a lease is free when it has no holder, or when its record has not changed for
//   leaseDuration as measured on this replica's own clock since it last saw it change (so
//   clock skew between replicas does not matter);
// - every write carries the read resourceVersion, so two candidates cannot both win;
// - the leader renews every retryPeriod and gives up when it could not renew for renewDeadline;
// - stop() releases the lease (empty holder, 1 s duration) so a successor takes over at once.
// Every expiry decision is measured on a monotonic clock (performance.now): a wall-clock step
// (NTP, a VM resumed) must neither make a live lease look expired nor stretch our own deadline.
// Only the times written into the Lease (acquireTime, renewTime) are wall-clock, as in client-go.
import { performance } from "node:perf_hooks";
import type { Logger } from "../log.ts";
import { resourcePath, type KindRef, type Kube } from "./client.ts";
import { isConflict, isKubeNotFound } from "./objects.ts";
import { keyString } from "./keys.ts";
import { errorSummary, kubeJson } from "./rest.ts";

export const leaseKind: KindRef = { group: "coordination.k8s.io", version: "v1", plural: "leases", kind: "Lease" };

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; annotations?: Record<string, string> };
  spec?: LeaseSpec;
}

/** A metav1.MicroTime: RFC 3339 with microseconds. */
function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}
import { interruptibleSleep } from "../lib/backoff.ts";

export interface LeaseTimes {
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

/**
 * Why these times cannot work, or undefined: client-go's rules. The leader gives up after
 * renewDeadline without a renewal, and a standby takes over after leaseDuration; a deadline not
 * below the duration lets both lead at once. A retry period not below the deadline leaves no
 * second attempt before the deadline.
 */
export function leaseTimesProblems(t: LeaseTimes): { setting: keyof LeaseTimes; message: string }[] {
  const s = (ms: number): string => `${ms / 1000}s`;
  const problems: { setting: keyof LeaseTimes; message: string }[] = [];
  for (const setting of ["leaseDurationMs", "renewDeadlineMs", "retryPeriodMs"] as const) {
    const ms = t[setting];
    if (!Number.isFinite(ms) || ms <= 0) problems.push({ setting, message: `must be positive, not ${String(ms)}ms` });
  }
  if (problems.length > 0) return problems;
  if (t.renewDeadlineMs >= t.leaseDurationMs) {
    problems.push({
      setting: "renewDeadlineMs",
      message: `renew deadline ${s(t.renewDeadlineMs)} must be below the lease duration ${s(t.leaseDurationMs)}, or an old leader may still act when a standby takes over`,
    });
  }
  if (t.retryPeriodMs >= t.renewDeadlineMs) {
    problems.push({
      setting: "retryPeriodMs",
      message: `retry period ${s(t.retryPeriodMs)} must be below the renew deadline ${s(t.renewDeadlineMs)}, or the leader has no second try before it gives up`,
    });
  }
  return problems;
}

/** Whether a lease another holder last changed at `observedAt` (this process's monotonic ms) has expired at `now`. */
export function leaseExpired(observedAt: number, leaseDurationMs: number, now: number): boolean {
  return now >= observedAt + leaseDurationMs;
}

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
  /** A monotonic clock in ms; performance.now by default. Never the wall clock. */
  monotonicNow?: () => number;
  /**
   * Once held, the lease is this holder's alone (a shard Lease): a renewal that finds it written by
   * anyone else — the leader's takeover, which releases it conditionally on the version it judged
   * dead — or gone is lost at once, never taken again. Without it (leader election) a released
   * lease is free to take, as in client-go.
   */
  ownedOnce?: boolean;
  /**
   * Annotations this holder sets on every write of the lease (a shard Lease's incarnation, the
   * leader Lease's handshake mark); the lease's other annotations are kept as read.
   */
  annotations?: Readonly<Record<string, string>>;
  /**
   * Also written on each acquire and renewal (a sharded replica's mark on the sharding marker):
   * the attempt counts as a renewal only when this succeeds too, so whatever it keeps alive is
   * alive whenever this holder may act.
   */
  alsoOnRenew?: () => Promise<void>;
}

export interface LeaderElection {
  /**
   * Whether this replica may act as the holder now: it holds the lease and its last renewal was
   * sent less than the renew deadline ago, on the monotonic clock, checked when asked — not when
   * the renew loop next wakes (a process paused past its deadline must not act first, on waking,
   * on the answers waiting for it).
   */
  holds(): boolean;
  /** Stops campaigning and, when leading, releases the lease. */
  stop(): Promise<void>;
  isLeader(): boolean;
}

interface LeaseClient {
  /** One acquire-or-renew attempt: true when this identity holds the lease afterwards. */
  tryAcquireOrRenew(): Promise<boolean>;
  release(): Promise<void>;
  /** ownedOnce: someone else wrote (or deleted) the lease this holder held. */
  takenOver(): boolean;
}

/** A Lease to write: this holder's annotations set, the others kept as read. */
function leaseBody(metadata: NonNullable<Lease["metadata"]>, spec: LeaseSpec, annotations?: Readonly<Record<string, string>>): Lease {
  const withOurs = annotations ? { ...metadata, annotations: { ...metadata.annotations, ...annotations } } : metadata;
  return { apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: withOurs, spec };
}

/**
 * ownedOnce: the renew times this holder sent (the last few: an answer may come late or never), so
 * a lease last written by another (or deleted) since this holder's first write is told apart.
 */
function sentRenewTimes(identity: string): { sending: (renewTime: string) => void; writtenByOther: (lease: Lease | undefined) => boolean } {
  const sent: string[] = [];
  return {
    sending(renewTime) {
      sent.push(renewTime);
      if (sent.length > 8) sent.shift();
    },
    writtenByOther: (lease) => sent.length > 0 && !(lease?.spec?.holderIdentity === identity && sent.includes(lease.spec.renewTime ?? "")),
  };
}

function leaseClient(opts: LeaderElectionOptions, log: Logger): LeaseClient {
  const { kube, namespace, name, identity } = opts;
  const durationSeconds = Math.max(1, Math.ceil(opts.leaseDurationMs / 1000));
  const monotonic = opts.monotonicNow ?? (() => performance.now());
  let observed = { resourceVersion: undefined as string | undefined, at: 0 };

  const read = (): Promise<Lease | undefined> =>
    kubeJson<Lease>(kube.access, { path: resourcePath(leaseKind, namespace, name) }).catch((err: unknown) =>
      isKubeNotFound(err) ? undefined : Promise.reject(err as Error),
    );
  const observe = (lease: Lease, now: number): void => {
    if (lease.metadata?.resourceVersion !== observed.resourceVersion) {
      observed = { resourceVersion: lease.metadata?.resourceVersion, at: now };
    }
  };
  const { sending, writtenByOther } = sentRenewTimes(identity);
  let taken = false;
  const write = async (lease: Lease, spec: LeaseSpec, now: number): Promise<void> => {
    const body = leaseBody(lease.metadata ?? { name }, spec, opts.annotations);
    if (spec.holderIdentity === identity && spec.renewTime) sending(spec.renewTime);
    observe(await kubeJson<Lease>(kube.access, { method: "PUT", path: resourcePath(leaseKind, namespace, name), body }), now);
  };

  const create = async (now: number): Promise<boolean> => {
    const at = microTime(Date.now());
    const spec = { holderIdentity: identity, leaseDurationSeconds: durationSeconds, acquireTime: at, renewTime: at, leaseTransitions: 0 };
    const body = leaseBody({ name, namespace }, spec, opts.annotations);
    sending(at);
    observe(await kubeJson<Lease>(kube.access, { method: "POST", path: resourcePath(leaseKind, namespace), body }), now);
    return true;
  };

  const tryAcquireOrRenew = async (): Promise<boolean> => {
    if (taken) return false;
    const lease = await read();
    const now = monotonic();
    // Held, and last written by another (or deleted): taken over, for good.
    if (opts.ownedOnce && writtenByOther(lease)) {
      taken = true;
      log.warn("the shard lease was written by another (the leader took this replica for gone); stopping");
      return false;
    }
    if (!lease) return create(now);
    observe(lease, now);
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? "";
    const heldForMs = (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (holder !== "" && holder !== identity && !leaseExpired(observed.at, heldForMs, now)) return false;
    const mine = holder === identity;
    const at = microTime(Date.now());
    await write(
      lease,
      {
        holderIdentity: identity,
        leaseDurationSeconds: durationSeconds,
        renewTime: at,
        acquireTime: mine && spec.acquireTime ? spec.acquireTime : at,
        leaseTransitions: (spec.leaseTransitions ?? 0) + (mine ? 0 : 1),
      },
      now,
    );
    return true;
  };

  const release = async (): Promise<void> => {
    try {
      const lease = await read();
      const spec = lease?.spec;
      if (!lease || spec?.holderIdentity !== identity) return;
      const { acquireTime, leaseTransitions } = spec;
      await write(
        lease,
        { holderIdentity: "", leaseDurationSeconds: 1, renewTime: microTime(Date.now()), acquireTime, leaseTransitions },
        monotonic(),
      );
      log.info("released the lease");
    } catch (err) {
      log.warn({ err: errorSummary(err) }, "could not release the lease; it expires on its own");
    }
  };

  return { tryAcquireOrRenew, release, takenOver: () => taken };
}

/**
 * How long the renew loop sleeps before its next renewal: a retry period, but never past the renew
 * deadline. The holder must stop leading by its deadline, which the validation keeps below the
 * lease duration others wait; a full retry period slept past it would let it act after a standby
 * took over (15 s / 14 s / 4 s: until 18 s).
 */
export function renewWait(sinceRenewMs: number, t: Pick<LeaderElectionOptions, "renewDeadlineMs" | "retryPeriodMs">): number {
  return Math.max(0, Math.min(t.retryPeriodMs, t.renewDeadlineMs - sinceRenewMs));
}

export function runLeaderElection(opts: LeaderElectionOptions): LeaderElection {
  const problems = leaseTimesProblems(opts);
  if (problems.length > 0) throw new Error(`leader election: ${problems.map((p) => p.message).join("; ")}`);
  const monotonic = opts.monotonicNow ?? (() => performance.now());
  const log = opts.logger.child({ lease: keyString(opts), identity: opts.identity });
  const client = leaseClient(opts, log);
  const wake = new AbortController();
  const sleep = (ms: number): Promise<void> => interruptibleSleep(ms, wake.signal);
  let leader = false;

  // When the last successful write was sent: the lease is ours from then on, as far as anyone
  // else can tell (they count from when they see the write, which is later), so the renew
  // deadline counts from the send, not from the answer — however slow the answer was.
  let lastSentAt = monotonic();
  const attempt = async (): Promise<boolean> => {
    const sentAt = monotonic();
    try {
      // Side by side, not one after the other: the renewal's critical path stays one read and one
      // write, however slow the apiserver is (a second write in series doubled it, and on a loaded
      // machine pushed renewals past the deadline). The extra write counts only with the renewal.
      const [ok] = await Promise.all([client.tryAcquireOrRenew(), opts.alsoOnRenew?.()]);
      if (ok) lastSentAt = sentAt;
      return ok;
    } catch (err) {
      // A conflict means another candidate wrote first: not an error, just not us this time.
      if (isConflict(err)) log.debug("lease update conflicted; trying again");
      else log.warn({ err: errorSummary(err) }, "lease update failed");
      return false;
    }
  };

  const acquire = async (): Promise<boolean> => {
    while (!wake.signal.aborted) {
      if (await attempt()) return true;
      // client-go's JitterUntil(retryPeriod, 1.2): wait between 1x and 2.2x the retry period.
      await sleep(opts.retryPeriodMs * (1 + 1.2 * Math.random()));
    }
    return false;
  };

  const renew = async (): Promise<void> => {
    let renewedAt = lastSentAt;
    while (!wake.signal.aborted) {
      await sleep(renewWait(monotonic() - renewedAt, opts));
      if (wake.signal.aborted) return;
      // A renew that hangs (a half-open connection) must not outlast the deadline: past it a
      // standby may already lead, so this replica has to stop.
      const left = opts.renewDeadlineMs - (monotonic() - renewedAt);
      const startedAt = monotonic();
      if (left > 0 && (await withDeadline(attempt(), left))) {
        renewedAt = lastSentAt;
        continue;
      }
      if (left > 0 && monotonic() - startedAt >= left) {
        log.warn({ waitedMs: Math.round(monotonic() - startedAt) }, "a lease renewal got no answer before the renew deadline");
      }
      if (client.takenOver() || monotonic() - renewedAt >= opts.renewDeadlineMs) {
        leader = false;
        log.warn("could not renew the lease within the renew deadline; leadership lost");
        callSafely(opts.onStoppedLeading, log, "onStoppedLeading");
        return;
      }
    }
  };

  const campaign = async (): Promise<void> => {
    if (!(await acquire())) return;
    leader = true;
    log.info("became leader");
    callSafely(opts.onStartedLeading, log, "onStartedLeading");
    await renew();
  };

  const running = campaign();

  return {
    isLeader: () => leader,
    holds: () => leader && !client.takenOver() && monotonic() - lastSentAt < opts.renewDeadlineMs,
    stop: async () => {
      wake.abort();
      await running;
      if (leader) {
        leader = false;
        await client.release();
      }
    },
  };
}

/** The attempt's result, or false when it has not settled within `ms`. */
function withDeadline(attempt: Promise<boolean>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  return Promise.race([attempt, deadline]).finally(() => clearTimeout(timer));
}

function callSafely(fn: () => void, log: Logger, name: string): void {
  try {
    fn();
  } catch (err) {
    log.error({ err: errorSummary(err) }, `${name} threw`);
  }
}
