import { describe, expect, it } from "vitest";
import { z } from "zod";
import { structuralSchema, validations } from "../../../src/crd/crd.ts";
import type { JSONSchemaProps, ValidationRule } from "../../../src/crd/crd.ts";
import { exampleSpec } from "./secret-sync-example.ts";

function rules(node: JSONSchemaProps): ValidationRule[] {
  return node["x-kubernetes-validations"] ?? [];
}

function ruleWithMessage(node: JSONSchemaProps, message: string): ValidationRule | undefined {
  return rules(node).find((r) => r.message === message);
}

describe("a discriminated union shaped like SecretSync", () => {
  const spec = structuralSchema(exampleSpec);
  const destinationConfig = spec.properties?.destinationConfig ?? {};
  const syncOptions = spec.properties?.syncOptions ?? {};

  it("is one object with the union of every variant's properties, no oneOf/anyOf", () => {
    expect(spec.type).toBe("object");
    expect(JSON.stringify(spec)).not.toMatch(/"(oneOf|anyOf)"/);
    expect(Object.keys(destinationConfig.properties ?? {})).toEqual([
      "scope",
      "org",
      "visibility",
      "selectedRepositoryIds",
      "clusterUUID",
      "mappingBehavior",
      "region",
    ]);
    expect(Object.keys(syncOptions.properties ?? {})).toEqual([
      "initialSyncBehavior",
      "keySchema",
      "disableSecretDeletion",
      "keyId",
      "tags",
      "syncSecretMetadataAsTags",
    ]);
    expect(spec.description).toBe("A sync of one project environment to one destination.");
  });

  it("makes the discriminator an enum of every value, keeping its rules", () => {
    expect(spec.properties?.destination).toEqual({
      type: "string",
      enum: ["code-host", "workflow-engine", "cloud-secrets-manager"],
      "x-kubernetes-validations": [{ rule: "self == oldSelf", message: "destination is immutable" }],
    });
  });

  it("requires only what every variant requires", () => {
    expect(spec.required).toEqual(["name", "connectionId", "environment", "destination", "destinationConfig", "syncOptions"]);
    expect(destinationConfig.required).toBeUndefined();
  });

  it("loosens a field an enum in one variant and a free string in another, keeping the longest length either allows", () => {
    // workflow-engine: 1 to 64 characters; code-host: "organization" (12): at most 64 either way
    expect(destinationConfig.properties?.scope).toEqual({ type: "string", maxLength: 64 });
  });

  it("keeps defaults all variants share and drops those of variant-only fields", () => {
    expect(syncOptions.properties?.initialSyncBehavior?.default).toBe("overwrite-destination");
    expect(syncOptions.properties?.syncSecretMetadataAsTags).toEqual({ type: "boolean" });
  });

  it("restores what a variant requires", () => {
    expect(ruleWithMessage(spec, "destination code-host requires destinationConfig.org")).toEqual({
      rule: "self.destination != 'code-host' || !has(self.destinationConfig) || has(self.destinationConfig.org)",
      message: "destination code-host requires destinationConfig.org",
      reason: "FieldValueRequired",
      fieldPath: ".destinationConfig.org",
    });
  });

  it("forbids fields a variant does not have", () => {
    expect(ruleWithMessage(spec, "destinationConfig.clusterUUID is not allowed for destination code-host")).toEqual({
      rule: "self.destination != 'code-host' || !has(self.destinationConfig) || !has(self.destinationConfig.clusterUUID)",
      message: "destinationConfig.clusterUUID is not allowed for destination code-host",
      reason: "FieldValueForbidden",
      fieldPath: ".destinationConfig.clusterUUID",
    });
    expect(ruleWithMessage(spec, "syncOptions.tags is not allowed for destination workflow-engine")).toBeDefined();
    expect(ruleWithMessage(spec, "syncOptions.tags is not allowed for destination cloud-secrets-manager")).toBeUndefined();
  });

  it("restores a variant's enum and bounds on a loosened field", () => {
    expect(ruleWithMessage(spec, "destinationConfig.scope must be organization for destination code-host")?.rule).toBe(
      "self.destination != 'code-host' || !has(self.destinationConfig) || !has(self.destinationConfig.scope) || self.destinationConfig.scope == 'organization'",
    );
    expect(ruleWithMessage(spec, "destinationConfig.scope must be at least 1 character for destination workflow-engine")?.rule).toBe(
      "self.destination != 'workflow-engine' || !has(self.destinationConfig) || !has(self.destinationConfig.scope) || size(self.destinationConfig.scope) >= 1",
    );
    // the merged maxLength (64) already says what workflow-engine's bound says
    expect(ruleWithMessage(spec, "destinationConfig.scope must be at most 64 characters for destination workflow-engine")).toBeUndefined();
  });

  it("writes no rule for what the merged schema already says", () => {
    // fields every variant shares unchanged (name, environment, ...) need no rule
    expect(rules(spec).some((r) => r.fieldPath === ".name" || r.fieldPath === ".syncOptions.initialSyncBehavior")).toBe(false);
    // each rule is a chain of cheap checks: no macros, no regex over unbounded strings
    expect(rules(spec).every((r) => !/\.(all|exists|map|filter)\(/.test(r.rule))).toBe(true);
  });
});

describe("unions", () => {
  it("finds the discriminator of a plain union of objects", () => {
    const node = structuralSchema(
      z.union([z.object({ kind: z.literal("a"), x: z.string() }), z.object({ kind: z.literal("b"), y: z.number() })]),
    );
    expect(node.properties?.kind?.enum).toEqual(["a", "b"]);
    expect(rules(node).map((r) => r.message)).toEqual([
      "kind a requires x",
      "y is not allowed for kind a",
      "x is not allowed for kind b",
      "kind b requires y",
    ]);
  });

  it("requires a full match of some variant when there is no discriminator", () => {
    const node = structuralSchema(z.union([z.object({ a: z.string() }), z.object({ b: z.string() })]));
    expect(node.properties).toEqual({ a: { type: "string" }, b: { type: "string" } });
    expect(rules(node)).toEqual([
      { rule: "((has(self.a)) && (!has(self.b))) || ((!has(self.a)) && (has(self.b)))", message: "must match one of the shapes {a}, {b}" },
    ]);
  });

  it("writes no rule when one variant accepts everything the merged schema does", () => {
    const node = structuralSchema(z.union([z.object({ a: z.string().optional() }), z.object({ a: z.string().optional() })]));
    expect(rules(node)).toEqual([]);
  });

  it("puts the rules of a nested union on the nested object", () => {
    const node = structuralSchema(
      z.object({
        name: z.string(),
        auth: z.discriminatedUnion("method", [
          z.object({ method: z.literal("token"), token: z.string() }),
          z.object({ method: z.literal("basic"), user: z.string(), password: z.string() }),
        ]),
      }),
    );
    expect(rules(node)).toEqual([]);
    const auth = node.properties?.auth ?? {};
    expect(auth.required).toEqual(["method"]);
    expect(ruleWithMessage(auth, "method basic requires password")?.rule).toBe("self.method != 'basic' || has(self.password)");
  });

  it("guards a variant's own object-level rules with its discriminator", () => {
    const node = structuralSchema(
      z.discriminatedUnion("kind", [
        z.object({ kind: z.literal("a"), n: z.number() }).meta(validations({ rule: "self.n > 1", message: "n > 1" })),
        z.object({ kind: z.literal("b"), n: z.number() }),
      ]),
    );
    expect(rules(node)).toContainEqual({ rule: "self.kind != 'a' || self.n > 1", message: "n > 1" });
  });

  it("keeps object-level rules every variant shares unguarded", () => {
    const shared = validations({ rule: "has(self.n)", message: "n" });
    const node = structuralSchema(
      z.discriminatedUnion("kind", [
        z.object({ kind: z.literal("a"), n: z.number().optional() }).meta(shared),
        z.object({ kind: z.literal("b"), n: z.number().optional() }).meta(shared),
      ]),
    );
    expect(rules(node)).toEqual([{ rule: "has(self.n)", message: "n" }]);
  });

  it("refuses variants that disagree on a field's type, naming it", () => {
    expect(() =>
      structuralSchema(
        z.object({
          spec: z.discriminatedUnion("kind", [
            z.object({ kind: z.literal("a"), v: z.string() }),
            z.object({ kind: z.literal("b"), v: z.number() }),
          ]),
        }),
      ),
    ).toThrow(/spec\.v: variants of a union disagree on type/);
  });

  it("merges unions of scalars", () => {
    expect(structuralSchema(z.union([z.literal("a"), z.literal("b")]))).toEqual({ type: "string", enum: ["a", "b"] });
    expect(structuralSchema(z.union([z.enum(["a"]), z.string()]))).toEqual({ type: "string" });
    expect(structuralSchema(z.union([z.number().int(), z.string()]))).toEqual({ "x-kubernetes-int-or-string": true });
    expect(() => structuralSchema(z.union([z.string(), z.boolean()]))).toThrow(/cannot be expressed/);
    expect(() => structuralSchema(z.union([z.string().min(2), z.string().max(1)]))).toThrow(/differently constrained/);
  });
});
