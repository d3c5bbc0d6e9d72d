// Who may read /metrics: controller-runtime's filters.WithAuthenticationAndAuthorization in
// small. The caller's bearer token goes to a TokenReview; the user it names to a
// SubjectAccessReview of the non-resource URL /metrics, verb get. Decisions are cached for a
// short while per token (by its hash, never the token itself), so a Prometheus scraping every
// 15 s costs the apiserver two requests a minute, not eight.
import { createHash } from "node:crypto";
import { performance } from "node:perf_hooks";
import { resourcePath, type KindRef } from "./client.ts";
import type { KubeAccess } from "./kubeconfig.ts";
import { errorSummary, kubeJson } from "./rest.ts";

export const tokenReviewKind: KindRef = {
  group: "authentication.k8s.io",
  version: "v1",
  plural: "tokenreviews",
  kind: "TokenReview",
  clusterScoped: true,
};
export const subjectAccessReviewKind: KindRef = {
  group: "authorization.k8s.io",
  version: "v1",
  plural: "subjectaccessreviews",
  kind: "SubjectAccessReview",
  clusterScoped: true,
};

export type MetricsAuthDecision = { status: 200 } | { status: 401 | 403 | 429 | 500; message: string };

export interface MetricsAuthorizer {
  /** The decision for a request carrying this Authorization header (or none). */
  check(authorization: string | undefined): Promise<MetricsAuthDecision>;
}

export interface MetricsAuthorizerOptions {
  access: KubeAccess;
  /** The non-resource URL asked about. Default /metrics. */
  path?: string;
  /** How long an allow is trusted. controller-runtime's delegating authorizer: 5 min; we take 1 min so a revoked binding bites sooner. */
  allowTtlMs?: number;
  /** How long a 401 or 403 is kept (controller-runtime: 30 s), so a misconfigured scraper cannot hammer the apiserver. */
  denyTtlMs?: number;
  /** Entries kept at most; the oldest go first. */
  maxEntries?: number;
  /** A monotonic clock in ms (performance.now by default): a wall-clock step must not extend a decision. */
  now?: () => number;
  /**
   * New reviews (a token not in the cache) started per second, and the burst: every new token
   * costs the apiserver a TokenReview and a SubjectAccessReview, so a caller sending a fresh
   * garbage token per request must not turn /metrics into an apiserver load generator. Over the
   * limit a request is answered 429 without a review. Default 5/s, burst 20.
   */
  reviewsPerSecond?: number;
  reviewBurst?: number;
}

interface TokenReviewStatus {
  authenticated?: boolean;
  user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  error?: string;
}

interface Cached {
  decision: Promise<MetricsAuthDecision>;
  /** Monotonic ms; Infinity while the decision is pending. */
  until: number;
}

/** The token of an `Authorization: Bearer <token>` header; undefined for anything else. */
export function bearerToken(authorization: string | undefined): string | undefined {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "");
  return m?.[1];
}

export function createMetricsAuthorizer(opts: MetricsAuthorizerOptions): MetricsAuthorizer {
  const path = opts.path ?? "/metrics";
  const allowTtlMs = opts.allowTtlMs ?? 60_000;
  const denyTtlMs = opts.denyTtlMs ?? 10_000;
  const maxEntries = opts.maxEntries ?? 256;
  const now = opts.now ?? (() => performance.now());
  const cache = new Map<string, Cached>();
  const perSecond = opts.reviewsPerSecond ?? 5;
  const burst = opts.reviewBurst ?? 20;
  let tokens = burst;
  let filledAt = now();
  /** Takes one review from the bucket; false when it is empty. */
  const takeReview = (at: number): boolean => {
    tokens = Math.min(burst, tokens + ((at - filledAt) / 1000) * perSecond);
    filledAt = at;
    if (tokens < 1) return false;
    tokens -= 1;
    return true;
  };

  const decide = async (token: string): Promise<MetricsAuthDecision> => {
    const review = await kubeJson<{ status?: TokenReviewStatus }>(opts.access, {
      method: "POST",
      path: resourcePath(tokenReviewKind),
      body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token } },
    });
    const user = review.status?.user;
    if (review.status?.authenticated !== true || !user?.username) return { status: 401, message: "Unauthorized" };
    const sar = await kubeJson<{ status?: { allowed?: boolean; reason?: string } }>(opts.access, {
      method: "POST",
      path: resourcePath(subjectAccessReviewKind),
      body: {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SubjectAccessReview",
        spec: {
          user: user.username,
          ...(user.uid ? { uid: user.uid } : {}),
          groups: user.groups ?? [],
          ...(user.extra ? { extra: user.extra } : {}),
          nonResourceAttributes: { path, verb: "get" },
        },
      },
    });
    if (sar.status?.allowed === true) return { status: 200 };
    // The user's name, as controller-runtime's filter says it; never the token.
    return { status: 403, message: `Forbidden: user "${user.username}" may not get ${path}` };
  };

  const evict = (at: number): void => {
    for (const [key, entry] of cache) if (entry.until <= at) cache.delete(key);
    while (cache.size >= maxEntries) {
      const oldest = cache.keys().next().value;
      if (oldest === undefined) break;
      cache.delete(oldest);
    }
  };

  return {
    check: async (authorization) => {
      const token = bearerToken(authorization);
      if (!token) return { status: 401, message: "Unauthorized" };
      const key = createHash("sha256").update(token).digest("hex");
      const at = now();
      const hit = cache.get(key);
      if (hit && hit.until > at) return hit.decision;
      if (!takeReview(at))
        return { status: 429, message: "Too Many Requests: new tokens are reviewed at a limited rate; try again shortly" };
      evict(at);
      // Concurrent requests with one token share one review.
      const entry: Cached = {
        decision: decide(token).catch((err: unknown): MetricsAuthDecision => ({
          status: 500,
          message: `could not review the request: ${errorSummary(err)}`,
        })),
        until: Infinity,
      };
      cache.set(key, entry);
      const decision = await entry.decision;
      // The apiserver did not answer: nothing is known, so nothing is kept.
      if (decision.status === 500) cache.delete(key);
      else entry.until = now() + (decision.status === 200 ? allowTtlMs : denyTtlMs);
      return decision;
    },
  };
}
