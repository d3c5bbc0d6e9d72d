// The manager's caches (controller-runtime's cache.Cache): one informer per kind shared by every
// controller and lookup, with sharding the unselected `everywhere` informers and the claim rule's
// views of every replica's objects, and the gauges of what they hold.
import { Gauge } from "prom-client";
import type { Logger } from "../log.ts";
import type { KindRef, Kube } from "../kube/client.ts";
import { createInformerFactory, type InformerFactory, type InformerFactoryOptions, type SharedInformer } from "../kube/informer.ts";
import type { SecondaryWatch } from "../engine/controller.ts";
import { claimIndex, claimMetadata, claimWakeWatch, createClaimWaits, type ClaimIndex, type ClaimWaits } from "../engine/claims.ts";
import type { ManagedDeps } from "../engine/managed.ts";
import type { Metrics } from "../engine/metrics.ts";
import type { Shard } from "../shard/shard.ts";

export interface CacheOptions {
  namespaces: string[];
  log: Logger;
  metrics: Metrics;
  /** The kinds served: what the cached-objects gauge reports and, sharded, what the selection covers. */
  served: readonly KindRef[];
  shard?: Shard | undefined;
}

export interface Caches {
  /** One list+watch and one cache per kind, shared by every controller and lookup. */
  informers: InformerFactory;
  /** Sharding: unselected informers for rules that span namespaces (every replica's objects); else `informers`. */
  everywhere: InformerFactory;
  /** Sharding: the claim rule's view of every replica's objects of the kinds with guardCreate. */
  claims: ClaimViews | undefined;
  stop(): void;
}

export interface ClaimViews {
  /** The claim view of a kind with guardCreate (made on first use) and who waits for whom there. */
  of(ref: KindRef): NonNullable<ManagedDeps["claims"]>;
  /** The wake-up watch of a kind given a view (none for the others): it starts the view. */
  watches(ref: KindRef): SecondaryWatch[];
  stop(): void;
}

export function createCaches(kube: Kube, opts: CacheOptions): Caches {
  const base = {
    namespaces: opts.namespaces,
    logger: opts.log,
    onRestart: (kind: KindRef) => opts.metrics.informerRestarts.inc({ kind: kind.kind }),
  };
  const informers = createInformerFactory(kube, { ...base, ...(opts.shard ? { selection: opts.shard.selection(opts.served) } : {}) });
  const everywhere = opts.shard ? createInformerFactory(kube, base) : informers;
  const claims = opts.shard ? claimViews(kube, base, opts.metrics) : undefined;
  cachedObjectsGauge(opts.metrics, opts.served, informers);
  return {
    informers,
    everywhere,
    claims,
    stop() {
      informers.stop();
      if (everywhere !== informers) everywhere.stop();
      claims?.stop();
    },
  };
}

/**
 * Sharding: the claim rule's view of every replica's objects of each kind with guardCreate
 * (src/engine/claims.ts): cluster-wide, metadata only, trimmed to what the rule reads; made when
 * the kind's reconciler is, started by its wake-up watch. Without sharding there is none.
 */
function claimViews(kube: Kube, base: InformerFactoryOptions, metrics: Metrics): ClaimViews {
  const factory = createInformerFactory(kube, { ...base, metadataOnly: true, transform: claimMetadata });
  const made = new Map<string, { kind: string; view: SharedInformer; index: ClaimIndex; waits: ClaimWaits }>();
  const id = (ref: KindRef): string => `${ref.group}/${ref.plural}`;
  new Gauge({
    name: "keyward_claim_view_objects",
    help: "Objects in the claim view of each kind with a service-assigned id (sharding: every replica's, metadata only)",
    labelNames: ["kind"],
    registers: [metrics.registry],
    collect() {
      this.reset();
      for (const parts of made.values()) this.set({ kind: parts.kind }, parts.view.size());
    },
  });
  return {
    of(ref) {
      let parts = made.get(id(ref));
      if (!parts) {
        const view = factory.get(ref);
        parts = { kind: ref.kind, view, index: claimIndex(view), waits: createClaimWaits() };
        made.set(id(ref), parts);
      }
      const { index, waits } = parts;
      return { naming: (id) => index.naming(id), wait: (key, holder) => waits.wait(key, holder), release: (key) => waits.release(key) };
    },
    watches(ref) {
      const parts = made.get(id(ref));
      return parts ? [claimWakeWatch(ref, parts.view, parts.waits)] : [];
    },
    stop: () => factory.stop(),
  };
}

/**
 * keyward_informer_cached_objects{kind}: what each kind's cache holds, read at scrape time. With
 * sharding it is this replica's share, the figure its memory follows.
 */
function cachedObjectsGauge(metrics: Metrics, served: readonly KindRef[], informers: InformerFactory): void {
  new Gauge({
    name: "keyward_informer_cached_objects",
    help: "Objects in keyward's cache of each of its kinds (with sharding: this replica's share)",
    labelNames: ["kind"],
    registers: [metrics.registry],
    collect() {
      this.reset();
      for (const ref of served) {
        const informer = informers.peek(ref);
        if (informer) this.set({ kind: ref.kind }, informer.size());
      }
    },
  });
}
