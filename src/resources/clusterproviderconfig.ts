// ClusterProviderConfig: a ProviderConfig for many namespaces. Cluster-scoped; its credentials
// Secret lives in one namespace the cluster admin names (keyward's own by default,
// --credentials-namespace), so no application namespace holds a copy of the token. Its
// namespaceSelector and namespaces list say which namespaces may use it: a resource of any other
// namespace that names it gets Synced=False NotAllowed, and keyward makes no call for it.
//
// Changing the selector (or a namespace's labels) re-evaluates every user at once: the user
// kinds watch ClusterProviderConfigs and Namespaces (secondary watches below). There is no in-use
// finalizer as on ProviderConfig: deleting a namespace never deletes a ClusterProviderConfig.
//
// The plumbing it shares with ProviderConfig (connector, connection check, token schedule,
// credentials, CRD fields) is in provider/; this file imports no other kind.
import { z } from "zod";
import type { Logger } from "../log.ts";
import { namespaceKind, secretKind, type KindRef, type Kube } from "../kube/client.ts";
import type { EventRecorder } from "../kube/events.ts";
import { exactlyOneOf } from "../engine/cel.ts";
import type { CrdSource } from "../engine/kind.ts";
import { dataOmitted, watchKind, type Informer } from "../kube/informer.ts";
import { keyOf, keyString } from "../kube/keys.ts";
import { getObject, readCached } from "../kube/objects.ts";
import type { SecondaryWatch } from "../engine/controller.ts";
import { ReconcileError } from "../engine/errors.ts";
import { done, gone, requeueAfter, type KubeObject, type ReconcileFn } from "../engine/types.ts";
import { CREDENTIALS_SELECTOR, credentialsSecretKeys } from "./provider/credentials.ts";
import {
  bounds,
  boundedRecord,
  commonStatus,
  kindRef,
  providerConfigChangeMatters,
  providerConfigKind,
  providerConfigName,
} from "./common.ts";
import { connectionFields, providerConfigColumns, tokenAuthSchema, tokenStatusFields } from "./provider/crd-fields.ts";
import type { ConfigPlace, Connector } from "./provider/connector.ts";
import type { ClusterConnect, ProviderResolver } from "./provider/resolver.ts";
import { checkConnection } from "./provider/connection-check.ts";
import type { Kind } from "./kind.ts";
import type { VersionChange } from "../lib/conversion.ts";
import { V1BETA1 } from "./common.ts";
import { providerConfigV1beta1Edits } from "./provider/crd-fields.ts";

export const ref: KindRef = { ...kindRef("ClusterProviderConfig", "clusterproviderconfigs"), clusterScoped: true };

const labelName = z.string().min(1).max(bounds.LABEL_KEY);

export const labelSelectorSchema = z
  .object({
    matchLabels: boundedRecord(z.string().max(bounds.LABEL_VALUE), bounds.MATCH_LABELS, bounds.LABEL_KEY)
      .optional()
      .describe("Labels a namespace must all have, with these values."),
    matchExpressions: z
      .array(
        z
          .object({
            key: labelName.describe("The label key."),
            operator: z.enum(["In", "NotIn", "Exists", "DoesNotExist"]).describe("In, NotIn, Exists or DoesNotExist."),
            values: z
              .array(z.string().max(63))
              .max(256)
              .optional()
              .describe("The values for In and NotIn (not empty); none for Exists and DoesNotExist."),
          })
          .strict(),
      )
      .max(64)
      .optional()
      .describe("Requirements a namespace's labels must all meet."),
  })
  .strict();
export type LabelSelector = z.infer<typeof labelSelectorSchema>;

const where = "in the credentials namespace (keyward's --credentials-namespace, by default its own namespace)";

export const specSchema = z
  .object({
    baseUrl: connectionFields.baseUrl,
    credentialsSecretRef: z
      .object({
        name: z.string().min(1).max(253).describe(`Secret ${where}.`),
        key: z.string().min(1).max(253).optional().describe("Key in the Secret holding the access token. Default: token."),
      })
      .optional()
      .describe(
        "The Secret holding a static bearer access token. The token never leaves it. Exactly one of credentialsSecretRef and tokenAuth.",
      ),
    tokenAuth: tokenAuthSchema(where).optional(),
    timeoutSeconds: connectionFields.timeoutSeconds,
    rateLimit: connectionFields.rateLimit,
    caBundle: connectionFields.caBundle,
    namespaceSelector: labelSelectorSchema
      .optional()
      .describe(
        "Namespaces whose labels match may use this ClusterProviderConfig ({} matches every namespace). With neither namespaceSelector nor namespaces, no namespace may.",
      ),
    namespaces: z
      .array(z.string().min(1).max(63))
      .max(1024)
      .optional()
      .describe("Namespaces that may use this ClusterProviderConfig, besides those namespaceSelector matches."),
  })
  .strict();
export type ClusterProviderConfigSpec = z.infer<typeof specSchema>;

export const statusSchema = z.object({
  ...commonStatus,
  baseUrl: z.string().max(bounds.URL_MAX).optional().describe("The base URL last checked."),
  credentialsNamespace: z.string().max(bounds.DNS_LABEL).optional().describe("The namespace its credentials Secret is read from."),
  ...tokenStatusFields,
});

export const crdSource: CrdSource = {
  ...ref,
  scope: "Cluster",
  singular: "clusterproviderconfig",
  shortNames: ["kwcpc"],
  categories: ["keyward"],
  description:
    "Cluster-scoped: where the service is and which credentials keyward uses for it, for the namespaces its namespaceSelector and namespaces allow. Resources refer to it with spec.providerConfigRef {kind: ClusterProviderConfig, name}. The credentials Secret lives in keyward's credentials namespace only.",
  spec: specSchema,
  status: statusSchema,
  specValidations: [exactlyOneOf(["credentialsSecretRef", "tokenAuth"], "exactly one of credentialsSecretRef and tokenAuth must be set")],
  printerColumns: providerConfigColumns,
};

/** Whether `labels` meet the selector (Kubernetes' semantics: all of matchLabels and matchExpressions). */
export function selectorMatches(selector: LabelSelector, labels: Record<string, string> | undefined): boolean {
  const have = labels ?? {};
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) {
    if (have[k] !== v) return false;
  }
  for (const e of selector.matchExpressions ?? []) {
    const value = have[e.key];
    const values = e.values ?? [];
    const ok =
      e.operator === "In"
        ? value !== undefined && values.includes(value)
        : e.operator === "NotIn"
          ? value === undefined || !values.includes(value)
          : e.operator === "Exists"
            ? value !== undefined
            : value === undefined;
    if (!ok) return false;
  }
  return true;
}

/** Whether the ClusterProviderConfig allows `namespace` (with those labels): listed, or matched by the selector. */
export function namespaceAllowed(
  spec: Pick<ClusterProviderConfigSpec, "namespaceSelector" | "namespaces">,
  namespace: string,
  labels: Record<string, string> | undefined,
): boolean {
  if ((spec.namespaces ?? []).includes(namespace)) return true;
  return spec.namespaceSelector !== undefined && selectorMatches(spec.namespaceSelector, labels);
}

function parseSpec(name: string, raw: unknown): ClusterProviderConfigSpec {
  const parsed = specSchema.safeParse(raw);
  if (!parsed.success) {
    throw new ReconcileError(
      "ProviderConfigInvalid",
      `ClusterProviderConfig ${name} is invalid: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
      { retryable: true },
    );
  }
  return parsed.data;
}

const configId = (name: string): string => `ClusterProviderConfig/${name}`;

export interface ClusterProviderConfigs {
  /** Connects a resource of `namespace` through the ClusterProviderConfig `name`, if it allows that namespace. */
  connect: ClusterConnect;
  reconcile: ReconcileFn;
  /** Starts (and stops) the cache of Secrets in the credentials namespace. */
  start(): Promise<void>;
  stop(): void;
}

/**
 * ClusterProviderConfigs for one keyward: the connect the user kinds go through and the
 * ClusterProviderConfig's own reconcile (does the service answer with its credentials?).
 */
export function createClusterProviderConfigs(deps: {
  kube: Kube;
  log: Logger;
  events: EventRecorder;
  connector: Connector;
  providers: () => ProviderResolver;
  credentialsNamespace: string;
  recheckMs: number;
}): ClusterProviderConfigs {
  // One list+watch of the credentials namespace's marked Secrets, so connecting reads no Secret
  // from the apiserver; nothing else of that namespace (Helm release Secrets, say) is cached. A
  // Secret not in the cache is read once, to say why it cannot be used (not marked, missing).
  const secrets: Informer = watchKind(deps.kube, secretKind, {
    namespaces: [deps.credentialsNamespace],
    labelSelector: CREDENTIALS_SELECTOR,
    logger: deps.log,
    onEvent: () => undefined,
  });
  // The cache keeps a Secret's data up to a bound (src/kube/informer.ts slim): past it, the Secret is read whole from the apiserver.
  const readSecret = async (namespace: string, name: string): Promise<KubeObject | undefined> => {
    const cached = secrets.hasSynced() ? secrets.get({ namespace, name }) : undefined;
    return cached && !dataOmitted(cached) ? cached : getObject(deps.kube, secretKind, { namespace, name });
  };

  // Its Secrets are the credentials namespace's; its response bodies count against its own share
  // of the budget, not a namespace's (it serves many, and no namespace chose its server).
  const place = (name: string): ConfigPlace => ({ secretNamespace: deps.credentialsNamespace, tenant: configId(name) });

  async function readConfig(name: string): Promise<{ obj: KubeObject; spec: ClusterProviderConfigSpec }> {
    const obj = await readCached(deps.kube, ref, { namespace: "", name });
    if (!obj) {
      // Gone (or never made): nothing is kept for it.
      deps.connector.forget(configId(name));
      throw new ReconcileError("ProviderConfigNotFound", `ClusterProviderConfig ${name} does not exist`, { retryable: true });
    }
    return { obj, spec: parseSpec(name, obj.spec) };
  }

  const connect: ClusterConnect = async (namespace, name, signal) => {
    const { spec } = await readConfig(name);
    const ns = await readCached(deps.kube, namespaceKind, { namespace: "", name: namespace });
    if (!namespaceAllowed(spec, namespace, ns?.metadata.labels)) {
      throw new ReconcileError(
        "NotAllowed",
        `ClusterProviderConfig ${name} does not allow namespace ${namespace} (not in its namespaces, not matched by its namespaceSelector)`,
        { retryable: false },
      );
    }
    return deps.connector.connect(configId(name), spec, readSecret, place(name), signal);
  };

  const reconcile: ReconcileFn = async (key) => {
    const obj = await readCached(deps.kube, ref, { namespace: "", name: key.name });
    if (!obj) {
      // Gone: its clients, connections and minted token go with it.
      deps.connector.forget(configId(key.name));
      return gone();
    }
    const check = await checkConnection(deps, {
      ref,
      obj,
      configId: configId(key.name),
      connect: async () => {
        const spec = parseSpec(key.name, obj.spec);
        return deps.connector.connect(configId(key.name), spec, readSecret, place(key.name));
      },
      schedules: deps.providers(),
      connected: "the service answers with these credentials",
      fields: { credentialsNamespace: deps.credentialsNamespace },
    });
    if (check.throttled) return check.throttled;
    if (check.retryInMs !== undefined) return requeueAfter(check.retryInMs);
    return check.renewInMs !== undefined ? requeueAfter(check.renewInMs) : done();
  };

  return {
    connect,
    reconcile,
    start: () => secrets.start(),
    stop: () => secrets.stop(),
  };
}

const usesClusterConfig = (o: KubeObject): boolean => providerConfigKind(o.spec) === "ClusterProviderConfig";

/** Secondary watch of every user kind: a ClusterProviderConfig change re-evaluates, at once, every resource naming it. */
export const usersWatch: SecondaryWatch = {
  kind: ref,
  refersTo: (o) => (usesClusterConfig(o) ? keyString({ name: providerConfigName(o.spec) }) : undefined),
  predicate: providerConfigChangeMatters,
  mapToKeys: (cpc, primaries) =>
    (primaries?.() ?? []).filter((o) => usesClusterConfig(o) && providerConfigName(o.spec) === cpc.metadata.name).map(keyOf),
};

/** Secondary watch of every user kind: a Namespace's labels changing re-evaluates its resources that use a ClusterProviderConfig. */
export const namespaceWatch: SecondaryWatch = {
  kind: namespaceKind,
  refersTo: (o) => (usesClusterConfig(o) ? keyString({ name: o.metadata.namespace ?? "" }) : undefined),
  predicate: (type, ns, old) =>
    type !== "update" || !old || JSON.stringify(old.metadata.labels ?? {}) !== JSON.stringify(ns.metadata.labels ?? {}),
  mapToKeys: (ns, primaries) =>
    (primaries?.() ?? []).filter((o) => o.metadata.namespace === ns.metadata.name && usesClusterConfig(o)).map(keyOf),
};

/** How v1alpha1 becomes v1beta1 (docs/api-review.md): the provider kinds' shared edits. */
export const v1beta1: VersionChange = { from: ref.version, to: V1BETA1, edits: providerConfigV1beta1Edits };

export const kind: Kind = {
  ref,
  crd: crdSource,
  conversion: v1beta1,
  reasons: {
    NotAllowed: { means: "failed", doc: "The ClusterProviderConfig does not allow the resource's namespace." },
  },
  refers: {},
  wakesReferrers: { as: "providerConfig", watches: [usersWatch, namespaceWatch] },
  metadata: credentialsSecretKeys("in keyward's credentials namespace"),
  controller: (d) => (d.cluster ? { reconcile: d.cluster.reconcile } : undefined),
};
