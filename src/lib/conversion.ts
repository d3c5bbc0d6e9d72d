// Conversion between two versions of a kind, from one declaration: a list of edits, plain data,
// each a step from the older version's shape towards the newer one's. The same list is read
// forward (older → newer), backward (newer → older, each edit inverted, last first) and, at build
// time, as a change of the older version's schema (src/crd/conversion-schema.ts).
//
// Lossless by construction: whatever one version cannot hold (an explicit `isTemporary: false`,
// a field the other version has no place for) is found by converting the result straight back
// and comparing it with the input; the difference rides in an annotation named after the version
// it belongs to (conversion.keyward.dev/<version>), only when there is one, and is applied and
// removed on the way back. Each entry of it also records what the way back produced at its
// place, and is applied only while that is still what it produces: a field changed in the other
// version in the meantime wins over the remembered one.
//
// A value no edit can convert (an enum value outside the map, an object where a string belongs)
// is refused with a ConversionError naming the field; nothing is converted half-way.

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Obj = { [key: string]: Json };

/** A CEL rule of a schema edit, as apiextensions.k8s.io/v1 spells it (src/engine/cel.ts's ValidationRule). */
export interface SchemaRule {
  rule: string;
  message?: string;
  reason?: "FieldValueInvalid" | "FieldValueForbidden" | "FieldValueRequired" | "FieldValueDuplicate";
  fieldPath?: string;
}

/**
 * One step from the older version towards the newer. Paths are dotted from the object's root;
 * `[]` stands for every item of a list (`spec.roles[].isTemporary`). A path names the field as it
 * is before this edit (`from`, `path`) or after it (`to`).
 */
export type Edit =
  /** A field renamed, or moved into or out of a struct (the emptied struct goes with it). */
  | { op: "rename"; from: string; to: string }
  /** An enum's values respelled; both sides one-to-one. */
  | { op: "enum"; path: string; values: Readonly<Record<string, string>> }
  /**
   * A boolean flag and the fields that only mean something when it is true become one optional
   * struct (`struct`) at the object `path` names, whose presence stands for `flag: true`.
   * `fields` maps each older field to its name in the struct.
   */
  | {
      op: "presence";
      path: string;
      flag: string;
      struct: string;
      fields: Readonly<Record<string, string>>;
      /** The struct's fields its schema requires (what the flag's rules required of a true flag). */
      required?: readonly string[];
    }
  /**
   * A union: the string `discriminator` and the object `config` become the object `union`, holding
   * `type` (the member's name in the newer version) and one struct per member holding the `fields`
   * of `config` it has and the fields `moves` names (older path → name in the struct). A field of
   * `config` a member lacks, or one another member moves, has no place in it (it rides in the
   * annotation).
   */
  | {
      op: "union";
      discriminator: string;
      config: string;
      union: string;
      members: Readonly<Record<string, UnionMember>>;
    }
  /** Schema only, values pass unchanged: a list becomes a list-map keyed by `keys`. */
  | { op: "listMap"; path: string; keys: readonly string[] }
  /** Schema only: a string gets a format (and a pattern). */
  | { op: "format"; path: string; format?: string; pattern?: string }
  /** Schema only: the apiserver fills in the default. */
  | { op: "default"; path: string; value: Json }
  /** Schema only: a CEL rule on the node at `path` replaced (`from` its rule text), added (no `from`) or dropped (no `to`). */
  | { op: "rule"; path: string; from?: string; to?: SchemaRule };

/** One member of a union edit: its `type`, the name of its struct, the `config` fields it has, and what it `moves` in. */
export interface UnionMember {
  type: string;
  member: string;
  fields: readonly string[];
  moves?: Readonly<Record<string, string>>;
}

/** The change of one kind from `from` to `to`. */
export interface VersionChange {
  from: string;
  to: string;
  edits: readonly Edit[];
}

/** The prefix of the annotations that keep what one version cannot hold: `conversion.keyward.dev/<version>`. */
export const CONVERSION_ANNOTATION_PREFIX = "conversion.keyward.dev/";

export class ConversionError extends Error {
  /** The field refused, dotted from the object's root with list indexes (`spec.roles[1].temporaryMode`). */
  readonly field: string;
  constructor(field: string, message: string) {
    super(`${field}: ${message}`);
    this.name = "ConversionError";
    this.field = field;
  }
}

// ---------------------------------------------------------------- paths

/** `spec.roles[].x` → ["spec", "roles", "[]", "x"]. */
export function segmentsOf(path: string): string[] {
  return path.split(".").flatMap((part) => (part.endsWith("[]") ? [part.slice(0, -2), "[]"] : [part]));
}

function isObj(v: Json | undefined): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function typeName(v: Json): string {
  return v === null ? "null" : Array.isArray(v) ? "a list" : typeof v === "object" ? "an object" : `a ${typeof v}`;
}

/**
 * Every object that holds the last segment of `segments` (what `[]` and the fields before it
 * reach), with the field path to it for messages. A missing step ends that branch; a step of the
 * wrong type is refused.
 */
function holders(root: Obj, segments: readonly string[]): { at: Obj; field: string }[] {
  let level: { at: Json; field: string }[] = [{ at: root, field: "" }];
  for (const seg of segments.slice(0, -1)) {
    const next: { at: Json; field: string }[] = [];
    for (const { at, field } of level) {
      if (seg === "[]") {
        if (!Array.isArray(at)) throw new ConversionError(field, `must be a list, not ${typeName(at)}`);
        at.forEach((item, i) => next.push({ at: item, field: `${field}[${i}]` }));
        continue;
      }
      if (!isObj(at)) throw new ConversionError(field || "<root>", `must be an object, not ${typeName(at)}`);
      const child = at[seg];
      if (child !== undefined) next.push({ at: child, field: field ? `${field}.${seg}` : seg });
    }
    level = next;
  }
  return level.map(({ at, field }) => {
    if (!isObj(at)) throw new ConversionError(field || "<root>", `must be an object, not ${typeName(at)}`);
    return { at, field };
  });
}

function childField(field: string, key: string): string {
  return field ? `${field}.${key}` : key;
}

/** The object at `segments` (no `[]`), made on the way when `create`; undefined when absent. */
function objectAt(root: Obj, segments: readonly string[], create: boolean, field = ""): Obj | undefined {
  let at: Obj = root;
  for (const seg of segments) {
    field = childField(field, seg);
    let next = at[seg];
    if (next === undefined) {
      if (!create) return undefined;
      next = {};
      at[seg] = next;
    }
    if (!isObj(next)) throw new ConversionError(field, `must be an object, not ${typeName(next)}`);
    at = next;
  }
  return at;
}

function drop(o: Obj, key: string): void {
  Reflect.deleteProperty(o, key);
}

/** The last segment of a path (a path always has one). */
function lastOf(segments: readonly string[]): string {
  return segments[segments.length - 1] ?? "";
}

/** Takes the value at `segments` (no `[]`) out of `root`, removing the objects it leaves empty down to `keep` segments. */
function take(root: Obj, segments: readonly string[], keep: number): Json | undefined {
  const chain: { holder: Obj; key: string }[] = [];
  let holder: Obj = root;
  for (const seg of segments.slice(0, -1)) {
    const next = holder[seg];
    if (!isObj(next)) return undefined;
    chain.push({ holder, key: seg });
    holder = next;
  }
  const value = holder[lastOf(segments)];
  if (value === undefined) return undefined;
  drop(holder, lastOf(segments));
  // chain[i] holds the object at depth i + 1: empty ones deeper than `keep` go
  for (let i = chain.length - 1; i >= keep; i--) {
    const link = chain[i];
    if (!link || Object.keys(holder).length > 0) break;
    drop(link.holder, link.key);
    holder = link.holder;
  }
  return value;
}

function put(root: Obj, segments: readonly string[], value: Json, field: string): void {
  const holder = objectAt(root, segments.slice(0, -1), true, field) ?? root;
  holder[lastOf(segments)] = value;
}

/** The segments two paths share up to their last `[]`: what a rename works inside, once per item. */
function splitAtItems(from: string[], to: string[]): { prefix: string[]; from: string[]; to: string[] } {
  const lastItem = Math.max(from.lastIndexOf("[]"), to.lastIndexOf("[]"));
  const prefix = from.slice(0, lastItem + 1);
  if (to.slice(0, lastItem + 1).join(".") !== prefix.join(".")) {
    throw new Error(`rename ${from.join(".")} → ${to.join(".")}: both paths must share every list ([]) they pass`);
  }
  return { prefix, from: from.slice(lastItem + 1), to: to.slice(lastItem + 1) };
}

// ---------------------------------------------------------------- the edits on values

type Direction = "forward" | "backward";

function commonLength(a: readonly string[], b: readonly string[]): number {
  let i = 0;
  while (i < a.length - 1 && i < b.length - 1 && a[i] === b[i]) i++;
  return i;
}

function rename(root: Obj, fromPath: string, toPath: string): void {
  const { prefix, from, to } = splitAtItems(segmentsOf(fromPath), segmentsOf(toPath));
  const items = prefix.length === 0 ? [{ at: root, field: "" }] : holders(root, [...prefix, "*"]);
  for (const { at, field } of items) {
    const value = take(at, from, commonLength(from, to));
    if (value !== undefined) put(at, to, value, field);
  }
}

function mapEnum(root: Obj, path: string, values: Readonly<Record<string, string>>): void {
  const segments = segmentsOf(path);
  const key = lastOf(segments);
  for (const { at, field } of holders(root, segments)) {
    const value = at[key];
    if (value === undefined) continue;
    const mapped = typeof value === "string" && Object.hasOwn(values, value) ? values[value] : undefined;
    if (mapped === undefined) {
      throw new ConversionError(childField(field, key), `${JSON.stringify(value)} is not one of ${Object.keys(values).join(", ")}`);
    }
    at[key] = mapped;
  }
}

function inverse(values: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(values).map(([k, v]) => [v, k]));
}

function presence(root: Obj, edit: Extract<Edit, { op: "presence" }>, direction: Direction): void {
  for (const { at, field } of holders(root, [...segmentsOf(edit.path), "*"])) {
    if (direction === "forward") {
      const flag = at[edit.flag];
      drop(at, edit.flag);
      const struct: Obj = {};
      for (const [older, newer] of Object.entries(edit.fields)) {
        const value = at[older];
        drop(at, older);
        if (value !== undefined) struct[newer] = value;
      }
      // Not temporary: the fields have no place (the annotation keeps them, and an explicit false).
      if (flag === true) at[edit.struct] = struct;
      continue;
    }
    const struct = at[edit.struct];
    if (struct === undefined) continue;
    if (!isObj(struct)) throw new ConversionError(childField(field, edit.struct), `must be an object, not ${typeName(struct)}`);
    drop(at, edit.struct);
    at[edit.flag] = true;
    for (const [older, newer] of Object.entries(edit.fields)) if (struct[newer] !== undefined) at[older] = struct[newer];
  }
}

function unionForward(root: Obj, edit: Extract<Edit, { op: "union" }>): void {
  const discriminator = segmentsOf(edit.discriminator);
  const value = take(root, discriminator, discriminator.length);
  const config = take(root, segmentsOf(edit.config), segmentsOf(edit.config).length);
  const member = value === undefined ? undefined : edit.members[value as string];
  if (value !== undefined && (typeof value !== "string" || !Object.hasOwn(edit.members, value) || member === undefined)) {
    throw new ConversionError(edit.discriminator, `${JSON.stringify(value)} is not one of ${Object.keys(edit.members).join(", ")}`);
  }
  if (config !== undefined && !isObj(config)) throw new ConversionError(edit.config, `must be an object, not ${typeName(config)}`);
  const struct: Obj = {};
  for (const key of member?.fields ?? []) if (config?.[key] !== undefined) struct[key] = config[key];
  const moved = takeMoves(root, edit, member);
  for (const [name, value] of Object.entries(moved)) {
    if (struct[name] !== undefined) throw new ConversionError(edit.config, `${name} is set here and moved in too`);
    struct[name] = value;
  }
  if (member === undefined) return;
  const present = config !== undefined || Object.keys(moved).length > 0;
  put(root, segmentsOf(edit.union), present ? { type: member.type, [member.member]: struct } : { type: member.type }, "");
}

/** Takes every member's moved fields out of `root`; those of `member`, by their name in its struct. */
function takeMoves(root: Obj, edit: Extract<Edit, { op: "union" }>, member: UnionMember | undefined): Obj {
  const out: Obj = {};
  for (const m of Object.values(edit.members)) {
    for (const [older, name] of Object.entries(m.moves ?? {})) {
      const value = take(root, segmentsOf(older), 1);
      // another member's field has no place in this one
      if (value !== undefined && m === member) out[name] = value;
    }
  }
  return out;
}

function unionBackward(root: Obj, edit: Extract<Edit, { op: "union" }>): void {
  const unionPath = segmentsOf(edit.union);
  const union = take(root, unionPath, unionPath.length);
  if (union === undefined) return;
  if (!isObj(union)) throw new ConversionError(edit.union, `must be an object, not ${typeName(union)}`);
  const type = union["type"];
  if (type === undefined) return;
  const entry = Object.entries(edit.members).find(([, m]) => m.type === type);
  if (!entry) {
    const types = Object.values(edit.members).map((m) => m.type);
    throw new ConversionError(`${edit.union}.type`, `${JSON.stringify(type)} is not one of ${types.join(", ")}`);
  }
  const [value, member] = entry;
  put(root, segmentsOf(edit.discriminator), value, "");
  // the other members have no place in the older version (the annotation keeps them)
  const struct = union[member.member];
  if (struct === undefined) return;
  const memberField = `${edit.union}.${member.member}`;
  if (!isObj(struct)) throw new ConversionError(memberField, `must be an object, not ${typeName(struct)}`);
  const config: Obj = { ...struct };
  for (const [older, name] of Object.entries(member.moves ?? {})) {
    const moved = config[name];
    drop(config, name);
    if (moved !== undefined) put(root, segmentsOf(older), moved, "");
  }
  put(root, segmentsOf(edit.config), config, "");
}

function apply(root: Obj, edit: Edit, direction: Direction): void {
  switch (edit.op) {
    case "rename":
      return direction === "forward" ? rename(root, edit.from, edit.to) : rename(root, edit.to, edit.from);
    case "enum":
      return mapEnum(root, edit.path, direction === "forward" ? edit.values : inverse(edit.values));
    case "presence":
      return presence(root, edit, direction);
    case "union":
      return direction === "forward" ? unionForward(root, edit) : unionBackward(root, edit);
    case "listMap":
    case "format":
    case "default":
    case "rule":
      return;
  }
}

/** The object's body (everything but apiVersion, kind and metadata) converted by the edits, without the annotations. */
function convertBody(body: Obj, edits: readonly Edit[], direction: Direction): Obj {
  const out = structuredClone(body);
  const ordered = direction === "forward" ? edits : [...edits].reverse();
  for (const edit of ordered) apply(out, edit, direction);
  return out;
}

// ---------------------------------------------------------------- what the other version cannot hold

/** One remembered value: at `path`, `value` (absent: no field), while the way back still produces `was` there. */
export interface Residue {
  path: (string | number)[];
  was?: Json;
  value?: Json;
}

function deepEqual(a: Json | undefined, b: Json | undefined): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => deepEqual(v, b[i]));
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && deepEqual((a as Obj)[k], (b as Obj)[k]));
}

function withValue(path: (string | number)[], was: Json | undefined, value: Json | undefined): Residue {
  return { path, ...(was === undefined ? {} : { was }), ...(value === undefined ? {} : { value }) };
}

/** What turns `got` into `want`, entry by entry (lists of one length item by item, else whole). */
export function residue(got: Json | undefined, want: Json | undefined, path: (string | number)[] = []): Residue[] {
  if (deepEqual(got, want)) return [];
  if (isObj(got) && isObj(want)) {
    const keys = [...new Set([...Object.keys(got), ...Object.keys(want)])];
    return keys.flatMap((k) => residue(got[k], want[k], [...path, k]));
  }
  if (Array.isArray(got) && Array.isArray(want) && got.length === want.length) {
    return got.flatMap((v, i) => residue(v, want[i], [...path, i]));
  }
  return [withValue(path, got, want)];
}

/** Applies the entries whose place still holds what they expect (`was`); the rest are stale and dropped. */
export function applyResidue(body: Obj, entries: readonly Residue[]): Obj {
  const out = structuredClone(body);
  for (const { path, was, value } of entries) {
    const last = path[path.length - 1];
    if (last === undefined) continue;
    let holder: Json | undefined = out;
    for (const step of path.slice(0, -1)) holder = isObj(holder) || Array.isArray(holder) ? (holder as Obj)[step as string] : undefined;
    if (!(isObj(holder) || Array.isArray(holder))) continue;
    const current = (holder as Obj)[last as string];
    if (!deepEqual(current, was)) continue;
    if (value === undefined) {
      if (Array.isArray(holder)) continue;
      drop(holder, last as string);
    } else (holder as Obj)[last as string] = value;
  }
  return out;
}

function parseResidue(text: string | undefined): Residue[] {
  if (text === undefined) return [];
  try {
    const parsed = JSON.parse(text) as unknown;
    // A hand-edited or foreign value is not applied: the annotation is keyward's to write.
    if (!Array.isArray(parsed)) return [];
    return parsed.filter(
      (e): e is Residue =>
        isObj(e as Json) &&
        Array.isArray((e as Residue).path) &&
        (e as Residue).path.every((p) => typeof p === "string" || typeof p === "number"),
    );
  } catch {
    return [];
  }
}

// ---------------------------------------------------------------- objects

/** A Kubernetes object as conversion sees it: apiVersion `<group>/<version>`, metadata passed through. */
export type ConvertibleObject = { apiVersion: string; kind: string; metadata?: Obj } & Obj;

function versionOf(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.lastIndexOf("/");
  return { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

function bodyOf(obj: Obj): Obj {
  const { apiVersion: _a, kind: _k, metadata: _m, ...body } = obj;
  return body;
}

/**
 * `obj` in version `to` of its kind, whose change is `change`. Metadata passes through untouched
 * but for the conversion annotations: the one holding `to`'s values is applied and removed; one
 * holding the source version's values is written when the source has values `to` cannot hold.
 */
export function convertObject<T extends ConvertibleObject>(obj: T, change: VersionChange, to: string): T {
  const { group, version: from } = versionOf(obj.apiVersion);
  if (from === to) return obj;
  const known = [change.from, change.to];
  if (!known.includes(from) || !known.includes(to)) {
    throw new ConversionError("apiVersion", `${obj.kind} converts between ${known.join(" and ")}, not ${from} to ${to}`);
  }
  const direction: Direction = to === change.to ? "forward" : "backward";
  const back: Direction = direction === "forward" ? "backward" : "forward";
  const metadata = structuredClone(obj.metadata ?? {});
  const annotations: Record<string, Json> = isObj(metadata["annotations"]) ? metadata["annotations"] : {};
  const kept = annotations[CONVERSION_ANNOTATION_PREFIX + to];
  const ours = [CONVERSION_ANNOTATION_PREFIX + to, CONVERSION_ANNOTATION_PREFIX + from].filter((key) => Object.hasOwn(annotations, key));
  for (const key of ours) drop(annotations, key);
  const source = bodyOf(obj);
  const converted = applyResidue(convertBody(source, change.edits, direction), parseResidue(typeof kept === "string" ? kept : undefined));
  const lost = residue(convertBody(converted, change.edits, back), source);
  if (lost.length > 0) annotations[CONVERSION_ANNOTATION_PREFIX + from] = JSON.stringify(lost);
  // metadata is otherwise the caller's: an empty annotations map of its own stays as it was
  if (lost.length > 0 || (ours.length > 0 && Object.keys(annotations).length > 0)) metadata["annotations"] = annotations;
  else if (ours.length > 0) drop(metadata, "annotations");
  const out: Obj = { apiVersion: `${group}/${to}`, kind: obj.kind };
  if (obj.metadata !== undefined || lost.length > 0) out["metadata"] = metadata;
  return { ...out, ...converted } as T;
}
