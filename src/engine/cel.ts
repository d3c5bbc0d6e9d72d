// CEL text for x-kubernetes-validations: literals, field access with the apiserver's name
// escaping, and the small rules every kind reaches for.

/** One x-kubernetes-validations rule (apiextensions.k8s.io/v1 ValidationRule). */
export interface ValidationRule {
  rule: string;
  message?: string;
  messageExpression?: string;
  reason?: "FieldValueInvalid" | "FieldValueForbidden" | "FieldValueRequired" | "FieldValueDuplicate";
  /** JSON path relative to the node carrying the rule, e.g. `.destinationConfig.org`. */
  fieldPath?: string;
  optionalOldSelf?: boolean;
}

const celReserved = new Set([
  "true",
  "false",
  "null",
  "in",
  "as",
  "break",
  "const",
  "continue",
  "else",
  "for",
  "function",
  "if",
  "import",
  "let",
  "loop",
  "package",
  "namespace",
  "return",
  "var",
  "void",
  "while",
]);

/** A property name as CEL sees it (the apiserver's escaping of `_`, `.`, `-`, `/` and keywords). */
export function celName(property: string): string {
  if (!/^[a-zA-Z_.\-/][a-zA-Z0-9_.\-/]*$/.test(property)) {
    throw new Error(`property name ${JSON.stringify(property)} cannot be reached from CEL`);
  }
  if (celReserved.has(property)) return `__${property}__`;
  return property.replaceAll("__", "__underscores__").replaceAll(".", "__dot__").replaceAll("-", "__dash__").replaceAll("/", "__slash__");
}

/** `base.property`, escaped. */
export function celField(base: string, property: string): string {
  return `${base}.${celName(property)}`;
}

/** A CEL string literal. */
export function celString(value: string): string {
  const escaped = value
    .replaceAll("\\", "\\\\")
    .replaceAll("'", "\\'")
    .replaceAll("\n", "\\n")
    .replaceAll("\r", "\\r")
    .replaceAll("\t", "\\t");
  return `'${escaped}'`;
}

/** A CEL literal for a JSON scalar; `double` forces a double literal for `type: number` fields. */
export function celLiteral(value: unknown, double = false): string {
  if (typeof value === "string") return celString(value);
  if (typeof value === "boolean") return value ? "true" : "false";
  if (value === null) return "null";
  if (typeof value === "number" && Number.isFinite(value)) {
    return double && Number.isInteger(value) ? `${value}.0` : String(value);
  }
  throw new Error(`no CEL literal for ${JSON.stringify(value)}`);
}

/** The `fieldPath` of a rule: a JSON path relative to the node carrying the rule. */
export function fieldPathOf(segments: readonly string[]): string {
  return segments.map((s) => (/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(s) ? `.${s}` : `['${s.replaceAll("'", "\\'")}']`)).join("");
}

function listOf(fields: readonly string[]): string {
  return fields.join(", ");
}

/** A rule for a spec: exactly one of the fields is set (e.g. projectRef XOR projectId). */
export function exactlyOneOf(fields: readonly string[], message?: string): ValidationRule {
  if (fields.length < 2) throw new Error("exactlyOneOf needs at least two fields");
  const present = fields.map((f) => `has(${celField("self", f)})`);
  const rule = present.length === 2 ? `${present[0]} != ${present[1]}` : `[${present.join(", ")}].exists_one(x, x)`;
  return { rule, message: message ?? `exactly one of ${listOf(fields)} must be set` };
}

/** A rule for a spec: at most one of the fields is set. */
export function atMostOneOf(fields: readonly string[], message?: string): ValidationRule {
  if (fields.length < 2) throw new Error("atMostOneOf needs at least two fields");
  const present = fields.map((f) => `has(${celField("self", f)})`);
  const rule = present.length === 2 ? `!(${present[0]} && ${present[1]})` : `[${present.join(", ")}].filter(x, x).size() <= 1`;
  return { rule, message: message ?? `at most one of ${listOf(fields)} may be set` };
}

/** `.meta()` payload carrying CEL rules into the schema node it is attached to. */
export function validations(...rules: ValidationRule[]): { "x-kubernetes-validations": ValidationRule[] } {
  return { "x-kubernetes-validations": rules };
}

/**
 * `.meta(immutable("slug cannot change"))`: the field keeps its value once set. A transition
 * rule runs only when the old and the new object both have the field, so a field that may be
 * added or removed later also needs a rule on its parent (e.g. `has(self.x) == has(oldSelf.x)`).
 */
export function immutable(message: string): { "x-kubernetes-validations": ValidationRule[] } {
  return validations({ rule: "self == oldSelf", message });
}
