// ProviderConfig: where the service is and which token to use. It calls nothing at the
// service itself but one cheap read to tell, in status, whether the service answers with the
// token. Every other kind resolves its ProviderConfig here into a client of src/api.
import { createHash } from "node:crypto";
import { z } from "zod";
import { createApiClient, type ApiClient, type ClientOptions } from "../api/index.ts";
import type { Logger } from "../log.ts";
import { getObject, patchMetadata, readCached } from "../kube/objects.ts";
import { resourcePath, secretKind, type KindRef, type Kube } from "../kube/client.ts";
import { kubeJson } from "../kube/rest.ts";
import type { EventRecorder } from "../kube/events.ts";
import { writeStatus } from "../engine/status.ts";
import { classifyError, ReconcileError } from "../engine/managed.ts";
import { done, requeueAfter, type KubeObject, type ObjectKey, type Outcome, type ReconcileFn } from "../engine/types.ts";
import type { CrdSource } from "../kube/crd.ts";
import { ageColumn, commonStatus, kindRef, providerConfigName, referrersWatch } from "./common.ts";

export const ref = kindRef("ProviderConfig", "providerconfigs");

export const specSchema = z
  .object({
    baseUrl: z
      .url({ protocol: /^https?$/ })
      .max(2048)
      .describe("Base URL of the service, e.g. https://secrets.example.com (paths /api/... are appended)."),
    credentialsSecretRef: z
      .object({
        name: z.string().min(1).max(253).describe("Secret in the same namespace."),
        key: z.string().min(1).max(253).optional().describe("Key in the Secret holding the access token. Default: token."),
      })
      .describe("The Secret holding the bearer access token. The token never leaves it."),
    timeoutSeconds: z.number().int().min(1).max(300).optional().describe("Timeout of one request. Default: 10."),
    rateLimit: z
      .object({
        requestsPerSecond: z.number().min(0.01).max(10000).describe("Sustained request rate to this base URL."),
        burst: z.number().int().min(1).max(10000).describe("Requests allowed at once above the rate."),
      })
      .optional()
      .describe("Client-side rate limit per base URL, to stay under the service's limits. Default: 2/s, burst 10."),
    caBundle: z.string().max(65536).optional().describe("PEM CA bundle to trust for an https baseUrl with a private CA."),
  })
  .strict();
export type ProviderConfigSpec = z.infer<typeof specSchema>;

export const statusSchema = z.object({
  ...commonStatus,
  baseUrl: z.string().optional().describe("The base URL last checked."),
  heldSecret: z.string().optional().describe("The token Secret this ProviderConfig holds (finalizer keyward.dev/in-use) while it exists."),
});

export const crdSource: CrdSource = {
  ...ref,
  singular: "providerconfig",
  shortNames: ["kwpc"],
  categories: ["keyward"],
  description: "Where the service is and which access token (from a Secret in the same namespace) keyward uses for it.",
  spec: specSchema,
  status: statusSchema,
  printerColumns: [
    { name: "URL", type: "string", jsonPath: ".spec.baseUrl" },
    { name: "Ready", type: "string", jsonPath: `.status.conditions[?(@.type=="Ready")].status` },
    { name: "Reason", type: "string", jsonPath: `.status.conditions[?(@.type=="Ready")].reason`, priority: 1 },
    ageColumn,
  ],
};

const DEFAULT_RATE = { requestsPerSecond: 2, burst: 10 };

export interface ProviderResolver {
  /** A client for the ProviderConfig `name` in `namespace`; errors are ReconcileErrors with a reason. `signal` cancels its calls. */
  connect(namespace: string, name: string, signal?: AbortSignal): Promise<ApiClient>;
}

/**
 * Resolves ProviderConfigs to clients, caching one client per (config, token) pair so
 * connections and the rate-limit bucket are reused across reconciles.
 */
export function createProviderResolver(deps: {
  kube: Kube;
  log: Logger;
  onRequest?: ClientOptions["onRequest"];
  now?: () => number;
}): ProviderResolver {
  // One client per ProviderConfig, replaced when its settings or token change, so a rotated
  // token does not leave the old client (and the old token) behind.
  const clients = new Map<string, { fingerprint: string; client: ApiClient }>();

  async function readToken(namespace: string, spec: ProviderConfigSpec): Promise<string> {
    const secretName = spec.credentialsSecretRef.name;
    const key = spec.credentialsSecretRef.key ?? "token";
    // A held token Secret carries the label, so it is in the narrowed Secret cache.
    const secret = await readCached(deps.kube, secretKind, { namespace, name: secretName }, PROVIDER_CONFIG_LABEL);
    if (!secret) throw new ReconcileError("CredentialsNotFound", `Secret ${namespace}/${secretName} does not exist`, { retryable: true });
    const encoded = (secret as { data?: Record<string, string> }).data?.[key];
    if (!encoded) throw new ReconcileError("CredentialsNotFound", `Secret ${namespace}/${secretName} has no key ${key}`, { retryable: true });
    return Buffer.from(encoded, "base64").toString("utf8").trim();
  }

  async function readSpec(namespace: string, name: string): Promise<ProviderConfigSpec> {
    const obj = await readCached(deps.kube, ref, { namespace, name });
    if (!obj) throw new ReconcileError("ProviderConfigNotFound", `ProviderConfig ${namespace}/${name} does not exist`, { retryable: true });
    const parsed = specSchema.safeParse(obj.spec);
    if (!parsed.success) throw new ReconcileError("ProviderConfigInvalid", `ProviderConfig ${namespace}/${name} is invalid: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`, { retryable: true });
    return parsed.data;
  }

  return {
    async connect(namespace, name, signal) {
      const spec = await readSpec(namespace, name);
      const token = await readToken(namespace, spec);
      // The cache key holds a hash of the token, never the token.
      const fingerprint = [spec.baseUrl, spec.timeoutSeconds ?? "", JSON.stringify(spec.rateLimit ?? ""), hash(spec.caBundle ?? ""), hash(token)].join("|");
      const cacheKey = `${namespace}/${name}`;
      const cached = clients.get(cacheKey);
      let client = cached?.fingerprint === fingerprint ? cached.client : undefined;
      if (!client) {
        client = createApiClient({
          baseUrl: spec.baseUrl,
          token,
          timeoutMs: (spec.timeoutSeconds ?? 10) * 1000,
          rateLimit: spec.rateLimit ?? DEFAULT_RATE,
          ...(spec.caBundle ? { caBundle: spec.caBundle } : {}),
          ...(deps.onRequest ? { onRequest: deps.onRequest } : {}),
          logger: deps.log,
        });
        clients.set(cacheKey, { fingerprint, client });
      }
      return signal ? client.withSignal(signal) : client;
    },
  };
}

function hash(s: string): string {
  return createHash("sha256").update(s).digest("hex").slice(0, 16);
}

/** The `connect` of every kind that talks to the service through its spec.providerConfigRef. */
export function connectVia(providers: ProviderResolver) {
  return ({ namespace, spec, signal }: { namespace: string; spec: { providerConfigRef?: { name: string } | undefined }; signal: AbortSignal }): Promise<ApiClient> =>
    providers.connect(namespace, providerConfigName(spec), signal);
}

/**
 * Deleting a namespace deletes a ProviderConfig, its token Secret and the resources that use
 * them all at once; those resources' finalizers then need the ProviderConfig and the token to
 * reach the service. So a ProviderConfig keeps a finalizer, and puts one on its token Secret,
 * while it exists; once it is being deleted, both stay until no keyward resource of its
 * namespace refers to it any more (crossplane's ProviderConfigUsage, in small). A Secret the
 * user deletes while its ProviderConfig stays is let go at once: that deletion is deliberate.
 */
export const IN_USE_FINALIZER = "keyward.dev/in-use";
/** Label on the token Secret naming its ProviderConfig, so a narrow Secret watch can map back. */
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

async function usersOf(deps: ReconcileDeps, pc: ProviderConfigObject): Promise<string[]> {
  const { namespace, name } = pc.metadata;
  const found: string[] = [];
  for (const kind of deps.users) {
    // A fresh list, not the cache: letting go too early would strand a user's finalizer.
    const list = await kubeJson<{ items?: KubeObject[] }>(deps.kube.access, { path: resourcePath(kind, namespace) });
    for (const o of list.items ?? []) {
      if (providerConfigName(o.spec) === name) found.push(`${kind.kind}/${o.metadata.name}`);
    }
  }
  return found;
}

function tokenSecretName(pc: ProviderConfigObject): string | undefined {
  return (pc.spec as { credentialsSecretRef?: { name?: string } } | undefined)?.credentialsSecretRef?.name;
}

/** Holds the token Secret while the ProviderConfig uses it; lets go of a Secret it no longer uses or that the user deletes. */
async function holdSecret(deps: ReconcileDeps, pc: ProviderConfigObject): Promise<void> {
  const namespace = pc.metadata.namespace;
  const wanted = tokenSecretName(pc);
  const held = pc.status?.heldSecret;
  if (held && held !== wanted) await patchMetadata(deps.kube, secretKind, { namespace, name: held }, { finalizers: { remove: IN_USE_FINALIZER } });
  if (!wanted) return;
  const secret = await readCached(deps.kube, secretKind, { namespace, name: wanted }, PROVIDER_CONFIG_LABEL);
  if (!secret) return;
  if (secret.metadata.deletionTimestamp) {
    // Let go only of a Secret deleted on its own. When the whole namespace goes, the cached
    // ProviderConfig may not show its own deletion yet (another watch stream): ask the apiserver,
    // or the resources still to be finalized would lose their token.
    const fresh = await getObject(deps.kube, ref, { namespace, name: pc.metadata.name });
    if (fresh?.metadata.deletionTimestamp) return;
    await patchMetadata(deps.kube, secretKind, { namespace, name: wanted }, { finalizers: { remove: IN_USE_FINALIZER } });
    return;
  }
  const holding = (secret.metadata.finalizers ?? []).includes(IN_USE_FINALIZER);
  const labelled = secret.metadata.labels?.[PROVIDER_CONFIG_LABEL] === pc.metadata.name;
  if (holding && labelled) return;
  await patchMetadata(deps.kube, secretKind, { namespace, name: wanted }, { finalizers: { add: IN_USE_FINALIZER }, labels: { [PROVIDER_CONFIG_LABEL]: pc.metadata.name } });
}

/** A ProviderConfig being deleted: released (with its Secret) once nothing uses it. */
async function release(deps: ReconcileDeps, pc: ProviderConfigObject): Promise<Outcome> {
  const key = { namespace: pc.metadata.namespace, name: pc.metadata.name };
  if (!(pc.metadata.finalizers ?? []).includes(IN_USE_FINALIZER)) return done();
  const users = await usersOf(deps, pc);
  if (users.length > 0) {
    const shown = users.slice(0, 5).join(", ") + (users.length > 5 ? `, and ${users.length - 5} more` : "");
    await writeReady(deps, pc, { status: "False", reason: "InUse", message: `kept until no resource uses it: ${shown}` });
    return requeueAfter(IN_USE_RECHECK_MS);
  }
  const secret = pc.status?.heldSecret ?? tokenSecretName(pc);
  if (secret) await patchMetadata(deps.kube, secretKind, { namespace: key.namespace, name: secret }, { finalizers: { remove: IN_USE_FINALIZER } });
  await patchMetadata(deps.kube, ref, key, { finalizers: { remove: IN_USE_FINALIZER } });
  return done();
}

async function writeReady(deps: ReconcileDeps, pc: ProviderConfigObject, ready: { status: "True" | "False"; reason: string; message: string }, extra: Record<string, unknown> = {}): Promise<void> {
  const { conditions: _c, observedGeneration: _g, ...kept } = pc.status ?? {};
  await writeStatus({ kube: deps.kube, ref, obj: pc, kindStatus: { ...kept, ...extra }, conditions: { ready: { type: "Ready", ...ready } }, now: new Date(), events: deps.events });
}

/** ProviderConfig's own reconcile: does the service answer with this token? */
export function providerConfigReconciler(deps: ReconcileDeps): ReconcileFn {
  return async (key) => {
    const pc = (await readCached(deps.kube, ref, key)) as ProviderConfigObject | undefined;
    if (!pc) return done();
    if (pc.metadata.deletionTimestamp) return release(deps, pc);
    if (!(pc.metadata.finalizers ?? []).includes(IN_USE_FINALIZER)) await patchMetadata(deps.kube, ref, key, { finalizers: { add: IN_USE_FINALIZER } });
    await holdSecret(deps, pc);
    let ready: { status: "True" | "False"; reason: string; message: string };
    let retry = false;
    try {
      const client = await deps.providers.connect(key.namespace, key.name);
      await client.listProjects({});
      ready = { status: "True", reason: "Connected", message: "the service answers with this token" };
    } catch (err) {
      const c = classifyError(err);
      retry = c.retryable;
      ready = { status: "False", reason: c.reason, message: c.message };
    }
    const baseUrl = (pc.spec as { baseUrl?: string }).baseUrl;
    const secret = tokenSecretName(pc);
    await writeReady(deps, pc, ready, { ...(baseUrl ? { baseUrl } : {}), ...(secret ? { heldSecret: secret } : {}) });
    return retry ? requeueAfter(Math.min(deps.recheckMs, 30_000)) : done();
  };
}

/** Token Secrets map back to their ProviderConfig (a user deleting one is let go at once). */
export const heldSecretWatch = {
  kind: secretKind,
  labelSelector: PROVIDER_CONFIG_LABEL,
  mapToKeys: (secret: KubeObject): ObjectKey[] => {
    const name = secret.metadata.labels?.[PROVIDER_CONFIG_LABEL];
    return name ? [{ namespace: secret.metadata.namespace, name }] : [];
  },
};

/**
 * A secondary watch for every kind that uses a ProviderConfig: a change to one (fixed URL, new
 * Secret reference, a Ready transition) requeues the resources that refer to it at once instead
 * of at their next resync. The informer updates its cache before the event, so the requeued
 * passes judge the fixed ProviderConfig, never the stale copy.
 */
export const dependentsWatch = referrersWatch(ref, (spec) => providerConfigName(spec ?? {}));
