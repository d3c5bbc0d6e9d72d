// Unions in a structural schema. The apiserver forbids type and properties inside oneOf/anyOf,
// so a union of object shapes becomes ONE object whose properties are the union of every
// variant's, and x-kubernetes-validations restore per variant what the merge loosened: the
// fields a variant requires, the fields it does not have, and the enums and bounds it narrows.
// Every rule is a chain of has() checks, comparisons and size() calls: constant CEL cost.
import { celField, celLiteral, celString, fieldPathOf } from "../engine/cel.ts";
import type { JSONSchemaProps, ValidationRule } from "./types.ts";

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

function fail(where: string, what: string): never {
  throw new Error(`${where || "<root>"}: ${what}`);
}

// ---------------------------------------------------------------- merging schema nodes

type Bound = { value: number; exclusive: boolean } | undefined;

function looserLower(a: Bound, b: Bound): Bound {
  if (!a || !b) return undefined;
  if (a.value !== b.value) return a.value < b.value ? a : b;
  return { value: a.value, exclusive: a.exclusive && b.exclusive };
}

function looserUpper(a: Bound, b: Bound): Bound {
  if (!a || !b) return undefined;
  if (a.value !== b.value) return a.value > b.value ? a : b;
  return { value: a.value, exclusive: a.exclusive && b.exclusive };
}

function lower(n: JSONSchemaProps): Bound {
  return n.minimum === undefined ? undefined : { value: n.minimum, exclusive: n.exclusiveMinimum === true };
}

function upper(n: JSONSchemaProps): Bound {
  return n.maximum === undefined ? undefined : { value: n.maximum, exclusive: n.exclusiveMaximum === true };
}

function both<T>(a: T | undefined, b: T | undefined, pick: (x: T, y: T) => T): T | undefined {
  return a === undefined || b === undefined ? undefined : pick(a, b);
}

/** The most characters a string node accepts: its maxLength, or the longest value of a string enum. */
function longest(n: JSONSchemaProps): number | undefined {
  if (n.maxLength !== undefined) return n.maxLength;
  if (n.type !== "string" || !n.enum || !n.enum.every((v) => typeof v === "string")) return undefined;
  return Math.max(...n.enum.map((v) => v.length));
}

function withoutDefault(node: JSONSchemaProps): JSONSchemaProps {
  const { default: _dropped, ...rest } = node;
  return rest;
}

// Keys whose values must agree between variants: no loosening of them can be restored cheaply.
const mustAgree = [
  "type",
  "format",
  "nullable",
  "items",
  "additionalProperties",
  "x-kubernetes-preserve-unknown-fields",
  "x-kubernetes-int-or-string",
  "x-kubernetes-embedded-resource",
  "x-kubernetes-list-type",
  "x-kubernetes-list-map-keys",
  "x-kubernetes-map-type",
  "x-kubernetes-validations",
] as const;

function mergeProperties(
  a: Record<string, JSONSchemaProps> | undefined,
  b: Record<string, JSONSchemaProps> | undefined,
  where: string,
): Record<string, JSONSchemaProps> | undefined {
  if (!a && !b) return undefined;
  const out: Record<string, JSONSchemaProps> = {};
  const keys = [...new Set([...Object.keys(a ?? {}), ...Object.keys(b ?? {})])];
  for (const key of keys) {
    const x = a?.[key];
    const y = b?.[key];
    // A default on a field some variant lacks would be filled into objects of that variant and
    // then rejected as "not allowed" there; zod still applies it when keyward parses the spec.
    if (x && y) out[key] = mergeNodes(x, y, `${where}.${key}`);
    else if (x) out[key] = withoutDefault(x);
    else if (y) out[key] = withoutDefault(y);
  }
  return out;
}

/** The loosest node accepting what `a` or `b` accepts (the caller restores the rest with CEL). */
export function mergeNodes(a: JSONSchemaProps, b: JSONSchemaProps, where: string): JSONSchemaProps {
  if (deepEqual(a, b)) return a;
  for (const key of mustAgree) {
    if (!deepEqual(a[key], b[key])) {
      fail(where, `variants of a union disagree on ${key} (${JSON.stringify(a[key])} vs ${JSON.stringify(b[key])}); make them equal`);
    }
  }
  const out: JSONSchemaProps = { ...a };
  out.description = a.description ?? b.description;
  out.title = a.title ?? b.title;
  if (!deepEqual(a.default, b.default)) delete out.default;
  out.enum = both(a.enum, b.enum, (x, y) => [...x, ...y.filter((v) => !x.some((w) => deepEqual(v, w)))]);
  out.minLength = both(a.minLength, b.minLength, Math.min);
  // a variant bounded only by its enum still bounds the merged string (and the size stays known to CEL's cost)
  out.maxLength = out.enum ? both(a.maxLength, b.maxLength, Math.max) : both(longest(a), longest(b), Math.max);
  out.minItems = both(a.minItems, b.minItems, Math.min);
  out.maxItems = both(a.maxItems, b.maxItems, Math.max);
  const lo = looserLower(lower(a), lower(b));
  const hi = looserUpper(upper(a), upper(b));
  out.minimum = lo?.value;
  out.exclusiveMinimum = lo?.exclusive ? true : undefined;
  out.maximum = hi?.value;
  out.exclusiveMaximum = hi?.exclusive ? true : undefined;
  out.multipleOf = a.multipleOf === b.multipleOf ? a.multipleOf : undefined;
  out.pattern = a.pattern === b.pattern ? a.pattern : undefined;
  out.allOf = deepEqual(a.allOf, b.allOf) ? a.allOf : undefined;
  out.properties = mergeProperties(a.properties, b.properties, where);
  const required = (a.required ?? []).filter((k) => b.required?.includes(k));
  out.required = required.length > 0 ? required : undefined;
  return prune(out);
}

function prune(node: JSONSchemaProps): JSONSchemaProps {
  return Object.fromEntries(Object.entries(node).filter(([, v]) => v !== undefined));
}

// ---------------------------------------------------------------- what a variant lost

interface Check {
  ok: string;
  kind: "required" | "forbidden" | "invalid";
  field: string[];
  /** For "invalid": what the value must be, e.g. "must be one of a, b". */
  text?: string;
}

function guarded(guards: readonly string[], expr: string): string {
  return [...guards.map((g) => `!${g}`), expr].join(" || ");
}

function describeValues(values: readonly unknown[]): string {
  return values.map((v) => (typeof v === "string" ? v : JSON.stringify(v))).join(", ");
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

function leafChecks(v: JSONSchemaProps, m: JSONSchemaProps, ref: string, field: string[], guards: string[]): Check[] {
  const out: Check[] = [];
  const add = (expr: string, text: string) => out.push({ ok: guarded(guards, expr), kind: "invalid", field, text });
  const double = v.type === "number";
  if (v.enum && !deepEqual(v.enum, m.enum)) {
    if (v.enum.length === 1) add(`${ref} == ${celLiteral(v.enum[0], double)}`, `must be ${describeValues(v.enum)}`);
    else add(`${ref} in [${v.enum.map((x) => celLiteral(x, double)).join(", ")}]`, `must be one of ${describeValues(v.enum)}`);
  }
  if (v.minLength !== undefined && v.minLength !== m.minLength)
    add(`size(${ref}) >= ${v.minLength}`, `must be at least ${count(v.minLength, "character")}`);
  if (v.maxLength !== undefined && v.maxLength !== m.maxLength)
    add(`size(${ref}) <= ${v.maxLength}`, `must be at most ${count(v.maxLength, "character")}`);
  if (v.minItems !== undefined && v.minItems !== m.minItems)
    add(`size(${ref}) >= ${v.minItems}`, `must have at least ${count(v.minItems, "item")}`);
  if (v.maxItems !== undefined && v.maxItems !== m.maxItems)
    add(`size(${ref}) <= ${v.maxItems}`, `must have at most ${count(v.maxItems, "item")}`);
  const lo = lower(v);
  if (lo && !deepEqual(lo, lower(m))) {
    const op = lo.exclusive ? ">" : ">=";
    add(`${ref} ${op} ${celLiteral(lo.value, double)}`, `must be ${op} ${lo.value}`);
  }
  const hi = upper(v);
  if (hi && !deepEqual(hi, upper(m))) {
    const op = hi.exclusive ? "<" : "<=";
    add(`${ref} ${op} ${celLiteral(hi.value, double)}`, `must be ${op} ${hi.value}`);
  }
  if (v.multipleOf !== undefined && v.multipleOf !== m.multipleOf) {
    if (v.type !== "integer") fail(field.join("."), "multipleOf differs between union variants on a non-integer field");
    add(`${ref} % ${v.multipleOf} == 0`, `must be a multiple of ${v.multipleOf}`);
  }
  const patterns = [v.pattern, ...(v.allOf ?? []).map((p) => p.pattern)].filter((p) => p !== undefined);
  const kept = new Set([m.pattern, ...(m.allOf ?? []).map((p) => p.pattern)]);
  for (const p of patterns) if (!kept.has(p)) add(`${ref}.matches(${celString(p)})`, `must match ${p}`);
  return out;
}

function objectChecks(v: JSONSchemaProps, m: JSONSchemaProps, ref: string, field: string[], guards: string[], skip?: string): Check[] {
  const out: Check[] = [];
  for (const [key, mNode] of Object.entries(m.properties ?? {})) {
    if (key === skip) continue;
    const sub = celField(ref, key);
    const subField = [...field, key];
    const vNode = v.properties?.[key];
    if (!vNode) {
      out.push({ ok: guarded(guards, `!has(${sub})`), kind: "forbidden", field: subField });
      continue;
    }
    if (v.required?.includes(key) && !m.required?.includes(key)) {
      out.push({ ok: guarded(guards, `has(${sub})`), kind: "required", field: subField });
    }
    const inner = [...guards, `has(${sub})`];
    out.push(...leafChecks(vNode, mNode, sub, subField, inner));
    if (mNode.properties) out.push(...objectChecks(vNode, mNode, sub, subField, inner));
  }
  return out;
}

// ---------------------------------------------------------------- rules

function checkRule(check: Check, when: string, label: string): ValidationRule {
  const name = check.field.join(".");
  const message =
    check.kind === "required"
      ? `${label} requires ${name}`
      : check.kind === "forbidden"
        ? `${name} is not allowed for ${label}`
        : `${name} ${check.text ?? "is invalid"} for ${label}`;
  const reason =
    check.kind === "required" ? "FieldValueRequired" : check.kind === "forbidden" ? "FieldValueForbidden" : "FieldValueInvalid";
  return { rule: `${when} || ${check.ok}`, message, reason, fieldPath: fieldPathOf(check.field) };
}

function wrapped(expr: string): string {
  return /&&|\?/.test(expr) ? `(${expr})` : expr;
}

function discriminatorValues(variant: JSONSchemaProps, key: string): string[] | undefined {
  const values = variant.properties?.[key]?.enum;
  if (!values || values.length === 0) return undefined;
  const strings = values.filter((v) => typeof v === "string");
  return strings.length === values.length ? strings : undefined;
}

/** A property every variant requires, with string enums that no two variants share. */
function detectDiscriminator(variants: readonly JSONSchemaProps[]): string | undefined {
  const first = variants[0];
  if (!first) return undefined;
  return Object.keys(first.properties ?? {}).find((key) => {
    const seen = new Set<string>();
    return variants.every((v) => {
      const values = v.required?.includes(key) ? discriminatorValues(v, key) : undefined;
      if (!values || values.some((x) => seen.has(x))) return false;
      values.forEach((x) => seen.add(x));
      return true;
    });
  });
}

function ownRules(node: JSONSchemaProps): ValidationRule[] {
  return node["x-kubernetes-validations"] ?? [];
}

function withoutRules(node: JSONSchemaProps): JSONSchemaProps {
  const { "x-kubernetes-validations": _rules, ...rest } = node;
  return rest;
}

function discriminatedRules(variants: readonly JSONSchemaProps[], merged: JSONSchemaProps, key: string, where: string): ValidationRule[] {
  const keyRef = celField("self", key);
  const keyGuard = merged.required?.includes(key) ? "" : `!has(${keyRef}) || `;
  const rules: ValidationRule[] = [];
  for (const variant of variants) {
    const values = discriminatorValues(variant, key);
    if (!values) fail(where, `every variant needs a literal or enum ${key}`);
    const [only] = values;
    const when =
      keyGuard +
      (values.length === 1 && only !== undefined
        ? `${keyRef} != ${celString(only)}`
        : `!(${keyRef} in [${values.map(celString).join(", ")}])`);
    const label = `${key} ${values.join("|")}`;
    for (const check of objectChecks(variant, merged, "self", [], [], key)) rules.push(checkRule(check, when, label));
    for (const rule of ownRules(variant)) {
      if (!ownRules(merged).some((r) => deepEqual(r, rule))) rules.push({ ...rule, rule: `${when} || ${wrapped(rule.rule)}` });
    }
  }
  return rules;
}

function describeShape(variant: JSONSchemaProps): string {
  const required = variant.required ?? [];
  return required.length > 0 ? `{${required.join(", ")}}` : `{${Object.keys(variant.properties ?? {}).join(", ")}}`;
}

/** Without a discriminator the object must fully match at least one variant. */
function anyOfRule(variants: readonly JSONSchemaProps[], merged: JSONSchemaProps, where: string): ValidationRule[] {
  const alternatives: string[] = [];
  for (const variant of variants) {
    const specific = ownRules(variant).filter((r) => !ownRules(merged).some((x) => deepEqual(x, r)));
    if (specific.some((r) => r.rule.includes("oldSelf"))) fail(where, "a variant-specific transition rule needs a discriminated union");
    const parts = [...objectChecks(variant, merged, "self", [], []).map((c) => c.ok), ...specific.map((r) => r.rule)];
    if (parts.length === 0) return []; // this variant accepts everything the merged schema accepts
    alternatives.push(parts.map((p) => `(${p})`).join(" && "));
  }
  const message = `must match one of the shapes ${variants.map(describeShape).join(", ")}`;
  return [{ rule: alternatives.map((a) => `(${a})`).join(" || "), message }];
}

function isPlainObject(node: JSONSchemaProps): boolean {
  return node.type === "object" && !node.additionalProperties && !node["x-kubernetes-preserve-unknown-fields"];
}

function mergeObjectUnion(
  first: JSONSchemaProps,
  variants: readonly JSONSchemaProps[],
  discriminator: string | undefined,
  where: string,
): JSONSchemaProps {
  const common = ownRules(first).filter((r) => variants.every((v) => ownRules(v).some((x) => deepEqual(x, r))));
  let merged = withoutRules(first);
  for (const v of variants.slice(1)) merged = mergeNodes(merged, withoutRules(v), where);
  merged = { ...merged };
  if (common.length > 0) merged["x-kubernetes-validations"] = common;
  const key = discriminator ?? detectDiscriminator(variants);
  const rules = key ? discriminatedRules(variants, merged, key, where) : anyOfRule(variants, merged, where);
  if (rules.length > 0) merged["x-kubernetes-validations"] = [...common, ...rules];
  return merged;
}

const constraintKeys: readonly (keyof JSONSchemaProps)[] = [
  "enum",
  "format",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "minLength",
  "maxLength",
  "pattern",
  "allOf",
  "x-kubernetes-validations",
];

function unconstrained(node: JSONSchemaProps): boolean {
  return constraintKeys.every((k) => node[k] === undefined);
}

/** Unions of scalars: enums of one type merge; a free scalar absorbs its constrained siblings. */
function mergeScalarUnion(variants: readonly JSONSchemaProps[], where: string): JSONSchemaProps {
  const types = new Set(variants.map((v) => v.type));
  const description = variants.find((v) => v.description)?.description;
  const withDescription = (n: JSONSchemaProps): JSONSchemaProps => (description ? { description, ...n } : n);
  if (types.size === 1) {
    const free = variants.find(unconstrained);
    if (free) return withDescription({ ...free });
    const [first, ...rest] = variants;
    const sameButEnum = rest.every((v) =>
      deepEqual({ ...v, enum: undefined, description: undefined }, { ...first, enum: undefined, description: undefined }),
    );
    if (first && sameButEnum && variants.every((v) => v.enum)) {
      return withDescription({ ...first, enum: [...new Set(variants.flatMap((v) => v.enum ?? []))] });
    }
    fail(where, "a union of differently constrained scalars cannot be expressed; use one schema with a refinement");
  }
  if (types.size === 2 && types.has("integer") && types.has("string") && variants.every(unconstrained)) {
    return withDescription({ "x-kubernetes-int-or-string": true });
  }
  if (types.size === 2 && types.has("integer") && types.has("number") && variants.every(unconstrained)) {
    return withDescription({ type: "number" });
  }
  fail(where, `a union of ${[...types].join(" and ")} cannot be expressed in a structural schema`);
}

/**
 * One structural node for the union of already converted variants. `discriminator` is the key
 * of a z.discriminatedUnion; for a plain union of objects one is looked for.
 */
export function mergeUnion(variants: readonly JSONSchemaProps[], discriminator: string | undefined, where: string): JSONSchemaProps {
  const [first] = variants;
  if (!first) fail(where, "an empty union accepts nothing");
  if (variants.length === 1) return first;
  if (variants.every(isPlainObject)) return mergeObjectUnion(first, variants, discriminator, where);
  if (variants.some((v) => v.type === "object" || v.type === "array"))
    fail(where, "a union mixing objects or arrays with other shapes cannot be expressed");
  return mergeScalarUnion(variants, where);
}

/**
 * The rules restoring what one variant narrows of the `merged` node (a field it requires, a field
 * it lacks, an enum or bound of its own), each true when `when` is (the object is of another
 * variant): for a union whose discriminator is not a property of the merged node itself.
 */
export function narrowingRules(variant: JSONSchemaProps, merged: JSONSchemaProps, when: string, label: string): ValidationRule[] {
  return objectChecks(variant, merged, "self", [], []).map((check) => checkRule(check, when, label));
}
