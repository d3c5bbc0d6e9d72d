// ProviderConfig: where the service is and which token to use. It calls nothing at the
// service itself but one cheap read to tell, in status, whether the service answers with the
// token. Every other kind resolves its ProviderConfig here into a client of src/api.
import { createHash } from "node:crypto";
import { z } from "zod";
import { createApiClient, type ApiClient, type ClientOptions } from "../api/index.ts";
import type { Logger } from "../log.ts";
import type { Kube } from "../kube/client.ts";
import { getObject, patchStatus } from "../kube/objects.ts";
import type { EventRecorder } from "../kube/events.ts";
import { setCondition, statusEqual } from "../engine/conditions.ts";
import { classifyError, ReconcileError } from "../engine/managed.ts";
import { done, requeueAfter, type KubeObject, type ObjectKey, type ReconcileFn } from "../engine/types.ts";
import type { CrdSource } from "../kube/crd.ts";
import { ageColumn, commonStatus, kindRef, providerConfigName } from "./common.ts";

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
});

export const crdSource: CrdSource = {
  group: ref.group,
  version: ref.version,
  kind: ref.kind,
  plural: ref.plural,
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
const SECRET_CACHE_MS = 5_000;

export interface ProviderResolver {
  /** A client for the ProviderConfig `name` in `namespace`; errors are ReconcileErrors with a reason. */
  connect(namespace: string, name: string): Promise<ApiClient>;
}

interface CachedToken {
  token: string;
  at: number;
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
  const tokens = new Map<string, CachedToken>();
  const now = deps.now ?? Date.now;

  async function readToken(namespace: string, spec: ProviderConfigSpec): Promise<string> {
    const secretName = spec.credentialsSecretRef.name;
    const key = spec.credentialsSecretRef.key ?? "token";
    const cacheKey = `${namespace}/${secretName}/${key}`;
    const cached = tokens.get(cacheKey);
    if (cached && now() - cached.at < SECRET_CACHE_MS) return cached.token;
    let secret;
    try {
      secret = await deps.kube.core.readNamespacedSecret({ name: secretName, namespace });
    } catch (err) {
      if ((err as { code?: number }).code === 404) {
        throw new ReconcileError("CredentialsNotFound", `Secret ${namespace}/${secretName} does not exist`, { retryable: true });
      }
      throw err;
    }
    const encoded = secret.data?.[key];
    if (!encoded) throw new ReconcileError("CredentialsNotFound", `Secret ${namespace}/${secretName} has no key ${key}`, { retryable: true });
    const token = Buffer.from(encoded, "base64").toString("utf8").trim();
    tokens.set(cacheKey, { token, at: now() });
    return token;
  }

  async function readSpec(namespace: string, name: string): Promise<ProviderConfigSpec> {
    const obj = await getObject(deps.kube, ref, { namespace, name });
    if (!obj) throw new ReconcileError("ProviderConfigNotFound", `ProviderConfig ${namespace}/${name} does not exist`, { retryable: true });
    const parsed = specSchema.safeParse(obj.spec);
    if (!parsed.success) throw new ReconcileError("ProviderConfigInvalid", `ProviderConfig ${namespace}/${name} is invalid: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`, { retryable: true });
    return parsed.data;
  }

  return {
    async connect(namespace, name) {
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
      return client;
    },
  };
}

function hash(s: string): string {
  return createHash("sha256").update(s).digest("hex").slice(0, 16);
}

/** ProviderConfig's own reconcile: does the service answer with this token? */
export function providerConfigReconciler(deps: { kube: Kube; providers: ProviderResolver; events: EventRecorder; log: Logger; recheckMs: number }): ReconcileFn {
  return async (key) => {
    const obj = (await getObject(deps.kube, ref, key)) as KubeObject<unknown, z.infer<typeof statusSchema>> | undefined;
    if (!obj) return done();
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
    const now = new Date().toISOString();
    const generation = obj.metadata.generation ?? 0;
    const conditions = setCondition(obj.status?.conditions ?? [], { type: "Ready", ...ready, observedGeneration: generation, lastTransitionTime: now }, now);
    const baseUrl = (obj.spec as { baseUrl?: string }).baseUrl;
    const next = { observedGeneration: generation, conditions, ...(baseUrl ? { baseUrl } : {}) };
    if (!statusEqual(obj.status ?? {}, next)) {
      const was = obj.status?.conditions?.find((c) => c.type === "Ready");
      if (was?.status !== ready.status || was.reason !== ready.reason) {
        deps.events.record(obj, ready.status === "True" ? "Normal" : "Warning", ready.reason, ready.message);
      }
      await patchStatus(deps.kube, ref, obj, next);
    }
    return retry ? requeueAfter(Math.min(deps.recheckMs, 30_000)) : done();
  };
}

/**
 * A secondary watch for every kind that uses a ProviderConfig: a change to one (fixed URL, new
 * Secret reference, a Ready transition) requeues the resources that refer to it at once instead
 * of at their next resync.
 */
export const dependentsWatch = {
  kind: ref,
  mapToKeys: (pc: KubeObject, primaries?: () => KubeObject[]): ObjectKey[] =>
    (primaries?.() ?? [])
      .filter((o) => o.metadata.namespace === pc.metadata.namespace && providerConfigName(o.spec as { providerConfigRef?: { name: string } }) === pc.metadata.name)
      .map((o) => ({ namespace: o.metadata.namespace, name: o.metadata.name })),
};
