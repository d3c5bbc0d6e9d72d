// The connector: one API client per provider config and credential, the static token read
// from its Secret or, with tokenAuth, access tokens minted with the bootstrap token and minted
// again on the token schedule; the cluster admin's base-URL allow-list comes first. Both
// provider kinds connect through it; it knows no kind, only a ConnectionSpec and a SecretReader.
//
// May import: src/api, src/engine, src/lib, src/log and other files of src/resources/provider;
// never a kind's file.
import { createHash } from "node:crypto";
import { claimConnections, createApiClient, isThrottled, type ApiClient, type ClientOptions, type RequestInfo } from "../../api/index.ts";
import type { Logger } from "../../log.ts";
import { classifyError, ReconcileError } from "../../engine/errors.ts";
import type { KubeObject } from "../../engine/types.ts";
import { backoffDelay, type BackoffPolicy } from "../../lib/backoff.ts";
import { checkAllowedBaseUrl, tokenFrom } from "./credentials.ts";
import { InvalidTokenLifetimeError, renewalPlan, tokenExpiry, type TokenSchedule } from "./token-schedule.ts";

const DEFAULT_RATE = { requestsPerSecond: 2, burst: 10 };
/** Between mints that failed (or whose tokens the service refused) in a row: 1 s doubling to 5 min. */
const MINT_BACKOFF: BackoffPolicy = { baseMs: 1_000, maxMs: 5 * 60_000, jitter: "equal" };

/** What connecting needs of a ProviderConfig or ClusterProviderConfig spec. */
export interface ConnectionSpec {
  baseUrl: string;
  credentialsSecretRef?: { name: string; key?: string | undefined } | undefined;
  tokenAuth?:
    { identityId: string; bootstrapSecretRef: { name: string; key?: string | undefined }; renewBefore?: string | undefined } | undefined;
  timeoutSeconds?: number | undefined;
  rateLimit?: { requestsPerSecond: number; burst: number } | undefined;
  caBundle?: string | undefined;
}

/**
 * Where a config's client stands: the namespace its Secrets are read from, and whose share of the
 * response budget its bodies count against (src/api/http.ts) — the ProviderConfig's namespace,
 * or the ClusterProviderConfig's own id (each is its own tenant).
 */
export interface ConfigPlace {
  secretNamespace: string;
  tenant: string;
}

/** Reads a credentials Secret (from the cache that holds it, else the apiserver); undefined when it does not exist. */
export type SecretReader = (namespace: string, name: string) => Promise<KubeObject | undefined>;

/**
 * A minted token the service says is bad — 401, or 403 with the service's TokenError (revoked,
 * expired early) — is not used again, and the next mint waits out the backoff, so a service
 * that refuses every minted token sees no mint storm. A 403 for a permission (PermissionDenied:
 * a delete-protected project, a role the identity lacks) says nothing about the token: it is
 * kept, shared by every resource of the config. A success ends the setbacks.
 */
function onMintedAnswer(
  state: { sessions: Map<string, { key: string; token: string }>; setbacks: ReturnType<typeof mintSetbacks> },
  configId: string,
  token: string,
  info: RequestInfo,
): void {
  const { sessions, setbacks } = state;
  const session = sessions.get(configId);
  if (session?.token !== token) return;
  if (typeof info.status === "number" && info.status >= 200 && info.status < 300) {
    setbacks.clear(configId);
  } else if (info.status === 401 || (info.status === 403 && info.error === "TokenError")) {
    sessions.delete(configId);
    setbacks.record(
      configId,
      session.key,
      new ReconcileError(
        "MintedTokenRefused",
        `${configId}: the service refused the access token minted with tokenAuth (HTTP ${info.status}); minting the next one`,
        { retryable: true },
      ),
    );
  }
}

/**
 * Per config: mints that failed, or minted tokens the service refused, in a row (for the session
 * key of the time). Until notBefore no mint is tried, and connects fail with the last error.
 */
function mintSetbacks(now: () => number) {
  const setbacks = new Map<string, { key: string; failures: number; notBefore: number; error: Error }>();
  return {
    record(configId: string, key: string, err: unknown): void {
      const before = setbacks.get(configId);
      const failures = before?.key === key ? before.failures + 1 : 1;
      const error = err instanceof Error ? err : new Error(String(err));
      setbacks.set(configId, { key, failures, notBefore: now() + backoffDelay(failures - 1, MINT_BACKOFF), error });
    },
    /** The error a connect fails with while minting waits out its backoff: the last one, with the wait as Retry-After. */
    heldBack(configId: string, key: string): Error | undefined {
      const held = setbacks.get(configId);
      if (!held || held.key !== key || now() >= held.notBefore) return undefined;
      const err = held.error;
      return err instanceof ReconcileError
        ? new ReconcileError(err.reason, err.message, { retryable: err.retryable, retryAfterMs: held.notBefore - now() })
        : err;
    },
    clear(configId: string): void {
      setbacks.delete(configId);
    },
    size: (): number => setbacks.size,
  };
}

interface ConnectorOptions {
  log: Logger;
  onRequest?: ClientOptions["onRequest"];
  now?: () => number;
  allowedBaseUrls?: readonly string[];
  maxResponseBytes?: number;
  /** The cluster admin's ceiling on spec.timeoutSeconds (--max-request-timeout), in ms; absent: none. */
  maxRequestTimeoutMs?: number;
  /** Asked before every request is sent (ClientOptions.admit): sharding's fence. */
  admit?: () => boolean;
}

/** One request's timeout for a config: its spec.timeoutSeconds (default 10 s), at most the admin's ceiling. */
export function requestTimeoutMs(spec: Pick<ConnectionSpec, "timeoutSeconds">, maxRequestTimeoutMs?: number): number {
  const asked = (spec.timeoutSeconds ?? 10) * 1000;
  return maxRequestTimeoutMs !== undefined && maxRequestTimeoutMs > 0 ? Math.min(asked, maxRequestTimeoutMs) : asked;
}
/** `tenant`: whose share of the response budget the client's bodies count against (ClientOptions.tenant). */
type ClientFor = (
  cacheKey: string,
  spec: ConnectionSpec,
  token: string,
  tenant: string,
  onAnswer?: (info: RequestInfo) => void,
) => ApiClient;
type Sessions = Map<string, { key: string; token: string; schedule: TokenSchedule }>;
/** What a mint works with: the connector's clients, sessions, setbacks, log and clock. */
interface Minter {
  clientFor: ClientFor;
  sessions: Sessions;
  setbacks: ReturnType<typeof mintSetbacks>;
  log: Logger;
  now: () => number;
}

/**
 * API clients per config (and its bootstrap credential), each replaced when its settings or token
 * change; a replaced or dropped client lets go of its connection pool (closed once no client holds it).
 */
function apiClients(deps: ConnectorOptions) {
  const clients = new Map<
    string,
    { fingerprint: string; client: ApiClient; release: () => void; spec: ConnectionSpec; token: string; tenant: string }
  >();
  const clientFor: ClientFor = (cacheKey, spec, token, tenant, onAnswer) => {
    const cached = clients.get(cacheKey);
    // The same parsed spec (the resolver parses a config once per generation) and the same token:
    // the same client, without hashing the token and the CA bundle again on every pass.
    if (cached?.spec === spec && cached.token === token && cached.tenant === tenant) return cached.client;
    // The fingerprint holds a hash of the token, never the token.
    const fingerprint = [
      spec.baseUrl,
      spec.timeoutSeconds ?? "",
      JSON.stringify(spec.rateLimit ?? ""),
      hash(spec.caBundle ?? ""),
      hash(token),
      tenant,
    ].join("|");
    if (cached?.fingerprint === fingerprint) {
      clients.set(cacheKey, { ...cached, spec, token, tenant });
      return cached.client;
    }
    const client = createApiClient({
      baseUrl: spec.baseUrl,
      token,
      timeoutMs: requestTimeoutMs(spec, deps.maxRequestTimeoutMs),
      ...(deps.maxResponseBytes !== undefined ? { maxResponseBytes: deps.maxResponseBytes } : {}),
      tenant,
      rateLimit: spec.rateLimit ?? DEFAULT_RATE,
      ...(spec.caBundle ? { caBundle: spec.caBundle } : {}),
      ...(deps.onRequest || onAnswer
        ? {
            onRequest: (info: RequestInfo) => {
              deps.onRequest?.(info);
              onAnswer?.(info);
            },
          }
        : {}),
      logger: deps.log,
      ...(deps.admit ? { admit: deps.admit } : {}),
    });
    // Claimed before the old client lets go, so a pool both use stays open.
    const release = claimConnections(spec.baseUrl, client.timeoutMs, spec.caBundle);
    cached?.release();
    clients.set(cacheKey, { fingerprint, client, release, spec, token, tenant });
    return client;
  };
  return {
    clientFor,
    /** Drops the clients of `configId` (its own and its bootstrap credential's). */
    drop(configId: string): void {
      for (const key of [configId, `${configId}#bootstrap`]) {
        clients.get(key)?.release();
        clients.delete(key);
      }
    },
    size: (): number => clients.size,
  };
}

/** Mints an access token for `configId` with the bootstrap token and records it, with its schedule, as the config's session. */
async function mint(
  ctx: Minter,
  configId: string,
  key: string,
  spec: ConnectionSpec,
  auth: NonNullable<ConnectionSpec["tokenAuth"]>,
  bootstrap: string,
  place: ConfigPlace,
): Promise<void> {
  // Taken before the call: the service starts the lifetime later, so this expiry is never late.
  const issuedAt = new Date(Math.floor(ctx.now() / 1000) * 1000);
  const minted = await ctx
    .clientFor(`${configId}#bootstrap`, spec, bootstrap, place.tenant)
    .createIdentityToken(auth.identityId, { name: `keyward ${configId}`.slice(0, 128) })
    .catch((err: unknown) => {
      // Turned away by the client-side rate limit: nothing was sent, so nothing was refused;
      // the pass comes back at its turn, and minting does not back off for it.
      if (isThrottled(err)) throw err;
      const error = bootstrapError(err, auth, place.secretNamespace);
      ctx.setbacks.record(configId, key, error);
      throw error;
    });
  let expiresAt: Date | undefined;
  try {
    // A lifetime past ten years is taken as ten years; a renewal never comes sooner than
    // MIN_RENEW_INTERVAL_MS (token-schedule.ts), whatever the service says.
    expiresAt = tokenExpiry(issuedAt, minted.expiresIn);
  } catch (err) {
    if (!(err instanceof InvalidTokenLifetimeError)) throw err;
    const error = new ReconcileError("InvalidTokenLifetime", `${configId}: ${err.message}; the token is not used`, { retryable: false });
    ctx.setbacks.record(configId, key, error);
    throw error;
  }
  const plan = renewalPlan(issuedAt, expiresAt, auth.renewBefore);
  ctx.sessions.set(configId, { key, token: minted.accessToken, schedule: { issuedAt, expiresAt, renewAt: plan?.renewAt } });
  ctx.log.info(
    { config: configId, tokenId: minted.tokenData.id, expiresAt: expiresAt?.toISOString(), renewAt: plan?.renewAt.toISOString() },
    "minted an access token with tokenAuth",
  );
}

/**
 * Clients for provider configs, one per config, replaced when its settings or token change (so a
 * rotated token does not leave the old client, and the old token, behind). With tokenAuth it
 * holds the minted access token in memory only: minted with the bootstrap token through
 * create-token, used for every call, and minted again once renewalPlan (AccessToken's rule)
 * says so. Concurrent reconciles share one mint.
 */
export function createConnector(deps: ConnectorOptions) {
  const clients = apiClients(deps);
  const clientFor = clients.clientFor;
  const sessions: Sessions = new Map();
  const minting = new Map<string, Promise<void>>();
  /** Configs forgotten while a mint of theirs was under way: what that mint leaves is dropped when it ends. */
  const forgottenWhileMinting = new Set<string>();
  const now = (): number => deps.now?.() ?? Date.now();
  const setbacks = mintSetbacks(now);
  const minter: Minter = { clientFor, sessions, setbacks, log: deps.log, now };

  /** Everything kept for `configId`: its clients (and their pools), minted token and mint setbacks. */
  function drop(configId: string): void {
    clients.drop(configId);
    sessions.delete(configId);
    setbacks.clear(configId);
  }

  /** The token to call with: the static one, or the current minted one (minted first when due). */
  async function sessionToken(configId: string, spec: ConnectionSpec, read: SecretReader, place: ConfigPlace): Promise<string> {
    const { secretNamespace } = place;
    if (spec.credentialsSecretRef && !spec.tokenAuth)
      return readToken(read, secretNamespace, spec.credentialsSecretRef, spec.baseUrl, deps.allowedBaseUrls ?? []);
    const auth = spec.tokenAuth;
    if (!auth || spec.credentialsSecretRef)
      throw new ReconcileError("ProviderConfigInvalid", `${configId}: exactly one of credentialsSecretRef and tokenAuth must be set`, {
        retryable: false,
      });
    const bootstrap = await readToken(read, secretNamespace, auth.bootstrapSecretRef, spec.baseUrl, deps.allowedBaseUrls ?? []);
    // A new bootstrap token, identity or service mints anew; the key holds hashes, never tokens.
    const key = [auth.identityId, auth.renewBefore ?? "", spec.baseUrl, hash(bootstrap)].join("|");
    for (;;) {
      const session = sessions.get(configId);
      const due =
        !session || session.key !== key || (session.schedule.renewAt !== undefined && now() >= session.schedule.renewAt.getTime());
      if (!due) return session.token;
      let pending = minting.get(configId);
      if (!pending) {
        const held = setbacks.heldBack(configId, key);
        if (held) throw held;
        pending = mint(minter, configId, key, spec, auth, bootstrap, place).finally(() => {
          minting.delete(configId);
          if (forgottenWhileMinting.delete(configId)) drop(configId);
        });
        minting.set(configId, pending);
      }
      await pending;
      const fresh = sessions.get(configId);
      if (fresh?.key === key) return fresh.token;
      // Forgotten while the mint was under way: the config is gone, so no token is kept for it.
      if (!fresh)
        throw new ReconcileError("ProviderConfigNotFound", `${configId} was deleted while its access token was being minted`, {
          retryable: true,
        });
    }
  }

  return {
    /** A client of the config `configId` with spec `spec`, standing at `place`. */
    async connect(
      configId: string,
      spec: ConnectionSpec,
      read: SecretReader,
      place: ConfigPlace,
      signal?: AbortSignal,
    ): Promise<ApiClient> {
      // Before any Secret is read: a URL the cluster admin does not allow never gets a token.
      checkAllowedBaseUrl(configId, spec.baseUrl, deps.allowedBaseUrls ?? []);
      const token = await sessionToken(configId, spec, read, place);
      const client = clientFor(
        configId,
        spec,
        token,
        place.tenant,
        spec.tokenAuth ? (info) => onMintedAnswer({ sessions, setbacks }, configId, token, info) : undefined,
      );
      return signal ? client.withSignal(signal) : client;
    },
    tokenSchedule: (configId: string): TokenSchedule | undefined => sessions.get(configId)?.schedule,
    /**
     * The config `configId` is gone: drop its clients (their connection pools close once no other
     * config uses them), its minted token and its mint setbacks, so a deleted config leaves
     * nothing in memory. A mint under way is dropped when it ends.
     */
    forget(configId: string): void {
      drop(configId);
      if (minting.has(configId)) forgottenWhileMinting.add(configId);
    },
    /** What the connector keeps, for metrics and tests: API clients, minted tokens, mint setbacks. */
    held: (): { clients: number; sessions: number; setbacks: number } => ({
      clients: clients.size(),
      sessions: sessions.size,
      setbacks: setbacks.size(),
    }),
  };
}
export type Connector = ReturnType<typeof createConnector>;

/** The token of a credentials Secret keyward may use for `baseUrl` (src/resources/provider/credentials.ts). */
async function readToken(
  read: SecretReader,
  namespace: string,
  ref: { name: string; key?: string | undefined },
  baseUrl: string,
  adminAllowed: readonly string[],
): Promise<string> {
  return tokenFrom(await read(namespace, ref.name), { namespace, ...ref }, baseUrl, adminAllowed);
}

/** A refused create-token (401/403, or 404: no such identity) means the bootstrap credentials are wrong, not a passing failure. */
function bootstrapError(err: unknown, auth: NonNullable<ConnectionSpec["tokenAuth"]>, secretNamespace: string): unknown {
  const status = (err as { status?: unknown }).status;
  if (status !== 401 && status !== 403 && status !== 404) return err;
  return new ReconcileError(
    "BootstrapTokenRejected",
    `create-token for identity ${auth.identityId} with the bootstrap token of Secret ${secretNamespace}/${auth.bootstrapSecretRef.name} was refused: ${classifyError(err).message}`,
    { retryable: false },
  );
}

function hash(s: string): string {
  return createHash("sha256").update(s).digest("hex").slice(0, 16);
}
