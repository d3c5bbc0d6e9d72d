// Issue 16 §6, bad input tried in bulk: the spec schemas of every kind against generated input.
// Arbitrary values (any JS value, any JSON value) and near-valid specs (the samples in
// config/samples, mutated: wrong types, nulls, removed and unknown fields, strings at and past
// their length limits, lists grown past theirs) — safeParse never throws; the engine's
// InvalidSpec message (specErrorMessage) never throws and stays short whatever the number and
// size of the issues; and a spec the zod schema accepts also passes the generated CRD's
// structural limits (type, length, items, enum, pattern, range, required), which kubectl apply
// enforces. Fixed seeds; fast-check shrinks a failure to a small spec.
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { keywardSamples } from "../../support/samples.ts";
import type { z } from "zod";
import { MAX_SPEC_MESSAGE, specErrorMessage } from "../../../src/engine/errors.ts";
import { crdFromSources } from "../../../src/crd/crd.ts";
import * as accessToken from "../../../src/resources/accesstoken.ts";
import * as certificateProfile from "../../../src/resources/certificateprofile.ts";
import * as clusterProviderConfig from "../../../src/resources/clusterproviderconfig.ts";
import { kinds as registered } from "../../../src/resources/registry.ts";
import * as project from "../../../src/resources/project.ts";
import * as projectMembership from "../../../src/resources/projectmembership.ts";
import * as providerConfig from "../../../src/resources/providerconfig.ts";
import * as secretSync from "../../../src/resources/secretsync.ts";

const SEED = 0x73706563; // "spec"

interface Schema {
  type?: string;
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  items?: Schema;
  required?: string[];
  enum?: unknown[];
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  minimum?: number;
  maximum?: number;
  maxProperties?: number;
  "x-kubernetes-int-or-string"?: boolean;
  "x-kubernetes-preserve-unknown-fields"?: boolean;
}

interface Kind {
  kind: string;
  schema: z.ZodType;
  /** The CRD's openAPIV3Schema of .spec. */
  crd: Schema;
  samples: unknown[];
}

/** The samples' specs of a kind, in v1alpha1: the version these schemas are. */
function samplesOf(kind: string): unknown[] {
  return keywardSamples("v1alpha1")
    .filter((d) => d.kind === kind)
    .map((d) => d.spec);
}

const schemas: Record<string, z.ZodType> = {
  ProviderConfig: providerConfig.specSchema,
  ClusterProviderConfig: clusterProviderConfig.specSchema,
  Project: project.specSchema,
  AccessToken: accessToken.specSchema,
  CertificateProfile: certificateProfile.specSchema,
  ProjectMembership: projectMembership.specSchema,
  SecretSync: secretSync.specSchema,
};

const kinds: Kind[] = registered
  .map((k) => k.crd)
  .map((src) => {
    const root = crdFromSources(src).spec.versions[0]!.schema.openAPIV3Schema as Schema;
    return { kind: src.kind, schema: schemas[src.kind]!, crd: root.properties!["spec"]!, samples: samplesOf(src.kind) };
  });
for (const k of kinds) Object.defineProperty(k, fc.toStringMethod, { value: () => k.kind });

// ---- the CRD's structural limits, as the apiserver checks them (no CEL) ----------------------

/** Code points, as Go's validator counts a string's length (emojis count one each, on purpose). */
const runes = (s: string): number => Array.from(s).length;

/** Why `value` breaks `schema`'s structural limits, or undefined. Lengths count code points, as Go's validator does. */
function crdViolation(schema: Schema, value: unknown, path: string): string | undefined {
  if (schema["x-kubernetes-int-or-string"])
    return typeof value === "string" || Number.isInteger(value) ? undefined : `${path}: not int-or-string`;
  if (schema.enum && !schema.enum.includes(value)) return `${path}: not in enum`;
  switch (schema.type) {
    case "string":
      if (typeof value !== "string") return `${path}: not a string`;
      if (schema.maxLength !== undefined && runes(value) > schema.maxLength) return `${path}: longer than ${schema.maxLength}`;
      if (schema.minLength !== undefined && runes(value) < schema.minLength) return `${path}: shorter than ${schema.minLength}`;
      if (schema.pattern !== undefined && !new RegExp(schema.pattern, "u").test(value)) return `${path}: does not match ${schema.pattern}`;
      return undefined;
    case "integer":
    case "number":
      if (typeof value !== "number" || (schema.type === "integer" && !Number.isInteger(value))) return `${path}: not a ${schema.type}`;
      if (schema.minimum !== undefined && value < schema.minimum) return `${path}: below ${schema.minimum}`;
      if (schema.maximum !== undefined && value > schema.maximum) return `${path}: above ${schema.maximum}`;
      return undefined;
    case "boolean":
      return typeof value === "boolean" ? undefined : `${path}: not a boolean`;
    case "array": {
      if (!Array.isArray(value)) return `${path}: not an array`;
      if (schema.maxItems !== undefined && value.length > schema.maxItems) return `${path}: more than ${schema.maxItems} items`;
      if (schema.minItems !== undefined && value.length < schema.minItems) return `${path}: fewer than ${schema.minItems} items`;
      for (const [i, v] of value.entries()) {
        const bad = schema.items ? crdViolation(schema.items, v, `${path}[${i}]`) : undefined;
        if (bad) return bad;
      }
      return undefined;
    }
    case "object": {
      if (value === null || typeof value !== "object" || Array.isArray(value)) return `${path}: not an object`;
      const obj = value as Record<string, unknown>;
      for (const r of schema.required ?? []) if (!(r in obj)) return `${path}.${r}: required`;
      if (schema.maxProperties !== undefined && Object.keys(obj).length > schema.maxProperties) return `${path}: too many properties`;
      for (const [k, v] of Object.entries(obj)) {
        const sub = schema.properties?.[k] ?? (typeof schema.additionalProperties === "object" ? schema.additionalProperties : undefined);
        const bad = sub ? crdViolation(sub, v, `${path}.${k}`) : undefined;
        if (bad) return bad;
      }
      return undefined;
    }
    default:
      return undefined;
  }
}

// ---- generators ----------------------------------------------------------------------------

const nastyString = fc.oneof(
  fc.string({ unit: "binary", maxLength: 20 }),
  fc.constantFrom(
    "",
    " ",
    "\u0000",
    "\ud800",
    "\u202eabc",
    "😀",
    "-",
    "a".repeat(5),
    "Custom",
    "custom",
    "1h",
    "0s",
    "1e3",
    "2030-01-01T09:00:00Z",
    "not-a-date",
    "__proto__",
  ),
  // At and around the limits of the schemas (64, 128, 253, 256, 1024, 4096), in one- and two-unit characters.
  fc
    .tuple(
      fc.constantFrom(1, 4, 5, 16, 36, 37, 63, 64, 65, 128, 129, 253, 254, 256, 257, 1024, 1025, 4097),
      fc.constantFrom("a", "é", "😀", "-", "0"),
    )
    .map(([n, c]) => c.repeat(n)),
);
const nastyValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  { weight: 3, arbitrary: nastyString },
  { weight: 1, arbitrary: fc.constantFrom(null, true, false, 0, -0, -1, 1.5, 1e308, 2 ** 31, 2 ** 53 + 1, [], {}, [null]) },
);

type Mutation =
  | { kind: "set"; path: number; value: unknown }
  | { kind: "delete"; path: number }
  | { kind: "extra"; path: number; keys: string[]; value: unknown }
  | { kind: "grow"; path: number; times: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("set" as const), path: fc.nat(), value: nastyValue }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("delete" as const), path: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("extra" as const),
      path: fc.nat(),
      keys: fc.oneof(
        fc.array(fc.string({ maxLength: 12 }), { minLength: 1, maxLength: 3 }),
        fc.integer({ min: 50, max: 400 }).map((n) => Array.from({ length: n }, (_, i) => `unknownField${i}${"x".repeat(200)}`)),
      ),
      value: nastyValue,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("grow" as const),
      path: fc.nat(),
      times: fc.constantFrom(2, 31, 32, 33, 999, 1000, 1001, 1500),
    }),
  },
);

function pathsOf(doc: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = [prefix];
  if (Array.isArray(doc)) doc.forEach((v: unknown, i) => out.push(...pathsOf(v, [...prefix, i])));
  else if (doc !== null && typeof doc === "object") for (const [k, v] of Object.entries(doc)) out.push(...pathsOf(v, [...prefix, k]));
  return out;
}

function applyMutation(doc: unknown, m: Mutation): unknown {
  const copy = structuredClone(doc);
  const paths = pathsOf(copy);
  const path = paths[m.path % paths.length]!;
  const at = (p: (string | number)[]): unknown => p.reduce<unknown>((o, k) => (o as Record<string | number, unknown>)[k], copy);
  const target = at(path);
  if (m.kind === "grow") {
    // A list repeated until it holds `times` entries (or, off a list, the value made one).
    const list = Array.isArray(target) && target.length > 0 ? target : [target];
    const grown = Array.from({ length: m.times }, (_, i) => structuredClone(list[i % list.length]) as unknown);
    if (path.length === 0) return grown;
    (at(path.slice(0, -1)) as Record<string | number, unknown>)[path[path.length - 1]!] = grown;
    return copy;
  }
  if (m.kind === "extra") {
    if (target !== null && typeof target === "object" && !Array.isArray(target)) {
      for (const key of m.keys)
        Object.defineProperty(target, key, { value: m.value, enumerable: true, writable: true, configurable: true });
    }
    return copy;
  }
  if (path.length === 0) return m.kind === "set" ? m.value : copy;
  const parent = at(path.slice(0, -1)) as Record<string | number, unknown>;
  const last = path[path.length - 1]!;
  if (m.kind === "set") parent[last] = m.value;
  else if (Array.isArray(parent)) parent.splice(Number(last), 1);
  else Reflect.deleteProperty(parent, last);
  return copy;
}

// ---- the properties ------------------------------------------------------------------------

const counts = new Map<string, number>();
const tally = (what: string): void => void counts.set(what, (counts.get(what) ?? 0) + 1);
afterAll(() => {
  if (process.env["KEYWARD_PROPERTY_STATS"] === "1") console.log("spec schema outcomes", Object.fromEntries([...counts].sort()));
});

/** safeParse; a failure as parseSpec's becomes the InvalidSpec message, a success must pass the CRD too. */
function parseAndDescribe(k: Kind, value: unknown): z.ZodSafeParseResult<unknown> {
  const result = k.schema.safeParse(value);
  if (!result.success) {
    const message = specErrorMessage(result.error);
    if (typeof message !== "string" || message.length === 0) throw new Error(`${k.kind}: empty InvalidSpec message`);
    if (message.length > MAX_SPEC_MESSAGE)
      throw new Error(`${k.kind}: InvalidSpec message of ${message.length} chars (${result.error.issues.length} issues)`);
    return result;
  }
  const bad = crdViolation(k.crd, value, "spec");
  if (bad) throw new Error(`${k.kind}: zod accepts a spec the CRD refuses: ${bad}`);
  return result;
}

describe("spec schemas, property-based", () => {
  it("every kind has samples, and they parse and pass their CRD", () => {
    for (const k of kinds) {
      expect(k.samples.length, k.kind).toBeGreaterThan(0);
      for (const s of k.samples) {
        expect(k.schema.safeParse(s).success, k.kind).toBe(true);
        expect(crdViolation(k.crd, s, "spec"), k.kind).toBeUndefined();
      }
    }
  });

  it("any JS value: safeParse never throws, the InvalidSpec message never throws and stays short, an accepted one passes the CRD", () => {
    const anything = fc.anything({
      maxDepth: 3,
      withBigInt: true,
      withBoxedValues: true,
      withDate: true,
      withMap: true,
      withSet: true,
      withNullPrototype: true,
      withObjectString: true,
      withSparseArray: true,
      withTypedArray: true,
    });
    fc.assert(
      fc.property(fc.constantFrom(...kinds), anything, (k, v) => {
        tally(parseAndDescribe(k, v).success ? "anything accepted" : "anything refused");
      }),
      { seed: SEED, numRuns: 10000 },
    );
  });

  it("any JSON object: the same", () => {
    fc.assert(
      fc.property(fc.constantFrom(...kinds), fc.dictionary(fc.string({ maxLength: 20 }), fc.jsonValue({ maxDepth: 3 })), (k, v) => {
        tally(parseAndDescribe(k, v).success ? "json accepted" : "json refused");
      }),
      { seed: SEED + 1, numRuns: 5000 },
    );
  });

  it("near-valid specs (samples mutated): the same", () => {
    const nearValid = fc
      .tuple(fc.constantFrom(...kinds), fc.nat(), fc.array(mutation, { minLength: 1, maxLength: 3 }))
      .map(([k, i, ms]) => ({ k, spec: ms.reduce(applyMutation, k.samples[i % k.samples.length]) }));
    fc.assert(
      fc.property(nearValid, ({ k, spec }) => {
        tally(parseAndDescribe(k, spec).success ? "near-valid accepted" : "near-valid refused");
      }),
      { seed: SEED + 2, numRuns: 8000 },
    );
  });
});
