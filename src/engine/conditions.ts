// metav1.Condition helpers (apimachinery's meta.SetStatusCondition semantics) and the deep
// equality used to skip status writes that would change nothing.
import type { Condition } from "./types.ts";

/**
 * metav1.Condition's message limit, which the CRDs' status schema enforces: a longer message
 * makes the apiserver refuse the whole status write.
 */
export const MAX_CONDITION_MESSAGE = 32768;

/**
 * `message` cut to at most `max` UTF-16 units (so at most `max` characters as the apiserver
 * counts them), ending in "…" when cut, never splitting a surrogate pair.
 */
export function clipMessage(message: string, max = MAX_CONDITION_MESSAGE): string {
  if (message.length <= max) return message;
  let end = max - 1;
  const last = message.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${message.slice(0, end)}…`;
}

export function getCondition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/**
 * A new list with `next` in place of the condition of the same type (appended if absent).
 * lastTransitionTime moves only when the status changes; otherwise the existing one is kept,
 * so a reconcile that re-asserts the same status writes nothing new. The message is clipped to
 * MAX_CONDITION_MESSAGE.
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  next: Omit<Condition, "lastTransitionTime"> & { lastTransitionTime?: string },
  now: Date | string = new Date(),
): Condition[] {
  const list = conditions ? [...conditions] : [];
  const at = typeof now === "string" ? now : now.toISOString();
  const index = list.findIndex((c) => c.type === next.type);
  const existing = index >= 0 ? list[index] : undefined;
  const lastTransitionTime = existing && existing.status === next.status ? existing.lastTransitionTime : (next.lastTransitionTime ?? at);
  const condition: Condition = {
    type: next.type,
    status: next.status,
    reason: next.reason,
    message: clipMessage(next.message),
    observedGeneration: next.observedGeneration,
    lastTransitionTime,
  };
  if (index >= 0) list[index] = condition;
  else list.push(condition);
  return list;
}

/** Same conditions by type, status, reason, message and observedGeneration; order and lastTransitionTime ignored. */
export function conditionsEqual(a: readonly Condition[] | undefined, b: readonly Condition[] | undefined): boolean {
  const left = a ?? [];
  const right = b ?? [];
  if (left.length !== right.length) return false;
  return left.every((x) => {
    const y = getCondition(right, x.type);
    return (
      y !== undefined &&
      x.status === y.status &&
      x.reason === y.reason &&
      x.message === y.message &&
      x.observedGeneration === y.observedGeneration
    );
  });
}

/**
 * Deep equality of two JSON-shaped values (what a status is). Object key order does not
 * matter; array order does; a property set to undefined equals a missing one, because
 * JSON serialisation drops both alike.
 */
export function statusEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, i) => statusEqual(item, b[i]));
  }
  if (!isPlainObject(a) || !isPlainObject(b)) return false;
  const keys = new Set([...definedKeys(a), ...definedKeys(b)]);
  for (const key of keys) {
    if (!statusEqual(a[key], b[key])) return false;
  }
  return true;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function definedKeys(value: Record<string, unknown>): string[] {
  return Object.keys(value).filter((k) => value[k] !== undefined);
}
