// docs/reference/api.md: the API reference of every kind, rendered from the registry and the CRDs
// it generates (so every field's type, bounds, default and description are the apiserver's own),
// and the labels, annotations and finalizers keyward reads and writes. Plain markdown tables the
// docs site (VitePress, which compiles each page as a Vue template) renders: `{{` and `<` never
// reach it unescaped.
import { ANNOTATION_CREATE_STARTED, LEGACY_CREATE_PENDING, LEGACY_CREATE_SUCCEEDED } from "../engine/create-rule.ts";
import { ANNOTATION_EXTERNAL_ID } from "../engine/holder.ts";
import { DRAIN_LABEL, SHARD_LABEL } from "../shard/plan.ts";
import type { Kind, MetadataKey } from "../resources/kind.ts";
import { crdFromSources, type JSONSchemaProps } from "./crd.ts";

export const apiReferenceFile = "docs/reference/api.md";

/** Text for a markdown table cell or paragraph: no raw HTML, no Vue interpolation, no cell break. */
export function mdText(text: string): string {
  return text
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll("|", "\\|")
    .replaceAll("{{", "{&#8203;{")
    .replaceAll("\n", " ");
}

/**
 * Inline code for a table cell. A code span shows entities as typed, so code holding `{{` (which
 * Vue would interpolate) is written as a `<code v-pre>` element with its text escaped instead.
 */
export function mdCode(text: string): string {
  if (text.includes("{{") || text.includes("}}")) {
    const escaped = text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll("|", "&#124;");
    return `<code v-pre>${escaped}</code>`;
  }
  const body = text.replaceAll("|", "\\|");
  const fence = body.includes("`") ? "``" : "`";
  const pad = body.startsWith("`") || body.endsWith("`") ? " " : "";
  return `${fence}${pad}${body}${pad}${fence}`;
}

const json = (value: unknown): string => mdCode(JSON.stringify(value));

/** The type of a node as a reader writes it: string, integer, []object, map[string]string. */
function typeOf(node: JSONSchemaProps): string {
  if (node["x-kubernetes-int-or-string"]) return "integer or string";
  if (node.type === "array") return `[]${node.items ? typeOf(node.items) : "any"}`;
  if (node.type === "object" && node.additionalProperties) return `map[string]${typeOf(node.additionalProperties)}`;
  if (!node.type) return "any";
  return node.format ? `${node.type} (${node.format})` : node.type;
}

function range(lo: number | undefined, hi: number | undefined, loOpen = false, hiOpen = false): string | undefined {
  if (lo === undefined && hi === undefined) return undefined;
  if (lo !== undefined && hi !== undefined && lo === hi && !loOpen && !hiOpen) return `exactly ${lo}`;
  const parts = [lo !== undefined ? `${loOpen ? ">" : "≥"} ${lo}` : "", hi !== undefined ? `${hiOpen ? "<" : "≤"} ${hi}` : ""];
  return parts.filter(Boolean).join(", ");
}

/** The node's bounds, enum, pattern and CEL rules, one phrase each. */
function constraintsOf(node: JSONSchemaProps): string[] {
  const out: string[] = [];
  if (node.enum) out.push(`one of ${node.enum.map((v) => json(v)).join(", ")}`);
  const length = range(node.minLength, node.maxLength);
  if (length) out.push(`length ${length}`);
  const value = range(node.minimum, node.maximum, node.exclusiveMinimum, node.exclusiveMaximum);
  if (value) out.push(`value ${value}`);
  if (node.multipleOf !== undefined) out.push(`multiple of ${node.multipleOf}`);
  if (node.pattern) out.push(`pattern ${mdCode(node.pattern)}`);
  for (const p of node.allOf ?? []) if (p.pattern) out.push(`pattern ${mdCode(p.pattern)}`);
  const items = range(node.minItems, node.maxItems);
  if (items) out.push(`items ${items}`);
  if (node.maxProperties !== undefined) out.push(`entries ≤ ${node.maxProperties}`);
  if (node.nullable) out.push("nullable");
  for (const rule of node["x-kubernetes-validations"] ?? []) out.push(mdText(rule.message ?? rule.messageExpression ?? rule.rule));
  return out;
}

interface FieldRow {
  path: string;
  node: JSONSchemaProps;
  required: boolean;
}

/** Every property under `node`, depth first in declaration order: `a.b`, `a.list[].c`, `a.map.*.d`. */
export function fieldRows(node: JSONSchemaProps, path: string): FieldRow[] {
  const rows: FieldRow[] = [];
  const walk = (n: JSONSchemaProps, at: string): void => {
    for (const [key, child] of Object.entries(n.properties ?? {})) {
      const childPath = `${at}.${key}`;
      rows.push({ path: childPath, node: child, required: n.required?.includes(key) ?? false });
      walk(child, childPath);
    }
    if (n.items) walk(n.items, `${at}[]`);
    if (n.additionalProperties) walk(n.additionalProperties, `${at}.*`);
  };
  walk(node, path);
  return rows;
}

/** The field table of `node`'s properties, each named from `path`. */
export function fieldTable(node: JSONSchemaProps | undefined, path: string): string[] {
  const rows = node ? fieldRows(node, path) : [];
  if (rows.length === 0) return ["No fields.", ""];
  return [
    "| field | type | required | default | constraints | description |",
    "|---|---|---|---|---|---|",
    ...rows.map(
      (r) =>
        `| ${mdCode(r.path)} | ${mdText(typeOf(r.node))} | ${r.required ? "yes" : ""} | ${r.node.default !== undefined ? json(r.node.default) : ""} | ${constraintsOf(r.node).join("; ")} | ${mdText(r.node.description ?? "")} |`,
    ),
    "",
  ];
}

/** The keys every kind with an id the service assigns, or with actions, gets from the engine. */
function registryKeys(k: Kind): MetadataKey[] {
  const keys: MetadataKey[] = [];
  if (k.externalId !== undefined) {
    keys.push(
      {
        key: ANNOTATION_EXTERNAL_ID,
        what: "annotation",
        by: "keyward",
        doc: `A copy of status.${k.externalId}, kept in metadata because backups and exports drop status: an object restored or applied again without status finds the same external object instead of creating another. Set by hand on an object without status, it names an existing external object to take over, which must match the spec (else Synced=False ExternalIdMismatch).`,
      },
      {
        key: ANNOTATION_CREATE_STARTED,
        what: "annotation",
        by: "keyward",
        doc: `When keyward started creating the external object (and, for an object inside a project, the project it was sent to); until status.${k.externalId} is set, keyward looks for that object there before creating again (no duplicate creates after a crash) and before letting a deleted resource go.`,
      },
      {
        key: `${LEGACY_CREATE_PENDING}, ${LEGACY_CREATE_SUCCEEDED}`,
        what: "annotation",
        by: "keyward",
        doc: "The create marks of earlier versions: still honoured, no longer written.",
      },
    );
  }
  for (const [verb, a] of Object.entries(k.actions ?? {})) {
    keys.push(
      {
        key: a.annotation,
        what: "annotation",
        by: "user",
        doc: `A new value (any string, e.g. a timestamp) requests one ${a.operation} call (\`kubectl keyward ${verb}\` sets it); only the current value counts. The ${a.job} job's status follows in status.${a.status}.`,
      },
      {
        key: a.handledAnnotation,
        what: "annotation",
        by: "keyward",
        doc: `The last value of ${a.annotation} handled (mirrors status.${a.handled}), so a restored or re-applied object does not run it again.`,
      },
    );
  }
  return keys;
}

function metadataTable(keys: readonly MetadataKey[]): string[] {
  if (keys.length === 0) return ["None.", ""];
  return [
    "| key | what | on | set by | meaning |",
    "|---|---|---|---|---|",
    ...keys.map((m) => `| ${mdCode(m.key)} | ${m.what} | ${mdText(m.on ?? "the resource")} | ${m.by} | ${mdText(m.doc)} |`),
    "",
  ];
}

const anchor = (kind: string): string => kind.toLowerCase();

function kindSection(k: Kind): string[] {
  const crd = crdFromSources(k.crd);
  const lines: string[] = [`## ${k.ref.kind}`, "", mdText(k.crd.description), ""];
  const names = crd.spec.names;
  lines.push(
    "| | |",
    "|---|---|",
    `| apiVersion | ${mdCode(`${crd.spec.group}/${crd.spec.versions.map((v) => v.name).join(", ")}`)} |`,
    `| kind | ${mdCode(names.kind)} |`,
    `| scope | ${crd.spec.scope} |`,
    `| resource | ${mdCode(`${names.plural}.${crd.spec.group}`)} (singular ${mdCode(names.singular)}) |`,
    `| short names | ${(names.shortNames ?? []).map(mdCode).join(", ") || "—"} |`,
    `| categories | ${(names.categories ?? []).map(mdCode).join(", ") || "—"} |`,
    "",
  );
  for (const version of crd.spec.versions) {
    const schema = version.schema.openAPIV3Schema;
    const heading = crd.spec.versions.length > 1 ? ` (${version.name})` : "";
    lines.push(`### Printer columns${heading}`, "");
    const columns = version.additionalPrinterColumns ?? [];
    if (columns.length === 0) lines.push("None.", "");
    else {
      lines.push(
        "| column | type | JSONPath | shown |",
        "|---|---|---|---|",
        ...columns.map((c) => `| ${c.name} | ${c.type} | ${mdCode(c.jsonPath)} | ${c.priority ? "with `-o wide`" : "always"} |`),
        "",
      );
    }
    for (const part of ["spec", "status"] as const) {
      const node = schema.properties?.[part];
      lines.push(`### ${part}${heading}`, "");
      if (node?.description) lines.push(mdText(node.description), "");
      if (part === "spec" && schema.required?.includes("spec")) lines.push("spec is required.", "");
      const rules = [...(node?.["x-kubernetes-validations"] ?? []), ...(part === "spec" ? (schema["x-kubernetes-validations"] ?? []) : [])];
      if (rules.length > 0) {
        lines.push(
          "Rules the apiserver checks on it:",
          "",
          ...rules.map((r) => `- ${mdText(r.message ?? r.messageExpression ?? r.rule)}`),
          "",
        );
      }
      lines.push(...fieldTable(node, part));
    }
  }
  lines.push(`### Labels, annotations and finalizers`, "", ...metadataTable([...registryKeys(k), ...(k.metadata ?? [])]));
  return lines;
}

/** Keys on every namespaced kind's objects, whatever the kind. */
const shardKeys: MetadataKey[] = [
  {
    key: SHARD_LABEL,
    what: "label",
    by: "keyward",
    doc: "With sharding on (chart sharding.enabled): the replica that reconciles the object, set by the leader for whole namespaces.",
  },
  {
    key: DRAIN_LABEL,
    what: "label",
    by: "keyward",
    doc: "With sharding on: the leader asked the owning replica to let the object go (a handover); the owner clears it once it has.",
  },
];

export function apiReference(kinds: readonly Kind[]): string {
  const group = kinds[0]?.ref.group ?? "";
  const lines = [
    "<!-- Generated by `npm run generate` from src/resources/registry.ts; do not edit. -->",
    "# API reference",
    "",
    `Every kind of the API group ${mdCode(group)}, every field of its spec and status as the CRD defines it`,
    "(the apiserver checks the types, bounds, patterns and rules below when an object is written), and",
    "the labels, annotations and finalizers keyward reads and writes. `kubectl explain <resource>.spec`",
    "prints the same descriptions. status is keyward's: it writes every status field, a person never does.",
    "Condition reasons and what to do about each: [kinds and reasons](../kinds.md).",
    "",
    "Paths: `a.b` a field of an object, `a[]` the items of a list, `a.*` the values of a map.",
    "",
    ...kinds.map((k) => `- [${k.ref.kind}](#${anchor(k.ref.kind)})`),
    "- [Labels on every kind](#labels-on-every-kind)",
    "",
    ...kinds.flatMap(kindSection),
    "## Labels on every kind",
    "",
    ...metadataTable(shardKeys),
  ];
  return lines.join("\n");
}
