// zod → OpenAPI v3 structural schema, as apiextensions.k8s.io/v1 accepts it: every node typed
// (or preserving unknown fields), everything inline, no type or properties under a junctor.
// The schema describes the INPUT a user writes (defaults make a field optional, transforms are
// looked through), so the apiserver rejects what keyward's own zod parse would reject, as far as
// a structural schema and cheap CEL can say it. Refinements (.refine/.superRefine) have no
// schema form and stay keyward's to check.
import { z } from "zod";
import type { JSONSchemaProps, ValidationRule } from "./types.ts";
import { passThroughMetaKeys, schemaKeyOrder } from "./types.ts";
import { celLiteral } from "../engine/cel.ts";
import { deepEqual, mergeUnion } from "./union.ts";

type Zod = z.core.$ZodType;
type Def = z.core.$ZodTypes["_zod"]["def"];

interface Ctx {
  path: string;
  depth: number;
}

function fail(ctx: Ctx, what: string): never {
  throw new Error(`${ctx.path || "<root>"}: ${what}`);
}

function at(ctx: Ctx, segment: string): Ctx {
  return { path: ctx.path ? `${ctx.path}.${segment}` : segment, depth: ctx.depth + 1 };
}

function defOf(schema: Zod): Def {
  return (schema as z.core.$ZodTypes)._zod.def;
}

/** Optional in the input: zod accepts the key being absent (optional, default, catch, ...). */
export function isInputOptional(schema: Zod): boolean {
  const def = defOf(schema);
  if (def.type === "pipe" && defOf(def.in).type === "transform") return isInputOptional(def.out);
  return schema._zod.optin !== undefined;
}

// ---------------------------------------------------------------- metadata

function toRules(value: unknown, ctx: Ctx): ValidationRule[] {
  if (!Array.isArray(value)) fail(ctx, "x-kubernetes-validations must be an array of {rule, message}");
  return value.map((r: unknown) => {
    const rule = r as Partial<ValidationRule> | null;
    if (typeof rule?.rule !== "string" || (typeof rule.message !== "string" && typeof rule.messageExpression !== "string")) {
      fail(ctx, "each x-kubernetes-validations entry needs a rule and a message (or messageExpression)");
    }
    return { ...rule } as ValidationRule;
  });
}

function applyMeta(node: JSONSchemaProps, schema: Zod, ctx: Ctx): JSONSchemaProps {
  const meta = z.globalRegistry.get(schema);
  if (!meta) return node;
  const out: JSONSchemaProps = { ...node };
  if (typeof meta.description === "string") out.description = meta.description;
  if (typeof meta.title === "string") out.title = meta.title;
  // zod has no size check for records: a bounded map carries its bound as meta (and a refine).
  if (meta.maxProperties !== undefined) {
    if (node.type !== "object" || !node.additionalProperties || typeof meta.maxProperties !== "number") {
      fail(ctx, "maxProperties in .meta() needs a number, on a z.record");
    }
    out.maxProperties = meta.maxProperties;
  }
  for (const [key, value] of Object.entries(meta)) {
    if (!key.startsWith("x-kubernetes-")) continue;
    if (key === "x-kubernetes-validations") {
      const rules = [...(out["x-kubernetes-validations"] ?? [])];
      for (const rule of toRules(value, ctx)) if (!rules.some((r) => deepEqual(r, rule))) rules.push(rule);
      out["x-kubernetes-validations"] = rules;
    } else if ((passThroughMetaKeys as readonly string[]).includes(key)) {
      (out as Record<string, unknown>)[key] = value;
    } else {
      fail(ctx, `unknown schema extension ${key} in .meta()`);
    }
  }
  return out;
}

// ---------------------------------------------------------------- checks

type CheckDef = z.core.$ZodChecks["_zod"]["def"];

function checksOf(schema: Zod): CheckDef[] {
  const own = schema._zod.traits.has("$ZodCheck") ? [(schema as unknown as z.core.$ZodChecks)._zod.def] : [];
  return [...own, ...(schema._zod.def.checks ?? []).map((c) => (c as z.core.$ZodChecks)._zod.def)];
}

interface Lengths {
  min?: number;
  max?: number;
}

function lengthsOf(checks: readonly CheckDef[]): Lengths {
  const out: Lengths = {};
  const atLeast = (n: number) => (out.min = Math.max(out.min ?? n, n));
  const atMost = (n: number) => (out.max = Math.min(out.max ?? n, n));
  for (const c of checks) {
    if (c.check === "min_length") atLeast(c.minimum);
    else if (c.check === "max_length") atMost(c.maximum);
    else if (c.check === "length_equals") {
      atLeast(c.length);
      atMost(c.length);
    }
  }
  return out;
}

// Formats the apiserver validates (apiextensions' supported set, "-" ignored), and whether zod's
// own pattern for the format must stay because the apiserver's check is looser than zod's.
const stringFormats: Record<string, { format?: string; keepPattern: boolean }> = {
  uuid: { format: "uuid", keepPattern: true },
  guid: { format: "uuid", keepPattern: true },
  email: { format: "email", keepPattern: false },
  url: { format: "uri", keepPattern: false },
  datetime: { format: "date-time", keepPattern: false },
  date: { format: "date", keepPattern: false },
  ipv4: { format: "ipv4", keepPattern: false },
  ipv6: { format: "ipv6", keepPattern: false },
  cidrv4: { format: "cidr", keepPattern: true },
  cidrv6: { format: "cidr", keepPattern: true },
  mac: { format: "mac", keepPattern: false },
  hostname: { format: "hostname", keepPattern: false },
  base64: { format: "byte", keepPattern: false },
};

/** JS regex → the apiserver's (Go RE2) syntax: flags become inline groups. */
function patternSource(re: RegExp): string {
  const flags = ["i", "m", "s"].filter((f) => re.flags.includes(f)).join("");
  return flags ? `(?${flags})${re.source}` : re.source;
}

function stringNode(schema: Zod): JSONSchemaProps {
  const checks = checksOf(schema);
  const { min, max } = lengthsOf(checks);
  const node: JSONSchemaProps = { type: "string", minLength: min, maxLength: max };
  const patterns: string[] = [];
  for (const c of checks) {
    if (c.check !== "string_format") continue;
    const known = stringFormats[c.format];
    // RFC 3339 (the apiserver's date-time) requires an offset and accepts any: a date-time zod
    // reads as local, or as UTC only, is described by zod's own pattern instead
    const { local, offset } = c as { local?: boolean; offset?: boolean };
    const inexact = c.format === "datetime" && (local === true || offset !== true);
    if (known?.format && !(inexact && local === true)) node.format = known.format;
    if (c.pattern && (!known || known.keepPattern || inexact)) patterns.push(patternSource(c.pattern));
  }
  const unique = [...new Set(patterns)];
  if (unique.length === 1) node.pattern = unique[0];
  else if (unique.length > 1) node.allOf = unique.map((pattern) => ({ pattern }));
  return node;
}

const int32 = { min: -2147483648, max: 2147483647 };
const uint32 = { min: 0, max: 4294967295 };

function numberNode(schema: Zod): JSONSchemaProps {
  const node: JSONSchemaProps = { type: "number" };
  const lowerBound = (value: number, exclusive: boolean) => {
    if (node.minimum === undefined || value > node.minimum || (value === node.minimum && exclusive)) {
      node.minimum = value;
      node.exclusiveMinimum = exclusive || undefined;
    }
  };
  const upperBound = (value: number, exclusive: boolean) => {
    if (node.maximum === undefined || value < node.maximum || (value === node.maximum && exclusive)) {
      node.maximum = value;
      node.exclusiveMaximum = exclusive || undefined;
    }
  };
  for (const c of checksOf(schema)) {
    if (c.check === "greater_than") lowerBound(Number(c.value), !c.inclusive);
    else if (c.check === "less_than") upperBound(Number(c.value), !c.inclusive);
    else if (c.check === "multiple_of") node.multipleOf = Number(c.value);
    else if (c.check === "number_format") {
      if (c.format.includes("int")) node.type = "integer";
      // safeint's ±2^53 adds nothing an int64 field needs; the 32-bit ranges are real limits
      const range = c.format === "int32" ? int32 : c.format === "uint32" ? uint32 : undefined;
      if (range) {
        lowerBound(range.min, false);
        upperBound(range.max, false);
      }
    }
  }
  return node;
}

function scalarsNode(values: readonly unknown[], ctx: Ctx): JSONSchemaProps {
  const present = values.filter((v) => v !== undefined).map((v) => (typeof v === "bigint" ? Number(v) : v));
  const nullable = present.includes(null);
  const concrete = present.filter((v) => v !== null);
  const kinds = new Set(concrete.map((v) => typeof v));
  if (concrete.length === 0 || kinds.size !== 1) fail(ctx, "a literal or enum needs values of exactly one JSON type");
  const kind = [...kinds][0];
  const type =
    kind === "string"
      ? "string"
      : kind === "boolean"
        ? "boolean"
        : kind === "number"
          ? concrete.every((v) => Number.isInteger(v))
            ? "integer"
            : "number"
          : fail(ctx, `a ${kind} literal cannot be expressed`);
  const node: JSONSchemaProps = { type, enum: nullable ? [...concrete, null] : concrete };
  if (nullable) node.nullable = true;
  return node;
}

function enumValues(entries: Record<string, string | number>): unknown[] {
  // a TypeScript numeric enum maps values back to names; those reverse keys are not values
  const numeric = Object.values(entries).filter((v) => typeof v === "number");
  return Object.entries(entries)
    .filter(([k]) => !numeric.includes(Number(k)))
    .map(([, v]) => v);
}

// ---------------------------------------------------------------- composites

function objectNode(def: z.core.$ZodObjectDef, ctx: Ctx): JSONSchemaProps {
  const node: JSONSchemaProps = { type: "object" };
  const properties: Record<string, JSONSchemaProps> = {};
  const required: string[] = [];
  for (const [key, field] of Object.entries(def.shape)) {
    properties[key] = convert(field, at(ctx, key));
    if (!isInputOptional(field)) required.push(key);
  }
  if (Object.keys(properties).length > 0) node.properties = properties;
  if (required.length > 0) node.required = required;
  // .loose()/.passthrough() keep unknown keys; a typed catchall cannot sit beside properties
  // in a structural schema, so it keeps them too and keyward's parse checks their type
  if (def.catchall && defOf(def.catchall).type !== "never") node["x-kubernetes-preserve-unknown-fields"] = true;
  return node;
}

function recordNode(def: z.core.$ZodRecordDef, ctx: Ctx): JSONSchemaProps {
  const key = defOf(def.keyType);
  const value = convert(def.valueType, at(ctx, "*"));
  if (key.type === "string" && checksOf(def.keyType).length === 0) return { type: "object", additionalProperties: value };
  const names = key.type === "enum" ? enumValues(key.entries) : key.type === "literal" ? key.values : undefined;
  if (names?.every((n) => typeof n === "string")) {
    const properties = Object.fromEntries(names.map((n) => [n, value]));
    return def.partial ? { type: "object", properties } : { type: "object", properties, required: names };
  }
  fail(ctx, "record keys must be a plain z.string() or a string enum");
}

function tupleNode(def: z.core.$ZodTupleDef, ctx: Ctx): JSONSchemaProps {
  const items = def.items.map((item, i) => convert(item, at(ctx, String(i))));
  const first = items[0];
  if (!first || def.rest || !items.every((i) => deepEqual(i, first))) {
    fail(ctx, "a tuple needs items of one shape (structural schemas have a single item schema)");
  }
  return { type: "array", items: first, minItems: items.length, maxItems: items.length };
}

function intersectionNode(def: z.core.$ZodIntersectionDef, ctx: Ctx): JSONSchemaProps {
  const a = convert(def.left, ctx);
  const b = convert(def.right, ctx);
  if (a.type !== "object" || b.type !== "object") fail(ctx, "only intersections of objects can be expressed");
  const properties: Record<string, JSONSchemaProps> = { ...a.properties };
  for (const [key, node] of Object.entries(b.properties ?? {})) {
    const existing = properties[key];
    if (existing && !deepEqual(existing, node)) fail(ctx, `both sides of an intersection define ${key} differently`);
    properties[key] = node;
  }
  const required = [...new Set([...(a.required ?? []), ...(b.required ?? [])])];
  const rules = [...(a["x-kubernetes-validations"] ?? []), ...(b["x-kubernetes-validations"] ?? [])];
  const out: JSONSchemaProps = { ...a, ...b, type: "object", properties };
  out.description = a.description ?? b.description;
  if (required.length > 0) out.required = required;
  if (rules.length > 0) out["x-kubernetes-validations"] = rules;
  return out;
}

function isNullSchema(schema: Zod): boolean {
  const def = defOf(schema);
  return def.type === "null" || (def.type === "literal" && def.values.length === 1 && def.values[0] === null);
}

function isUndefinedSchema(schema: Zod): boolean {
  const def = defOf(schema);
  return def.type === "undefined" || (def.type === "literal" && def.values.every((v) => v === undefined));
}

function unionNode(def: z.core.$ZodUnionDef, ctx: Ctx): JSONSchemaProps {
  const options = def.options.filter((o) => !isUndefinedSchema(o));
  const nullable = options.some(isNullSchema);
  const variants = options.filter((o) => !isNullSchema(o)).map((o, i) => convert(o, at(ctx, `<variant ${i}>`)));
  const discriminator = "discriminator" in def ? (def as z.core.$ZodDiscriminatedUnionDef).discriminator : undefined;
  const node = mergeUnion(variants, discriminator, ctx.path);
  return nullable ? { ...node, nullable: true } : node;
}

function withDefault(node: JSONSchemaProps, value: unknown, ctx: Ctx): JSONSchemaProps {
  if (value === undefined) return node;
  let json: unknown;
  try {
    json = JSON.parse(JSON.stringify(value)) as unknown;
  } catch {
    fail(ctx, "a default must be plain JSON");
  }
  if (!deepEqual(json, value)) fail(ctx, "a default must be plain JSON");
  return { ...node, default: json };
}

const freeForm: JSONSchemaProps = { "x-kubernetes-preserve-unknown-fields": true };

function convertDef(schema: Zod, ctx: Ctx): JSONSchemaProps {
  const def = defOf(schema);
  switch (def.type) {
    case "string":
      return stringNode(schema);
    case "number":
      return numberNode(schema);
    case "boolean":
      return { type: "boolean" };
    case "literal":
      return scalarsNode(def.values, ctx);
    case "enum":
      return scalarsNode(enumValues(def.entries), ctx);
    case "template_literal":
      return { type: "string", pattern: patternSource((schema as z.core.$ZodTemplateLiteral)._zod.pattern) };
    case "unknown":
    case "any":
      return { ...freeForm };
    case "object":
      return objectNode(def, ctx);
    case "array": {
      const { min, max } = lengthsOf(checksOf(schema));
      return { type: "array", minItems: min, maxItems: max, items: convert(def.element, at(ctx, "[]")) };
    }
    case "record":
      return recordNode(def, ctx);
    case "tuple":
      return tupleNode(def, ctx);
    case "union":
      return unionNode(def, ctx);
    case "intersection":
      return intersectionNode(def, ctx);
    case "optional":
    case "nonoptional":
    case "readonly":
    case "catch":
      return convert(def.innerType, ctx);
    case "nullable":
      return { ...convert(def.innerType, ctx), nullable: true };
    case "default":
    case "prefault":
      return withDefault(convert(def.innerType, ctx), def.defaultValue, ctx);
    case "pipe":
      return convert(defOf(def.in).type === "transform" ? def.out : def.in, ctx);
    case "lazy":
      return convert(def.getter(), ctx);
    default:
      return fail(ctx, `z.${def.type}() has no structural schema form`);
  }
}

function convert(schema: Zod, ctx: Ctx): JSONSchemaProps {
  if (ctx.depth > 64) fail(ctx, "schema too deep (recursive schemas have no structural form)");
  return applyMeta(nullableEnum(prune(convertDef(schema, ctx))), schema, ctx);
}

// The apiserver rejects null against an enum even on a nullable node (null listed or not), so a
// nullable enum is checked by CEL instead.
function nullableEnum(node: JSONSchemaProps): JSONSchemaProps {
  if (!node.nullable || !node.enum) return node;
  const { enum: values, ...rest } = node;
  const allowed = values.filter((v) => v !== null);
  const rule: ValidationRule = {
    rule: `self in [${allowed.map((v) => celLiteral(v, node.type === "number")).join(", ")}]`,
    message: `must be one of ${allowed.map((v) => (typeof v === "string" ? v : JSON.stringify(v))).join(", ")}`,
  };
  return { ...rest, "x-kubernetes-validations": [...(rest["x-kubernetes-validations"] ?? []), rule] };
}

function prune(node: JSONSchemaProps): JSONSchemaProps {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) if (v !== undefined) out[k] = v;
  return out;
}

/** Deep copy with keys in `schemaKeyOrder` (properties keep their declaration order). */
export function orderSchema(node: JSONSchemaProps): JSONSchemaProps {
  const out: Record<string, unknown> = {};
  for (const key of schemaKeyOrder) {
    const value = node[key];
    if (value === undefined) continue;
    if (key === "properties") {
      out[key] = Object.fromEntries(Object.entries(value as Record<string, JSONSchemaProps>).map(([k, v]) => [k, orderSchema(v)]));
    } else if (key === "items" || key === "additionalProperties") {
      out[key] = orderSchema(value as JSONSchemaProps);
    } else if (key === "allOf") {
      out[key] = (value as JSONSchemaProps[]).map(orderSchema);
    } else {
      out[key] = structuredClone(value);
    }
  }
  return out;
}

/** zod schema → OpenAPI v3 structural schema for a CRD. Throws on what has no structural form. */
export function structuralSchema(schema: z.ZodType): JSONSchemaProps {
  const node = orderSchema(convert(schema, { path: "", depth: 0 }));
  const problems = structuralViolations(node);
  if (problems.length > 0) throw new Error(`not a structural schema:\n${problems.join("\n")}`);
  return node;
}

// ---------------------------------------------------------------- structural rules

const junctorForbidden = ["type", "description", "default", "nullable", "additionalProperties", "properties", "items", "title"] as const;

/** The apiserver's structural-schema rules this converter must never break, as messages. */
export function structuralViolations(node: JSONSchemaProps, path = "<root>"): string[] {
  const out: string[] = [];
  const raw = node as Record<string, unknown>;
  for (const key of ["$ref", "definitions", "$defs", "oneOf", "anyOf", "not"]) {
    if (key in raw) out.push(`${path}: ${key} is not allowed here`);
  }
  const free = node["x-kubernetes-preserve-unknown-fields"] === true || node["x-kubernetes-int-or-string"] === true;
  if (!node.type && !free) out.push(`${path}: no type`);
  if (node.properties && node.additionalProperties) out.push(`${path}: properties and additionalProperties together`);
  if (node.type === "array" && !node.items) out.push(`${path}: array without items`);
  if (node.type !== "object" && (node.properties || node.additionalProperties)) out.push(`${path}: properties on a non-object`);
  for (const required of node.required ?? []) {
    if (!node.properties?.[required]) out.push(`${path}: required ${required} is not a property`);
  }
  for (const sub of node.allOf ?? []) {
    for (const key of junctorForbidden) if (key in sub) out.push(`${path}: ${key} inside allOf`);
  }
  for (const [key, child] of Object.entries(node.properties ?? {})) out.push(...structuralViolations(child, `${path}.${key}`));
  if (node.items) out.push(...structuralViolations(node.items, `${path}[]`));
  if (node.additionalProperties) out.push(...structuralViolations(node.additionalProperties, `${path}.*`));
  return out;
}
