// What the operator hands every kind to build its controller, and what a kind of keyward declares
// beyond the engine's descriptor: what it refers to (from which the wake-ups and the deletion
// order are derived) and what the kubectl plugin shows of it.
import type { Logger } from "../log.ts";
import type { Kube, KindRef } from "../kube/client.ts";
import type { EventRecorder } from "../kube/events.ts";
import type { SecondaryWatch } from "../engine/controller.ts";
import type { KindDescriptor } from "../engine/kind.ts";
import type { ManagedModule } from "../engine/module.ts";
import type { DurableField, DurableFields } from "../engine/meta.ts";
import type { Metrics } from "../engine/metrics.ts";
import type { KubeObject, ObjectMeta, Ownership, ReconcileFn } from "../engine/types.ts";
import type { ProviderResolver } from "./provider/resolver.ts";
import type { MetadataKey } from "./common.ts";

export type { MetadataKey } from "./common.ts";
import type { SharedInformer } from "../kube/informer.ts";
import type { VersionChange } from "../lib/conversion.ts";

export interface KindDeps {
  kube: Kube;
  events: EventRecorder;
  log: Logger;
  metrics: Metrics;
  providers: ProviderResolver;
  /** ClusterProviderConfigs' own reconcile, served only with --cluster-provider-configs. */
  cluster: { reconcile: ReconcileFn } | undefined;
  /**
   * The engine's reconciler for a managed kind (what the Kind declares — its reasons, its external
   * id, the status fields it keeps in annotations — joined to the module: managedModuleOf); `peers`
   * are the other objects of the kind keyward knows.
   */
  managed: <S, T, C, E>(module: KindModule<S, T, C, E>, peers?: () => KubeObject[]) => ReconcileFn;
  /** The objects of a kind in keyward's cache. */
  cached(ref: KindRef): KubeObject[];
  /**
   * An informer of every object of a kind in the watched namespaces, whatever replica's share it
   * is in (with sharding; without, the kind's own cache): for a rule that spans namespaces. Its
   * memory is not split over the replicas. Start it by giving it to a watch.
   */
  everywhere(ref: KindRef): SharedInformer;
  resyncIntervalMs: number;
  /** How old a shared listing may be for a steady resync pass. */
  listingTtlMs: number;
  /** The kinds that refer to a ProviderConfig (refers.providerConfig), which it waits for before letting go. */
  providerConfigUsers: readonly KindRef[];
  /** The kinds that refer to a Project (refers.project), which its deletion at the service waits for. */
  projectDependents: readonly KindRef[];
  /** Where AccessTokens are served and write their Secrets (--access-token-namespaces); empty: every watched namespace. */
  accessTokenNamespaces: readonly string[];
  /**
   * Which objects this process acts on, and how it writes them (the engine's Ownership). A
   * reconcile that reads its object other than through `managed` checks it (actsOn) before any
   * call or write, and follows its write policy. Absent: every object.
   */
  ownership?: Ownership;
}

/** An on-demand action requested by annotation (kubectl keyward sync / remove-secrets reads these). */
export interface ActionDescriptor {
  annotation: string;
  /** The status field recording the last annotation value handled (a mirror of handledAnnotation). */
  handled: string;
  /** The annotation recording the last value handled: what backups and exports keep. */
  handledAnnotation: string;
  /** The service operation called. */
  operation: string;
  /** The job at the service the call starts, and the status fields that follow it. */
  job: string;
  status: string;
  jobId: string;
  at: string;
  message: string;
}

export interface Kind extends KindDescriptor<KindDeps> {
  /**
   * What its spec refers to. providerConfig: spec.providerConfigRef (a ProviderConfig's change
   * wakes it; the ProviderConfig waits for it on delete). project: spec.projectRef / projectId
   * (a Project's change wakes it; the Project's deletion at the service waits for it).
   */
  refers: { providerConfig?: boolean; project?: boolean };
  /**
   * The wake-ups this kind gives the kinds whose `refers` names it `as` (controller-runtime's
   * Watches, declared once by the kind watched): a change of one of its objects reconciles the
   * objects that refer to it at once. Given only while this kind is served (its controller on).
   */
  wakesReferrers?: { as: keyof Kind["refers"]; watches: readonly SecondaryWatch[] };
  /** The status fields holding the external object's id (kubectl keyward status). */
  serviceIdFields?: readonly string[];
  /**
   * The status field whose value keyward mirrors into the keyward.dev/external-id annotation: the
   * id the service assigns on create, kept in metadata so a restore or an export finds the object.
   */
  externalId?: string;
  /**
   * With externalId: a key the service keeps unique that names the external object and derives
   * from the resource alone (a project's slug). A create announces it with its create-started mark
   * (src/engine/holder.ts), so keyward writes the id into metadata only when the key no longer tells
   * the object (an adoption, a rename). `field`: the status field holding the key as observed.
   */
  naturalKey?: { of: (spec: unknown, meta: Pick<ObjectMeta, "name">) => string; field: string; name: string };
  /** Actions requested by annotation, by the plugin's verb. */
  actions?: Readonly<Record<string, ActionDescriptor>>;
  /** The other labels, annotations and finalizers keyward reads or writes for this kind. */
  metadata?: readonly MetadataKey[];
  /**
   * How its v1alpha1 becomes v1beta1 (docs/api-review.md): the conversion both ways
   * (src/resources/conversion.ts) and the v1beta1 schema (src/crd/conversion-schema.ts) derive from it.
   */
  conversion: VersionChange;
}

/**
 * A kind's module as its own file writes it: what the Kind record declares (its reasons, its
 * external id, the status fields it keeps in annotations, the scope it records) is not repeated
 * there, and managedModuleOf joins it in.
 */
export type KindModule<S, T, C, E = unknown> = Omit<ManagedModule<S, T, C, E>, "reasons" | "guardCreate" | "durable" | "scope">;

/**
 * The status fields a kind keeps in annotations besides its external id: each action's last
 * handled value, and every metadata key that mirrors a status field.
 */
export function kindDurableFields(kind: Kind): DurableFields {
  const fields: Record<string, DurableField> = {};
  for (const action of Object.values(kind.actions ?? {})) fields[action.handledAnnotation] = action.handled;
  for (const m of kind.metadata ?? []) if (m.mirrors) fields[m.key] = m.mirrors;
  return fields;
}

/**
 * The engine's module of a kind: the kind's module joined to what its Kind record declares. A kind
 * with an external id has the create rule's guard on that status field (the service assigns the
 * id on create); a kind whose metadata records its scope (a project's id) has it recorded.
 */
export function managedModuleOf<S, T, C, E>(kind: Kind, module: KindModule<S, T, C, E>): ManagedModule<S, T, C, E> {
  // A module is structurally allowed to carry more: one that declares these again could disagree.
  for (const fact of ["reasons", "guardCreate", "durable", "scope"]) {
    if (fact in module) throw new Error(`${kind.ref.kind}: ${fact} is declared on the Kind record, not again in its module`);
  }
  const idField = kind.externalId as (keyof T & string) | undefined;
  const durable = kindDurableFields(kind);
  const scope = kind.metadata?.find((m) => m.scope !== undefined);
  const key = kind.naturalKey;
  return {
    ...module,
    ...(kind.reasons ? { reasons: kind.reasons } : {}),
    guardCreate:
      idField === undefined ? false : { idField, ...(key ? { naturalKey: { of: key.of, field: key.field as keyof T & string } } : {}) },
    ...(Object.keys(durable).length > 0 ? { durable: durable as NonNullable<ManagedModule<S, T, C, E>["durable"]> } : {}),
    ...(scope?.scope !== undefined ? { scope: { annotation: scope.key, field: scope.scope as keyof T & string } } : {}),
  };
}

/**
 * The wake-ups `kind` gets from what it refers to: the watches each kind of `served` declares for
 * its referrers (wakesReferrers). `served` are the kinds whose controller is on, so a kind not
 * served (ClusterProviderConfig without --cluster-provider-configs) wakes nobody.
 */
export function referrerWatches(kind: Kind, served: readonly Kind[]): SecondaryWatch[] {
  return served.flatMap((watched) => {
    const wakes = watched.wakesReferrers;
    return wakes && kind.refers[wakes.as] === true ? wakes.watches : [];
  });
}
