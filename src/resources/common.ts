// Spec and status pieces every kind shares, and the helpers that turn them into CRD sources.
import { z } from "zod";
import { isServiceNotFound } from "../api/index.ts";
import { GROUP, VERSION, type KubeObject, type ObjectKey } from "../engine/types.ts";
import { resourcePath, type KindRef, type Kube } from "../kube/client.ts";
import { keyOf } from "../kube/keys.ts";
import { kubeJson } from "../kube/rest.ts";
import { ageColumn, conditionColumn } from "../engine/kind.ts";

export const providerConfigRef = z
  .object({
    kind: z
      .enum(["ProviderConfig", "ClusterProviderConfig"])
      .optional()
      .describe(
        "ProviderConfig (in the same namespace) or ClusterProviderConfig (cluster-scoped, if it allows this namespace). Default: ProviderConfig.",
      ),
    name: z.string().min(1).max(253).describe("Name of a ProviderConfig in the same namespace, or of a ClusterProviderConfig."),
  })
  .describe("The ProviderConfig or ClusterProviderConfig to use; default: the ProviderConfig named `default` in the same namespace.");

export type ProviderConfigRef = { kind?: "ProviderConfig" | "ClusterProviderConfig" | undefined; name: string };

export const projectRef = z
  .object({
    name: z.string().min(1).max(253).describe("Name of a Project resource in the same namespace."),
  })
  .describe("A Project resource in the same namespace whose project this refers to.");

export const projectId = z.string().min(1).max(128).describe("The id of a project keyward does not manage.");

export const managementPolicy = z
  .enum(["Default", "ObserveOnly"])
  .describe("ObserveOnly reads the service and reports into status but never writes to it. Default: Default.");

export const condition = z.object({
  type: z.string().max(316),
  status: z.enum(["True", "False", "Unknown"]),
  reason: z.string().max(1024),
  message: z.string().max(32768),
  observedGeneration: z.number().int().optional(),
  lastTransitionTime: z.string(),
});

export const commonStatus = {
  observedGeneration: z.number().int().optional().describe("The generation of the spec the status describes."),
  conditions: z.array(condition).optional().describe("Ready and Synced, in the metav1.Condition shape."),
};

export function kindRef(kind: string, plural: string): KindRef {
  return { group: GROUP, version: VERSION, plural, kind };
}

export const readyColumns = [conditionColumn("Ready"), conditionColumn("Synced")];
export { ageColumn };

/** spec.managementPolicy ObserveOnly: read and report, never write. */
export function isObserveOnly(spec: { managementPolicy?: string | undefined }): boolean {
  return spec.managementPolicy === "ObserveOnly";
}

/** The ProviderConfig name a spec refers to. */
export function providerConfigName(spec: { providerConfigRef?: ProviderConfigRef | undefined }): string {
  return spec.providerConfigRef?.name ?? "default";
}

/** The kind of provider config a spec refers to: ProviderConfig unless it names a ClusterProviderConfig. */
export function providerConfigKind(spec: {
  providerConfigRef?: ProviderConfigRef | undefined;
}): "ProviderConfig" | "ClusterProviderConfig" {
  return spec.providerConfigRef?.kind ?? "ProviderConfig";
}

/** Sorted copy, for order-insensitive comparison of string lists. */
export function sorted(values: readonly string[] | null | undefined): string[] {
  return [...(values ?? [])].sort();
}

export function sameStrings(a: readonly string[] | null | undefined, b: readonly string[] | null | undefined): boolean {
  const x = sorted(a);
  const y = sorted(b);
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

/** The object without its undefined fields. */
export function dropUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** For `.catch()` on a lookup: a 404 from the service means "absent"; anything else is rethrown. */
export function notFoundAsUndefined(err: unknown): undefined {
  if (isServiceNotFound(err)) return undefined;
  throw err;
}

/**
 * A secondary watch of `kind` for the kinds that refer to one of its objects (`refName` reads
 * the name a spec refers to, in its own namespace): a change of the referenced object reconciles
 * its referrers at once instead of at their next resync or backoff.
 */
export function referrersWatch(kind: KindRef, refName: (spec: unknown) => string | undefined) {
  return {
    kind,
    mapToKeys: (target: KubeObject, primaries?: () => KubeObject[]): ObjectKey[] =>
      (primaries?.() ?? [])
        .filter((o) => o.metadata.namespace === target.metadata.namespace && refName(o.spec) === target.metadata.name)
        .map(keyOf),
  };
}

/**
 * The objects of `kinds` in `namespace` that `refers` picks, as "Kind/name", from a fresh list,
 * not the cache: a referrer the cache has not seen yet would lose its cleanup if the object it
 * waits for were let go.
 */
export async function freshReferrers(
  kube: Kube,
  kinds: readonly KindRef[],
  namespace: string,
  refers: (obj: KubeObject) => boolean,
): Promise<string[]> {
  const found: string[] = [];
  for (const kind of kinds) {
    const list = await kubeJson<{ items?: KubeObject[] }>(kube.access, { path: resourcePath(kind, namespace) });
    for (const obj of list.items ?? []) if (refers(obj)) found.push(`${kind.kind}/${obj.metadata.name}`);
  }
  return found;
}

/** Names for a condition message: the first five, then how many more. */
export function someNames(names: readonly string[]): string {
  return names.slice(0, 5).join(", ") + (names.length > 5 ? `, and ${names.length - 5} more` : "");
}
