// `kubectl explain` prints nothing for a field without a description: every property of every
// kind's spec and status, in every version of its generated CRD, carries one.
import { describe, expect, it } from "vitest";
import { crdFromSources, type JSONSchemaProps } from "../../../src/crd/crd.ts";
import { kinds } from "../../../src/resources/registry.ts";

/** The paths (kubectl explain's dotted form, `[]` for array items, `*` for map values) of properties without a description. */
function undescribed(node: JSONSchemaProps, path: string): string[] {
  const out: string[] = [];
  const blank = (n: JSONSchemaProps): boolean => typeof n.description !== "string" || n.description.trim() === "";
  for (const [key, child] of Object.entries(node.properties ?? {})) {
    const at = `${path}.${key}`;
    if (blank(child)) out.push(at);
    out.push(...undescribed(child, at));
  }
  if (node.items) out.push(...undescribed(node.items, `${path}[]`));
  if (node.additionalProperties) out.push(...undescribed(node.additionalProperties, `${path}.*`));
  return out;
}

describe("every CRD field has a description", () => {
  const versions = kinds.flatMap((k) =>
    crdFromSources(k.crd).spec.versions.map((v) => ({ name: `${k.ref.kind} ${v.name}`, schema: v.schema.openAPIV3Schema })),
  );

  it("covers every kind", () => {
    expect(versions.length).toBeGreaterThanOrEqual(kinds.length);
  });

  it.each(versions)("$name: spec and status", ({ schema }) => {
    const missing = ["spec", "status"].flatMap((part) => {
      const node = schema.properties?.[part];
      if (!node) return [];
      return [...(typeof node.description === "string" && node.description.trim() !== "" ? [] : [part]), ...undescribed(node, part)];
    });
    expect(missing).toEqual([]);
  });

  it("finds a property without a description, nested in arrays and maps", () => {
    const node: JSONSchemaProps = {
      type: "object",
      properties: {
        a: { type: "string", description: "A." },
        b: { type: "array", description: "B.", items: { type: "object", properties: { c: { type: "string" } } } },
        d: {
          type: "object",
          description: "D.",
          additionalProperties: { type: "object", properties: { e: { type: "string", description: " " } } },
        },
      },
    };
    expect(undescribed(node, "spec")).toEqual(["spec.b[].c", "spec.d.*.e"]);
  });
});
