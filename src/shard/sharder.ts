// The sharder (issue 18, docs/sharding.md): run by the replica holding the leader Lease, it labels
// every object of keyward's kinds with the replica that owns it. Owners come from a
// consistent-hash ring over the live shard Leases with bounded loads (no replica above its share
// of the namespaces rounded up, or 10% above it, lib/ring.ts), keyed by namespace (a namespace's
// objects refer to each other — a Project, its dependents, their ProviderConfig — so one
// replica's cache holds all a pass reads). It watches metadata only (PartialObjectMetadata) and
// keeps of it the ring key, the version and the shard labels, so its memory does not grow with
// the objects' specs, statuses, labels or annotations.
//
// Level-triggered like every controller here: an object added, deleted or relabelled, a Lease list
// or a membership change schedules one pass over all cached metadata, which works out the label changes (shard-plan.ts) and sends them as
// conditional patches (a stale cache is a 409 and the next event plans again). An object moves
// from a live owner only by the drain label, which that owner clears itself (controller.ts); a
// dead owner (its Lease expired, so it fenced itself at its renew deadline) loses its objects at once.
import type { Logger } from "../log.ts";
import { apiVersionOf, resourcePath, type KindRef, type Kube } from "../kube/client.ts";
import { watchKind, type Informer, type InformerEventType } from "../kube/informer.ts";
import { keyString } from "../kube/keys.ts";
import { patchMetadata, isConflict, isKubeNotFound } from "../kube/objects.ts";
import { errorSummary, kubeJson } from "../kube/rest.ts";
import { createShardObserver, joinPending, JOINED_ANNOTATION, type ShardLease } from "./leases.ts";
import { leaseKind } from "../kube/lease.ts";
import { listAll } from "../kube/watch.ts";
import { boundLoads, createRing, type Ring } from "../lib/ring.ts";
import { interruptibleSleep } from "../lib/backoff.ts";
import { DRAIN_LABEL, SHARD_LABEL, shardChanges, shardLabels, type ShardChange } from "./plan.ts";
import type { KubeObject } from "../engine/types.ts";
import { Gauge, type Registry } from "prom-client";

export interface SharderOptions {
  kube: Kube;
  /** The kinds whose objects are assigned to shards. */
  kinds: readonly KindRef[];
  /** Watched namespaces; empty: all. */
  namespaces: readonly string[];
  /** Where the shard Leases are (keyward's own namespace), and their name prefix (shardLeasePrefix). */
  leaseNamespace: string;
  leasePrefix: string;
  /** How often the shard Leases are listed (a replica's death is a Lease not renewed, not an event). */
  pollMs: number;
  /** Shard Leases released, or unchanged this long, are deleted (their replicas are gone). */
  staleAfterMs: number;
  logger: Logger;
  /** Label patches in flight at once. */
  concurrency?: number;
  /** How long a namespace whose last object is gone still counts in the shares (rememberKeys); EMPTY_NAMESPACE_GRACE_MS by default. */
  emptyNamespaceGraceMs?: number;
  /** Called after each pass with the live members and how many objects each owns. */
  onPass?: (members: readonly string[], owned: ReadonlyMap<string, number>) => void;
}

export interface Sharder {
  /** Resolves once the metadata of every kind is listed and the first pass is planned. */
  start(): Promise<void>;
  stop(): void;
  /** The live members as of the last Lease list. */
  members(): readonly string[];
}

/**
 * The kinds whose objects the shares split over the replicas: the namespaced ones. A cluster-scoped
 * kind (ClusterProviderConfig) has no namespace to shard by and is used by every namespace; the
 * leader reconciles all its objects (controller.ts, `leadership`), fenced by the leader Lease, so
 * its objects carry no shard labels and keyward needs no write on them beyond their status.
 */
export function shardedKinds(kinds: readonly KindRef[]): KindRef[] {
  return kinds.filter((kind) => !kind.clusterScoped);
}

/**
 * What the sharder's cache keeps of an object: its name and namespace (the ring key),
 * resourceVersion (a label patch is conditional on it) and keyward's shard labels; no UID (a pass
 * never reads one), no other label, annotation, finalizer or owner reference. The leader holds one
 * per object of every sharded kind in the cluster, not only its share.
 */
export function shardMetadata(obj: KubeObject, kind: KindRef): KubeObject {
  const m = obj.metadata;
  const metadata: KubeObject["metadata"] = { name: m.name, namespace: m.namespace };
  if (m.resourceVersion !== undefined) metadata.resourceVersion = m.resourceVersion;
  const owner = m.labels?.[SHARD_LABEL];
  const drain = m.labels?.[DRAIN_LABEL];
  if (owner !== undefined || drain !== undefined) {
    metadata.labels = {
      ...(owner !== undefined ? { [SHARD_LABEL]: owner } : {}),
      ...(drain !== undefined ? { [DRAIN_LABEL]: drain } : {}),
    };
  }
  return { apiVersion: apiVersionOf(kind), kind: kind.kind, metadata } as KubeObject;
}

/**
 * The sharder's caches: metadata only, trimmed to what a pass reads (shardMetadata). A write that
 * changes no shard label (a mark, a status) plans nothing; what a skipped event leaves (a label
 * patch that met a 409) is planned again by the pass each Lease list schedules.
 */
function metadataInformers(
  opts: SharderOptions,
  log: Logger,
  schedule: () => void,
  added: (obj: KubeObject) => void,
): { kind: KindRef; informer: Informer }[] {
  return shardedKinds(opts.kinds).map((kind) => ({
    kind,
    informer: watchKind(opts.kube, kind, {
      ...(opts.namespaces.length > 0 ? { namespaces: [...opts.namespaces] } : {}),
      metadataOnly: true,
      transform: (obj) => shardMetadata(obj, kind),
      logger: log,
      onEvent: (type, obj, old) => {
        if (type === "add") added(obj);
        if (plansAgain(type, obj, old)) schedule();
      },
    }),
  }));
}

/** Whether an event of the sharder's cache can change a pass's plan: an add, a delete, or a shard label changed. */
export function plansAgain(type: InformerEventType, obj: KubeObject, old: KubeObject | undefined): boolean {
  if (type !== "update") return true;
  const now = obj.metadata.labels;
  const before = old?.metadata.labels;
  return now?.[SHARD_LABEL] !== before?.[SHARD_LABEL] || now?.[DRAIN_LABEL] !== before?.[DRAIN_LABEL];
}

/** The ring key of an object: its namespace (a cluster-scoped object: its own name). */
export function shardKey(obj: { metadata: { namespace?: string | undefined; name: string } }): string {
  return obj.metadata.namespace ? `namespace/${obj.metadata.namespace}` : `cluster/${obj.metadata.name}`;
}

export function createSharder(opts: SharderOptions): Sharder {
  const log = opts.logger.child({ component: "sharder" });
  const stopped = new AbortController();
  let ring: Ring = createRing([]);
  let shares = sharesOf(ring);
  // Members whose Lease this leader has not yet seen change (shards.ts): their objects wait.
  let unknown: ReadonlySet<string> = new Set();
  // One pass at a time; events during a pass ask for one more after it.
  // A pass that throws is logged; the next event or Lease list plans again.
  const passes = coalesce(
    () => pass().catch((err: unknown) => log.error({ err: errorSummary(err) }, "shard assignment pass failed")),
    stopped.signal,
  );
  const schedule = (): void => passes.schedule();

  const keys = keyTracker(opts.emptyNamespaceGraceMs ?? EMPTY_NAMESPACE_GRACE_MS);
  const informers = metadataInformers(opts, log, schedule, keys.added);

  // Bumped when a Lease list shows a replica's new incarnation: a pass planned before stops, and
  // the join is acknowledged only once it has ended (the join handshake, shards.ts).
  let epoch = 0;
  const pass = async (): Promise<void> => {
    const planned = { ring, epoch };
    const { work, owned, members } = plan(informers, (present) => shares(keys.plan(present)), unknown);
    opts.onPass?.(members, owned);
    await applyAll(work, () => ring === planned.ring && epoch === planned.epoch && !keys.changed());
  };

  const applyAll = async (work: Work[], current: () => boolean): Promise<void> => {
    let next = 0;
    // A pass planned on one membership stops when it changes, or when a replica's new incarnation
    // shows: a replica that came back must not see its objects still being moved away once it
    // starts (it waits for the leader's acknowledgement, which waits for this pass, main.ts).
    const worker = async (): Promise<void> => {
      while (next < work.length && !stopped.signal.aborted && current()) {
        const item = work[next++];
        if (item) await apply(item.kind, item.obj, item.change);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, opts.concurrency ?? 8) }, worker));
  };

  const apply = async (kind: KindRef, obj: KubeObject, change: ShardChange): Promise<void> => {
    try {
      await patchMetadata(opts.kube, kind, obj.metadata, { labels: shardLabels(change) }, { base: obj, exact: true });
      log.debug({ kind: kind.kind, key: change.key, change: change.change }, "shard label changed");
    } catch (err) {
      // A 409: the object changed since the metadata cache saw it; its event plans again.
      if (!isConflict(err)) log.warn({ kind: kind.kind, key: change.key, err: errorSummary(err) }, "shard label patch failed");
    }
  };

  const observer = createShardObserver(opts.leasePrefix);
  const pollLeases = async (): Promise<void> => {
    while (!stopped.signal.aborted) {
      try {
        const { items } = await listAll(opts.kube, resourcePath(leaseKind, opts.leaseNamespace), { signal: stopped.signal });
        const view = observer.view(items);
        if (view.live.join("\n") !== ring.members.join("\n")) {
          log.info({ members: view.live, unknown: view.unknown }, "shard members changed");
          ring = createRing(view.live);
          shares = sharesOf(ring);
        }
        // A member the leader judged dead still holding its Lease is taken over on that Lease first,
        // conditionally on the version judged: a Lease renewed since (a stale list) is a 409, and
        // that member's objects wait like an unknown one's.
        const held = await takeOverDead(opts, items, view, log);
        unknown = new Set([...view.unknown, ...held]);
        // The join handshake: a replica's new incarnation is acknowledged only after every pass
        // planned from an older list has ended (a patch in flight included).
        const joining = items.filter((l) => (l.metadata?.name ?? "").startsWith(opts.leasePrefix) && joinPending(l) !== undefined);
        if (joining.length > 0) {
          epoch++;
          await passes.idle();
          for (const lease of joining) await acknowledgeJoin(opts, lease, log);
        }
        schedule();
        for (const lease of observer.stale(items, opts.staleAfterMs)) await deleteShardLease(opts, lease, log);
      } catch (err) {
        if (!stopped.signal.aborted) log.warn({ err: errorSummary(err) }, "listing the shard Leases failed");
      }
      await interruptibleSleep(opts.pollMs, stopped.signal);
    }
  };

  return {
    async start() {
      await Promise.all(informers.map(({ informer }) => informer.start()));
      void pollLeases();
    },
    stop() {
      stopped.abort();
      passes.cancel();
      for (const { informer } of informers) informer.stop();
    },
    members: () => ring.members,
  };
}

/**
 * The fence of a takeover (client-go's is a conditional write on the Lease itself): every shard
 * Lease still held by its own identity whose member is neither live nor unknown — the leader saw it
 * unchanged for its duration — is released by the leader, on the resourceVersion it judged. Its
 * holder, should it still be alive (the leader's list was stale), finds its Lease written by
 * another on its next renewal and stops (lease.ts ownedOnce); a Lease renewed since the list is a
 * 409 and its member is not dead. Returns the members whose takeover did not happen: their objects
 * wait.
 */
export async function takeOverDead(
  opts: Pick<SharderOptions, "kube" | "leaseNamespace" | "leasePrefix">,
  leases: readonly ShardLease[],
  view: { live: readonly string[]; unknown: readonly string[] },
  log: Logger,
): Promise<string[]> {
  const known = new Set([...view.live, ...view.unknown]);
  const kept: string[] = [];
  for (const lease of leases) {
    const name = lease.metadata?.name ?? "";
    if (!name.startsWith(opts.leasePrefix)) continue;
    const identity = name.slice(opts.leasePrefix.length);
    if (identity === "" || lease.spec?.holderIdentity !== identity || known.has(identity)) continue;
    try {
      await kubeJson(opts.kube.access, {
        method: "PUT",
        path: resourcePath(leaseKind, opts.leaseNamespace, name),
        body: {
          apiVersion: "coordination.k8s.io/v1",
          kind: "Lease",
          metadata: lease.metadata,
          spec: { ...lease.spec, holderIdentity: "", leaseDurationSeconds: 1 },
        },
      });
      log.info({ lease: name, member: identity }, "took over the shard Lease of a member gone silent; its objects move");
    } catch (err) {
      if (isKubeNotFound(err)) continue;
      kept.push(identity);
      if (isConflict(err)) log.info({ lease: name, member: identity }, "a shard Lease judged dead was renewed since; its objects stay");
      else log.warn({ lease: name, err: errorSummary(err) }, "could not take over a silent member's shard Lease");
    }
  }
  return kept;
}

/**
 * Writes a shard Lease's incarnation back as `joined` (the leader's side of the join handshake),
 * keeping its holder and renew time as they are, so the holder counts the write as nobody's
 * takeover. A 409 (the holder renewed meanwhile) reads the Lease again; a Lease that changed
 * incarnation since is left for the next list.
 */
export async function acknowledgeJoin(opts: Pick<SharderOptions, "kube" | "leaseNamespace">, seen: ShardLease, log: Logger): Promise<void> {
  const name = seen.metadata?.name ?? "";
  const incarnation = joinPending(seen);
  const path = resourcePath(leaseKind, opts.leaseNamespace, name);
  let lease = seen;
  for (let attempt = 0; attempt < 5 && incarnation !== undefined && joinPending(lease) === incarnation; attempt++) {
    try {
      await kubeJson(opts.kube.access, {
        method: "PUT",
        path,
        body: {
          apiVersion: "coordination.k8s.io/v1",
          kind: "Lease",
          metadata: { ...lease.metadata, annotations: { ...lease.metadata?.annotations, [JOINED_ANNOTATION]: incarnation } },
          spec: lease.spec,
        },
      });
      log.info({ lease: name, incarnation }, "acknowledged a replica's join");
      return;
    } catch (err) {
      if (isKubeNotFound(err)) return;
      if (!isConflict(err)) {
        log.warn({ lease: name, err: errorSummary(err) }, "could not acknowledge a replica's join");
        return;
      }
      lease = await kubeJson<ShardLease>(opts.kube.access, { path });
    }
  }
}

/**
 * Every pod ever started leaves a shard Lease behind; those of replicas gone for good are deleted,
 * on the version the leader judged stale only (uid and resourceVersion preconditions): a Lease
 * renewed or taken again since that list — a replica back under the same name — is a 409 and stays.
 */
export async function deleteShardLease(
  opts: Pick<SharderOptions, "kube" | "leaseNamespace">,
  lease: ShardLease,
  log: Logger,
): Promise<void> {
  const name = lease.metadata?.name ?? "";
  const { uid, resourceVersion } = lease.metadata ?? {};
  if (name === "" || uid === undefined || resourceVersion === undefined) return;
  try {
    await kubeJson(opts.kube.access, {
      method: "DELETE",
      path: resourcePath(leaseKind, opts.leaseNamespace, name),
      body: { apiVersion: "v1", kind: "DeleteOptions", preconditions: { uid, resourceVersion } },
    });
    log.info({ lease: name }, "deleted the shard Lease of a replica that is gone");
  } catch (err) {
    if (isConflict(err)) log.info({ lease: name }, "a stale shard Lease changed before its deletion; kept");
    else if (!isKubeNotFound(err)) log.warn({ lease: name, err: errorSummary(err) }, "could not delete a stale shard Lease");
  }
}

/** Runs `run` soon after schedule(), never twice at once; schedules during a run ask for one more run after it. */
function coalesce(run: () => Promise<void>, signal: AbortSignal): { schedule: () => void; cancel: () => void; idle: () => Promise<void> } {
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  let again = false;
  // The run in progress, if any.
  let current: Promise<void> = Promise.resolve();
  const schedule = (): void => {
    if (signal.aborted) return;
    if (running) {
      again = true;
      return;
    }
    timer ??= setTimeout(() => {
      timer = undefined;
      running = true;
      current = run().finally(() => {
        running = false;
        if (again) {
          again = false;
          schedule();
        }
      });
    }, 20);
  };
  // The run in progress has ended (a run it scheduled may follow; it plans from what is current then).
  return { schedule, cancel: () => clearTimeout(timer), idle: () => current };
}

interface Work {
  kind: KindRef;
  obj: KubeObject;
  change: ShardChange;
}

/** The label changes one pass makes (passes never overlap: no patch of an earlier one is in flight), and each shard's count. */
function plan(
  informers: readonly { kind: KindRef; informer: { list(): KubeObject[] } }[],
  shares: (present: ReadonlySet<string>) => Ring,
  unknown: ReadonlySet<string>,
): { work: Work[]; owned: Map<string, number>; members: readonly string[] } {
  const lists = informers.map(({ kind, informer }) => ({ kind, objects: informer.list() }));
  const keys = new Set<string>();
  for (const { objects } of lists) for (const o of objects) keys.add(shardKey(o));
  const ring = shares(keys);
  const live = new Set(ring.members);
  const owned = new Map<string, number>();
  const work: Work[] = [];
  for (const { kind, objects: list } of lists) {
    const byKey = new Map(list.map((o) => [keyString(o.metadata), o]));
    const objects = [...byKey.entries()].map(([key, o]) => ({
      key,
      owner: o.metadata.labels?.[SHARD_LABEL],
      draining: o.metadata.labels?.[DRAIN_LABEL] !== undefined,
    }));
    for (const o of objects) if (o.owner) owned.set(o.owner, (owned.get(o.owner) ?? 0) + 1);
    const ownerOf = (key: string): string | undefined => {
      const obj = byKey.get(key);
      return obj ? ring.ownerOf(shardKey(obj)) : undefined;
    };
    for (const change of shardChanges(objects, ownerOf, live, unknown)) {
      const obj = byKey.get(change.key);
      if (obj) work.push({ kind, obj, change });
    }
  }
  return { work, owned, members: ring.members };
}

/**
 * The namespaces a pass's shares are worked out over (rememberKeys), and whether an object has
 * since been added in a namespace outside them: the shares then change, so a pass planned before
 * stops sending (the next one plans with the new shares).
 */
function keyTracker(graceMs: number): {
  plan: (present: ReadonlySet<string>) => ReadonlySet<string>;
  added: (obj: KubeObject) => void;
  changed: () => boolean;
} {
  const keysFor = rememberKeys(graceMs);
  let planned: ReadonlySet<string> = new Set();
  let changed = false;
  return {
    plan: (present) => {
      changed = false;
      planned = keysFor(present, performance.now());
      return planned;
    },
    added: (obj) => {
      if (!planned.has(shardKey(obj))) changed = true;
    },
    changed: () => changed,
  };
}

/** How long a namespace whose last object is gone still counts in the shares: an hour. */
export const EMPTY_NAMESPACE_GRACE_MS = 60 * 60 * 1000;

/**
 * The ring keys the shares are worked out over: those holding objects now, and those that held
 * one within the last `graceMs`. Why the grace: whether a namespace holds objects is in its
 * tenants' hands (whoever may create a Project there), and a change of the key set may move other
 * namespaces — a handover each, the new owner's first passes and token mints included. Without it
 * a tenant creating and deleting one Project in a loop would move other tenants' namespaces back
 * and forth at that pace; with it, a namespace emptied and filled again changes the set at most
 * twice per grace period. A new namespace counts at once (its objects need an owner now). The
 * memory is the leader's: a new leader starts from the namespaces holding objects, which may move
 * a few namespaces once.
 */
export function rememberKeys(graceMs: number): (present: ReadonlySet<string>, now: number) => Set<string> {
  const lastSeen = new Map<string, number>();
  return (present, now) => {
    for (const key of present) lastSeen.set(key, now);
    for (const [key, seen] of lastSeen) if (now - seen > graceMs) lastSeen.delete(key);
    return new Set(lastSeen.keys());
  };
}

/**
 * The shares of one membership (`ring`) over a set of ring keys: the ring with bounded loads
 * (boundLoads), worked out again only when the keys change — a namespace's first object or its
 * last one gone, not each object — since every add and relabel runs a pass.
 */
export function sharesOf(ring: Ring): (keys: ReadonlySet<string>) => Ring {
  let last: { keys: string[]; shares: Ring } | undefined;
  return (keys) => {
    if (last && last.keys.length === keys.size && last.keys.every((k) => keys.has(k))) return last.shares;
    last = { keys: [...keys], shares: boundLoads(ring, keys) };
    return last.shares;
  };
}

/** keyward_shard_members and keyward_shard_objects{shard}, set after each pass of the sharder (the leader's /metrics). */
export function shardMetrics(registry: Registry): NonNullable<SharderOptions["onPass"]> {
  const members = new Gauge({
    name: "keyward_shard_members",
    help: "Live shard replicas (shard Leases renewed in time)",
    registers: [registry],
  });
  const objects = new Gauge({
    name: "keyward_shard_objects",
    help: "Objects labelled for each shard (replica identity)",
    labelNames: ["shard"],
    registers: [registry],
  });
  return (live, owned) => {
    members.set(live.length);
    objects.reset();
    for (const [shard, count] of owned) objects.set({ shard }, count);
  };
}
