// Every request keyward makes to the apiserver, by path: one way for reads, patches, lists,
// watches, events and leases of any kind (core or custom). Auth and TLS come from KubeAccess.
import { classification, reasonForStatus, type Classification, type ClassifiedError } from "../lib/classified.ts";
import { isPlainPath } from "../lib/baseurl.ts";
import { nodeHttp } from "../lib/node-http.ts";
import type { Dispatcher } from "undici";
import type { KubeAccess } from "./kubeconfig.ts";

export interface KubeRequest {
  method?: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  /** The Accept header; default application/json (a metadata-only list or watch asks for PartialObjectMetadata). */
  accept?: string;
  signal?: AbortSignal;
}

export const MERGE_PATCH = "application/merge-patch+json";

/**
 * keyward's User-Agent on every apiserver request. The apiserver names the field manager of a
 * write without one after the agent's first `/`-separated part: `keyward` in managedFields,
 * audit logs and apiserver metrics, where no agent at all reads `unknown`.
 */
const USER_AGENT = "keyward";

/** A non-2xx answer of the apiserver: its status code, and its Status message when it sent one. */
export class KubeApiError extends Error implements ClassifiedError {
  override readonly name = "KubeApiError";
  /** The HTTP status; `code` as in client-node's ApiException, so statusCodeOf reads either. */
  readonly code: number;
  /** The apiserver's Status reason, e.g. Conflict, NotFound, Forbidden. */
  readonly reason: string | undefined;
  /** The apiserver applies a write atomically or not at all: an error answer means it did not. */
  readonly mayHaveLanded = false;
  constructor(code: number, message: string, reason?: string) {
    super(message);
    this.code = code;
    this.reason = reason;
  }

  classify(): Classification {
    const retryable = this.code >= 500 || this.code === 409 || this.code === 429;
    return classification(reasonForStatus(this.code), errorSummary(this), retryable);
  }
}

/**
 * How long one apiserver request may take, headers and body (client-go leaves requests unbounded;
 * a half-open connection or a stuck apiserver would then hold a reconcile, a lease renewal or an
 * informer's list forever). A watch's stream is not one request: only its headers are bounded.
 */
export const DEFAULT_KUBE_REQUEST_TIMEOUT_MS = 30_000;

/** The apiserver did not answer one request within its deadline. Retryable. */
export class KubeTimeoutError extends Error implements ClassifiedError {
  override readonly name = "KubeTimeoutError";
  readonly retryable = true;
  readonly mayHaveLanded = false;
  readonly timeoutMs: number;
  constructor(method: string, path: string, timeoutMs: number) {
    super(`${method} ${path}: no answer from the apiserver within ${timeoutMs} ms`);
    this.timeoutMs = timeoutMs;
  }

  classify(): Classification {
    return classification("ApiserverTimeout", this.message, true);
  }
}

function requestTimeoutMs(access: KubeAccess): number {
  return access.requestTimeoutMs ?? DEFAULT_KUBE_REQUEST_TIMEOUT_MS;
}

/**
 * What a request passes before it is sent: its turn under the client-side limit (every request
 * but a watch; --kube-api-qps/--kube-api-burst and any 429's Retry-After, waited outside any
 * deadline, as client-go's rate limiter does), then the credential (access.authorization(): an exec plugin may take up to its own timeout).
 * A deadline starts only after both, so a plugin that never answers fails with its own error
 * naming the plugin and its timeout instead of being reported as a silent apiserver.
 */
async function admit(access: KubeAccess, req: KubeRequest): Promise<string | undefined> {
  const limiter = limiters.get(access);
  if (limiter && !isWatch(req)) await limiter.acquire(requestKind(req.path), req.signal);
  return credential(access, req.signal);
}

/**
 * Runs `work` with a signal that aborts at the deadline (or with the caller's signal); a
 * deadline abort becomes KubeTimeoutError, a caller's abort stays what it was. For a watch's
 * headers (its stream then outlives the deadline); one JSON request has kubeJson's cheaper
 * deadline. `work` gets the credential admit obtained.
 */
export async function withDeadline<T>(
  access: KubeAccess,
  req: KubeRequest,
  work: (signal: AbortSignal, authorization: string | undefined) => Promise<T>,
): Promise<T> {
  const authorization = await admit(access, req);
  const ms = requestTimeoutMs(access);
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), ms);
  const signal = req.signal ? AbortSignal.any([deadline.signal, req.signal]) : deadline.signal;
  try {
    return await work(signal, authorization);
  } catch (err) {
    if (deadline.signal.aborted && !req.signal?.aborted) throw new KubeTimeoutError(req.method ?? "GET", req.path, ms);
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/** undici's own timeouts: no response headers, or a body silent, for headersTimeout / bodyTimeout. */
function isUndiciTimeout(err: unknown): boolean {
  const code = typeof err === "object" && err !== null ? (err as { code?: unknown }).code : undefined;
  return code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_BODY_TIMEOUT";
}

/** The client-side apiserver limit: requests per second and the burst above it. */
export interface RequestLimit {
  /**
   * Sustained requests per second; 0: no limit. "auto": none while the apiserver's answers show
   * API Priority and Fairness (it queues and throttles each flow itself), AUTO_FALLBACK_QPS while
   * they do not (an apiserver without it, or before its first answer).
   */
  qps: number | "auto";
  /** Requests that may go at once after a quiet spell (the bucket's size); at least 1. */
  burst: number;
}

/**
 * The rate of "auto" where the apiserver does not show API Priority and Fairness: above the
 * ~280-380 requests a second keyward makes while creating on two cores unthrottled
 * (bench/RESULTS.md), while a runaway loop is still held to 18,000 requests a minute. With APF
 * no fixed cap, as controller-runtime and Flux: a fixed one only slowed a create wave that the
 * apiserver would have served (4 requests per object: 75 objects a second at 300).
 */
export const AUTO_FALLBACK_QPS = 300;

export const DEFAULT_KUBE_API_LIMIT: RequestLimit = { qps: "auto", burst: 600 };

/**
 * How long a 429 holds back every request of the limiter: its Retry-After (delay-seconds, as the
 * apiserver sends), at least MIN_HOLD_MS (absent, 0 or garbage: the apiserver's own usual 1 s),
 * at most MAX_HOLD_MS, so a broken or hostile value cannot stall keyward: half the default
 * --renew-deadline, as without sharding the leader election's Lease renewals share this limiter.
 */
export const MIN_HOLD_MS = 1_000;
export const MAX_HOLD_MS = 5_000;

export function retryAfterHoldMs(header: string | string[] | undefined): number {
  const text = (Array.isArray(header) ? header[0] : header)?.trim() ?? "";
  const seconds = /^\d{1,9}$/.test(text) ? Number(text) : 0;
  return Math.min(MAX_HOLD_MS, Math.max(MIN_HOLD_MS, seconds * 1000));
}

/** The response headers by which an apiserver shows that API Priority and Fairness classified the request. */
const APF_HEADERS = ["x-kubernetes-pf-flowschema-uid", "x-kubernetes-pf-prioritylevel-uid"] as const;

export type ResponseHeaders = Record<string, string | string[] | undefined>;

export function showsPriorityAndFairness(headers: ResponseHeaders): boolean {
  return APF_HEADERS.some((name) => headers[name] !== undefined);
}

/** What the limiter made wait, for tests and metrics. */
export interface LimiterStats {
  /** Requests that waited for a token of the client-side rate. */
  limitWaits: number;
  /** 429 answers, each holding every request back for its Retry-After. */
  throttled: number;
  /** Requests that waited behind a 429's Retry-After. */
  retryAfterWaits: number;
  /** "auto": whether the last answer showed API Priority and Fairness; undefined before any. */
  priorityAndFairness: boolean | undefined;
}

export interface LimiterHooks {
  /** A request starts waiting: for a token, or behind a Retry-After. */
  onWait?(reason: "client_limit" | "retry_after"): void;
  /** A 429 answer, holding requests back for `holdMs`. */
  onThrottled?(holdMs: number): void;
}

export interface RequestLimiter {
  /** Resolves when a request of `kind` may go; rejects with the signal's reason if aborted first. */
  acquire(kind: string, signal?: AbortSignal): Promise<void>;
  /** An answer's status and headers: API Priority and Fairness shown or not, a 429's Retry-After. */
  observe(status: number, headers: ResponseHeaders): void;
  /** Requests waiting for a token, per kind (for tests and metrics). */
  waiting(): Record<string, number>;
  stats(): LimiterStats;
}

export interface LimiterClock {
  now(): number;
  /** Calls `fn` after `ms`; returns its cancellation. */
  after(ms: number, fn: () => void): () => void;
}

const realClock: LimiterClock = {
  now: () => performance.now(),
  after: (ms, fn) => {
    const timer = setTimeout(fn, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
};

interface Waiter {
  resolve: () => void;
  reject: (err: unknown) => void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason));
}

/**
 * One token bucket (client-go's flowcontrol.NewTokenBucketRateLimiter: `qps` a second, `burst`
 * at most) shared by every kind, and fair between kinds: a request that finds others waiting
 * queues behind them in its kind's queue, and freed tokens go round the kinds with a waiting
 * request in turn, so a burst of Project status writes cannot starve a lease renewal, an Event
 * or a SecretSync's write (API Priority and Fairness' fair queuing, in small). With "auto" the
 * bucket applies only while the apiserver's last answer did not show API Priority and Fairness.
 *
 * A 429 (whatever the rate) holds every request back until its Retry-After has passed, those of
 * that moment and any made meanwhile, then lets them go in the order they came, spread over the
 * hold's length (a second at most), not all at once: one gate instead of each request finding its own 429 and
 * retrying on its own (a thundering herd against an apiserver that just said it is full).
 */
export function createRequestLimiter(limit: RequestLimit, clock: LimiterClock = realClock, hooks: LimiterHooks = {}): RequestLimiter {
  let apf: boolean | undefined;
  const stats = { limitWaits: 0, throttled: 0, retryAfterWaits: 0 };
  const bucket = createFairBucket(
    () => (limit.qps !== "auto" ? limit.qps : apf === true ? 0 : AUTO_FALLBACK_QPS) / 1000,
    limit.burst,
    clock,
    () => {
      stats.limitWaits++;
      hooks.onWait?.("client_limit");
    },
  );
  const gate = createRetryAfterGate(clock);

  return {
    async acquire(kind, signal) {
      signal?.throwIfAborted();
      // A request released from one hold may meet the next: it waits again, still in its turn.
      while (clock.now() < gate.until()) {
        stats.retryAfterWaits++;
        hooks.onWait?.("retry_after");
        await gate.wait(signal);
        signal?.throwIfAborted();
      }
      return bucket.take(kind, signal);
    },
    observe(status, headers) {
      if (limit.qps === "auto") {
        const shown = showsPriorityAndFairness(headers);
        // An answer that did not pass the apiserver's filters (a 401, a proxy's error) says nothing either way.
        if (shown || (status !== 401 && status < 500)) {
          apf = shown;
          // Those waiting for a token go now.
          if (shown) bucket.pump();
        }
      }
      if (status === 429) {
        const holdMs = retryAfterHoldMs(headers["retry-after"]);
        stats.throttled++;
        hooks.onThrottled?.(holdMs);
        gate.hold(holdMs);
      }
    },
    waiting: () => bucket.waiting(),
    stats: () => ({ ...stats, priorityAndFairness: apf }),
  };
}

/** The token bucket, fair between kinds, at `perMs()` tokens a millisecond (0 or less: none needed). */
function createFairBucket(
  perMs: () => number,
  size: number,
  clock: LimiterClock,
  onWait: () => void,
): { take(kind: string, signal: AbortSignal | undefined): Promise<void>; pump(): void; waiting(): Record<string, number> } {
  const burst = Math.max(1, Math.floor(size));
  let tokens = burst;
  let last = clock.now();
  const queues = new Map<string, Waiter[]>();
  let cancelTimer: (() => void) | undefined;

  const refill = (): void => {
    const now = clock.now();
    tokens = Math.min(burst, tokens + Math.max(0, now - last) * perMs());
    last = now;
  };
  const pending = (): number => [...queues.values()].reduce((n, q) => n + q.length, 0);
  const pump = (): void => {
    refill();
    const unlimited = perMs() <= 0;
    while ((unlimited || tokens >= 1) && queues.size > 0) {
      // Round robin: the first kind in the map goes, then moves to the back if it still waits.
      const [kind, queue] = queues.entries().next().value as [string, Waiter[]];
      queues.delete(kind);
      const waiter = queue.shift() as Waiter;
      if (queue.length > 0) queues.set(kind, queue);
      if (!unlimited) tokens -= 1;
      if (waiter.onAbort) waiter.signal?.removeEventListener("abort", waiter.onAbort);
      waiter.resolve();
    }
    if (queues.size > 0 && !cancelTimer) {
      const waitMs = Math.max(1, Math.ceil((1 - tokens) / perMs()));
      cancelTimer = clock.after(waitMs, () => {
        cancelTimer = undefined;
        pump();
      });
    }
  };

  const take = (kind: string, signal: AbortSignal | undefined): Promise<void> => {
    if (perMs() <= 0) return Promise.resolve();
    refill();
    if (queues.size === 0 && tokens >= 1) {
      tokens -= 1;
      return Promise.resolve();
    }
    onWait();
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { resolve, reject, signal, onAbort: undefined };
      if (signal) {
        waiter.onAbort = () => {
          const queue = queues.get(kind);
          const at = queue?.indexOf(waiter) ?? -1;
          if (queue && at >= 0) {
            queue.splice(at, 1);
            if (queue.length === 0) queues.delete(kind);
          }
          if (queues.size === 0 && pending() === 0 && cancelTimer) {
            cancelTimer();
            cancelTimer = undefined;
          }
          reject(abortReason(signal));
        };
        signal.addEventListener("abort", waiter.onAbort, { once: true });
      }
      const queue = queues.get(kind);
      if (queue) queue.push(waiter);
      else queues.set(kind, [waiter]);
      pump();
    });
  };

  return {
    take,
    pump: () => {
      if (queues.size > 0) pump();
    },
    waiting: () => Object.fromEntries([...queues].map(([kind, q]) => [kind, q.length])),
  };
}

/** Requests held back until a time, then let go in the order they came, spread out. */
interface RetryAfterGate {
  /** The clock's time until which requests are held. */
  until(): number;
  /** Holds requests for `ms` from now (a later end than one already set wins). */
  hold(ms: number): void;
  /** Resolves at this waiter's turn after the hold; rejects with the signal's reason if aborted first. */
  wait(signal: AbortSignal | undefined): Promise<void>;
}

function createRetryAfterGate(clock: LimiterClock): RetryAfterGate {
  let heldUntil = 0;
  let lastHoldMs = 0;
  let held: Waiter[] = [];
  let releaseTimer: (() => void) | undefined;
  const release = (): void => {
    releaseTimer = undefined;
    const wait = heldUntil - clock.now();
    if (wait > 0) {
      releaseTimer = clock.after(wait, release);
      return;
    }
    const going = held;
    held = [];
    const windowMs = Math.min(1_000, lastHoldMs);
    going.forEach((waiter, i) => {
      const go = (): void => {
        if (waiter.onAbort) waiter.signal?.removeEventListener("abort", waiter.onAbort);
        waiter.resolve();
      };
      const at = Math.floor((i * windowMs) / going.length);
      if (at === 0) go();
      else clock.after(at, go);
    });
  };
  return {
    until: () => heldUntil,
    hold(ms) {
      heldUntil = Math.max(heldUntil, clock.now() + ms);
      lastHoldMs = ms;
    },
    wait: (signal) =>
      new Promise<void>((resolve, reject) => {
        const waiter: Waiter = { resolve, reject, signal, onAbort: undefined };
        if (signal) {
          waiter.onAbort = () => {
            held = held.filter((w) => w !== waiter);
            reject(abortReason(signal));
          };
          signal.addEventListener("abort", waiter.onAbort, { once: true });
        }
        held.push(waiter);
        releaseTimer ??= clock.after(Math.max(1, heldUntil - clock.now()), release);
      }),
  };
}

const limiters = new WeakMap<KubeAccess, RequestLimiter>();

/** Puts every request but watches made with `access` under `limiter` (undefined: none). */
export function limitRequests(access: KubeAccess, limiter: RequestLimiter | undefined): void {
  if (limiter) limiters.set(access, limiter);
  else limiters.delete(access);
}

function isWatch(req: KubeRequest): boolean {
  const watch = req.query?.["watch"];
  return watch === true || watch === "true" || watch === 1 || watch === "1";
}

/**
 * The resource a path names, as "group/plural" ("/plural" for core): the kind a request is
 * queued under. /api/v1/namespaces/ns/secrets/x -> "/secrets", /apis/keyward.dev/v1alpha1/
 * namespaces/ns/projects/p/status -> "keyward.dev/projects", /api/v1/namespaces -> "/namespaces".
 */
export function requestKind(path: string): string {
  // Per request, so no split/filter/slice of the whole path (0.9% of keyward's CPU while creating);
  // the plural is at most the sixth segment (apis, group, version, namespaces, ns, plural).
  const query = path.indexOf("?");
  const end = query < 0 ? path.length : query;
  const parts: string[] = [];
  for (let at = 0; at < end && parts.length < 6;) {
    const slash = path.indexOf("/", at);
    const stop = slash < 0 || slash > end ? end : slash;
    if (stop > at) parts.push(path.slice(at, stop));
    at = stop + 1;
  }
  let group = "";
  let from: number;
  if (parts[0] === "api") from = 2;
  else if (parts[0] === "apis") {
    group = parts[1] ?? "";
    from = 3;
  } else return path;
  const plural = parts[from] === "namespaces" && parts.length >= from + 3 ? parts[from + 2] : parts[from];
  return `${group}/${plural ?? ""}`;
}

/** The access's credential, or the caller's abort first (a stop does not wait out a slow plugin). */
async function credential(access: KubeAccess, signal: AbortSignal | undefined): Promise<string | undefined> {
  if (!signal) return access.authorization();
  signal.throwIfAborted();
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_resolve, reject) => {
    onAbort = () => reject(signal.reason as Error);
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([access.authorization(), aborted]);
  } finally {
    if (onAbort) signal.removeEventListener("abort", onAbort);
  }
}

export type KubeResponse = Dispatcher.ResponseData;

/** Per server URL: its origin and the path prefix a request's path goes under (a proxy's, say). */
const servers = new Map<string, { origin: string; prefix: string | undefined }>();
const PROBE = "/keyward-probe";

/**
 * The origin and the path (with its query) of a request to `server` + `path`: what `new URL(server
 * + path)` with the query set in its searchParams gives, without parsing a URL per request (1.5%
 * of keyward's CPU while creating, bench/RESULTS.md). A path that URL parsing would change
 * (escapes, dot segments, a query of its own) goes through URL as before.
 */
export function requestTarget(server: string, path: string, query?: KubeRequest["query"]): { origin: string; path: string } {
  let search = "";
  if (query) {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query)) {
      if (value !== undefined) params.set(key, String(value));
    }
    const text = params.toString();
    if (text !== "") search = `?${text}`;
  }
  let base = servers.get(server);
  if (base === undefined) {
    const probe = new URL(server + PROBE);
    base = { origin: probe.origin, prefix: probe.pathname.endsWith(PROBE) ? probe.pathname.slice(0, -PROBE.length) : undefined };
    servers.set(server, base);
  }
  if (base.prefix !== undefined && isPlainPath(path)) return { origin: base.origin, path: `${base.prefix}${path}${search}` };
  const url = new URL(server + path);
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value !== undefined) url.searchParams.set(key, String(value));
  }
  return { origin: url.origin, path: `${url.pathname}${url.search}` };
}

/**
 * One apiserver request through the access's dispatcher (undici's request API: no WHATWG
 * Request/Response/web-stream objects per call, which cost a third of keyward's CPU in a
 * 1000-object create; bench/RESULTS.md). The body is a Node stream: read it or dump it.
 * `authorization`: the credential admit obtained before any deadline started; without it the
 * access's (cached) credential is asked for here. `timeoutMs`: undici's headersTimeout and
 * bodyTimeout for this request (kubeJson's deadline); without it undici's defaults.
 */
export async function kubeRequest(access: KubeAccess, req: KubeRequest, authorization?: string, timeoutMs?: number): Promise<KubeResponse> {
  const method = req.method ?? "GET";
  // Right before sending, after any wait for a token or a turn.
  access.beforeSend?.(method, req.path);
  const target = requestTarget(access.server, req.path, req.query);
  const headers: Record<string, string> = { accept: req.accept ?? "application/json", "user-agent": USER_AGENT };
  const header = authorization ?? (await access.authorization());
  if (header) headers["authorization"] = header;
  if (req.body !== undefined) headers["content-type"] = req.contentType ?? "application/json";
  const response = await access.dispatcher.request({
    origin: target.origin,
    path: target.path,
    method,
    headers,
    body: req.body === undefined ? null : JSON.stringify(req.body),
    signal: req.signal ?? null,
    ...(timeoutMs !== undefined ? { headersTimeout: timeoutMs, bodyTimeout: timeoutMs } : {}),
  });
  // Every answer, watches' included, tells the limiter whether the apiserver throttles by itself
  // and when it says to wait.
  limiters.get(access)?.observe(response.statusCode, response.headers);
  return response;
}

/**
 * Times one request is sent while the apiserver answers 429 (client-go's default maxRetries is
 * 10): a 429 was not served, so sending it again is safe for any verb; each goes again only
 * after the Retry-After, in its turn with every other request held back by it. The last 429
 * goes to the caller, retryable (the work queue's backoff).
 */
export const MAX_THROTTLED_ATTEMPTS = 10;

/**
 * A JSON request, answered within the access's request timeout, else KubeTimeoutError; a non-2xx
 * answer throws KubeApiError. The deadline is undici's: the response headers within the timeout,
 * and no silence as long in the body. That costs no AbortController, timer or AbortSignal.any of
 * keyward's per request (3% of keyward's CPU while creating, bench/RESULTS.md), and
 * on HTTP/2 undici answers a stream's timeout by pinging its connection and closing one that does
 * not answer, so the next request gets a new connection instead of the same dead one (client-go's
 * connection health check: an apiserver gone without a FIN, behind a load balancer that failed over).
 */
export async function kubeJson<T>(access: KubeAccess, req: KubeRequest): Promise<T> {
  const ms = requestTimeoutMs(access);
  // Only a limited access (the operator's) sends again after a 429: its limiter holds the retry
  // back with everything else; the leader election's Lease renewals keep their own schedule.
  const attempts = limiters.has(access) ? MAX_THROTTLED_ATTEMPTS : 1;
  for (let attempt = 1; ; attempt++) {
    const authorization = await admit(access, req);
    let status: number;
    let text: string;
    try {
      const response = await kubeRequest(access, req, authorization, ms);
      status = response.statusCode;
      text = await response.body.text();
    } catch (err) {
      if (isUndiciTimeout(err) && !req.signal?.aborted) throw new KubeTimeoutError(req.method ?? "GET", req.path, ms);
      throw err;
    }
    if (status === 429 && attempt < attempts) continue;
    if (status < 200 || status > 299) throw errorFrom(status, text, nodeHttp.STATUS_CODES[status] ?? "");
    return JSON.parse(text) as T;
  }
}

/** The error for an apiserver answer: its Status message and reason when the body is a Status. */
export function errorFrom(code: number, text: string, fallback: string): KubeApiError {
  const status = parseStatus(text);
  return new KubeApiError(code, status?.message ?? (fallback || `HTTP ${code}`), status?.reason);
}

function parseStatus(text: string): { message?: string; reason?: string } | undefined {
  try {
    const parsed = JSON.parse(text) as { message?: unknown; reason?: unknown };
    return {
      ...(typeof parsed.message === "string" ? { message: parsed.message } : {}),
      ...(typeof parsed.reason === "string" ? { reason: parsed.reason } : {}),
    };
  } catch {
    return undefined;
  }
}

/** One line describing an error for logs and restart reasons: "HTTP 404: <apiserver message>" for apiserver errors. */
export function errorSummary(err: unknown): string {
  if (err instanceof KubeApiError) return `HTTP ${err.code}: ${err.message.split("\n")[0] ?? ""}`;
  const code = (err as { code?: unknown } | null)?.code;
  const body = (err as { body?: unknown } | null)?.body;
  // client-node's ApiException: keyward never throws one, but tests drive the apiserver with client-node and
  // summarise its errors here; its message spans lines and embeds headers, so the Status in its body is used.
  if (typeof code === "number" && typeof err === "object" && err !== null && "body" in err) {
    const message = typeof body === "string" ? parseStatus(body)?.message : (body as { message?: unknown } | null)?.message;
    return typeof message === "string" ? `HTTP ${code}: ${message}` : `HTTP ${code}`;
  }
  if (err instanceof Error) return err.message.split("\n")[0] ?? err.name;
  return String(err);
}
