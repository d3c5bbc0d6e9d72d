// The errors a pass turns into conditions and requeue intent: ReconcileError (what a kind throws),
// the classification of anything thrown, and the bounded InvalidSpec message.
import { classification, isClassified, type Classification, type ClassifiedError } from "../lib/classified.ts";
import { errorSummary } from "../kube/rest.ts";
import { clipMessage } from "./conditions.ts";
import { duplicateAnswer } from "./create-rule.ts";
import { ANNOTATION_EXTERNAL_ID } from "./holder.ts";

/**
 * The error a kind throws when the external object an id from metadata names is not this
 * resource's (another slug, name or project): terminal, nothing is changed at the service.
 */
export function externalIdMismatch(id: string, what: string): ReconcileError {
  return new ReconcileError(
    "ExternalIdMismatch",
    `${ANNOTATION_EXTERNAL_ID} names ${id}, but ${what}; remove the annotation to create or adopt by the spec, or correct it`,
    { retryable: false },
  );
}

/**
 * The service answered a create with "already exists" (the natural key `what` is taken). A pass
 * that began with a create pending may have met its own earlier attempt, committed late: the next
 * pass looks it up again and holds it if the claim rule lets it (create-rule.ts duplicateAnswer).
 * Otherwise undefined: the object is another's, and the kind answers by its creation policy.
 */
export function duplicateWhilePending(c: { createPending: boolean }, what: string, cause: unknown): ReconcileError | undefined {
  if (duplicateAnswer(c.createPending ? "Started" : "NotStarted") !== "look-again") return undefined;
  return new ReconcileError(
    "CreatePending",
    `${what} already exists at the service: it may be this resource's own earlier create, committed late; keyward looks it up again`,
    { retryable: true, retryAfterMs: 1_000, cause },
  );
}

/** An error a kind throws that says how the engine should treat it (a ClassifiedError). */
export class ReconcileError extends Error implements ClassifiedError {
  readonly reason: string;
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;
  readonly mayHaveLanded = false;
  constructor(reason: string, message: string, opts: { retryable: boolean; retryAfterMs?: number; cause?: unknown }) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "ReconcileError";
    this.reason = reason;
    this.retryable = opts.retryable;
    this.retryAfterMs = opts.retryAfterMs;
  }

  classify(): Classification {
    return classification(this.reason, this.message, this.retryable, this.retryAfterMs);
  }
}

/**
 * Any thrown value as a condition reason, a message and a requeue intent: a ClassifiedError says
 * its own (the clients' errors, ReconcileError); anything else is an unexpected InternalError,
 * retried. The message is clipped to a condition's limit (a service's error message can be as
 * long as the response limit, 16 MiB).
 */
export function classifyError(err: unknown): Classification {
  const c = classifyUnclipped(err);
  return { ...c, message: clipMessage(c.message) };
}

function classifyUnclipped(err: unknown): Classification {
  if (isClassified(err)) return err.classify();
  return { reason: "InternalError", message: err instanceof Error ? errorSummary(err) : String(err), retryable: true };
}

/** keyward's own rate limit turned a call away: in how many ms the key's turn comes, else undefined. */
export function throttleDelay(err: unknown): number | undefined {
  return isClassified(err) && err.throttled === true ? (err.classify().retryAfterMs ?? 0) : undefined;
}

/** The call's request may have reached the service (a timeout, a lost answer, a 5xx). */
export function mayHaveLanded(err: unknown): boolean {
  return isClassified(err) && err.mayHaveLanded;
}

/** The longest InvalidSpec message: a few issues, readable in `kubectl get -o wide` and an Event. */
export const MAX_SPEC_MESSAGE = 4096;
/** Issues named in an InvalidSpec message; the rest are counted. */
const MAX_SPEC_ISSUES = 8;
/** The longest one issue's text (zod names every unknown key of a strict object in one issue). */
const MAX_ISSUE_TEXT = 512;

/**
 * The InvalidSpec message of a spec that failed its schema: the first issues as
 * "spec.path: message", then how many more, bounded (a spec the CRD did not check can carry
 * thousands of issues, or one issue naming hundreds of unknown keys).
 */
export function specErrorMessage(err: unknown): string {
  const issues = (err as { issues?: unknown } | null | undefined)?.issues;
  if (Array.isArray(issues)) {
    const shown = issues.slice(0, MAX_SPEC_ISSUES).map((i) => clipMessage(describeIssue(i), MAX_ISSUE_TEXT));
    const more = issues.length - shown.length;
    return clipMessage(`${shown.join("; ")}${more > 0 ? `; and ${more} more` : ""}`, MAX_SPEC_MESSAGE);
  }
  return clipMessage(err instanceof Error ? err.message : safeString(err), MAX_SPEC_MESSAGE);
}

function describeIssue(issue: unknown): string {
  const { path, message } = (issue ?? {}) as { path?: unknown; message?: unknown };
  const where = Array.isArray(path) ? path.map((p) => safeString(p)).join(".") : "";
  return `spec.${where}: ${typeof message === "string" ? message : "invalid"}`;
}

/** String(value), which throws for an object without a prototype or a throwing toString. */
function safeString(value: unknown): string {
  try {
    return String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}
