// The reasons the engine itself writes, whatever the kind: the managed reconciler's conditions and
// Events, and the classification of errors (classifyError). Each kind adds its own table in its
// descriptor; src/resources/registry.ts joins them into the one registry.
import type { ReasonTable } from "./kind.ts";

export const engineReasons = {
  Available: { means: "available", doc: "The external object exists and is usable." },
  ReconcileSuccess: { means: "available", doc: "Synced: the external object matches the spec." },
  ObserveOnly: { means: "available", doc: "managementPolicy ObserveOnly: observed, never changed." },
  Created: { means: "done", doc: "keyward created the external object (or found the one it created before a restart)." },
  Updated: { means: "done", doc: "keyward changed the external object to match the spec; the message names the fields." },
  Deleted: { means: "done", doc: "keyward deleted the external object." },
  ReconcilePaused: { means: "progress", argoCd: "Suspended", doc: "The keyward.dev/paused annotation stops reconciling." },
  ExternalIdFound: {
    means: "done",
    doc: "keyward found the external object the keyward.dev/external-id annotation names (a restore, an exported manifest applied again), or, for a Project restored from a backup, the project its slug names, and recorded it in status.",
  },
  ExternalIdMismatch: {
    means: "failed",
    doc: "keyward.dev/external-id names an external object that is not this resource's (another slug, name or project); nothing is changed.",
  },
  ExternalIdClaimed: {
    means: "failed",
    doc: "keyward.dev/external-id names an external object another resource of the kind already manages; this one changes nothing.",
  },
  CreatePending: {
    means: "retrying",
    doc: "A create's outcome is unknown: the service reports the object's natural key taken (keyward looks it up again and records it when it is this resource's own create, committed late); being deleted, a create may still land (the deletion looks again, and deletes what it finds, for a minute after the last attempt started, then lets the resource go); or another resource is creating the object with the same natural key and this one waits for it.",
  },
  InvalidSpec: { means: "failed", doc: "The spec fails keyward's schema; the message names the fields." },
  NotFound: { means: "failed", doc: "The external object does not exist and keyward may not create it." },
  BadRequest: { means: "failed", doc: "The service refused the request as malformed (400)." },
  Unauthorized: { means: "failed", doc: "The service refused the credentials (401)." },
  Forbidden: { means: "failed", doc: "The credentials may not do this (403)." },
  ValidationFailed: { means: "failed", doc: "The service refused the values (422)." },
  ServiceError: { means: "failed", doc: "The service answered with another 4xx status." },
  OperationNotServed: {
    means: "failed",
    doc: "The service does not serve the operation at this URL (a 404 without a service error body).",
  },
  ResponseTooLarge: { means: "failed", doc: "The service's answer exceeded --max-response-bytes." },
  Conflict: { means: "retrying", doc: "The service reported a conflict (409); retried." },
  RateLimited: { means: "retrying", doc: "The service or keyward's own rate limit held the call back; retried at its turn." },
  ServiceUnavailable: { means: "retrying", doc: "No answer or a 5xx from the service; retried with backoff." },
  ApiserverTimeout: { means: "retrying", doc: "The Kubernetes API did not answer within --kube-request-timeout; retried." },
  InternalError: { means: "retrying", doc: "An unexpected error in keyward; retried with backoff." },
} as const satisfies ReasonTable;
