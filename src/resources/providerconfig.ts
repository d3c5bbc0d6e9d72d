// ProviderConfig: where the service is and which token to use. It calls nothing at the
// service itself but one cheap read to tell, in status, whether the service answers with the
// token. Every other kind resolves its ProviderConfig here into a client of src/api.
import { z } from "zod";
import type { ClientOptions } from "../api/index.ts";
import type { Logger } from "../log.ts";
import { getObject, patchMetadata, readCached } from "../kube/objects.ts";
import { secretKind, type KindRef, type Kube } from "../kube/client.ts";
import type { EventRecorder } from "../kube/events.ts";
import { ReconcileError } from "../engine/managed.ts";
import { done, requeueAfter, type KubeObject, type Outcome, type ReconcileFn } from "../engine/types.ts";
import { exactlyOneOf } from "../engine/cel.ts";
import type { CrdSource, PrinterColumn } from "../engine/kind.ts";
import {
  ageColumn,
  commonStatus,
  freshReferrers,
  kindRef,
  providerConfigKind,
  providerConfigName,
  referrersWatch,
  someNames,
} from "./common.ts";
import { checkConnection, writeReady } from "./provider/connection-check.ts";
import { CREDENTIALS_SELECTOR, isMarkedCredentials } from "./provider/credentials.ts";
import { createConnector, type Connector, type SecretReader } from "./provider/connector.ts";
import { dispatchByKind, type ClusterConnect, type ProviderResolver } from "./provider/resolver.ts";

// src/operator.ts reaches the connector and the resolver's type through this module.
export { createConnector } from "./provider/connector.ts";
export type { ProviderResolver } from "./provider/resolver.ts";

export const ref = kindRef("ProviderConfig", "providerconfigs");

const secretKeySelector = (where: string) =>
  z.object({
    name: z.string().min(1).max(253).describe(`Secret ${where}.`),
    key: z.string().min(1).max(253).optional().describe("Key in the Secret holding the token. Default: token."),
  });

const durationPattern = /^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$/;

/** Self-rotating credentials: a bootstrap token used only to mint short-lived access tokens. */
export const tokenAuthSchema = (where: string) =>
  z
    .object({
      identityId: z.guid().describe("The machine identity keyward mints its access tokens for (create-token)."),
      bootstrapSecretRef: secretKeySelector(where).describe(
        "The Secret holding the bootstrap token, used only to call create-token; never for anything else and never copied.",
      ),
      renewBefore: z
        .string()
        .max(32)
        .regex(durationPattern)
        .optional()
        .describe(
          "Mint the next access token this long before the current one expires (10m, 1h30m; at most half its lifetime). Default: a third of its lifetime, as AccessToken.",
        ),
    })
    .strict()
    .describe(
      "Instead of credentialsSecretRef: keyward mints short-lived access tokens for the identity with the bootstrap token, uses them for every call and mints the next one before the current expires. status.tokenExpiresAt shows when the current one expires.",
    );

/** Fields every provider config shares (ProviderConfig and ClusterProviderConfig). */
export const connectionFields = {
  baseUrl: z
    .url({ protocol: /^https?$/ })
    .max(2048)
    .describe("Base URL of the service, e.g. https://secrets.example.com (paths /api/... are appended)."),
  timeoutSeconds: z.number().int().min(1).max(300).optional().describe("Timeout of one request. Default: 10."),
  rateLimit: z
    .object({
      requestsPerSecond: z.number().min(0.01).max(10000).describe("Sustained request rate to this base URL."),
      burst: z.number().int().min(1).max(10000).describe("Requests allowed at once above the rate."),
    })
    .optional()
    .describe(
      "Client-side rate limit of these credentials (base URL and token: the service limits per token), to stay under the service's limits; never shared with another config's limit. Default: 2/s, burst 10.",
    ),
  caBundle: z.string().max(65536).optional().describe("PEM CA bundle to trust for an https baseUrl with a private CA."),
};

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

/** Status of a tokenAuth config: when its current access token expires and the next is minted; never the token. */
export const tokenStatusFields = {
  tokenExpiresAt: z.string().optional().describe("tokenAuth: when the current access token expires (RFC 3339)."),
  tokenRenewAt: z.string().optional().describe("tokenAuth: when keyward mints the next access token (RFC 3339)."),
};

export const statusSchema = z.object({
  ...commonStatus,
  baseUrl: z.string().optional().describe("The base URL last checked."),
  ...tokenStatusFields,
  heldSecret: z.string().optional().describe("The token Secret this ProviderConfig holds (finalizer keyward.dev/in-use) while it exists."),
});

/** Printer columns of ProviderConfig and ClusterProviderConfig alike. */
export const providerConfigColumns: PrinterColumn[] = [
  { name: "URL", type: "string", jsonPath: ".spec.baseUrl" },
  { name: "Ready", type: "string", jsonPath: `.status.conditions[?(@.type=="Ready")].status` },
  { name: "Reason", type: "string", jsonPath: `.status.conditions[?(@.type=="Ready")].reason`, priority: 1 },
  { name: "Token-Expires", type: "string", jsonPath: ".status.tokenExpiresAt", priority: 1 },
  ageColumn,
];

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
  const read: SecretReader = (namespace, name) => readCached(deps.kube, secretKind, { namespace, name }, CREDENTIALS_SELECTOR);

  async function readSpec(namespace: string, name: string): Promise<ProviderConfigSpec> {
    const obj = await readCached(deps.kube, ref, { namespace, name });
    if (!obj) throw new ReconcileError("ProviderConfigNotFound", `ProviderConfig ${namespace}/${name} does not exist`, { retryable: true });
    const parsed = specSchema.safeParse(obj.spec);
    if (!parsed.success)
      throw new ReconcileError(
        "ProviderConfigInvalid",
        `ProviderConfig ${namespace}/${name} is invalid: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
        { retryable: true },
      );
    return parsed.data;
  }

  return dispatchByKind({
    providerConfig: async (namespace, name, signal) => {
      const spec = await readSpec(namespace, name);
      return connector.connect(`ProviderConfig/${namespace}/${name}`, spec, read, namespace, signal);
    },
    cluster: deps.cluster,
    schedules: connector,
  });
}

/**
 * Deleting a namespace deletes a ProviderConfig, its token Secret and the resources that use
 * them all at once; those resources' finalizers then need the ProviderConfig and the token to
 * reach the service. So a ProviderConfig keeps a finalizer, and puts one on its token Secret,
 * while it exists; once it is being deleted, both stay until no keyward resource of its
 * namespace refers to it any more (crossplane's ProviderConfigUsage, in small). A Secret the
 * user deletes while its ProviderConfig stays is let go after DELETED_SECRET_GRACE_MS: that
 * deletion is deliberate.
 */
export const IN_USE_FINALIZER = "keyward.dev/in-use";
/** The label earlier keywards wrote on every token Secret; keyward now only removes it (releaseSecret). */
export const PROVIDER_CONFIG_LABEL = "keyward.dev/provider-config";
const IN_USE_RECHECK_MS = 5_000;

type ProviderConfigObject = KubeObject<unknown, z.infer<typeof statusSchema>>;

interface ReconcileDeps {
  kube: Kube;
  providers: ProviderResolver;
  events: EventRecorder;
  log: Logger;
  recheckMs: number;
  /** The kinds whose spec.providerConfigRef may name a ProviderConfig. */
  users: KindRef[];
}

function usersOf(deps: ReconcileDeps, pc: ProviderConfigObject): Promise<string[]> {
  const { namespace, name } = pc.metadata;
  return freshReferrers(
    deps.kube,
    deps.users,
    namespace,
    (o) => providerConfigKind(o.spec) === "ProviderConfig" && providerConfigName(o.spec) === name,
  );
}

/** The Secret a ProviderConfig spec names: its static token, or its tokenAuth bootstrap token. */
function tokenSecretName(pcSpec: unknown): string | undefined {
  const spec = pcSpec as { credentialsSecretRef?: { name?: string }; tokenAuth?: { bootstrapSecretRef?: { name?: string } } } | undefined;
  return spec?.credentialsSecretRef?.name ?? spec?.tokenAuth?.bootstrapSecretRef?.name;
}

/**
 * How long a deleted token Secret is still held before keyward takes the deletion as the user's
 * own. Deleting a namespace deletes its Secrets, ProviderConfigs and resources in an order of the
 * namespace controller's choosing, often the Secrets first: within this window the ProviderConfig
 * (or a resource using it) shows its own deletion, and the Secret stays until they are finalized.
 */
export const DELETED_SECRET_GRACE_MS = 15_000;

/**
 * Lets go of a token Secret: keyward's finalizer, and the label an earlier keyward wrote on every
 * token Secret (PROVIDER_CONFIG_LABEL; keyward no longer writes it), come off in one patch.
 */
async function releaseSecret(deps: ReconcileDeps, namespace: string, name: string): Promise<void> {
  await patchMetadata(
    deps.kube,
    secretKind,
    { namespace, name },
    { finalizers: { remove: IN_USE_FINALIZER }, labels: { [PROVIDER_CONFIG_LABEL]: null } },
  );
}

/**
 * Holds the token Secret while the ProviderConfig uses it, if the Secret is marked as
 * credentials (src/resources/provider/credentials.ts; keyward writes nothing on any other Secret); lets go
 * of a Secret it no longer uses, that is no longer marked, or that the user deletes (after the
 * grace). Returns when to look again, if it must.
 */
async function holdSecret(deps: ReconcileDeps, pc: ProviderConfigObject, now = Date.now()): Promise<number | undefined> {
  const namespace = pc.metadata.namespace;
  const wanted = tokenSecretName(pc.spec);
  const held = pc.status?.heldSecret;
  if (held && held !== wanted) await releaseSecret(deps, namespace, held);
  if (!wanted) return undefined;
  const secret = await readCached(deps.kube, secretKind, { namespace, name: wanted }, CREDENTIALS_SELECTOR);
  if (!secret) return undefined;
  const holding = (secret.metadata.finalizers ?? []).includes(IN_USE_FINALIZER);
  if (!isMarkedCredentials(secret)) {
    // An earlier keyward held every named Secret; this one only takes its own finalizer back.
    if (holding || secret.metadata.labels?.[PROVIDER_CONFIG_LABEL] !== undefined) await releaseSecret(deps, namespace, wanted);
    return undefined;
  }
  const deletedAt = secret.metadata.deletionTimestamp;
  if (deletedAt) {
    // Let go only of a Secret deleted on its own: ask the apiserver (the cache may lag) whether
    // the ProviderConfig is being deleted too, and give a namespace deletion time to show.
    const fresh = await getObject(deps.kube, ref, { namespace, name: pc.metadata.name });
    if (fresh?.metadata.deletionTimestamp) return undefined;
    const wait = Date.parse(deletedAt) + DELETED_SECRET_GRACE_MS - now;
    if (wait > 0) return wait;
    await releaseSecret(deps, namespace, wanted);
    return undefined;
  }
  if (holding) return undefined;
  await patchMetadata(deps.kube, secretKind, { namespace, name: wanted }, { finalizers: { add: IN_USE_FINALIZER } });
  return undefined;
}

/** A ProviderConfig being deleted: released (with its Secret) once nothing uses it. */
async function release(deps: ReconcileDeps, pc: ProviderConfigObject): Promise<Outcome> {
  const key = { namespace: pc.metadata.namespace, name: pc.metadata.name };
  if (!(pc.metadata.finalizers ?? []).includes(IN_USE_FINALIZER)) return done();
  const users = await usersOf(deps, pc);
  if (users.length > 0) {
    await writeReady(deps, ref, pc, { status: "False", reason: "InUse", message: `kept until no resource uses it: ${someNames(users)}` });
    return requeueAfter(IN_USE_RECHECK_MS);
  }
  const secret = pc.status?.heldSecret ?? tokenSecretName(pc.spec);
  if (secret && !(await secretStillUsed(deps, pc, secret))) await releaseSecret(deps, key.namespace, secret);
  await patchMetadata(deps.kube, ref, key, { finalizers: { remove: IN_USE_FINALIZER } });
  return done();
}

/**
 * Another ProviderConfig of the namespace, not being deleted, names the same Secret: it keeps
 * its finalizer, or a namespace deletion in between could take the Secret before that
 * ProviderConfig's users have finished. A fresh list, as for the users.
 */
async function secretStillUsed(deps: ReconcileDeps, pc: ProviderConfigObject, secret: string): Promise<boolean> {
  const others = await freshReferrers(deps.kube, [ref], pc.metadata.namespace, (other) => {
    const o = other as ProviderConfigObject;
    return (
      o.metadata.name !== pc.metadata.name &&
      o.metadata.deletionTimestamp === undefined &&
      (o.status?.heldSecret ?? tokenSecretName(o.spec)) === secret
    );
  });
  return others.length > 0;
}

/** ProviderConfig's own reconcile: does the service answer with this token? */
export function providerConfigReconciler(deps: ReconcileDeps): ReconcileFn {
  return async (key) => {
    const pc = (await readCached(deps.kube, ref, key)) as ProviderConfigObject | undefined;
    if (!pc) return done();
    if (pc.metadata.deletionTimestamp) return release(deps, pc);
    if (!(pc.metadata.finalizers ?? []).includes(IN_USE_FINALIZER))
      await patchMetadata(deps.kube, ref, key, { finalizers: { add: IN_USE_FINALIZER } });
    const secretRecheckMs = await holdSecret(deps, pc);
    const secret = tokenSecretName(pc.spec);
    const check = await checkConnection(deps, {
      ref,
      obj: pc,
      configId: `ProviderConfig/${key.namespace}/${key.name}`,
      connect: () => deps.providers.connect(key.namespace, key.name),
      schedules: deps.providers,
      connected: "the service answers with this token",
      fields: secret ? { heldSecret: secret } : {},
    });
    if (check.throttled) return check.throttled;
    const after = [check.retryInMs, check.renewInMs, secretRecheckMs].filter((ms) => ms !== undefined);
    return after.length > 0 ? requeueAfter(Math.min(...after)) : done();
  };
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
 * A secondary watch for every kind that uses a ProviderConfig: a change to one (fixed URL, new
 * Secret reference, a Ready transition) requeues the resources that refer to it at once instead
 * of at their next resync. The informer updates its cache before the event, so the requeued
 * passes judge the fixed ProviderConfig, never the stale copy.
 */
export const dependentsWatch = referrersWatch(ref, (spec) =>
  providerConfigKind(spec ?? {}) === "ProviderConfig" ? providerConfigName(spec ?? {}) : undefined,
);
