// keyward's typed client of the service: one function per operation (see operations.ts),
// requests checked against interface.md's limits before sending, responses checked against
// their schemas, a request that never reached the service sent again at once (never after a
// wait: the engine requeues everything else), a rate limit per credential that
// turns a call away rather than making it wait, and keep-alive connections (undici). Tokens go into the Authorization header and nowhere else.
import { performance } from "node:perf_hooks";
import type { z } from "zod";
import type { Logger } from "../log.ts";
import {
  ApiError,
  RequestValidationError,
  ResponseTooLargeError,
  ResponseValidationError,
  TransportError,
  isApiError,
  redact,
  requestIssues,
  responseIssues,
  serviceMessage,
  ThrottledError,
} from "./errors.ts";
import { sendRequest, serviceBase, type HttpResponse, type ServiceBase } from "./http.ts";
import { fillPath, operationByName, type OperationInfo, type OperationName } from "./operations.ts";
import { bucketFor, credentialKey, holdOffCredential, validateRateLimit, type RateLimit } from "./ratelimit.ts";
import { parseRetryAfter, retryDecision, retryPolicy, type RetryPolicy } from "./retry.ts";
import { errorBodySchema } from "./schemas/common.ts";

export interface RequestInfo {
  operation: string;
  method: string;
  status: number | "error";
  durationMs: number;
  attempt: number;
  /** A non-2xx answer's `error` field (e.g. "TokenError", "PermissionDenied"), tokens redacted. */
  error?: string;
}

export interface ClientOptions {
  /** e.g. https://secrets.example.com; the /api/... paths are appended to its path. */
  baseUrl: string;
  /** Bearer token of every call; a call's own `token` option overrides it. */
  token?: string;
  /** Limit of one attempt: connecting, sending and reading the whole response. Default 10 000. */
  timeoutMs?: number;
  /** The largest response body read, in bytes (any status); past it the call fails with ResponseTooLargeError. Default 16 MiB. */
  maxResponseBytes?: number;
  /**
   * Client-side limit, shared by every client of the same credential (base URL and token) with
   * the same limit. A call that finds no token fails at once with a ThrottledError; none waits.
   */
  rateLimit?: RateLimit;
  /** The rate limiter's clock (ms), when this client creates its credential's bucket; default performance.now. */
  rateLimitClock?: () => number;
  /**
   * Whose share of the process-wide response budget this client's bodies count against
   * (src/api/http.ts): the namespace of the ProviderConfig it serves, or the ClusterProviderConfig
   * itself. Default: the client's credential.
   */
  tenant?: string;
  /** PEM bundle to trust for an https base URL with a private CA. */
  caBundle?: string;
  retry?: Partial<RetryPolicy>;
  /** Called after every attempt (metrics). */
  onRequest?: (info: RequestInfo) => void;
  logger?: Logger;
  /** Default true. False sends requests unchecked, so the service's own 422 is observable. */
  validateRequests?: boolean;
  /**
   * Asked right before each attempt is sent: false refuses it unsent (a retryable TransportError
   * "fenced" that never landed). Sharding: the replica holds its shard Lease.
   */
  admit?: () => boolean;
}

export interface CallOptions {
  /** Overrides the client's token for this call. */
  token?: string;
  /** Cancels the call and its retries. */
  signal?: AbortSignal;
  /** The unit of work (a reconcile pass) the call belongs to: see PassAdmission. */
  pass?: PassAdmission;
}

/**
 * The calls of one reconcile pass share this. Only a pass's first call can be turned away by the
 * rate limit; once one has gone out, the pass's later calls borrow from the bucket, so a pass
 * that got its turn finishes (a create after its lookup) instead of being turned away half way.
 */
export interface PassAdmission {
  admitted: boolean;
}

export type QueryValue = string | number | boolean | undefined;

/** One call of one operation, as the method functions describe it. */
export interface Call<S extends z.ZodType> {
  op: OperationName;
  params?: Record<string, string>;
  query?: Record<string, QueryValue>;
  /** undefined: no body and no content-type (the triggers define none). */
  body?: unknown;
  response: S;
  /**
   * The object may well not exist: the service's own 404 NotFound (not a route it does not serve)
   * resolves to undefined instead of an ApiError. A lookup whose absence is the common answer (a
   * create's slug check) then costs no error object, no stack and no throw.
   */
  absentOn404?: boolean;
}

/** What the method functions use: check a request, send a call. */
export interface Caller {
  /** The client's credential: a hash of its base URL and token (ratelimit.ts credentialKey). */
  readonly credential: string;
  /** The limit of one attempt, in ms. */
  readonly timeoutMs: number;
  check(op: OperationName, schema: z.ZodType, value: unknown): void;
  call<S extends z.ZodType>(c: Call<S>, opts?: CallOptions): Promise<z.output<S>>;
}

interface Settings {
  baseUrl: string;
  base: ServiceBase;
  token: string | undefined;
  timeoutMs: number;
  maxResponseBytes: number;
  tenant: string;
  caBundle: string | undefined;
  retry: RetryPolicy;
  credential: string;
  rateLimit: RateLimit | undefined;
  rateLimitClock: (() => number) | undefined;
  onRequest: ClientOptions["onRequest"];
  logger: Logger | undefined;
  validateRequests: boolean;
  admit: (() => boolean) | undefined;
}

export const DEFAULT_TIMEOUT_MS = 10_000;
/**
 * 16 MiB. The largest answer is list-projects, which the interface does not page: about 840
 * bytes a project (the emulator's, environments included), so 8.4 MB at the bench's 10 000
 * projects under one ProviderConfig; 16 MiB leaves room for twice that and still bounds what a
 * broken or hostile service can make keyward hold.
 */
export const DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

function settingsFrom(options: ClientOptions): Settings {
  const url = new URL(options.baseUrl);
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new TypeError("baseUrl must be an http or https URL");
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!(timeoutMs > 0)) throw new RangeError("timeoutMs must be positive");
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  if (!(Number.isSafeInteger(maxResponseBytes) && maxResponseBytes > 0))
    throw new RangeError("maxResponseBytes must be a positive integer");
  const credential = credentialKey(options.baseUrl, options.token);
  return {
    baseUrl: options.baseUrl,
    base: serviceBase(options.baseUrl),
    token: options.token,
    timeoutMs,
    maxResponseBytes,
    tenant: options.tenant ?? credential,
    caBundle: options.caBundle,
    retry: retryPolicy(options.retry),
    credential,
    rateLimit: options.rateLimit ? validateRateLimit(options.rateLimit) : undefined,
    rateLimitClock: options.rateLimitClock,
    onRequest: options.onRequest,
    logger: options.logger,
    validateRequests: options.validateRequests ?? true,
    admit: options.admit,
  };
}

export function createCaller(options: ClientOptions): Caller {
  const s = settingsFrom(options);
  return {
    credential: s.credential,
    timeoutMs: s.timeoutMs,
    check(op, schema, value) {
      if (!s.validateRequests) return;
      const result = schema.safeParse(value);
      if (!result.success) throw new RequestValidationError(op, requestIssues(result.error.issues));
    },
    call: (c, opts) => execute(s, c, opts ?? {}),
  };
}

interface Prepared {
  op: OperationInfo;
  path: string;
  headers: Record<string, string>;
  body: string | undefined;
  tokens: (string | undefined)[];
  /** The credential of this call's token (a call may carry its own). */
  credential: string;
  signal: AbortSignal | undefined;
  pass: PassAdmission | undefined;
  absentOn404: boolean;
}

function prepare<S extends z.ZodType>(s: Settings, c: Call<S>, opts: CallOptions): Prepared {
  const op = operationByName[c.op];
  const token = opts.token ?? s.token;
  const headers: Record<string, string> = { accept: "application/json" };
  if (token !== undefined) headers["authorization"] = `Bearer ${token}`;
  if (c.body !== undefined) headers["content-type"] = "application/json";
  return {
    op,
    path: fillPath(op.path, c.params ?? {}) + queryString(c.query),
    headers,
    body: c.body === undefined ? undefined : JSON.stringify(c.body),
    tokens: [token, s.token],
    credential: token === s.token ? s.credential : credentialKey(s.baseUrl, token),
    signal: opts.signal,
    pass: opts.pass,
    absentOn404: c.absentOn404 === true,
  };
}

export function queryString(query: Record<string, QueryValue> | undefined): string {
  if (!query) return "";
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined) params.append(key, String(value));
  }
  const text = params.toString();
  return text === "" ? "" : `?${text}`;
}

// A retry never sleeps here (retry.ts retryDecision): only a request that never reached the
// service is sent again, at once; every other failure goes to the caller, whose engine requeues
// the key with backoff and frees the worker meanwhile.
async function execute<S extends z.ZodType>(s: Settings, c: Call<S>, opts: CallOptions): Promise<z.output<S>> {
  const p = prepare(s, c, opts);
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await attemptOnce(s, p, c.response, attempt);
    } catch (err) {
      if (!retryDecision(err, attempt, s.retry)) throw err;
      s.logger?.info(
        { operation: p.op.name, attempt, cause: describeError(err) },
        "sending the service request again: it never reached the service",
      );
    }
  }
}

async function attemptOnce<S extends z.ZodType>(s: Settings, p: Prepared, schema: S, attempt: number): Promise<z.output<S>> {
  if (p.signal?.aborted) throw abortedError(p.op.name);
  if (s.admit && !s.admit()) {
    throw new TransportError({
      operation: p.op.name,
      kind: "fenced",
      detail: "not sent: this replica no longer holds its shard Lease",
      retryable: true,
      mayHaveLanded: false,
    });
  }
  // Never a wait here: a worker that slept for its turn would stall every other key it could serve.
  const bucket = s.rateLimit ? bucketFor(p.credential, s.rateLimit, s.rateLimitClock) : undefined;
  const turnMs = bucket?.take(p.pass?.admitted === true) ?? 0;
  if (turnMs > 0) throw new ThrottledError(p.op.name, turnMs);
  if (p.pass) p.pass.admitted = true;
  const started = performance.now();
  let res: HttpResponse;
  try {
    const request = {
      base: s.base,
      method: p.op.method,
      path: p.path,
      headers: p.headers,
      timeoutMs: s.timeoutMs,
      maxResponseBytes: s.maxResponseBytes,
      tenant: s.tenant,
      ...(p.body !== undefined ? { body: p.body } : {}),
      ...(s.caBundle !== undefined ? { caBundle: s.caBundle } : {}),
      ...(p.signal ? { signal: p.signal } : {}),
    };
    res = await sendRequest(request, p.op.name);
  } catch (err) {
    report(s, p.op, { status: "error", started, attempt, cause: describeError(err) });
    throw err;
  }
  if (res.status >= 200 && res.status < 300) {
    report(s, p.op, { status: res.status, started, attempt });
    return parseResponse(p.op.name, schema, res.text);
  }
  if (p.absentOn404 && res.status === 404 && isObjectNotFound(res.text)) {
    report(s, p.op, { status: res.status, started, attempt, error: "NotFound" });
    return undefined as z.output<S>;
  }
  const error = apiErrorFrom(p.op.name, res, p.tokens);
  // The service's Retry-After holds off every call of the credential (every limit its configs
  // give it), not just this one.
  if (error.retryAfterMs !== undefined && bucket) holdOffCredential(p.credential, error.retryAfterMs);
  report(s, p.op, { status: res.status, started, attempt, error: error.error, ...(error.reqId ? { reqId: error.reqId } : {}) });
  throw error;
}

function abortedError(operation: string): TransportError {
  return new TransportError({ operation, kind: "aborted", detail: "aborted by the caller", retryable: false, mayHaveLanded: true });
}

interface Report {
  status: number | "error";
  started: number;
  attempt: number;
  reqId?: string;
  cause?: string;
  error?: string;
}

/** Metrics hook and a debug line per attempt: operation, template path, status — no bodies, no headers. */
function report(s: Settings, op: OperationInfo, r: Report): void {
  const durationMs = Math.round((performance.now() - r.started) * 1000) / 1000;
  // Built only when debug is on: this runs for every call.
  if (s.logger?.isLevelEnabled("debug") === true)
    s.logger.debug(
      {
        operation: op.name,
        method: op.method,
        path: op.path,
        status: r.status,
        durationMs,
        attempt: r.attempt,
        reqId: r.reqId,
        cause: r.cause,
      },
      "service request",
    );
  try {
    s.onRequest?.({
      operation: op.name,
      method: op.method,
      status: r.status,
      durationMs,
      attempt: r.attempt,
      ...(r.error !== undefined ? { error: r.error } : {}),
    });
  } catch (err) {
    s.logger?.warn({ operation: op.name, error: describeError(err) }, "onRequest hook threw");
  }
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}

function parseResponse<S extends z.ZodType>(operation: string, schema: S, text: string): z.output<S> {
  const json = parseJson(text);
  if (!json.ok) throw new ResponseValidationError(operation, [{ path: "(root)", problem: "not JSON" }]);
  const parsed = schema.safeParse(json.value);
  if (!parsed.success) throw new ResponseValidationError(operation, responseIssues(parsed.error.issues));
  return parsed.data;
}

function header(res: HttpResponse, name: string): string | undefined {
  const value = res.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The service's answer for an id or slug it does not know (`error: "NotFound"`), not for a route it does not serve. */
function isObjectNotFound(text: string): boolean {
  const json = parseJson(text);
  return json.ok && typeof json.value === "object" && json.value !== null && (json.value as { error?: unknown }).error === "NotFound";
}

function apiErrorFrom(operation: string, res: HttpResponse, tokens: (string | undefined)[]): ApiError {
  const json = parseJson(res.text);
  const parsed = json.ok ? errorBodySchema.safeParse(json.value) : undefined;
  const body = parsed?.success ? parsed.data : {};
  const retryAfterMs = parseRetryAfter(header(res, "retry-after"));
  return new ApiError({
    operation,
    status: res.status,
    error: redact(body.error ?? `HTTP ${res.status}`, tokens),
    message: redact(serviceMessage(body.message), tokens),
    ...(body.reqId !== undefined ? { reqId: redact(body.reqId, tokens) } : {}),
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
  });
}

function describeError(err: unknown): string {
  if (isApiError(err)) return `${err.status} ${err.error}`;
  if (err instanceof TransportError) return `${err.kind}${err.code ? ` ${err.code}` : ""}`;
  if (err instanceof ResponseTooLargeError) return `response larger than ${err.limitBytes} bytes`;
  return err instanceof Error ? err.name : "unknown";
}
