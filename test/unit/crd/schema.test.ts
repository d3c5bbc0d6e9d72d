import { describe, expect, it } from "vitest";
import { z } from "zod";
import { immutable, structuralSchema, structuralViolations, validations } from "../../../src/crd/crd.ts";
import type { JSONSchemaProps } from "../../../src/crd/crd.ts";

function field(schema: z.ZodType): JSONSchemaProps {
  return structuralSchema(z.object({ f: schema })).properties?.f ?? {};
}

function isRequired(schema: z.ZodType): boolean {
  return structuralSchema(z.object({ f: schema })).required?.includes("f") ?? false;
}

describe("strings", () => {
  it("carries lengths, patterns and enums", () => {
    expect(field(z.string().min(1).max(64))).toEqual({ type: "string", minLength: 1, maxLength: 64 });
    expect(field(z.string().length(5))).toEqual({ type: "string", minLength: 5, maxLength: 5 });
    expect(field(z.string().regex(/^[a-z]+$/))).toEqual({ type: "string", pattern: "^[a-z]+$" });
    expect(field(z.string().regex(/^ab/i))).toEqual({ type: "string", pattern: "(?i)^ab" });
    expect(field(z.string().startsWith("ab").endsWith("yz")).allOf).toHaveLength(2);
    expect(field(z.enum(["a", "b"]))).toEqual({ type: "string", enum: ["a", "b"] });
  });

  it("keeps formats the apiserver validates and drops the rest", () => {
    expect(field(z.email())).toEqual({ type: "string", format: "email" });
    expect(field(z.iso.datetime({ offset: true }))).toEqual({ type: "string", format: "date-time" });
    expect(field(z.iso.date())).toEqual({ type: "string", format: "date" });
    expect(field(z.url())).toEqual({ type: "string", format: "uri" });
    expect(field(z.ipv4())).toEqual({ type: "string", format: "ipv4" });
    expect(field(z.base64())).toEqual({ type: "string", format: "byte" });
    // zod's uuid is stricter than the apiserver's: the pattern stays beside the format
    const uuid = field(z.uuid());
    expect(uuid.format).toBe("uuid");
    expect(uuid.pattern).toMatch(/^\^/);
    // a UTC-only date-time is narrower than RFC 3339: pattern beside the format
    expect(field(z.iso.datetime()).pattern).toBeDefined();
    // formats the apiserver does not know: no format, zod's pattern
    const jwt = field(z.jwt());
    expect(jwt.format).toBeUndefined();
    const ulid = field(z.ulid());
    expect(ulid.format).toBeUndefined();
    expect(ulid.pattern).toBeDefined();
  });
});

describe("numbers", () => {
  it("maps int, bounds and exclusivity", () => {
    expect(field(z.number().int().min(1).max(100))).toEqual({ type: "integer", minimum: 1, maximum: 100 });
    expect(field(z.int())).toEqual({ type: "integer" });
    expect(field(z.number().gt(0).lt(1))).toEqual({
      type: "number",
      minimum: 0,
      exclusiveMinimum: true,
      maximum: 1,
      exclusiveMaximum: true,
    });
    expect(field(z.int32())).toEqual({ type: "integer", minimum: -2147483648, maximum: 2147483647 });
    expect(field(z.int32().min(0))).toEqual({ type: "integer", minimum: 0, maximum: 2147483647 });
    expect(field(z.number().multipleOf(5))).toEqual({ type: "number", multipleOf: 5 });
  });
});

describe("literals", () => {
  it("become enums of their JSON type", () => {
    expect(field(z.literal("x"))).toEqual({ type: "string", enum: ["x"] });
    expect(field(z.literal([1, 2]))).toEqual({ type: "integer", enum: [1, 2] });
    expect(field(z.literal(true))).toEqual({ type: "boolean", enum: [true] });
    expect(() => field(z.literal(["a", 1]))).toThrow(/one JSON type/);
  });
});

describe("objects", () => {
  it("marks required fields as zod's input needs them", () => {
    expect(isRequired(z.string())).toBe(true);
    expect(isRequired(z.string().optional())).toBe(false);
    expect(isRequired(z.string().default("x"))).toBe(false);
    expect(isRequired(z.string().nullish())).toBe(false);
    expect(isRequired(z.string().catch("x"))).toBe(false);
    expect(isRequired(z.string().transform((s) => s.length))).toBe(true);
    expect(
      isRequired(
        z
          .string()
          .optional()
          .transform((s) => s ?? ""),
      ),
    ).toBe(false);
  });

  it("describes the input of pipes and transforms", () => {
    expect(field(z.string().transform((s) => s.length))).toEqual({ type: "string" });
    expect(field(z.preprocess((v) => v, z.number().int()))).toEqual({ type: "integer" });
    expect(field(z.string().pipe(z.string().min(2)))).toEqual({ type: "string" });
  });

  it("carries defaults, nullability and free-form fields", () => {
    expect(field(z.number().int().default(10))).toEqual({ type: "integer", default: 10 });
    expect(field(z.object({ a: z.string().optional() }).default({}))).toEqual({
      type: "object",
      default: {},
      properties: { a: { type: "string" } },
    });
    expect(field(z.string().prefault("p"))).toEqual({ type: "string", default: "p" });
    expect(field(z.string().nullable())).toEqual({ type: "string", nullable: true });
    expect(field(z.union([z.string(), z.null()]))).toEqual({ type: "string", nullable: true });
    // the apiserver checks null against enum even on nullable nodes: a nullable enum is a CEL rule
    expect(field(z.enum(["a", "b"]).nullable())).toEqual({
      type: "string",
      nullable: true,
      "x-kubernetes-validations": [{ rule: "self in ['a', 'b']", message: "must be one of a, b" }],
    });
    expect(field(z.literal([1, null]))).toEqual({
      type: "integer",
      nullable: true,
      "x-kubernetes-validations": [{ rule: "self in [1]", message: "must be one of 1" }],
    });
    expect(field(z.unknown())).toEqual({ "x-kubernetes-preserve-unknown-fields": true });
    expect(field(z.any().optional())).toEqual({ "x-kubernetes-preserve-unknown-fields": true });
  });

  it("preserves unknown fields of loose objects only", () => {
    expect(field(z.object({ a: z.string() }).loose())).toEqual({
      type: "object",
      properties: { a: { type: "string" } },
      required: ["a"],
      "x-kubernetes-preserve-unknown-fields": true,
    });
    expect(field(z.object({ a: z.string() }).strict())["x-kubernetes-preserve-unknown-fields"]).toBeUndefined();
    expect(field(z.object({ a: z.string() }))["x-kubernetes-preserve-unknown-fields"]).toBeUndefined();
  });

  it("merges intersections of objects", () => {
    const node = field(z.intersection(z.object({ a: z.string() }), z.object({ b: z.number().optional() })));
    expect(node.properties).toEqual({ a: { type: "string" }, b: { type: "number" } });
    expect(node.required).toEqual(["a"]);
  });
});

describe("arrays, records and tuples", () => {
  it("carries item bounds", () => {
    expect(field(z.array(z.string().max(3)).min(1).max(5))).toEqual({
      type: "array",
      minItems: 1,
      maxItems: 5,
      items: { type: "string", maxLength: 3 },
    });
  });

  it("maps string-keyed records to additionalProperties and enum-keyed ones to properties", () => {
    expect(field(z.record(z.string(), z.number()))).toEqual({ type: "object", additionalProperties: { type: "number" } });
    expect(field(z.record(z.enum(["a", "b"]), z.string()))).toEqual({
      type: "object",
      properties: { a: { type: "string" }, b: { type: "string" } },
      required: ["a", "b"],
    });
    expect(field(z.partialRecord(z.enum(["a"]), z.string())).required).toBeUndefined();
    expect(() => field(z.record(z.string().max(3), z.string()))).toThrow(/record keys/);
  });

  it("maps a tuple of one item shape to a fixed-length array and refuses mixed ones", () => {
    expect(field(z.tuple([z.string(), z.string()]))).toEqual({ type: "array", items: { type: "string" }, minItems: 2, maxItems: 2 });
    expect(() => field(z.tuple([z.string(), z.number()]))).toThrow(/one shape/);
  });
});

describe("metadata", () => {
  it("takes descriptions from describe() and meta(), the outermost winning", () => {
    expect(field(z.string().describe("inner")).description).toBe("inner");
    expect(field(z.string().meta({ description: "meta" })).description).toBe("meta");
    expect(field(z.string().describe("inner").optional()).description).toBe("inner");
    expect(field(z.string().describe("inner").optional().describe("outer")).description).toBe("outer");
    expect(field(z.string().describe("d").default("x"))).toEqual({ description: "d", type: "string", default: "x" });
  });

  it("carries CEL rules and list and map types from meta()", () => {
    const node = field(
      z.array(z.object({ name: z.string() })).meta({
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
        ...validations({ rule: "size(self) <= 3", message: "at most 3" }),
      }),
    );
    expect(node["x-kubernetes-list-type"]).toBe("map");
    expect(node["x-kubernetes-list-map-keys"]).toEqual(["name"]);
    expect(node["x-kubernetes-validations"]).toEqual([{ rule: "size(self) <= 3", message: "at most 3" }]);
    expect(field(z.record(z.string(), z.string()).meta({ "x-kubernetes-map-type": "atomic" }))["x-kubernetes-map-type"]).toBe("atomic");
  });

  it("makes a field immutable with a transition rule", () => {
    expect(field(z.string().meta(immutable("slug is immutable")))["x-kubernetes-validations"]).toEqual([
      { rule: "self == oldSelf", message: "slug is immutable" },
    ]);
    // rules on the inner schema and on the wrapper both apply
    const both = field(
      z
        .string()
        .meta(immutable("a"))
        .optional()
        .meta(validations({ rule: "self != ''", message: "b" })),
    );
    expect(both["x-kubernetes-validations"]?.map((r) => r.message)).toEqual(["a", "b"]);
  });

  it("refuses unknown extensions and malformed rules", () => {
    expect(() => field(z.string().meta({ "x-kubernetes-validation": [] }))).toThrow(/unknown schema extension/);
    expect(() => field(z.string().meta({ "x-kubernetes-validations": [{ rule: "true" }] }))).toThrow(/message/);
  });
});

describe("structural guarantees", () => {
  it("inlines reused and registered schemas: no $ref anywhere", () => {
    const shared = z.string().min(1).meta({ id: "Shared" });
    const schema = z.object({ a: shared, b: z.object({ c: shared }) });
    const out = structuralSchema(schema);
    expect(JSON.stringify(out)).not.toContain("$ref");
    expect(out.properties?.b?.properties?.c).toEqual({ type: "string", minLength: 1 });
  });

  it("gives every node a type (or preserve-unknown-fields)", () => {
    const out = structuralSchema(
      z.object({
        a: z.string(),
        b: z.array(z.object({ c: z.number(), d: z.unknown() })),
        e: z.record(z.string(), z.object({ f: z.boolean() })),
      }),
    );
    expect(structuralViolations(out)).toEqual([]);
    expect(structuralViolations({ properties: { a: {} } })).toEqual([
      "<root>: no type",
      "<root>: properties on a non-object",
      "<root>.a: no type",
    ]);
  });

  it("refuses what has no structural form, naming the field", () => {
    expect(() => structuralSchema(z.object({ when: z.date() }))).toThrow(/when: z.date\(\)/);
    expect(() => structuralSchema(z.object({ n: z.bigint() }))).toThrow(/n: z.bigint\(\)/);
    expect(() => structuralSchema(z.object({ m: z.map(z.string(), z.string()) }))).toThrow(/m: z.map\(\)/);
    interface Tree {
      children: Tree[];
    }
    const tree: z.ZodType<Tree> = z.lazy(() => z.object({ children: z.array(tree) }));
    expect(() => structuralSchema(tree)).toThrow(/recursive/);
  });
});
