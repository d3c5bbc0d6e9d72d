// Conversion of keyward's objects between their versions, each kind by the change its descriptor
// declares (Kind.conversion, beside its schemas): what the conversion webhook will serve. Pure;
// src/lib/conversion.ts reads the edits.
import { convertObject, ConversionError, type ConvertibleObject } from "../lib/conversion.ts";
import type { Kind } from "./kind.ts";
import { kinds } from "./registry.ts";

export { ConversionError, CONVERSION_ANNOTATION_PREFIX, type ConvertibleObject } from "../lib/conversion.ts";

/** The versions a kind is served in, oldest first. */
export function versionsOf(kind: Kind): string[] {
  const { from, to } = kind.conversion;
  return from === to ? [from] : [from, to];
}

/**
 * `obj` in `to`, a version of its kind. Refused with a ConversionError naming the field when a
 * value has no form in `to`, or naming apiVersion or kind for an object keyward does not serve.
 */
export function convert<T extends ConvertibleObject>(obj: T, to: string, all: readonly Kind[] = kinds): T {
  const group = obj.apiVersion.slice(0, obj.apiVersion.lastIndexOf("/"));
  const kind = all.find((k) => k.ref.kind === obj.kind && k.ref.group === group);
  if (!kind) throw new ConversionError("kind", `${obj.kind} of ${group} is not a kind keyward serves`);
  return convertObject(obj, kind.conversion, to);
}
