// The one seam between code that fails (the service client, the Kubernetes client, the kinds) and
// the engine that turns a failure into a condition and a requeue intent: an error says what it is
// (classify) instead of the engine probing its fields. Pure: below src/api, src/kube and src/engine.

/** What a failure means for the object: the condition's reason and message, and whether to retry. */
export interface Classification {
  /** A reason of the registry (docs/kinds.md). */
  readonly reason: string;
  /** Stable parts only (no request ids, no headers): a failure that repeats writes nothing new. */
  readonly message: string;
  readonly retryable: boolean;
  /** Not sooner than this: the service's Retry-After, or keyward's own rate limit's turn. */
  readonly retryAfterMs?: number;
}

export interface ClassifiedError extends Error {
  classify(): Classification;
  /** The request may have reached the service, so a create may have landed (a timeout, a 5xx). */
  readonly mayHaveLanded: boolean;
  /** keyward's own rate limit turned the call away before sending it: a wait, not a failure. */
  readonly throttled?: boolean;
}

export function isClassified(err: unknown): err is ClassifiedError {
  return err instanceof Error && typeof (err as Partial<ClassifiedError>).classify === "function";
}

const statusReasons: Readonly<Record<number, string>> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  409: "Conflict",
  422: "ValidationFailed",
  429: "RateLimited",
};

/** The condition reason of an HTTP status, from the service or the apiserver. */
export function reasonForStatus(status: number): string {
  return statusReasons[status] ?? (status >= 500 ? "ServiceUnavailable" : "ServiceError");
}

/** `classification` with retryAfterMs only when there is one (exactOptionalPropertyTypes). */
export function classification(reason: string, message: string, retryable: boolean, retryAfterMs?: number): Classification {
  return retryAfterMs === undefined ? { reason, message, retryable } : { reason, message, retryable, retryAfterMs };
}
