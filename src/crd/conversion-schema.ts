// The v1beta1 schema of a kind, derived from its v1alpha1 CRD schema and the edits its descriptor
// declares (Kind.conversion, the same list src/lib/conversion.ts converts objects with): a rename
// moves a node, an enum respells its values, a presence edit makes the optional struct, the union
// edit builds one member struct per destination from the variants of the kind's zod union (so each
// member lists only its destination's fields), and the schema-only edits add list-map keys,
// formats, defaults and rules.
//
// servedCrd serves v1beta1 beside v1alpha1 (the storage version in this release), converted by
// keyward's webhook (src/webhook).
import { z } from "zod";
import type { Kind } from "../resources/kind.ts";
import { segmentsOf, type Edit } from "../lib/conversion.ts";
import { celField, celString } from "../engine/cel.ts";
import type { PrinterColumn } from "../engine/kind.ts";
import { crdFromSources, type CustomResourceDefinition, type CustomResourceDefinitionVersion, type WebhookClientConfig } from "./crd.ts";
import { orderSchema, structuralSchema, structuralViolations } from "./schema.ts";
import type { JSONSchemaProps, ValidationRule } from "./types.ts";
import { narrowingRules } from "./union.ts";

type Node = JSONSchemaProps;

function fail(kind: string, edit: Edit, what: string): never {
  throw new Error(`${kind} v1beta1: ${edit.op} ${JSON.stringify(edit)}: ${what}`);
}

function child(node: Node, seg: string): Node | undefined {
  return seg === "[]" ? node.items : node.properties?.[seg];
}

/** The node at `segments`, or undefined. */
function nodeAt(root: Node, segments: readonly string[]): Node | undefined {
  let at: Node | undefined = root;
  for (const seg of segments) at = at ? child(at, seg) : undefined;
  return at;
}

/** The node holding the last segment (made as an object on the way when `create`). */
function parentOf(root: Node, segments: readonly string[], create: boolean): Node | undefined {
  let at: Node = root;
  for (const seg of segments.slice(0, -1)) {
    let next = child(at, seg);
    if (!next) {
      if (!create || seg === "[]") return undefined;
      next = { type: "object", properties: {} };
      at.properties = { ...at.properties, [seg]: next };
    }
    at = next;
  }
  return at;
}

function lastOf(segments: readonly string[]): string {
  return segments[segments.length - 1] ?? "";
}

/** Takes the property at `segments` out of its parent (and out of its `required`); whether it was required, and where it was. */
function takeNode(root: Node, segments: readonly string[]): { node: Node; required: boolean; index: number } | undefined {
  const parent = parentOf(root, segments, false);
  const key = lastOf(segments);
  const node = parent?.properties?.[key];
  if (!parent?.properties || !node) return undefined;
  const index = Object.keys(parent.properties).indexOf(key);
  const { [key]: _taken, ...rest } = parent.properties;
  parent.properties = rest;
  const required = parent.required?.includes(key) ?? false;
  if (parent.required) {
    const kept = parent.required.filter((r) => r !== key);
    if (kept.length > 0) parent.required = kept;
    else delete parent.required;
  }
  return { node, required, index };
}

/** Puts a property at `segments`, at position `index` among its siblings (kubectl explain's order), else last. */
function putNode(root: Node, segments: readonly string[], node: Node, required: boolean, index = -1): void {
  const parent = parentOf(root, segments, true);
  const key = lastOf(segments);
  if (!parent) throw new Error(`no object to hold ${segments.join(".")}`);
  const entries = Object.entries(parent.properties ?? {}).filter(([k]) => k !== key);
  entries.splice(index < 0 ? entries.length : index, 0, [key, node]);
  parent.properties = Object.fromEntries(entries);
  if (required) parent.required = [...new Set([...(parent.required ?? []), key])];
}

function rules(node: Node): ValidationRule[] {
  return node["x-kubernetes-validations"] ?? [];
}

function setRules(node: Node, list: readonly ValidationRule[]): void {
  if (list.length > 0) node["x-kubernetes-validations"] = [...list];
  else delete node["x-kubernetes-validations"];
}

/** Every node of the tree, with the text of its rules and description rewritten by `rewrite`. */
function rewriteText(node: Node, rewrite: (text: string) => string): void {
  if (node.description) node.description = rewrite(node.description);
  setRules(
    node,
    rules(node).map((r) => ({ ...r, ...(r.message ? { message: rewrite(r.message) } : {}) })),
  );
  for (const sub of Object.values(node.properties ?? {})) rewriteText(sub, rewrite);
  if (node.items) rewriteText(node.items, rewrite);
  if (node.additionalProperties) rewriteText(node.additionalProperties, rewrite);
}

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** A field's accesses in CEL (`self.projectId`, `oldSelf.projectId`, `r.projectId`) respelled. */
function renameInRule(rule: string, from: string, to: string): string {
  return rule.replace(new RegExp(`\\.${escape(from)}\\b`, "g"), `.${to}`);
}

// ---------------------------------------------------------------- the edits on a schema

function rename(root: Node, edit: Extract<Edit, { op: "rename" }>): void {
  const from = segmentsOf(edit.from);
  const to = segmentsOf(edit.to);
  const taken = takeNode(root, from);
  if (!taken) return;
  const parent = parentOf(root, from, false);
  const samePlace = from.slice(0, -1).join(".") === to.slice(0, -1).join(".");
  putNode(root, to, taken.node, taken.required && samePlace, samePlace ? taken.index : -1);
  if (parent && samePlace)
    setRules(
      parent,
      rules(parent).map((r) => ({ ...r, rule: renameInRule(r.rule, lastOf(from), lastOf(to)) })),
    );
}

function mapEnum(root: Node, edit: Extract<Edit, { op: "enum" }>): void {
  const segments = segmentsOf(edit.path);
  const node = nodeAt(root, segments);
  if (!node?.enum) return;
  const map = (v: unknown): unknown => (typeof v === "string" && Object.hasOwn(edit.values, v) ? edit.values[v] : v);
  node.enum = node.enum.map(map);
  if (node.default !== undefined) node.default = map(node.default);
  const literal = (rule: string): string =>
    Object.entries(edit.values).reduce((text, [a, b]) => text.replaceAll(celString(a), celString(b)), rule);
  for (const holder of [node, parentOf(root, segments, false)])
    if (holder)
      setRules(
        holder,
        rules(holder).map((r) => ({ ...r, rule: literal(r.rule) })),
      );
}

function presence(root: Node, edit: Extract<Edit, { op: "presence" }>, kind: string): void {
  const item = nodeAt(root, segmentsOf(edit.path));
  if (!item?.properties) fail(kind, edit, "no object there");
  const names = [edit.flag, ...Object.keys(edit.fields)];
  const properties: Record<string, Node> = {};
  for (const [older, newer] of Object.entries(edit.fields)) {
    const node = item.properties[older];
    if (!node) fail(kind, edit, `no field ${older}`);
    properties[newer] = node;
  }
  item.properties = Object.fromEntries(Object.entries(item.properties).filter(([k]) => !names.includes(k)));
  item.properties[edit.struct] = {
    description: `Present for a temporary role, absent for a permanent one (v1alpha1: ${edit.flag}: true and the fields below).`,
    type: "object",
    properties,
    ...(edit.required ? { required: [...edit.required] } : {}),
  };
  if (item.required) item.required = item.required.filter((r) => !names.includes(r));
  // the rules tying the flag to its fields are what the struct makes unnecessary
  const mentions = (r: ValidationRule): boolean => names.some((n) => new RegExp(`\\.${escape(n)}\\b`).test(r.rule));
  setRules(
    item,
    rules(item).filter((r) => !mentions(r)),
  );
}

type UnionEdit = Extract<Edit, { op: "union" }>;

/** Fields of `spec` outside the union, in a variant and in the merged spec, without the union itself. */
function outside(spec: Node, unionKey: string): Node {
  const { [unionKey]: _u, ...properties } = spec.properties ?? {};
  const required = (spec.required ?? []).filter((r) => r !== unionKey);
  const { "x-kubernetes-validations": _r, ...rest } = spec;
  return { ...rest, properties, ...(required.length > 0 ? { required } : { required: undefined }) };
}

function union(root: Node, edit: UnionEdit, variants: readonly Node[], kind: string): void {
  const discriminator = segmentsOf(edit.discriminator);
  const config = segmentsOf(edit.config);
  const unionPath = segmentsOf(edit.union);
  const owner = parentOf(root, unionPath, false);
  if (!owner) fail(kind, edit, "no object holds the union");
  const typeNode = nodeAt(root, discriminator);
  if (!typeNode) fail(kind, edit, "no discriminator");
  const moved = Object.values(edit.members).flatMap((m) => Object.keys(m.moves ?? {}).map(segmentsOf));
  const members: Record<string, Node> = {};
  const memberTypes = Object.values(edit.members).map((m) => m.type);
  const perVariant: { type: string; spec: Node }[] = [];
  for (const [value, member] of Object.entries(edit.members)) {
    const variant = variants.find((v) => nodeAt(v, discriminator)?.enum?.includes(value));
    if (!variant) fail(kind, edit, `no variant of the zod union has ${edit.discriminator} ${value}`);
    const configNode = nodeAt(variant, config);
    const struct: Node = {
      description: `The settings of destination ${member.type}: set exactly when type is ${member.type}.`,
      type: "object",
      properties: { ...configNode?.properties },
      ...(configNode?.required ? { required: configNode.required } : {}),
      ...(configNode?.["x-kubernetes-validations"] ? { "x-kubernetes-validations": configNode["x-kubernetes-validations"] } : {}),
    };
    for (const [older, name] of Object.entries(member.moves ?? {})) {
      const node = nodeAt(variant, segmentsOf(older));
      if (!node) fail(kind, edit, `the ${value} variant has no ${older}`);
      struct.properties = { ...struct.properties, [name]: node };
    }
    members[member.member] = struct;
    // what stays outside the union, as this variant has it
    takeNode(variant, discriminator);
    takeNode(variant, config);
    for (const m of moved) takeNode(variant, m);
    const spec = nodeAt(variant, unionPath.slice(0, -1));
    if (spec) perVariant.push({ type: member.type, spec });
  }
  const typeDescription = `Which destination: ${memberTypes.join(", ")}. The member of the same name (${Object.values(edit.members)
    .map((m) => m.member)
    .join(", ")}) holds its settings. Immutable.`;
  const unionKey = lastOf(unionPath);
  const refs = Object.values(edit.members).map((m) => `(self.type == ${celString(m.type)}) == has(${celField("self", m.member)})`);
  const unionNode: Node = {
    description: "Where the secrets go: a union of one member per destination, type naming the one that is set.",
    type: "object",
    properties: { type: { ...typeNode, description: typeDescription, enum: memberTypes }, ...members },
    required: ["type"],
    "x-kubernetes-validations": [
      {
        rule: refs.join(" && "),
        message: `exactly the member type names must be set: ${Object.values(edit.members)
          .map((m) => `${m.member} for ${m.type}`)
          .join(", ")}`,
      },
    ],
  };
  const place = takeNode(root, discriminator)?.index ?? -1;
  takeNode(root, config);
  for (const m of moved) takeNode(root, m);
  // the rules the merged union needed are the union node's and the narrowing rules below now
  const refersToUnion = (r: ValidationRule): boolean =>
    [lastOf(discriminator), lastOf(config)].some((k) => new RegExp(`self\\.${escape(k)}\\b`).test(r.rule));
  setRules(
    owner,
    rules(owner).filter((r) => !refersToUnion(r)),
  );
  putNode(root, unionPath, unionNode, true, unionPath.join(".") === discriminator.join(".") ? place : -1);
  const merged = outside(owner, unionKey);
  const narrowing = perVariant.flatMap(({ type, spec }) =>
    narrowingRules(outside(spec, unionKey), merged, `${celField("self", unionKey)}.type != ${celString(type)}`, `${unionKey}.type ${type}`),
  );
  setRules(owner, [...rules(owner), ...narrowing]);
}

function schemaOnly(root: Node, edit: Extract<Edit, { op: "listMap" | "format" | "default" | "rule" }>, kind: string): void {
  const node = nodeAt(root, segmentsOf(edit.path));
  if (!node) fail(kind, edit, "no field there");
  switch (edit.op) {
    case "listMap":
      if (node.type !== "array" || !edit.keys.every((k) => node.items?.required?.includes(k)))
        fail(kind, edit, "a list-map's keys must be required");
      node["x-kubernetes-list-type"] = "map";
      node["x-kubernetes-list-map-keys"] = [...edit.keys];
      return;
    case "format":
      if (node.type !== "string") fail(kind, edit, "not a string");
      if (edit.format) node.format = edit.format;
      if (edit.pattern) node.pattern = edit.pattern;
      return;
    case "default":
      if (node.enum && !node.enum.includes(edit.value)) fail(kind, edit, "the default is not one of the enum's values");
      node.default = edit.value;
      return;
    case "rule": {
      const list = rules(node);
      const at = edit.from === undefined ? -1 : list.findIndex((r) => r.rule === edit.from);
      if (edit.from !== undefined && at < 0) fail(kind, edit, "no such rule there");
      const kept = at < 0 ? list : list.filter((_, i) => i !== at);
      setRules(node, edit.to ? [...kept, edit.to] : kept);
      return;
    }
  }
}

function applyEdit(root: Node, edit: Edit, variants: readonly Node[], kind: string): void {
  switch (edit.op) {
    case "rename":
      return rename(root, edit);
    case "enum":
      return mapEnum(root, edit);
    case "presence":
      return presence(root, edit, kind);
    case "union":
      return union(root, edit, variants, kind);
    default:
      return schemaOnly(root, edit, kind);
  }
}

/** The spec schemas of a kind's zod union, one per variant (its own fields only), each under a root like the CRD's. */
function variantRoots(kind: Kind): Node[] {
  const def = kind.crd.spec._zod.def as { type: string; options?: z.ZodType[] };
  if (def.type !== "union" || !def.options) return [];
  return def.options.map((option) => ({ type: "object", properties: { spec: structuralSchema(option) } }));
}

/** Old → new spellings in prose: renamed field names, and enum values that cannot be ordinary words (they have a dash). */
function proseRewrites(edits: readonly Edit[]): [RegExp, string][] {
  const out: [RegExp, string][] = [];
  for (const edit of edits) {
    if (edit.op === "rename") {
      const [a, b] = [lastOf(segmentsOf(edit.from)), lastOf(segmentsOf(edit.to))];
      if (a !== b) out.push([new RegExp(`\\b${escape(a)}\\b`, "g"), b]);
    } else if (edit.op === "enum") {
      for (const [a, b] of Object.entries(edit.values))
        if (a.includes("-")) out.push([new RegExp(`(?<![\\w-])${escape(a)}(?![\\w-])`, "g"), b]);
    }
  }
  return out;
}

/** Prose of v1alpha1 (a description, a document) respelled as v1beta1 names its fields and values. */
export function v1beta1Prose(kind: Kind): (text: string) => string {
  const rewrites = proseRewrites(kind.conversion.edits);
  return (text) => rewrites.reduce((t, [re, to]) => t.replace(re, to), text);
}

/**
 * The v1beta1 schema of a kind, and its union's variants (roots like the schema's) as the union
 * edit left them, by their v1alpha1 discriminator value.
 */
function derive(kind: Kind): { schema: JSONSchemaProps; variants: Map<string, Node> } {
  const name = kind.ref.kind;
  const [alpha] = crdFromSources(kind.crd).spec.versions;
  if (!alpha) throw new Error(`${name}: no v1alpha1 version`);
  const root = structuredClone(alpha.schema.openAPIV3Schema);
  const variants = variantRoots(kind);
  const unionEdit = kind.conversion.edits.find((e): e is UnionEdit => e.op === "union");
  const values = variants.map((v) => (unionEdit ? nodeAt(v, segmentsOf(unionEdit.discriminator))?.enum?.[0] : undefined));
  for (const edit of kind.conversion.edits) {
    applyEdit(root, edit, variants, name);
    // the variants' specs follow every rename and respelling up to the union that reads them
    if (edit.op === "rename" || edit.op === "enum") for (const v of variants) applyEdit(v, edit, [], name);
  }
  const prose = v1beta1Prose(kind);
  for (const node of [root, ...variants]) rewriteText(node, prose);
  const ordered = orderSchema(root);
  const problems = structuralViolations(ordered);
  if (problems.length > 0) throw new Error(`${name} v1beta1: not a structural schema:\n${problems.join("\n")}`);
  const byValue = new Map<string, Node>();
  variants.forEach((v, i) => {
    const value = values[i];
    if (typeof value === "string") byValue.set(value, orderSchema(v));
  });
  return { schema: ordered, variants: byValue };
}

/** The v1beta1 openAPIV3Schema of a kind: its v1alpha1 schema with its declared edits applied. */
export function v1beta1Schema(kind: Kind): JSONSchemaProps {
  return derive(kind).schema;
}

/** One member of a kind's v1beta1 union, with what its v1alpha1 variant becomes in v1beta1. */
export interface UnionMemberSchema {
  /** The discriminator's value in v1alpha1 (`code-host`) and in v1beta1 (`CodeHost`). */
  from: string;
  type: string;
  /** The union's path (`spec.destination`) and the member's field in it (`codeHost`). */
  union: string;
  member: string;
  /** The member's struct, as the v1beta1 schema has it. */
  struct: JSONSchemaProps;
  /** The variant's spec outside the union, in v1beta1: what this member's objects take besides it. */
  spec: JSONSchemaProps;
}

/** The members of a kind's v1beta1 union, in the union edit's order; none for a kind without a union edit. */
export function v1beta1UnionMembers(kind: Kind): UnionMemberSchema[] {
  const edit = kind.conversion.edits.find((e): e is UnionEdit => e.op === "union");
  if (!edit) return [];
  const { schema, variants } = derive(kind);
  const unionPath = segmentsOf(edit.union);
  const unionNode = nodeAt(schema, unionPath);
  return Object.entries(edit.members).map(([from, m]) => {
    const struct = unionNode?.properties?.[m.member];
    const variant = variants.get(from);
    const spec = variant ? nodeAt(variant, unionPath.slice(0, -1)) : undefined;
    if (!struct || !spec) throw new Error(`${kind.ref.kind} v1beta1: no member ${m.member} or no variant for ${from}`);
    return { from, type: m.type, union: edit.union, member: m.member, struct, spec };
  });
}

/** A printer column's JSON path in v1beta1: renamed fields respelled, a union's discriminator read from its type. */
function columnPath(jsonPath: string, edits: readonly Edit[]): string {
  let path = jsonPath;
  for (const edit of edits) {
    const [from, to] =
      edit.op === "rename"
        ? [edit.from, edit.to]
        : edit.op === "union"
          ? [edit.discriminator, `${edit.union}.type`]
          : [undefined, undefined];
    if (from === undefined || to === undefined || from.includes("[]")) continue;
    path = path.replace(new RegExp(`^\\.${escape(from)}(?=$|\\.)`), `.${to}`);
  }
  return path;
}

/**
 * The fields of a kind's v1alpha1 that lists may select on: the status field recording the external
 * id, by which the claim rule's fresh read finds a holder wherever it is reconciled
 * (src/engine/holder.ts claimFieldSelector).
 */
export function selectableFields(kind: Kind): { jsonPath: string }[] {
  return kind.externalId === undefined ? [] : [{ jsonPath: `.status.${kind.externalId}` }];
}

/** A kind's v1alpha1 as served: its generated version (of `generated`, its CRD from src/crd) with its selectable fields. */
function servedAlpha(kind: Kind, generated: CustomResourceDefinition): CustomResourceDefinitionVersion {
  const [alpha] = generated.spec.versions;
  if (!alpha) throw new Error(`${kind.ref.kind}: no generated version`);
  const fields = selectableFields(kind);
  return fields.length > 0 ? { ...alpha, selectableFields: fields } : alpha;
}

/** The v1beta1 version of a kind's CRD, from its v1alpha1 as served: not storage (v1alpha1 stays that in this release). */
export function v1beta1Version(
  kind: Kind,
  alpha: CustomResourceDefinitionVersion = servedAlpha(kind, crdFromSources(kind.crd)),
): CustomResourceDefinitionVersion {
  const columns: PrinterColumn[] | undefined = alpha.additionalPrinterColumns?.map((c) => ({
    ...c,
    jsonPath: columnPath(c.jsonPath, kind.conversion.edits),
  }));
  return {
    name: kind.conversion.to,
    served: true,
    storage: false,
    schema: { openAPIV3Schema: v1beta1Schema(kind) },
    subresources: { status: {} },
    ...(columns ? { additionalPrinterColumns: columns } : {}),
    ...(alpha.selectableFields
      ? { selectableFields: alpha.selectableFields.map((f) => ({ jsonPath: columnPath(f.jsonPath, kind.conversion.edits) })) }
      : {}),
  };
}

/**
 * The conversion webhook's Service in the generated plain manifests (crds/, config/crd/bases): the
 * kustomize install's (config/default: namespace keyward-system, names prefixed keyward-). The
 * chart's CRD templates name the release's Service instead (files.ts).
 */
export const WEBHOOK_SERVICE = { namespace: "keyward-system", name: "keyward-webhook", path: "/convert", port: 443 } as const;

/**
 * A kind's CRD as served: v1alpha1 (storage) and, when the kind has one, v1beta1, converted by the
 * webhook `clientConfig` names (the caBundle is written into the cluster's CRD by keyward, or by
 * cert-manager's CA injector).
 */
export function servedCrd(kind: Kind, clientConfig: WebhookClientConfig = { service: { ...WEBHOOK_SERVICE } }): CustomResourceDefinition {
  const generated = crdFromSources(kind.crd);
  const alpha = servedAlpha(kind, generated);
  const crd = { ...generated, spec: { ...generated.spec, versions: [alpha] } };
  if (kind.conversion.from === kind.conversion.to) return crd;
  return {
    ...crd,
    spec: {
      ...crd.spec,
      versions: [alpha, v1beta1Version(kind, alpha)],
      conversion: { strategy: "Webhook", webhook: { conversionReviewVersions: ["v1"], clientConfig } },
    },
  };
}
