// ProviderConfig: where the service is and which token to use. It calls nothing at the
// service itself but one cheap read to tell, in status, whether the service answers with the
// token. Here is only what is ProviderConfig's own: its schema and CRD, how one is read into a
// connection (createProviderResolver; the other kinds reach it through provider/resolver.ts),
// its reconcile and its watches. The plumbing it shares with ClusterProviderConfig (connector,
// connection check, in-use tracking, token schedule, credentials) is in provider/.
import { z } from "zod";
import type { ClientOptions } from "../api/index.ts";
import type { Logger } from "../log.ts";
import { getObject, readCached } from "../kube/objects.ts";
import { dataOmitted } from "../kube/informer.ts";
import { secretKind, type KindRef, type Kube } from "../kube/client.ts";
import type { EventRecorder } from "../kube/events.ts";
import { ReconcileError } from "../engine/errors.ts";
import { actsOn, done, gone, requeueAfter, type KubeObject, type ObjectKey, type Ownership, type ReconcileFn } from "../engine/types.ts";
import { exactlyOneOf } from "../engine/cel.ts";
import { createSpecCache } from "../engine/spec-cache.ts";
import type { CrdSource } from "../engine/kind.ts";
import {
  bounds,
  commonStatus,
  kindRef,
  providerConfigChangeMatters,
  providerConfigKind,
  providerConfigName,
  referrersWatch,
} from "./common.ts";
import { connectionFields, providerConfigColumns, secretKeySelector, tokenAuthSchema, tokenStatusFields } from "./provider/crd-fields.ts";
import { checkConnection } from "./provider/connection-check.ts";
import { hold, IN_USE_FINALIZER, PROVIDER_CONFIG_LABEL, release, tokenSecretName } from "./provider/in-use.ts";
import { CREDENTIALS_SELECTOR, credentialsSecretKeys } from "./provider/credentials.ts";
import { createConnector, type Connector, type SecretReader } from "./provider/connector.ts";
import { dispatchByKind, type ClusterConnect, type ProviderResolver } from "./provider/resolver.ts";
import type { Kind } from "./kind.ts";
import type { VersionChange } from "../lib/conversion.ts";
import { V1BETA1 } from "./common.ts";
import { providerConfigV1beta1Edits } from "./provider/crd-fields.ts";

export const ref = kindRef("ProviderConfig", "providerconfigs");

export const specSchema = z
  .object({
    baseUrl: connectionFields.baseUrl,
    credentialsSecretRef: secretKeySelector("in the same namespace")
      .optional()
      .describe(
        "The Secret holding a static bearer access token. The token never leaves it. Exactly one of credentialsSecretRef and tokenAuth.",
      ),
    tokenAuth: tokenAuthSchema("in the same namespace").optional(),
    timeoutSeconds: connectionFields.timeoutSeconds,
    rateLimit: connectionFields.rateLimit,
    caBundle: connectionFields.caBundle,
  })
  .strict();
export type ProviderConfigSpec = z.infer<typeof specSchema>;

export const statusSchema = z.object({
  ...commonStatus,
  baseUrl: z.string().max(bounds.URL_MAX).optional().describe("The base URL last checked."),
  ...tokenStatusFields,
  heldSecret: z
    .string()
    .max(bounds.K8S_NAME)
    .optional()
    .describe("The token Secret this ProviderConfig holds (finalizer keyward.dev/in-use) while it exists."),
});

export const crdSource: CrdSource = {
  ...ref,
  singular: "providerconfig",
  shortNames: ["kwpc"],
  categories: ["keyward"],
  description:
    "Where the service is and which credentials (from a Secret in the same namespace: a static access token, or a bootstrap token keyward mints short-lived access tokens with) keyward uses for it.",
  spec: specSchema,
  specValidations: [exactlyOneOf(["credentialsSecretRef", "tokenAuth"], "exactly one of credentialsSecretRef and tokenAuth must be set")],
  status: statusSchema,
  printerColumns: providerConfigColumns,
};

/** A ProviderConfig spec its schema refuses: the issues, as one line. */
class InvalidProviderConfig extends Error {}

/**
 * Resolves ProviderConfigs (and, through `cluster`, ClusterProviderConfigs) to clients, caching
 * one client per config so connections and the rate-limit bucket are reused across reconciles.
 */
export function createProviderResolver(deps: {
  kube: Kube;
  log: Logger;
  onRequest?: ClientOptions["onRequest"];
  now?: () => number;
  connector?: Connector;
  cluster?: () => ClusterConnect | undefined;
}): ProviderResolver {
  const connector = deps.connector ?? createConnector(deps);
  // A Secret marked as credentials is in the narrowed Secret cache; any other is read only to say why it is not used.
  // The cache keeps a Secret's data up to a bound (src/kube/informer.ts slim): past it, the Secret is read whole from the apiserver.
  const read: SecretReader = async (namespace, name) => {
    const cached = await readCached(deps.kube, secretKind, { namespace, name }, CREDENTIALS_SELECTOR);
    return cached && dataOmitted(cached) ? getObject(deps.kube, secretKind, { namespace, name }) : cached;
  };

  // Every pass of every object using a config reads its spec: parsed once per config generation.
  const specs = createSpecCache<ProviderConfigSpec>((raw) => {
    const parsed = specSchema.safeParse(raw);
    if (!parsed.success) throw new InvalidProviderConfig(parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; "));
    return parsed.data;
  });

  async function readSpec(namespace: string, name: string): Promise<ProviderConfigSpec> {
    const obj = await readCached(deps.kube, ref, { namespace, name });
    if (!obj) {
      // Gone (or never made): nothing is kept for it, also in a process whose share it is not in.
      connector.forget(`ProviderConfig/${namespace}/${name}`);
      specs.forget({ namespace, name });
      throw new ReconcileError("ProviderConfigNotFound", `ProviderConfig ${namespace}/${name} does not exist`, { retryable: true });
    }
    try {
      return specs.parse(obj);
    } catch (err) {
      if (!(err instanceof InvalidProviderConfig)) throw err;
      throw new ReconcileError("ProviderConfigInvalid", `ProviderConfig ${namespace}/${name} is invalid: ${err.message}`, {
        retryable: true,
      });
    }
  }

  return dispatchByKind({
    providerConfig: async (namespace, name, signal) => {
      const spec = await readSpec(namespace, name);
      return connector.connect(
        `ProviderConfig/${namespace}/${name}`,
        spec,
        read,
        { secretNamespace: namespace, tenant: namespace },
        signal,
      );
    },
    cluster: deps.cluster,
    schedules: connector,
  });
}

type ProviderConfigObject = KubeObject<unknown, z.infer<typeof statusSchema>>;

interface ReconcileDeps {
  kube: Kube;
  providers: ProviderResolver;
  events: EventRecorder;
  log: Logger;
  recheckMs: number;
  /** The kinds whose spec.providerConfigRef may name a ProviderConfig. */
  users: KindRef[];
  /** Which ProviderConfigs this process acts on, and how it writes them; absent: every one. */
  ownership?: Ownership;
}

/** ProviderConfig's own reconcile: does the service answer with this token? */
export function providerConfigReconciler(deps: ReconcileDeps): ReconcileFn {
  const forget = (key: ObjectKey): void => deps.providers.forget(`ProviderConfig/${key.namespace}/${key.name}`);
  const reconcile: ReconcileFn = async (key) => {
    const pc = (await readCached(deps.kube, ref, key)) as ProviderConfigObject | undefined;
    // Gone, or another process's as read: its clients, connections and minted token go
    // with it, and nothing is checked, minted or written here.
    if (!pc || !actsOn(deps.ownership, pc as KubeObject)) {
      forget(key);
      return gone();
    }
    if (pc.metadata.deletionTimestamp) return release(deps, ref, pc);
    const secretRecheckMs = await hold(deps, ref, pc);
    const secret = tokenSecretName(pc.spec);
    const check = await checkConnection(
      { ...deps, exact: deps.ownership?.exactWrites === true },
      {
        ref,
        obj: pc,
        configId: `ProviderConfig/${key.namespace}/${key.name}`,
        connect: () => deps.providers.connect(key.namespace, key.name),
        schedules: deps.providers,
        connected: "the service answers with this token",
        fields: secret ? { heldSecret: secret } : {},
      },
    );
    if (check.throttled) return check.throttled;
    const after = [check.retryInMs, check.renewInMs, secretRecheckMs].filter((ms) => ms !== undefined);
    return after.length > 0 ? requeueAfter(Math.min(...after)) : done();
  };
  reconcile.forget = forget;
  return reconcile;
}

/**
 * Marked credentials Secrets map back to the ProviderConfigs of their namespace that name them:
 * marking a Secret, rotating its token or deleting it reconciles them at once. Only marked
 * Secrets are cached (the label selector), so keyward holds no other Secret in memory.
 */
export const credentialsSecretWatch = {
  ...referrersWatch(secretKind, (spec) => tokenSecretName(spec)),
  labelSelector: CREDENTIALS_SELECTOR,
};

/**
 * A secondary watch for every kind that uses a ProviderConfig: a change to one that matters to
 * its users (fixed URL, new Secret reference, a Ready transition, deletion:
 * providerConfigChangeMatters) requeues the resources that refer to it at once instead of at
 * their next resync; its own status writes that change nothing they read (token schedule,
 * condition times) requeue none. The informer updates its cache before the event, so the
 * requeued passes judge the fixed ProviderConfig, never the stale copy.
 */
export const dependentsWatch = referrersWatch(
  ref,
  (spec) => (providerConfigKind(spec ?? {}) === "ProviderConfig" ? providerConfigName(spec ?? {}) : undefined),
  providerConfigChangeMatters,
);

/** How v1alpha1 becomes v1beta1 (docs/api-review.md): the provider kinds' shared edits. */
export const v1beta1: VersionChange = { from: ref.version, to: V1BETA1, edits: providerConfigV1beta1Edits };

export const kind: Kind = {
  ref,
  crd: crdSource,
  conversion: v1beta1,
  reasons: {
    InUse: { means: "retrying", doc: "Being deleted: waits until no resource names it (the message names them)." },
  },
  refers: {},
  wakesReferrers: { as: "providerConfig", watches: [dependentsWatch] },
  metadata: [
    ...credentialsSecretKeys("in the ProviderConfig's namespace"),
    {
      key: IN_USE_FINALIZER,
      what: "finalizer",
      by: "keyward",
      doc: "On the ProviderConfig, and on its token Secret (status.heldSecret), while it exists. Once the ProviderConfig is being deleted (a namespace deletion deletes everything at once), both stay until no resource of its namespace names it (Ready=False InUse), so those resources' own deletions can still reach the service.",
    },
    {
      key: PROVIDER_CONFIG_LABEL,
      what: "label",
      on: "the token Secret",
      by: "keyward",
      doc: "Written by earlier versions; keyward only removes it.",
    },
  ],
  controller: (d) => ({
    reconcile: providerConfigReconciler({
      kube: d.kube,
      providers: d.providers,
      events: d.events,
      log: d.log,
      recheckMs: d.resyncIntervalMs,
      users: [...d.providerConfigUsers],
      ...(d.ownership ? { ownership: d.ownership } : {}),
    }),
    watches: [credentialsSecretWatch],
  }),
};
