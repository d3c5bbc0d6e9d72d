// Spec and status pieces every kind shares, and the helpers that turn them into CRD sources.
import { z } from "zod";
import { isServiceNotFound } from "../api/index.ts";
import { GROUP, VERSION, type KubeObject, type ObjectKey } from "../engine/types.ts";
import { resourcePath, type KindRef, type Kube } from "../kube/client.ts";
import { keyOf, keyString } from "../kube/keys.ts";
import type { SecondaryWatch } from "../engine/controller.ts";
import { kubeJson } from "../kube/rest.ts";
import { ageColumn, conditionColumn } from "../engine/kind.ts";
import { ANNOTATION_PAUSED, FINALIZER } from "../engine/meta.ts";
import type { Edit } from "../lib/conversion.ts";

// The size of every string, list and map of every CRD (spec and status). The apiserver stores an
// object of up to ~1.5 MiB and costs CEL rules by these bounds, and keyward parses specs with
// the same zod schemas, so each bound is the service's own limit where ../shared/interface.md
// gives one (sync name 64, description 256, project slug 36, ...: written where the field is) and
// otherwise the generous one below, with the reason for its number. A bound here must never be
// stricter than the service or the system the value names, or a real value would be refused.
// test/unit/crd/bounds.test.ts fails on any field of a generated CRD without one. Spec projectId
// keeps 128 (below), the provider configs their own.
export const bounds = {
  /** A Kubernetes object name (a DNS subdomain, RFC 1123). */
  K8S_NAME: 253,
  /** A namespace or other DNS label (RFC 1123). */
  DNS_LABEL: 63,
  /** A label key: an optional DNS-subdomain prefix (253), "/", and a name (63). */
  LABEL_KEY: 317,
  /** A label value. */
  LABEL_VALUE: 63,
  /** Labels in one matchLabels: a namespace selector names a handful; 64 is many times that. */
  MATCH_LABELS: 64,
  /** An apiVersion: an API group (a DNS subdomain, 253), "/", and a version (a DNS label, 63). */
  API_VERSION: 317,
  /** A kind: a CamelCase name, a DNS label in length (as the apiserver's own kinds are). */
  KIND: 63,

  /** A URL: the de-facto limit of browsers and proxies (and of the provider configs' baseUrl). */
  URL_MAX: 2048,
  /** A folder path in an environment (e.g. /app/api): 1024, the common file-path limit (PATH_MAX/4). */
  PATH: 1024,

  /**
   * An id the service or a destination assigns (a uuid, 36 characters, in every sample; a cloud
   * resource path is longer): 256 leaves room for any of them.
   */
  ID: 256,
  /** A name or slug at the service or a destination (the service's names are 1 to 64, GitLab group paths 255). */
  NAME: 256,
  /** A free-text description the service reports and interface.md gives no limit for (its own are at most 256). */
  DESCRIPTION: 4096,
  /** A message the service reports about a job: metav1.Condition's own message limit. */
  MESSAGE: 32768,
  /** A word the service reports as a state or type (pending, running, succeeded, api, est, ...). */
  WORD: 64,
  /** An RFC 3339 time: 35 characters with nanoseconds and an offset; 64 for any spelling the service uses. */
  TIME: 64,
  /** A hash keyward computes (hex SHA-256 is 64, with a salt prefix more). */
  HASH: 256,
  /** The value of a keyward.dev/*-requested-at annotation keyward copies (a time in practice; annotations are free text). */
  ANNOTATION_VALUE: 1024,

  /** The conditions of one object: keyward writes two (Ready, Synced); others' tools may add some. */
  CONDITIONS: 32,
  /** A project's environments as the service reports them (the default three; many more is rare). */
  ENVIRONMENTS: 1024,
  /** A member's roles as the service reports them (the spec allows 32; others may add more). */
  STATUS_ROLES: 256,

  /** Tags on a synced cloud secret: GCP allows 64 labels, AWS 50 tags, Azure 15. */
  TAGS: 64,
  /** A tag key: AWS allows 128 characters (GCP 63). */
  TAG_KEY: 128,
  /** A tag value: AWS allows 256 characters (GCP 63). */
  TAG_VALUE: 256,
  /** A KMS key id: AWS KMS KeyId (an id, alias or ARN) is at most 2048 characters. */
  KMS_KEY_ID: 2048,
  /** A key schema (a template such as APP_{{environment}}_{{secretKey}}): 1024 is far above any secret name limit (AWS 512). */
  KEY_SCHEMA: 1024,
  /** Repositories selected for a code-host sync: GitHub has no documented cap; 10,000 ids (~100 KiB) covers large orgs. */
  SELECTED_REPOSITORIES: 10_000,
} as const;

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

// metav1.Condition's own bounds.
export const condition = z.object({
  type: z
    .string()
    .max(316)
    .describe(
      "The condition's type: Ready (the object is usable: keyward's work for it is done) or, on the kinds that write to the service, Synced (the last reconcile reached the service and left it as the spec says).",
    ),
  status: z.enum(["True", "False", "Unknown"]).describe("True, False or Unknown."),
  reason: z
    .string()
    .max(1024)
    .describe(
      "Why the condition has its status: a CamelCase word (docs/kinds.md lists every reason keyward writes and what to do about it).",
    ),
  message: z
    .string()
    .max(32768)
    .describe("What happened, for a person: the service's error or the thing keyward waits for. Never holds a secret."),
  observedGeneration: z
    .number()
    .int()
    .optional()
    .describe(
      "The metadata.generation of the spec this condition was computed from; below the object's generation, keyward has not acted on the latest spec yet.",
    ),
  lastTransitionTime: z
    .string()
    .max(bounds.TIME)
    .describe("When the condition last changed status (RFC 3339); a change of reason or message alone keeps it."),
});

export const commonStatus = {
  observedGeneration: z
    .number()
    .int()
    .optional()
    .describe(
      "The metadata.generation of the spec this status describes; below metadata.generation, keyward has not reconciled the latest spec yet.",
    ),
  conditions: z
    .array(condition)
    .max(bounds.CONDITIONS)
    .optional()
    .describe(
      "Ready (every kind) and Synced (the kinds that write to the service), in the metav1.Condition shape; `kubectl wait --for=condition=Ready` waits on the first.",
    ),
};

/**
 * A map of at most `maxEntries` entries with keys of at most `maxKey` characters: the CRD gets
 * maxProperties and a CEL rule on the keys (a structural schema cannot bound keys otherwise).
 */
export function boundedRecord<V extends z.ZodType>(value: V, maxEntries: number, maxKey: number) {
  const message = `at most ${maxEntries} entries, each key at most ${maxKey} characters`;
  return z
    .record(z.string(), value)
    .refine((map) => Object.keys(map).length <= maxEntries && Object.keys(map).every((k) => k.length <= maxKey), { message })
    .meta({ maxProperties: maxEntries, "x-kubernetes-validations": [{ rule: `self.all(k, size(k) <= ${maxKey})`, message }] });
}

export function kindRef(kind: string, plural: string): KindRef {
  return { group: GROUP, version: VERSION, plural, kind };
}

export const readyColumns = [conditionColumn("Ready"), conditionColumn("Synced")];

/**
 * A label, annotation or finalizer keyward reads or writes beyond those the registry already
 * says (the external-id and create-guard annotations of a kind with `externalId`, the action
 * annotations of `actions`): docs/reference/api.md lists them per kind.
 */
export interface MetadataKey {
  key: string;
  what: "annotation" | "label" | "finalizer";
  /** The object it sits on when not the kind's own (e.g. "the token Secret"). */
  on?: string;
  /** Who sets it: a person (keyward reads it) or keyward. */
  by: "user" | "keyward";
  doc: string;
  /**
   * A mark of a call in flight on this cluster (written before the call, removed once its outcome
   * is known): a backup keeps it, an export for Git drops it (applied elsewhere it would be taken
   * for a call made there).
   */
  inFlight?: true;
  /**
   * The status field this annotation keeps a copy of, so that it outlives the cluster (a backup, an
   * export): the engine restores the field from it when status lacks it (meta.ts DurableField).
   */
  mirrors?: { field: string; json: true };
  /**
   * The status field naming the scope the kind's external object lives in (its project's id),
   * which this annotation records from the write that adds the finalizer on (ManagedModule.scope):
   * read back only by a deletion that can no longer resolve the scope, never into status, so it
   * holds no claim.
   */
  scope?: string;
}

/** The pause annotation every kind reconciled by the engine honours. */
export const pausedKey: MetadataKey = {
  key: ANNOTATION_PAUSED,
  what: "annotation",
  by: "user",
  doc: '"true" stops reconciling (a deletion too): keyward calls nothing and reports Synced=False ReconcilePaused. Remove it to resume.',
};

/** The finalizer of a kind whose deletion must reach the service, added while `when`. */
export function finalizerKey(when: string): MetadataKey {
  return {
    key: FINALIZER,
    what: "finalizer",
    by: "keyward",
    doc: `Added while ${when}, so that deleting the resource reaches the service first; removed once it has (or when the policy changes).`,
  };
}
/**
 * The project a resource's external object lives in, recorded in metadata (status.projectId's
 * value) so that its deletion can still reach it once the Project resource is gone: a
 * ProjectMembership's revoke, a SecretSync's remove-secrets or delete (refs.ts projectIdForCleanup).
 */
export const ANNOTATION_PROJECT_ID = "keyward.dev/project-id";

/** The metadata entry of a kind whose external object lives in a project (status.projectId). */
export const projectIdKey: MetadataKey = {
  key: ANNOTATION_PROJECT_ID,
  what: "annotation",
  by: "keyward",
  scope: "projectId",
  doc: "The id of the project the resource's external object lives in (status.projectId), written with the finalizer and kept by backups and exports: a deletion whose Project resource is already gone still cleans up in that project, unless a Project of another namespace records it. Never read into status.",
};
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
 * its referrers at once instead of at their next resync or backoff. The controller finds them in
 * its index (referenced key -> referrers, `refersTo`), not by a scan of its cache; `predicate`
 * says which changes of the referenced object matter to them (absent: all).
 */
export function referrersWatch(
  kind: KindRef,
  refName: (spec: unknown) => string | undefined,
  predicate?: SecondaryWatch["predicate"],
): SecondaryWatch {
  const refersTo = (o: KubeObject): string | undefined => {
    const name = refName(o.spec);
    return name === undefined ? undefined : keyString({ namespace: o.metadata.namespace, name });
  };
  return {
    kind,
    refersTo,
    ...(predicate ? { predicate } : {}),
    mapToKeys: (target: KubeObject, primaries?: () => KubeObject[]): ObjectKey[] =>
      (primaries?.() ?? []).filter((o) => refersTo(o) === keyString(target.metadata)).map(keyOf),
  };
}

/** The Ready condition's status, or undefined. */
function readyStatus(obj: KubeObject | undefined): string | undefined {
  const conditions = (obj?.status as { conditions?: { type?: string; status?: string }[] } | undefined)?.conditions;
  return conditions?.find((c) => c.type === "Ready")?.status;
}

/**
 * The changes of a provider config (ProviderConfig or ClusterProviderConfig) that matter to the
 * resources using it: its creation and deletion, a new generation (spec: URL, credentials
 * reference, timeout, rate limit, CA), the deletion mark, labels (a ClusterProviderConfig's
 * selection), its Ready condition's status (a config turning usable, or not) and the Secret it
 * holds. Its own status writes that change nothing its users read — a condition's
 * lastTransitionTime or message, the token schedule (tokenExpiresAt, tokenRenewAt) — wake no one:
 * a config with 2,000 users renewing its token would otherwise reconcile all 2,000.
 */
export function providerConfigChangeMatters(type: string, obj: KubeObject, old?: KubeObject): boolean {
  if (type !== "update" || !old) return true;
  const a = old.metadata;
  const b = obj.metadata;
  return (
    a.generation !== b.generation ||
    a.deletionTimestamp !== b.deletionTimestamp ||
    JSON.stringify(a.labels ?? {}) !== JSON.stringify(b.labels ?? {}) ||
    readyStatus(old) !== readyStatus(obj) ||
    (old.status as { heldSecret?: string } | undefined)?.heldSecret !== (obj.status as { heldSecret?: string } | undefined)?.heldSecret
  );
}

/** The page size of freshReferrers' lists: a namespace with thousands of objects is read in pages. */
export const REFERRERS_PAGE = 500;

/**
 * The objects of `kinds` in `namespace` that `refers` picks, as "Kind/name", from a fresh list,
 * not the cache: a referrer the cache has not seen yet would lose its cleanup if the object it
 * waits for were let go. Read in pages of `pageSize` (limit and continue), so no single answer
 * holds the whole namespace.
 */
export async function freshReferrers(
  kube: Kube,
  kinds: readonly KindRef[],
  namespace: string,
  refers: (obj: KubeObject) => boolean,
  pageSize = REFERRERS_PAGE,
): Promise<string[]> {
  const found: string[] = [];
  for (const kind of kinds) {
    let next: string | undefined;
    do {
      const list = await kubeJson<{ items?: KubeObject[]; metadata?: { continue?: string } }>(kube.access, {
        path: resourcePath(kind, namespace),
        query: { limit: pageSize, ...(next ? { continue: next } : {}) },
      });
      for (const obj of list.items ?? []) if (refers(obj)) found.push(`${kind.kind}/${obj.metadata.name}`);
      next = list.metadata?.continue || undefined;
    } while (next);
  }
  return found;
}

/** Names for a condition message: the first five, then how many more. */
export function someNames(names: readonly string[]): string {
  return names.slice(0, 5).join(", ") + (names.length > 5 ? `, and ${names.length - 5} more` : "");
}

// ---------------------------------------------------------------- v1beta1 (docs/api-review.md)

/** The version every kind's v1alpha1 becomes: its edits are declared beside each kind's schemas. */
export const V1BETA1 = "v1beta1";

/**
 * What changes on every kind from v1alpha1 to v1beta1: conditions become a list-map keyed by type
 * (server-side apply addresses one condition), with metav1.Condition's date-time and reason
 * pattern.
 */
export const conditionEdits: readonly Edit[] = [
  { op: "listMap", path: "status.conditions", keys: ["type"] },
  { op: "format", path: "status.conditions[].lastTransitionTime", format: "date-time" },
  { op: "format", path: "status.conditions[].reason", pattern: "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$" },
];

/** A kind with spec.providerConfigRef and spec.managementPolicy: their code defaults go into the schema. */
export const providerUserEdits: readonly Edit[] = [
  { op: "default", path: "spec.providerConfigRef.kind", value: "ProviderConfig" },
  { op: "default", path: "spec.managementPolicy", value: "Default" },
];

/** Status times keyward writes (RFC 3339) get the date-time format. */
export function timeEdits(...paths: string[]): Edit[] {
  return paths.map((path) => ({ op: "format", path, format: "date-time" }));
}

/** A name (or path) with its trailing initialism in capitals: `projectId` → `projectID`, `selectedRepositoryIds` → `selectedRepositoryIDs`. */
export function initialism(name: string): string {
  return name.replace(/(Id|Url|Uuid)(?=$|s$)/, (m) => m.toUpperCase());
}

/** Renames spelling an initialism in capitals: `status.projectId` → `status.projectID`. */
export function initialismEdits(...paths: string[]): Edit[] {
  return paths.map((from) => ({ op: "rename", from, to: initialism(from) }));
}
