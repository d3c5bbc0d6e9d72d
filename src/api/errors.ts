// The errors the client throws. Every one is an Error (instanceof holds) and a ClassifiedError
// (src/lib/classified.ts): it says its condition reason and whether to retry. None carries a token: messages are built from the service's error
// fields and our own words, with every token the call used cut out (redact), and no error
// keeps a request's headers or a response body.
import type { z } from "zod";
import { classification, reasonForStatus, type Classification, type ClassifiedError } from "../lib/classified.ts";

export const REDACTED = "[REDACTED]";

/**
 * Replaces every occurrence of each secret in `text` (secrets shorter than 4 chars are ignored),
 * also as JSON writes it: a service message that is an object or issue list is rendered with
 * JSON.stringify, which escapes `"`, `\` and control characters, so a token holding one of them
 * would otherwise pass through in its escaped form.
 */
export function redact(text: string, secrets: readonly (string | undefined)[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret === undefined || secret.length < 4) continue;
    const escaped = JSON.stringify(secret).slice(1, -1);
    if (escaped !== secret) out = out.split(escaped).join(REDACTED);
    out = out.split(secret).join(REDACTED);
  }
  return out;
}

/** Status codes the client retries by itself, for idempotent calls without a Retry-After (a 429 goes to the caller: retry.ts). */
export const RETRIED_STATUSES: ReadonlySet<number> = new Set([502, 503, 504]);

export interface ApiErrorInit {
  operation: string;
  status: number;
  error: string;
  message: string;
  reqId?: string;
  retryAfterMs?: number;
}

/** The service answered with a non-2xx status. */
export class ApiError extends Error implements ClassifiedError {
  override readonly name = "ApiError";
  readonly operation: string;
  readonly status: number;
  /** The service's `error` field, e.g. "ValidationFailure", "RateLimitExceeded", "NotFound". */
  readonly error: string;
  /** The service's `message` (422 issue lists rendered as "path: message; ..."). */
  readonly serviceMessage: string;
  readonly reqId: string | undefined;
  /** 400 "a job for this sync is already in progress" (DESIGN.md): retry once the job is done. */
  readonly jobInProgress: boolean;
  /**
   * A 404 for a path the service does not serve (Fastify's `error: "Not Found"`, message
   * "Route METHOD:path not found"), as against `error: "NotFound"` for an unknown id or slug:
   * only the second says the object does not exist.
   */
  readonly routeNotFound: boolean;
  /** 429, 5xx and a job in progress: trying again later may succeed. */
  readonly retryable: boolean;
  /** A 5xx may come after the change was applied; a 4xx never does. */
  readonly mayHaveLanded: boolean;
  readonly retryAfterMs: number | undefined;

  constructor(init: ApiErrorInit) {
    const suffix = init.reqId ? ` (reqId ${init.reqId})` : "";
    super(`${init.operation}: ${init.status} ${init.error}: ${init.message}${suffix}`);
    this.operation = init.operation;
    this.status = init.status;
    this.error = init.error;
    this.serviceMessage = init.message;
    this.reqId = init.reqId;
    this.jobInProgress = init.status === 400 && /already in progress/i.test(init.message);
    this.routeNotFound = init.status === 404 && (init.error === "Not Found" || /^Route \S+ not found$/.test(init.message));
    this.retryable = init.status === 429 || init.status >= 500 || this.jobInProgress;
    this.mayHaveLanded = init.status >= 500;
    this.retryAfterMs = init.retryAfterMs;
  }

  classify(): Classification {
    const reason = this.routeNotFound ? "OperationNotServed" : reasonForStatus(this.status);
    const message = `${this.operation}: ${this.status} ${this.error}: ${this.serviceMessage}`;
    return classification(reason, message, this.retryable, this.retryAfterMs);
  }
}

export type TransportErrorKind =
  "timeout" | "connection-refused" | "connection-reset" | "dropped-response" | "dns" | "tls" | "aborted" | "fenced" | "other";

export interface TransportErrorInit {
  operation: string;
  kind: TransportErrorKind;
  detail: string;
  code?: string;
  retryable: boolean;
  mayHaveLanded: boolean;
}

/** No HTTP answer: timeout, refused or reset connection, a response that never came. */
export class TransportError extends Error implements ClassifiedError {
  override readonly name = "TransportError";
  readonly operation: string;
  readonly kind: TransportErrorKind;
  /** The system or undici error code, e.g. ECONNREFUSED, UND_ERR_SOCKET. */
  readonly code: string | undefined;
  readonly retryable: boolean;
  /** False only when the request provably never reached the service (no connection was made). */
  readonly mayHaveLanded: boolean;

  constructor(init: TransportErrorInit) {
    super(`${init.operation}: ${init.kind}: ${init.detail}`);
    this.operation = init.operation;
    this.kind = init.kind;
    this.code = init.code;
    this.retryable = init.retryable;
    this.mayHaveLanded = init.mayHaveLanded;
  }

  classify(): Classification {
    return classification("ServiceUnavailable", firstLine(this), this.retryable);
  }
}

/**
 * A response body (of any status) longer than the client's maxResponseBytes. The client stops
 * reading at the limit and closes the connection, so a service that answers with an endless or
 * huge body costs keyward at most the limit in memory. Not retried: the same request would get
 * the same body. The message names the operation and the limit, never any of the body.
 */
export class ResponseTooLargeError extends Error implements ClassifiedError {
  override readonly name = "ResponseTooLargeError";
  readonly operation: string;
  /** The HTTP status the oversized response came with (not `status`: it is no ApiError). */
  readonly httpStatus: number;
  readonly limitBytes: number;
  readonly retryable = false;
  readonly mayHaveLanded = true;

  constructor(init: { operation: string; status: number; limitBytes: number; declaredBytes?: number }) {
    const declared = init.declaredBytes === undefined ? "" : ` (it declared ${init.declaredBytes} bytes)`;
    super(
      `${init.operation}: the service's response (HTTP ${init.status}) is larger than the limit of ${init.limitBytes} bytes${declared}; it was not read (--max-response-bytes)`,
    );
    this.operation = init.operation;
    this.httpStatus = init.status;
    this.limitBytes = init.limitBytes;
  }

  classify(): Classification {
    return classification("ResponseTooLarge", firstLine(this), false);
  }
}

/** One field that failed a schema: where, and what kind of failure — never the value. */
export interface FieldIssue {
  path: string;
  problem: string;
}

/**
 * keyward's own rate limit for the credential turned the call away before sending it: no token
 * left, or the service's Retry-After still pending. Nothing was sent and nobody waited; try again
 * after `retryAfterMs` (the caller's turn, so turned-away callers come back spread out).
 */
export class ThrottledError extends Error implements ClassifiedError {
  override readonly name = "ThrottledError";
  readonly operation: string;
  readonly retryAfterMs: number;
  readonly retryable = true;
  readonly mayHaveLanded = false;
  /** A wait, not a failure (the engine requeues at the turn without a condition). */
  readonly throttled = true;

  constructor(operation: string, retryAfterMs: number) {
    super(`${operation}: held back by the client-side rate limit of this credential; next turn in ${retryAfterMs} ms`);
    this.operation = operation;
    this.retryAfterMs = retryAfterMs;
  }

  classify(): Classification {
    return classification("RateLimited", "held back by keyward's rate limit for these credentials", true, this.retryAfterMs);
  }
}

/** A 2xx body that does not match the operation's response schema. Not retryable. */
export class ResponseValidationError extends Error implements ClassifiedError {
  override readonly name = "ResponseValidationError";
  readonly operation: string;
  readonly issues: readonly FieldIssue[];
  readonly retryable = false;
  readonly mayHaveLanded = true;

  constructor(operation: string, issues: readonly FieldIssue[]) {
    super(`${operation}: the service's response does not match the expected shape at ${formatIssues(issues)}`);
    this.operation = operation;
    this.issues = issues;
  }

  /** The service answered, but not what interface.md says: the same answer would come again. */
  classify(): Classification {
    return classification("ServiceUnavailable", firstLine(this), false);
  }
}

/** The caller's request breaks a limit of interface.md; nothing was sent. Not retryable. */
export class RequestValidationError extends Error implements ClassifiedError {
  override readonly name = "RequestValidationError";
  readonly operation: string;
  readonly issues: readonly FieldIssue[];
  readonly retryable = false;
  readonly mayHaveLanded = false;

  constructor(operation: string, issues: readonly FieldIssue[]) {
    super(`${operation}: invalid request: ${formatIssues(issues)}`);
    this.operation = operation;
    this.issues = issues;
  }

  classify(): Classification {
    return classification("ServiceUnavailable", firstLine(this), false);
  }
}

function firstLine(err: Error): string {
  return err.message.split("\n")[0] ?? err.name;
}

export type ClientError =
  ApiError | TransportError | ResponseValidationError | RequestValidationError | ResponseTooLargeError | ThrottledError;

export const isApiError = (e: unknown): e is ApiError => e instanceof ApiError;
export const isThrottled = (e: unknown): e is ThrottledError => e instanceof ThrottledError;
export const isTransportError = (e: unknown): e is TransportError => e instanceof TransportError;
export const isResponseValidationError = (e: unknown): e is ResponseValidationError => e instanceof ResponseValidationError;
export const isRequestValidationError = (e: unknown): e is RequestValidationError => e instanceof RequestValidationError;
export const isResponseTooLarge = (e: unknown): e is ResponseTooLargeError => e instanceof ResponseTooLargeError;
/** The object does not exist: a 404 for an id or slug, never one for an unknown route. */
export const isServiceNotFound = (e: unknown): boolean => isApiError(e) && e.status === 404 && !e.routeNotFound;
/** The service does not serve the operation's path at all (an older or stricter server). */
export const isRouteNotFound = (e: unknown): boolean => isApiError(e) && e.routeNotFound;
export const isJobInProgress = (e: unknown): boolean => isApiError(e) && e.jobInProgress;

export function formatIssues(issues: readonly FieldIssue[]): string {
  return issues.map((i) => `${i.path}: ${i.problem}`).join("; ");
}

export function formatPath(path: readonly PropertyKey[]): string {
  if (path.length === 0) return "(root)";
  return path.map((p, i) => (typeof p === "number" ? `[${p}]` : `${i === 0 ? "" : "."}${String(p)}`)).join("");
}

/**
 * Response issues name the field and the kind of failure only. zod's own messages are not
 * used: a refinement's message, or a future zod's, could quote the value, and a response may
 * hold a secret (an access token, an EST passphrase).
 */
export function responseIssues(issues: readonly z.core.$ZodIssue[]): FieldIssue[] {
  return issues.map((issue) => {
    const expected = "expected" in issue && typeof issue.expected === "string" ? ` (expected ${issue.expected})` : "";
    return { path: formatPath(issue.path), problem: `${issue.code}${expected}` };
  });
}

/** Request issues keep zod's message (the caller's own input; zod does not quote values). */
export function requestIssues(issues: readonly z.core.$ZodIssue[]): FieldIssue[] {
  return issues.map((issue) => ({ path: formatPath(issue.path), problem: issue.message }));
}

/**
 * The service's `message`: a string, or for 422 the zod issue list, rendered as
 * "path: message; path: message".
 */
export function serviceMessage(message: unknown): string {
  if (typeof message === "string") return message;
  if (Array.isArray(message)) return message.map(renderServiceIssue).join("; ");
  if (message === undefined || message === null) return "";
  return JSON.stringify(message);
}

function renderServiceIssue(issue: unknown): string {
  if (typeof issue !== "object" || issue === null) return String(issue);
  const { path, message } = issue as { path?: unknown; message?: unknown };
  const where = Array.isArray(path) ? formatPath(path as PropertyKey[]) : undefined;
  const what = typeof message === "string" ? message : JSON.stringify(issue);
  return where ? `${where}: ${what}` : what;
}
