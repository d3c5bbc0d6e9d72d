// docs/reference/values.md: every key of the chart's values, rendered from
// charts/keyward/values.schema.json (type, allowed values and bounds, description) and
// charts/keyward/values.yaml (the default), by `npm run generate`; `--check` fails when it is stale.
import { load } from "js-yaml";
import { mdCode, mdText } from "./reference.ts";

export const valuesSchemaFile = "charts/keyward/values.schema.json";
export const valuesFile = "charts/keyward/values.yaml";
export const valuesReferenceFile = "docs/reference/values.md";

/** The parts of a JSON Schema (draft-07) values.schema.json uses. */
export interface ValuesSchema {
  $ref?: string;
  description?: string;
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  contains?: ValuesSchema;
  items?: ValuesSchema;
  properties?: Record<string, ValuesSchema>;
  additionalProperties?: ValuesSchema | boolean;
  required?: string[];
  oneOf?: ValuesSchema[];
  anyOf?: ValuesSchema[];
  definitions?: Record<string, ValuesSchema>;
}

export interface ValuesKey {
  path: string;
  node: ValuesSchema;
}

/** Every key under `properties` (and in the objects of lists and maps), depth first, in file order. */
export function valuesKeys(schema: ValuesSchema): ValuesKey[] {
  const out: ValuesKey[] = [];
  const walk = (node: ValuesSchema, path: string): void => {
    for (const [key, child] of Object.entries(node.properties ?? {})) {
      const at = path ? `${path}.${key}` : key;
      out.push({ path: at, node: child });
      walk(child, at);
    }
    if (node.items) walk(node.items, `${path}[]`);
    if (typeof node.additionalProperties === "object") walk(node.additionalProperties, `${path}.*`);
  };
  walk(schema, "");
  return out;
}

/** Every property of values.schema.json without a description: its keys and those of its definitions. */
export function undescribedValues(schema: ValuesSchema): string[] {
  const keys = [
    ...valuesKeys(schema),
    ...Object.entries(schema.definitions ?? {}).flatMap(([name, def]) =>
      valuesKeys(def).map((k) => ({ ...k, path: `definitions.${name}.${k.path}` })),
    ),
  ];
  return keys.filter((k) => typeof k.node.description !== "string" || k.node.description.trim() === "").map((k) => k.path);
}

function resolve(schema: ValuesSchema, node: ValuesSchema): ValuesSchema {
  if (!node.$ref) return node;
  const name = /^#\/definitions\/(.+)$/.exec(node.$ref)?.[1];
  const target = name ? schema.definitions?.[name] : undefined;
  if (!target) throw new Error(`values.schema.json: unresolved $ref ${node.$ref}`);
  const { $ref: _ref, ...rest } = node;
  return { ...resolve(schema, target), ...rest };
}

function typeOf(schema: ValuesSchema, raw: ValuesSchema): string {
  const node = resolve(schema, raw);
  const alternatives = node.oneOf ?? node.anyOf;
  if (!node.type && alternatives) return [...new Set(alternatives.map((a) => typeOf(schema, a)))].join(" or ");
  if (node.const !== undefined) return typeof node.const;
  if (!node.type) return node.enum ? [...new Set(node.enum.map((v) => typeof v))].join(" or ") : "any";
  const types = Array.isArray(node.type) ? node.type : [node.type];
  return types
    .map((t) => {
      if (t === "array") return `list of ${node.items ? typeOf(schema, node.items) : "any"}`;
      if (t === "object" && typeof node.additionalProperties === "object" && !node.properties)
        return `map of ${typeOf(schema, node.additionalProperties)}`;
      return t;
    })
    .join(" or ");
}

const json = (value: unknown): string => mdCode(JSON.stringify(value));

function bound(lo: number | undefined, hi: number | undefined, loOpen: boolean, hiOpen: boolean): string | undefined {
  if (lo === undefined && hi === undefined) return undefined;
  if (lo === hi && !loOpen && !hiOpen) return `exactly ${lo}`;
  return [lo !== undefined ? `${loOpen ? ">" : "≥"} ${lo}` : "", hi !== undefined ? `${hiOpen ? "<" : "≤"} ${hi}` : ""]
    .filter(Boolean)
    .join(", ");
}

/** Allowed values and bounds of a node, one phrase each (alternatives as "either ... or ..."). */
function allowed(schema: ValuesSchema, raw: ValuesSchema): string[] {
  const node = resolve(schema, raw);
  const out: string[] = [];
  if (node.const !== undefined) out.push(`always ${json(node.const)}`);
  if (node.enum) out.push(`one of ${node.enum.map(json).join(", ")}`);
  if (node.maxLength === 0 && node.minLength === undefined) out.push("empty");
  else {
    const length = bound(node.minLength, node.maxLength, false, false);
    if (length) out.push(`length ${length}`);
  }
  const value = bound(
    node.exclusiveMinimum ?? node.minimum,
    node.exclusiveMaximum ?? node.maximum,
    node.exclusiveMinimum !== undefined,
    node.exclusiveMaximum !== undefined,
  );
  if (value) out.push(`value ${value}`);
  if (node.pattern) out.push(`pattern ${mdCode(node.pattern)}`);
  const items = bound(node.minItems, node.maxItems, false, false);
  if (items) out.push(node.maxItems === 0 ? "no items" : `items ${items}`);
  if (node.uniqueItems) out.push("no duplicates");
  if (node.contains?.const !== undefined) out.push(`must contain ${json(node.contains.const)}`);
  if (node.items) {
    const inner = allowed(schema, node.items).filter((a) => !a.startsWith("must contain"));
    if (inner.length > 0 && !resolve(schema, node.items).properties) out.push(`each: ${inner.join(", ")}`);
  }
  if (typeof node.additionalProperties === "object" && !node.properties) {
    const inner = allowed(schema, node.additionalProperties);
    if (inner.length > 0) out.push(`each value: ${inner.join(", ")}`);
  }
  const alternatives = node.oneOf ?? node.anyOf;
  if (alternatives) {
    const parts = alternatives.map((a) => allowed(schema, a).join(", ") || typeOf(schema, a));
    out.push(`either ${parts.join("; or ")}`);
  }
  return out;
}

/** The default of `path` in values.yaml (keys of lists and maps have none of their own). */
function defaultOf(values: unknown, path: string): string {
  if (path.includes("[]") || path.includes(".*")) return "";
  let node: unknown = values;
  for (const key of path.split(".")) {
    if (typeof node !== "object" || node === null || !(key in node)) return "";
    node = (node as Record<string, unknown>)[key];
  }
  if (node !== null && typeof node === "object" && !Array.isArray(node) && Object.keys(node).length > 0) return "see below";
  return json(node);
}

export function valuesReference(schemaText: string, valuesText: string): string {
  const schema = JSON.parse(schemaText) as ValuesSchema;
  const values = load(valuesText);
  const rows = valuesKeys(schema).map((k) => {
    const node = resolve(schema, k.node);
    return `| ${mdCode(k.path)} | ${mdText(typeOf(schema, k.node))} | ${defaultOf(values, k.path)} | ${allowed(schema, k.node).join("; ")} | ${mdText(node.description ?? "")} |`;
  });
  return [
    "<!-- Generated by `npm run generate` from charts/keyward/values.schema.json and values.yaml; do not edit. -->",
    "# Chart values",
    "",
    "Every value of the keyward Helm chart: its type, its default (from the chart's values.yaml), what",
    "values.schema.json allows, and what it does. `helm install` and `helm template` refuse an unknown",
    "key or a value outside these bounds, naming the key. Paths: `a.b` a key of an object, `a[]` the",
    "items of a list.",
    "",
    "| key | type | default | allowed | description |",
    "|---|---|---|---|---|",
    ...rows,
    "",
  ].join("\n");
}
