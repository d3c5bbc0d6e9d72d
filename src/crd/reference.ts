// docs/reference/api.md and api-<version>.md: the API reference of every kind, one page per version
// served (the version to write first), rendered from the registry and the CRDs it generates (so
// every field's type, bounds, default and description are the apiserver's own), and the labels,
// annotations and finalizers keyward reads and writes. Plain markdown tables the
// docs site (VitePress, which compiles each page as a Vue template) renders: `{{` and `<` never
// reach it unescaped.
import { ANNOTATION_CREATE_STARTED, LEGACY_CREATE_PENDING, LEGACY_CREATE_SUCCEEDED } from "../engine/create-rule.ts";
import { ANNOTATION_EXTERNAL_ID, NATURAL_KEY_LABEL } from "../engine/holder.ts";
import { DRAIN_LABEL, SHARD_LABEL } from "../shard/plan.ts";
import type { Kind, MetadataKey } from "../resources/kind.ts";
import type { CustomResourceDefinition, CustomResourceDefinitionVersion, JSONSchemaProps } from "./crd.ts";
import { servedCrd, v1beta1Prose } from "./conversion-schema.ts";

export const apiReferenceFile = "docs/reference/api.md";

/** A page of the API reference: the version it documents, and where it is written. */
export interface ApiReferencePage {
  version: string;
  path: string;
  /** The page's link from another page of docs/reference/. */
  link: string;
}

/**
 * The pages of the API reference: the newest version, the one to write, at docs/reference/api.md,
 * then each older version served at docs/reference/api-<version>.md.
 */
export function apiReferencePages(kinds: readonly Kind[]): ApiReferencePage[] {
  const versions = [...new Set(kinds.flatMap((k) => [k.conversion.to, k.conversion.from]))];
  return versions.map((version, i) => {
    const path = i === 0 ? apiReferenceFile : apiReferenceFile.replace(/\.md$/, `-${version}.md`);
    return { version, path, link: path.slice(path.lastIndexOf("/") + 1) };
  });
}

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
    const key = k.naturalKey;
    keys.push(
      {
        key: ANNOTATION_EXTERNAL_ID,
        what: "annotation",
        by: "keyward",
        doc: [
          key
            ? `A copy of status.${k.externalId}, written when the ${key.name} alone no longer names the external object (adopted, or its ${key.name} changed):`
            : `A copy of status.${k.externalId}, kept in metadata because backups and exports drop status:`,
          "an object restored or applied again without status finds the same external object instead of creating another.",
          ...(key ? [`A ${k.ref.kind} keyward created is found again by its ${key.name} and its ${ANNOTATION_CREATE_STARTED} mark.`] : []),
          "Set by hand on an object without status, it names an existing external object to take over, which must match the spec (else Synced=False ExternalIdMismatch).",
        ].join(" "),
      },
      ...(key
        ? [
            {
              key: NATURAL_KEY_LABEL,
              what: "label" as const,
              by: "keyward" as const,
              doc: `A digest of the ${key.name} keyward creates the external object with, set in the write that marks the create before the call: another resource adopting that object waits for this one instead of taking it.`,
            },
          ]
        : []),
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

function metadataTable(keys: readonly MetadataKey[], prose: (text: string) => string = (text) => text): string[] {
  if (keys.length === 0) return ["None.", ""];
  return [
    "| key | what | on | set by | meaning |",
    "|---|---|---|---|---|",
    ...keys.map((m) => `| ${mdCode(m.key)} | ${m.what} | ${mdText(m.on ?? "the resource")} | ${m.by} | ${mdText(prose(m.doc))} |`),
    "",
  ];
}

const anchor = (kind: string): string => kind.toLowerCase();

/** Descriptions keyward writes by hand name v1alpha1's fields; in v1beta1 they are respelled as its schema is. */
function proseIn(k: Kind, version: string): (text: string) => string {
  return version === k.conversion.to && k.conversion.from !== k.conversion.to ? v1beta1Prose(k) : (text) => text;
}

function columnsTable(columns: readonly { name: string; type: string; jsonPath: string; priority?: number }[]): string[] {
  if (columns.length === 0) return ["None.", ""];
  return [
    "| column | type | JSONPath | shown |",
    "|---|---|---|---|",
    ...columns.map((c) => `| ${c.name} | ${c.type} | ${mdCode(c.jsonPath)} | ${c.priority ? "with `-o wide`" : "always"} |`),
    "",
  ];
}

/** The fields a version's lists select on besides name and namespace (its CRD's selectableFields), with the line that finds a holder. */
function selectableSection(crd: CustomResourceDefinition, version: CustomResourceDefinitionVersion): string[] {
  const fields = (version.selectableFields ?? []).map((f) => f.jsonPath.slice(1));
  const [first] = fields;
  if (first === undefined) return [];
  const find = `kubectl get ${crd.spec.names.plural}.${version.name}.${crd.spec.group} -A --field-selector ${first}=<id>`;
  return [
    "### Selectable fields",
    "",
    `Besides ${mdCode("metadata.name")} and ${mdCode("metadata.namespace")}, lists and watches select on: ${fields.map(mdCode).join(", ")}. Which resource records an external id: ${mdCode(find)}.`,
    "",
  ];
}

function kindSection(k: Kind, versionName: string): string[] {
  const crd = servedCrd(k);
  const version = crd.spec.versions.find((v) => v.name === versionName);
  if (!version) throw new Error(`${k.ref.kind} is not served in ${versionName}`);
  const prose = proseIn(k, versionName);
  const lines: string[] = [`## ${k.ref.kind}`, "", mdText(prose(k.crd.description)), ""];
  const names = crd.spec.names;
  lines.push(
    "| | |",
    "|---|---|",
    `| apiVersion | ${mdCode(`${crd.spec.group}/${version.name}`)} |`,
    `| kind | ${mdCode(names.kind)} |`,
    `| scope | ${crd.spec.scope} |`,
    `| resource | ${mdCode(`${names.plural}.${crd.spec.group}`)} (singular ${mdCode(names.singular)}) |`,
    `| short names | ${(names.shortNames ?? []).map(mdCode).join(", ") || "—"} |`,
    `| categories | ${(names.categories ?? []).map(mdCode).join(", ") || "—"} |`,
    "",
  );
  const schema = version.schema.openAPIV3Schema;
  lines.push("### Printer columns", "", ...columnsTable(version.additionalPrinterColumns ?? []));
  lines.push(...selectableSection(crd, version));
  for (const part of ["spec", "status"] as const) {
    const node = schema.properties?.[part];
    lines.push(`### ${part}`, "");
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
  lines.push(`### Labels, annotations and finalizers`, "", ...metadataTable([...registryKeys(k), ...(k.metadata ?? [])], prose));
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

/** The paragraph that places a page's version among the others. */
function versionNote(page: ApiReferencePage, pages: readonly ApiReferencePage[]): string[] {
  const [newest] = pages;
  if (!newest) return [];
  const others = pages.filter((p) => p.version !== page.version).map((p) => `[${mdCode(p.version)}](${p.link})`);
  if (page.version === newest.version) {
    return [
      `This page documents ${mdCode(page.version)}, the version to write manifests in. ${others.join(", ")} is served`,
      "beside it and converted by keyward's conversion webhook; it is the version objects are stored in",
      "until the storage version is switched, and the only one a cluster serves with the webhook off",
      "(chart value `webhook.enabled=false`). [The v1beta1 API](../api-review.md) lists every change",
      "between them, and [Versions and compatibility](../compatibility.md#how-v1beta1-arrives) how they",
      "are served.",
      "",
    ];
  }
  return [
    `This page documents ${mdCode(page.version)}: served beside ${mdCode(newest.version)}, the version objects are`,
    "stored in until the storage version is switched, and the only one a cluster serves with keyward's",
    `conversion webhook off (chart value \`webhook.enabled=false\`). Write new manifests in ${mdCode(newest.version)}:`,
    `[API reference](${newest.link}). [The v1beta1 API](../api-review.md) lists every change between them.`,
    "",
  ];
}

/** A page of the API reference: by default the first, of the version to write. */
export function apiReference(kinds: readonly Kind[], which?: ApiReferencePage): string {
  const pages = apiReferencePages(kinds);
  const page = which ?? pages[0];
  if (!page) throw new Error("no kinds, no API reference");
  const newest = page.version === pages[0]?.version;
  const group = kinds[0]?.ref.group ?? "";
  const explain = newest
    ? "`kubectl explain <resource>.spec`"
    : `\`kubectl explain <resource>.spec --api-version ${group}/${page.version}\``;
  const lines = [
    "<!-- Generated by `npm run generate` from src/resources/registry.ts; do not edit. -->",
    newest ? "# API reference" : `# API reference: ${page.version}`,
    "",
    `Every kind of the API group ${mdCode(group)} in ${mdCode(page.version)}, every field of its spec and status as the`,
    "CRD defines it (the apiserver checks the types, bounds, patterns and rules below when an object is",
    `written), and the labels, annotations and finalizers keyward reads and writes. ${explain}`,
    "prints the same descriptions. status is keyward's: it writes every status field, a person never does.",
    "Condition reasons and what to do about each: [kinds and reasons](../kinds.md).",
    "",
    ...versionNote(page, pages),
    "Paths: `a.b` a field of an object, `a[]` the items of a list, `a.*` the values of a map.",
    "",
    ...kinds.map((k) => `- [${k.ref.kind}](#${anchor(k.ref.kind)})`),
    "- [Labels on every kind](#labels-on-every-kind)",
    "",
    ...kinds.flatMap((k) => kindSection(k, page.version)),
    "## Labels on every kind",
    "",
    ...metadataTable(shardKeys),
  ];
  return lines.join("\n");
}
