// One keep-alive connection pool per base URL (and CA bundle), reused by every client of it and
// closed when the last client that claimed it lets go (claimConnections), and the mapping of transport failures to TransportError.
import { createHash } from "node:crypto";
import diagnosticsChannel from "node:diagnostics_channel";
import { Pool, type Dispatcher } from "undici";
import { ResponseTooLargeError, TransportError, type TransportErrorKind } from "./errors.ts";
import { isPlainPath } from "../lib/baseurl.ts";

export interface HttpRequest {
  /** The service's base URL, parsed once by its client (serviceBase). */
  base: ServiceBase;
  method: string;
  /** Path and query, starting with "/" (appended to the base URL's own path). */
  path: string;
  headers: Record<string, string>;
  body?: string;
  timeoutMs: number;
  caBundle?: string;
  signal?: AbortSignal;
  /** The most bytes of body (any status) read; past it the body is dropped and ResponseTooLargeError thrown. */
  maxResponseBytes: number;
  /**
   * Whose share of the response budget the body's bytes count against: the namespace of the
   * ProviderConfig the client serves (a ClusterProviderConfig is its own tenant).
   */
  tenant: string;
}

export interface HttpResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** A pool and how many clients hold it (claimConnections); one no client holds any more is closed. */
interface PoolEntry {
  pool: Pool;
  claims: number;
}
const pools = new Map<string, PoolEntry>();

function poolKey(origin: string, timeoutMs: number, caBundle: string | undefined): string {
  const caKey = caBundle ? createHash("sha256").update(caBundle).digest("hex").slice(0, 16) : "";
  return `${origin}|${caKey}|${timeoutMs}`;
}

function poolFor(origin: string, timeoutMs: number, caBundle: string | undefined): PoolEntry {
  const key = poolKey(origin, timeoutMs, caBundle);
  let entry = pools.get(key);
  if (!entry) {
    const pool = new Pool(origin, {
      connections: 16,
      // A connection that is never made fails with UND_ERR_CONNECT_TIMEOUT: provably not landed.
      connect: { timeout: timeoutMs, ...(caBundle ? { ca: caBundle } : {}) },
      keepAliveTimeout: 4_000,
    });
    entry = { pool, claims: 0 };
    pools.set(key, entry);
  }
  return entry;
}

/**
 * A client's hold on the pool of its base URL, timeout and CA bundle: the returned function lets
 * go of it, and a pool no client holds any more is closed (its requests in flight finish first),
 * so a deleted provider config leaves no connections behind. A request after that opens a new pool.
 */
export function claimConnections(baseUrl: string, timeoutMs: number, caBundle: string | undefined): () => void {
  const key = poolKey(new URL(baseUrl).origin, timeoutMs, caBundle);
  const entry = poolFor(new URL(baseUrl).origin, timeoutMs, caBundle);
  entry.claims += 1;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    entry.claims -= 1;
    if (entry.claims > 0 || pools.get(key) !== entry) return;
    pools.delete(key);
    entry.pool.close().catch(() => undefined);
  };
}

/** How many connection pools are open (metrics, tests). */
export function openConnectionPools(): number {
  return pools.size;
}

/** Closes every pooled connection (graceful shutdown; tests). Later requests open new pools. */
export async function closeConnections(): Promise<void> {
  const all = [...pools.values()];
  pools.clear();
  await Promise.all(all.map((e) => e.pool.close()));
}

/** A base URL parsed once (per API client, not per request): its origin, host and path without trailing slashes. */
export interface ServiceBase {
  origin: string;
  host: string;
  prefix: string;
}

export function serviceBase(baseUrl: string): ServiceBase {
  const base = new URL(baseUrl);
  return { origin: base.origin, host: base.host, prefix: base.pathname.replace(/\/+$/, "") };
}

/**
 * The origin and path of `path` under `base` (the base's path, trailing slashes dropped, then
 * `path`), as URL parsing gives them, without parsing a URL per request
 * when the path is plain (a template filled with ids and slugs); any other path goes through URL.
 */
export function requestTarget(base: ServiceBase, path: string): { origin: string; path: string; host: string } {
  if (isPlainPath(path)) return { origin: base.origin, path: `${base.prefix}${path}`, host: base.host };
  const url = new URL(`${base.origin}${base.prefix}${path}`);
  return { origin: url.origin, path: `${url.pathname}${url.search}`, host: url.host };
}

// Whether a request's bytes went out: undici publishes `undici:client:sendHeaders` just before
// it writes a request to a connected socket. Each attempt carries an id header; an id
// seen here means the request may have reached the service, an id never seen means it
// provably did not (no connection, or failed before writing) and may be sent again.
const ATTEMPT_HEADER = "x-keyward-attempt";
const sentAttempts = new Set<string>();
// Unique within the process, which is all the matching needs (a random UUID per attempt cost more).
let attempts = 0;
const nextAttemptId = (): string => (++attempts).toString(36);

function onSendHeaders(message: unknown): void {
  const headers = (message as { request?: { headers?: unknown } }).request?.headers;
  if (!Array.isArray(headers)) return;
  for (let i = 0; i + 1 < headers.length; i += 2) {
    if (headers[i] === ATTEMPT_HEADER) {
      sentAttempts.add(String(headers[i + 1]));
      return;
    }
  }
}
diagnosticsChannel.subscribe("undici:client:sendHeaders", onSendHeaders);

/**
 * Sends one request and reads the whole body within timeoutMs (connect, send, headers and
 * body together; a precise timer — undici's own timeouts are coarse below a second and only
 * back this one up; its bodyTimeout only bounds the silence between chunks, so a body that
 * trickles would outlive it) and within maxResponseBytes. Failures come back as a classified
 * TransportError, or ResponseTooLargeError.
 */
export async function sendRequest(req: HttpRequest, operation: string): Promise<HttpResponse> {
  const target = requestTarget(req.base, req.path);
  const attemptId = nextAttemptId();
  // One controller for both ends of the request: the deadline, and the caller's abort forwarded
  // by a listener (AbortSignal.any would allocate a composite signal tracked by weak references,
  // per request; bench/RESULTS.md).
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error("deadline"));
  }, req.timeoutMs);
  const caller = req.signal;
  const forward = (): void => controller.abort(caller?.reason);
  if (caller?.aborted) forward();
  else caller?.addEventListener("abort", forward, { once: true });
  const signal = controller.signal;
  try {
    // No redirect interceptor: a 3xx is the answer (an ApiError), never followed, so the
    // Authorization header goes to the base URL's origin only (test/unit/api/client-redirect.test.ts).
    const res = await poolFor(target.origin, req.timeoutMs, req.caBundle).pool.request({
      origin: target.origin,
      path: target.path,
      method: req.method,
      headers: { ...req.headers, [ATTEMPT_HEADER]: attemptId },
      body: req.body ?? null,
      headersTimeout: req.timeoutMs,
      bodyTimeout: req.timeoutMs,
      signal,
    });
    const text = await readBounded(res, req.maxResponseBytes, req.tenant, operation);
    return { status: res.statusCode, headers: res.headers, text };
  } catch (err) {
    if (err instanceof ResponseTooLargeError || err instanceof TransportError) throw err;
    const progress = {
      sent: sentAttempts.has(attemptId),
      timedOut,
      aborted: caller?.aborted === true,
    };
    throw toTransportError(err, operation, target.host, progress);
  } finally {
    clearTimeout(timer);
    caller?.removeEventListener("abort", forward);
    sentAttempts.delete(attemptId);
  }
}

/**
 * The bytes of response bodies in flight across every service client of this process, counted
 * as they arrive (never as a server declares them: a declared length costs nothing until its
 * bytes come). A chunk is kept only while the bytes held fit in the budget and its tenant's
 * bytes fit in the tenant's share, so however many calls run at once their bodies together stay
 * within the budget, and no tenant holds more than its share of it whatever its server does: a
 * budget of at least two shares leaves every other tenant room for a body of the largest size.
 * A chunk that does not fit drops its body and fails its call with a retryable TransportError
 * (kind "other", code KEYWARD_RESPONSE_BUDGET): the engine requeues it with its backoff, and
 * memory never holds more than the budget (plus one chunk) of bodies.
 */
export const DEFAULT_RESPONSE_BUDGET_BYTES = 32 * 1024 * 1024;
export const DEFAULT_TENANT_RESPONSE_BYTES = 16 * 1024 * 1024;
let budgetBytes = DEFAULT_RESPONSE_BUDGET_BYTES;
let tenantShareBytes = DEFAULT_TENANT_RESPONSE_BYTES;
let inFlightBytes = 0;
let peakInFlightBytes = 0;
/** Bytes held per tenant; a tenant that holds none has no entry. */
const heldByTenant = new Map<string, number>();

/** Sets the process-wide budget (--response-budget-bytes) and the share of it one tenant may hold (--max-response-bytes). */
export function setResponseBudget(totalBytes: number, tenantBytes: number): void {
  if (!(Number.isSafeInteger(totalBytes) && totalBytes > 0)) throw new RangeError("the response budget must be a positive integer");
  if (!(Number.isSafeInteger(tenantBytes) && tenantBytes > 0 && tenantBytes <= totalBytes))
    throw new RangeError("a tenant's share of the response budget must be a positive integer, at most the budget");
  budgetBytes = totalBytes;
  tenantShareBytes = tenantBytes;
}

/**
 * The budget, a tenant's share of it, the bytes of bodies held now, the most held at once since
 * the last reset, and how many tenants hold bytes now (metrics, tests).
 */
export function responseBudget(): { budget: number; tenantShare: number; inFlight: number; peak: number; tenants: number } {
  return {
    budget: budgetBytes,
    tenantShare: tenantShareBytes,
    inFlight: inFlightBytes,
    peak: peakInFlightBytes,
    tenants: heldByTenant.size,
  };
}

export function resetResponseBudgetPeak(): void {
  peakInFlightBytes = inFlightBytes;
}

function budgetError(operation: string, status: number, detail: string): TransportError {
  return new TransportError({
    operation,
    kind: "other",
    code: "KEYWARD_RESPONSE_BUDGET",
    detail: `the response (status ${status}) does not fit in ${detail}; it is tried again later`,
    retryable: true,
    mayHaveLanded: true,
  });
}

/** Takes `n` bytes of the budget for `tenant`, or throws the retryable budget error. */
function takeBudget(tenant: string, n: number, operation: string, status: number): void {
  const held = heldByTenant.get(tenant) ?? 0;
  if (held + n > tenantShareBytes)
    throw budgetError(operation, status, `its namespace's share of the memory for response bodies in flight (${tenantShareBytes} bytes)`);
  if (inFlightBytes + n > budgetBytes)
    throw budgetError(operation, status, `the memory left for response bodies in flight (${budgetBytes} bytes across all calls)`);
  heldByTenant.set(tenant, held + n);
  inFlightBytes += n;
  if (inFlightBytes > peakInFlightBytes) peakInFlightBytes = inFlightBytes;
}

function giveBack(tenant: string, n: number): void {
  if (n === 0) return;
  inFlightBytes -= n;
  const left = (heldByTenant.get(tenant) ?? 0) - n;
  if (left > 0) heldByTenant.set(tenant, left);
  else heldByTenant.delete(tenant);
}

const ignore = (): void => undefined;

/**
 * Drops a body unread or half read. A body destroyed before its end emits an 'error' (undici's
 * RequestAbortedError); when the response had already arrived whole, undici attaches no listener
 * of its own, and an 'error' nobody listens for ends the process. So one is attached first.
 * undici then closes the connection rather than drain it.
 */
function discard(body: Dispatcher.ResponseData["body"]): void {
  body.on("error", ignore);
  body.destroy();
}

/**
 * The body as UTF-8 text, at most `limit` bytes, its bytes held in the budget (as `tenant`'s)
 * while it is read. A declared content-length past the limit is refused before a byte is read;
 * every other body is counted chunk by chunk as it arrives. A body that passes the limit or does
 * not fit is dropped at once, so memory holds at most the limit plus one chunk, and an endless
 * body ends here.
 */
async function readBounded(res: Dispatcher.ResponseData, limit: number, tenant: string, operation: string): Promise<string> {
  const declared = Number(res.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) {
    discard(res.body);
    throw new ResponseTooLargeError({ operation, status: res.statusCode, limitBytes: limit, declaredBytes: declared });
  }
  let held = 0;
  try {
    const chunks: Buffer[] = [];
    await eachChunk(res.body, (chunk) => {
      if (held + chunk.length > limit) throw new ResponseTooLargeError({ operation, status: res.statusCode, limitBytes: limit });
      takeBudget(tenant, chunk.length, operation, res.statusCode);
      held += chunk.length;
      chunks.push(chunk);
    });
    return Buffer.concat(chunks, held).toString("utf8");
  } catch (err) {
    discard(res.body);
    throw err;
  } finally {
    giveBack(tenant, held);
  }
}

/**
 * Hands each chunk of `body` to `onChunk` until the body ends; a throw of onChunk, an error or a
 * body cut off before its end rejects. 'data' callbacks rather than for await: the async iterator
 * costs a promise and a microtask round per chunk and an end-of-stream tracker per body (bench/RESULTS.md).
 */
function eachChunk(body: Dispatcher.ResponseData["body"], onChunk: (chunk: Buffer) => void): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let settled = false;
    const settle = (err?: unknown): void => {
      if (settled) return;
      settled = true;
      body.off("data", onData);
      if (err === undefined) resolve();
      else reject(err instanceof Error ? err : new Error("the response body could not be read"));
    };
    const onData = (chunk: Buffer): void => {
      try {
        onChunk(chunk);
      } catch (err) {
        settle(err);
      }
    };
    body.on("data", onData);
    body.once("end", () => settle());
    body.once("error", (err) => settle(err));
    // "close" follows "end" on every body: the Error (and its stack) is built only for a body
    // that closed before its end, not once per response (1.7% of keyward's CPU while creating).
    body.once("close", () => {
      if (!settled) settle(new Error("the response body was cut off before its end"));
    });
  });
}

interface Classified {
  kind: TransportErrorKind;
  retryable: boolean;
  detail: string;
}

const byCode: Record<string, Classified> = {
  ECONNREFUSED: { kind: "connection-refused", retryable: true, detail: "connection refused" },
  EHOSTUNREACH: { kind: "connection-refused", retryable: true, detail: "host unreachable" },
  ENETUNREACH: { kind: "connection-refused", retryable: true, detail: "network unreachable" },
  EHOSTDOWN: { kind: "connection-refused", retryable: true, detail: "host down" },
  UND_ERR_CONNECT_TIMEOUT: { kind: "timeout", retryable: true, detail: "timed out connecting" },
  ENOTFOUND: { kind: "dns", retryable: true, detail: "host name not found" },
  EAI_AGAIN: { kind: "dns", retryable: true, detail: "host name lookup failed" },
  UND_ERR_HEADERS_TIMEOUT: { kind: "timeout", retryable: true, detail: "timed out waiting for the response" },
  UND_ERR_BODY_TIMEOUT: { kind: "timeout", retryable: true, detail: "timed out reading the response" },
  UND_ERR_SOCKET: { kind: "dropped-response", retryable: true, detail: "connection closed before a response" },
  ECONNRESET: { kind: "connection-reset", retryable: true, detail: "connection reset" },
  EPIPE: { kind: "connection-reset", retryable: true, detail: "connection broken while sending" },
};

function isTlsCode(code: string): boolean {
  return /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH)/.test(code);
}

export interface AttemptProgress {
  /** The request was written (or being written) to a connected socket. */
  sent: boolean;
  /** The attempt's deadline (timeoutMs) ran out. */
  timedOut: boolean;
  /** The caller's signal aborted. */
  aborted: boolean;
}

function classify(code: string | undefined, p: AttemptProgress): Classified {
  if (p.aborted) return { kind: "aborted", retryable: false, detail: "aborted by the caller" };
  if (p.timedOut)
    return { kind: "timeout", retryable: true, detail: p.sent ? "timed out waiting for the response" : "timed out connecting" };
  const known = code === undefined ? undefined : byCode[code];
  if (known) return known;
  if (code !== undefined && isTlsCode(code)) return { kind: "tls", retryable: false, detail: "TLS handshake failed" };
  return { kind: "other", retryable: false, detail: "request failed" };
}

function errorCode(err: unknown): string | undefined {
  if (typeof err !== "object" || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string") return code;
  const cause = (err as { cause?: unknown }).cause;
  return cause === err ? undefined : errorCode(cause);
}

/**
 * Maps an undici/system error to a TransportError. mayHaveLanded is whether the request was
 * written to a socket at all. The message is our own words plus the code and the host, never
 * the original message (nothing from the request can leak).
 */
export function toTransportError(err: unknown, operation: string, host: string, progress: AttemptProgress): TransportError {
  const code = errorCode(err);
  const c = classify(code, progress);
  const detail = `${c.detail} (${host}${code ? `, ${code}` : ""})`;
  return new TransportError({
    operation,
    kind: c.kind,
    detail,
    retryable: c.retryable,
    mayHaveLanded: progress.sent,
    ...(code ? { code } : {}),
  });
}
