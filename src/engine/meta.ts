// keyward's metadata vocabulary (crossplane-runtime's pkg/meta, in small): the finalizer, the pause
// annotation, the record of handled action values, and the status fields a kind keeps in
// annotations so that they outlive the cluster (backups, `kubectl get -o yaml`, export).
// The create rule's mark is in create-rule.ts and the claim rule's id and label in holder.ts.

export const FINALIZER = "keyward.dev/finalizer";
export const ANNOTATION_PAUSED = "keyward.dev/paused";

/** The prefix of the annotations recording the last value of each action annotation keyward handled. */
export const HANDLED_PREFIX = "handled.keyward.dev/";

/**
 * The annotation recording digests of the last values handled per action, so that a value put
 * back (Argo CD's self-heal, an old manifest applied again) is known as handled.
 */
export const ANNOTATION_RECENT_HANDLED = `${HANDLED_PREFIX}recent`;

/** The annotation recording the last handled value of an action annotation: keyward.dev/sync-requested-at → handled.keyward.dev/sync-requested-at. */
export function handledAnnotation(actionAnnotation: string): string {
  const slash = actionAnnotation.indexOf("/");
  return HANDLED_PREFIX + actionAnnotation.slice(slash + 1);
}

/**
 * Annotation → status field: the status fields a kind keeps in metadata too. A string field is
 * kept once it has a value (an id, a handled value: never taken back). A `json` field (a mark
 * made before a call, such as a pending action) is kept as JSON while status holds it, and its
 * annotation goes when status drops it.
 */
export type DurableField = string | { field: string; json: true };
export type DurableFields = Readonly<Record<string, DurableField>>;

const present = (value: unknown): value is string => typeof value === "string" && value !== "";
const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

function parseJsonRecord(text: string | undefined): Record<string, unknown> | undefined {
  if (!present(text)) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return isRecord(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Status as a pass starts from: what status lacks is taken from its annotation (an object
 * restored from a backup, exported and applied again, or whose status was lost). Status wins where
 * it has a value: it is keyward's own record on this cluster, and the annotation follows it.
 * `restored` names the fields taken from metadata.
 */
export function withDurableFields(
  fields: DurableFields,
  annotations: Readonly<Record<string, string>> | undefined,
  status: Readonly<Record<string, unknown>>,
): { status: Record<string, unknown>; restored: string[] } {
  const out: Record<string, unknown> = { ...status };
  const restored: string[] = [];
  for (const [annotation, durable] of Object.entries(fields)) {
    const field = typeof durable === "string" ? durable : durable.field;
    const value = typeof durable === "string" ? annotations?.[annotation] : parseJsonRecord(annotations?.[annotation]);
    const has = typeof durable === "string" ? present(out[field]) : isRecord(out[field]);
    if (!has && value !== undefined && value !== "") {
      out[field] = value;
      restored.push(field);
    }
  }
  return { status: out, restored };
}

/**
 * The annotations that record `status`'s durable fields: a string field without a value is left
 * alone; a json field without a value is removed (null).
 */
export function durableAnnotations(fields: DurableFields, status: Readonly<Record<string, unknown>>): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  for (const [annotation, durable] of Object.entries(fields)) {
    if (typeof durable !== "string") {
      const value = status[durable.field];
      out[annotation] = isRecord(value) ? JSON.stringify(value) : null;
    } else if (present(status[durable])) {
      out[annotation] = status[durable];
    }
  }
  return out;
}
