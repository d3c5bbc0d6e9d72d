// Round trips of every kind between v1alpha1 and v1beta1 over generated objects, as Kubernetes'
// round-trip fuzz tests do: objects are drawn from each version's generated schema (the v1alpha1
// CRD and the derived v1beta1 one: types, enums, bounds, formats, patterns where fast-check can
// draw them, required fields, and for a union either version's members), with metadata carrying
// keyward's durable annotations. For each:
// - v1alpha1 → v1beta1 → v1alpha1 and v1beta1 → v1alpha1 → v1beta1 give the input back, exactly;
// - the converted object fits its version's schema: no field the schema lacks (the apiserver would
//   prune it), every enum value one of its values, every type its type;
// - metadata passes through, but for the conversion annotation.
// The number of objects and how many needed the annotation are printed. KEYWARD_MODEL_SEED=<seed>
// replays a run (the seed is printed), KEYWARD_MODEL_RUNS sets the number of objects per kind.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { crdFromSources, structuralSchema, type JSONSchemaProps } from "../../../src/crd/crd.ts";
import { v1beta1Schema } from "../../../src/crd/conversion-schema.ts";
import type { Json } from "../../../src/lib/conversion.ts";
import { convert, CONVERSION_ANNOTATION_PREFIX, type ConvertibleObject } from "../../../src/resources/conversion.ts";
import type { Kind } from "../../../src/resources/kind.ts";
import { kinds } from "../../../src/resources/registry.ts";

const RUNS = Number(process.env["KEYWARD_MODEL_RUNS"] ?? 100);
const SEED = Number(process.env["KEYWARD_MODEL_SEED"] ?? Date.now() % 2 ** 31);

// ---------------------------------------------------------------- arbitraries from a schema

/** A union of this kind in v1beta1: at `path`, `type` picks the one member that is set. */
interface UnionShape {
  path: string;
  members: Record<string, string>;
}

function patternArb(pattern: string, min: number, max: number): fc.Arbitrary<string> | undefined {
  if (pattern.startsWith("(?")) return undefined;
  try {
    const re = new RegExp(pattern, "u");
    return fc.stringMatching(re).filter((s) => Array.from(s).length >= min && Array.from(s).length <= max);
  } catch {
    return undefined;
  }
}

function stringArb(s: JSONSchemaProps): fc.Arbitrary<string> {
  const min = s.minLength ?? 0;
  const max = Math.min(s.maxLength ?? 24, Math.max(min, 24));
  if (s.format === "date-time")
    return fc.date({ min: new Date(0), max: new Date(4102444800000), noInvalidDate: true }).map((d) => d.toISOString());
  if (s.format === "uuid") return fc.uuid();
  if (s.format === "uri") return fc.webUrl();
  const pattern = s.pattern ? patternArb(s.pattern, min, s.maxLength ?? Infinity) : undefined;
  return pattern ?? fc.string({ minLength: min, maxLength: max });
}

function numberArb(s: JSONSchemaProps): fc.Arbitrary<number> {
  const min = s.minimum ?? -1e6;
  const max = s.maximum ?? 1e6;
  return s.type === "integer"
    ? fc.integer({ min: Math.ceil(min), max: Math.floor(max) })
    : // JSON has no -0 (JSON.stringify writes 0): the apiserver never sends one, and a round trip
      // that turns it into 0 loses nothing (seed 709108080 generated it).
      fc.double({ min, max, noNaN: true, noDefaultInfinity: true }).map((n) => (Object.is(n, -0) ? 0 : n));
}

function arb(s: JSONSchemaProps, path: string, unions: readonly UnionShape[], depth = 0): fc.Arbitrary<Json> {
  const base = ((): fc.Arbitrary<Json> => {
    if (s.enum) return fc.constantFrom(...(s.enum as Json[]));
    if (s["x-kubernetes-int-or-string"]) return fc.oneof(fc.integer(), fc.string({ maxLength: 8 }));
    switch (s.type) {
      case "string":
        return stringArb(s);
      case "integer":
      case "number":
        return numberArb(s);
      case "boolean":
        return fc.boolean();
      case "array":
        return fc.array(arb(s.items ?? {}, `${path}[]`, unions, depth + 1), {
          minLength: s.minItems ?? 0,
          maxLength: Math.min(s.maxItems ?? 3, 3),
        });
      case "object":
        return objectArb(s, path, unions, depth);
      default:
        return fc.jsonValue({ maxDepth: 1 }) as fc.Arbitrary<Json>;
    }
  })();
  return s.nullable ? fc.oneof(fc.constant(null), base) : base;
}

function objectArb(s: JSONSchemaProps, path: string, unions: readonly UnionShape[], depth: number): fc.Arbitrary<Json> {
  if (s.additionalProperties) {
    return fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), arb(s.additionalProperties, `${path}.*`, unions, depth + 1), {
      maxKeys: 3,
    });
  }
  if (!s.properties) return fc.constant({});
  const union = unions.find((u) => u.path === path);
  if (union) {
    // one member, the one type names: the union's own variants
    const props = s.properties;
    return fc
      .constantFrom(...Object.entries(union.members))
      .chain(([type, member]) =>
        fc
          .option(arb(props[member] ?? {}, `${path}.${member}`, unions, depth + 1), { nil: undefined, freq: 8 })
          .map((m) => (m === undefined ? { type } : { type, [member]: m })),
      );
  }
  const model: Record<string, fc.Arbitrary<Json>> = {};
  for (const [key, sub] of Object.entries(s.properties)) model[key] = arb(sub, path ? `${path}.${key}` : key, unions, depth + 1);
  return fc.record(model, { requiredKeys: (s.required ?? []).filter((k) => k in model) });
}

// ---------------------------------------------------------------- fitting a schema

/** Why `value` does not fit `s` as the apiserver reads it (a field it lacks, an enum, a type), or undefined. */
function misfit(s: JSONSchemaProps, value: Json | undefined, path: string, enums = true): string | undefined {
  if (value === undefined) return undefined;
  if (value === null) return s.nullable ? undefined : `${path}: null`;
  if (enums && s.enum && !s.enum.includes(value)) return `${path}: ${JSON.stringify(value)} not in ${JSON.stringify(s.enum)}`;
  if (s["x-kubernetes-preserve-unknown-fields"] && !s.properties) return undefined;
  switch (s.type) {
    case "string":
      return typeof value === "string" ? undefined : `${path}: not a string`;
    case "integer":
    case "number":
      return typeof value === "number" ? undefined : `${path}: not a number`;
    case "boolean":
      return typeof value === "boolean" ? undefined : `${path}: not a boolean`;
    case "array":
      if (!Array.isArray(value)) return `${path}: not a list`;
      return value.map((v, i) => misfit(s.items ?? {}, v, `${path}[${i}]`, enums)).find(Boolean);
    case "object": {
      if (typeof value !== "object" || Array.isArray(value)) return `${path}: not an object`;
      for (const [k, v] of Object.entries(value)) {
        const sub = s.properties?.[k] ?? s.additionalProperties;
        if (!sub) {
          if (s.properties) return `${path}.${k}: no such field (pruned)`;
          continue;
        }
        const bad = misfit(sub, v, `${path}.${k}`, enums);
        if (bad) return bad;
      }
      return undefined;
    }
    default:
      return undefined;
  }
}

// ---------------------------------------------------------------- the kinds

interface Case {
  kind: Kind;
  alpha: JSONSchemaProps;
  beta: JSONSchemaProps;
  /** v1alpha1 specs drawn per variant of the kind's zod union (else the merged CRD spec only). */
  alphaVariants: JSONSchemaProps[];
  betaUnions: UnionShape[];
}

function caseOf(kind: Kind): Case {
  const alpha = crdFromSources(kind.crd).spec.versions[0]?.schema.openAPIV3Schema ?? {};
  const def = kind.crd.spec._zod.def as { type: string; options?: z.ZodType[] };
  const alphaVariants = def.type === "union" && def.options ? def.options.map((o) => structuralSchema(o)) : [];
  const betaUnions = kind.conversion.edits.flatMap((e) =>
    e.op === "union" ? [{ path: e.union, members: Object.fromEntries(Object.values(e.members).map((m) => [m.type, m.member])) }] : [],
  );
  return { kind, alpha, beta: v1beta1Schema(kind), alphaVariants, betaUnions };
}

const cases = kinds.map(caseOf);
for (const c of cases) Object.defineProperty(c, fc.toStringMethod, { value: () => c.kind.ref.kind });

const durable = {
  "keyward.dev/external-id": "ext-1",
  "keyward.dev/create-started": "2026-01-01T00:00:00Z",
  "handled.keyward.dev/sync": "v1",
  "keyward.dev/sync-requested-at": "2026-01-01T00:00:00Z",
};

/**
 * Objects of a kind in `version`. `narrowed` is false for a v1alpha1 spec drawn from the merged
 * union, whose per-destination enums only CEL checks there (`scope: ""` on code-host) and v1beta1's
 * members check structurally: such an object cannot be stored, so its enums are not held to v1beta1's.
 */
function objectArbOf(c: Case, version: "v1alpha1" | "v1beta1"): fc.Arbitrary<{ obj: ConvertibleObject; narrowed: boolean }> {
  const root = version === "v1alpha1" ? c.alpha : c.beta;
  const merged = arb(root.properties?.["spec"] ?? {}, "spec", version === "v1beta1" ? c.betaUnions : []).map((sp) => ({
    sp,
    narrowed: version === "v1beta1" || c.alphaVariants.length === 0,
  }));
  const spec = fc.oneof(
    merged,
    ...(version === "v1alpha1" ? c.alphaVariants : []).map((v) => arb(v, "spec", []).map((sp) => ({ sp, narrowed: true }))),
  );
  const status = arb(root.properties?.["status"] ?? {}, "status", []);
  const metadata = fc.record(
    {
      name: fc.constant("x"),
      uid: fc.uuid(),
      // never an empty map: the apiserver drops one (ObjectMeta's omitempty)
      annotations: fc.subarray(Object.entries(durable), { minLength: 1 }).map((e) => Object.fromEntries(e)),
      labels: fc.dictionary(fc.constantFrom("app", "team"), fc.string({ maxLength: 5 })),
      finalizers: fc.constant(["keyward.dev/finalizer"]),
    },
    { requiredKeys: ["name"] },
  );
  return fc
    .record({ metadata, spec, status: fc.option(status, { nil: undefined }) })
    .map(({ metadata: m, spec: { sp, narrowed }, status: st }) => {
      const obj: Record<string, unknown> = { apiVersion: `keyward.dev/${version}`, kind: c.kind.ref.kind, metadata: m, spec: sp };
      if (st !== undefined) obj["status"] = st;
      return { obj: obj as ConvertibleObject, narrowed };
    });
}

/** `metadata` without the conversion annotations, an annotations map emptied by that gone unless `original` had one. */
function withoutConversionAnnotations(metadata: Record<string, Json> | undefined, original: Record<string, Json> | undefined): unknown {
  const annotations = metadata?.["annotations"];
  if (!metadata || typeof annotations !== "object" || annotations === null || Array.isArray(annotations)) return metadata;
  const kept = Object.fromEntries(Object.entries(annotations).filter(([k]) => !k.startsWith(CONVERSION_ANNOTATION_PREFIX)));
  const { annotations: _a, ...rest } = metadata;
  return Object.keys(kept).length > 0 || original?.["annotations"] !== undefined ? { ...rest, annotations: kept } : rest;
}

describe("conversion round trips over generated objects", () => {
  const tally = new Map<string, { objects: number; annotated: number }>();
  const count = (what: string, annotated: boolean): void => {
    const t = tally.get(what) ?? { objects: 0, annotated: 0 };
    t.objects++;
    if (annotated) t.annotated++;
    tally.set(what, t);
  };

  for (const [from, to] of [
    ["v1alpha1", "v1beta1"],
    ["v1beta1", "v1alpha1"],
  ] as const) {
    it(`${from} → ${to} → ${from} is the identity, and ${to} fits its schema (seed ${SEED})`, () => {
      const arbitrary = fc.constantFrom(...cases).chain((c) => objectArbOf(c, from).map(({ obj, narrowed }) => ({ c, obj, narrowed })));
      fc.assert(
        fc.property(arbitrary, ({ c, obj, narrowed }) => {
          const there = convert(obj, to);
          const bad = misfit(to === "v1beta1" ? c.beta : c.alpha, { ...there, metadata: {} }, "", narrowed);
          if (bad) throw new Error(`${c.kind.ref.kind} in ${to} does not fit its schema: ${bad}`);
          expect(withoutConversionAnnotations(there.metadata, obj.metadata)).toEqual(obj.metadata);
          const annotated =
            there.metadata?.["annotations"] !== undefined && JSON.stringify(there.metadata).includes(CONVERSION_ANNOTATION_PREFIX);
          count(`${c.kind.ref.kind} ${from}`, annotated);
          expect(convert(there, from)).toEqual(obj);
        }),
        { numRuns: RUNS * cases.length, seed: SEED },
      );
      const lines = [...tally]
        .filter(([k]) => k.endsWith(from))
        .map(([k, t]) => `${k}: ${t.objects} (${t.annotated} needed the annotation)`);
      console.log(
        `${from} → ${to} → ${from}: ${RUNS * cases.length} objects, seed ${SEED} (KEYWARD_MODEL_SEED=${SEED} replays)\n  ${lines.join("\n  ")}`,
      );
      // every kind was drawn, and the lossless path was taken as well as the plain one
      expect(new Set([...tally.keys()].filter((k) => k.endsWith(from))).size).toBe(cases.length);
    }, 300_000);
  }
});
