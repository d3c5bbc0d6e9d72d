// The derived v1beta1 schemas without an apiserver (test/integration/crd/v1beta1.test.ts applies
// them to one): no CEL rule or column still reads a v1alpha1 name, each SecretSync member holds its
// destination's fields only, and what the review names is where it says.
import { describe, expect, it } from "vitest";
import { v1beta1Schema, v1beta1UnionMembers, v1beta1Version } from "../../../src/crd/conversion-schema.ts";
import type { JSONSchemaProps } from "../../../src/crd/types.ts";
import { kinds } from "../../../src/resources/registry.ts";

function rulesOf(node: JSONSchemaProps): string[] {
  return [
    ...(node["x-kubernetes-validations"] ?? []).map((r) => r.rule),
    ...Object.values(node.properties ?? {}).flatMap(rulesOf),
    ...(node.items ? rulesOf(node.items) : []),
  ];
}

const kindNamed = (name: string) => kinds.find((k) => k.ref.kind === name)!;
const spec = (name: string): JSONSchemaProps => v1beta1Schema(kindNamed(name)).properties!["spec"]!;

describe("v1beta1 schemas", () => {
  it("no rule or printer column reads a field v1beta1 renamed", () => {
    for (const kind of kinds) {
      const old = kind.conversion.edits.flatMap((e) =>
        e.op === "rename"
          ? [e.from.split(".").pop()!]
          : e.op === "presence"
            ? [e.flag, ...Object.keys(e.fields)]
            : e.op === "union"
              ? [e.config.split(".").pop()!]
              : [],
      );
      const version = v1beta1Version(kind);
      const texts = [...rulesOf(version.schema.openAPIV3Schema), ...(version.additionalPrinterColumns ?? []).map((c) => c.jsonPath)];
      for (const name of old) for (const text of texts) expect(text, kind.ref.kind).not.toMatch(new RegExp(`\\.${name}\\b`));
    }
  });

  it("SecretSync: destination is a union whose members list only their destination's fields", () => {
    const destination = spec("SecretSync").properties!["destination"]!;
    expect(destination.required).toEqual(["type"]);
    expect(Object.keys(destination.properties!)).toEqual([
      "type",
      "workflowEngine",
      "codeHost",
      "dataPlatform",
      "cloudSecretsManager",
      "appPlatform",
      "gitHost",
      "monitoring",
    ]);
    expect(Object.keys(destination.properties!["codeHost"]!.properties!).sort()).toEqual([
      "org",
      "scope",
      "selectedRepositoryIDs",
      "visibility",
    ]);
    expect(Object.keys(destination.properties!["cloudSecretsManager"]!.properties!).sort()).toEqual([
      "keyID",
      "mappingBehavior",
      "region",
      "syncSecretMetadataAsTags",
      "tags",
    ]);
    expect(Object.keys(spec("SecretSync").properties!["syncOptions"]!.properties!)).toEqual([
      "initialSyncBehavior",
      "keySchema",
      "disableSecretDeletion",
    ]);
    // one membership rule instead of the flat object's rules
    expect(destination["x-kubernetes-validations"]).toHaveLength(1);
    expect(rulesOf(spec("SecretSync")).length).toBeLessThan(12);
  });

  it("every kind's conditions are a list-map keyed by type, with date-time times", () => {
    for (const kind of kinds) {
      const conditions = v1beta1Schema(kind).properties!["status"]!.properties!["conditions"]!;
      expect(conditions["x-kubernetes-list-type"], kind.ref.kind).toBe("map");
      expect(conditions["x-kubernetes-list-map-keys"]).toEqual(["type"]);
      expect(conditions.items!.properties!["lastTransitionTime"]!.format).toBe("date-time");
    }
  });

  it("ProjectMembership: a temporary role is an optional struct with its mode defaulted", () => {
    const role = spec("ProjectMembership").properties!["roles"]!.items!;
    expect(Object.keys(role.properties!)).toEqual(["role", "temporary"]);
    expect(role.properties!["temporary"]!.required).toEqual(["mode", "range", "startTime"]);
    expect(role.properties!["temporary"]!.properties!["mode"]).toMatchObject({ enum: ["Relative"], default: "Relative" });
  });
});

describe("v1beta1UnionMembers (the destination pages' tables)", () => {
  const members = v1beta1UnionMembers(kindNamed("SecretSync"));
  const member = (from: string) => members.find((m) => m.from === from)!;

  it("one per destination, each with its v1alpha1 value, its type, and its struct as the v1beta1 schema has it", () => {
    expect(members.map((m) => [m.from, m.type, m.member])).toContainEqual(["code-host", "CodeHost", "codeHost"]);
    expect(members).toHaveLength(7);
    const union = spec("SecretSync").properties!["destination"]!;
    for (const m of members) expect(m.struct).toEqual(union.properties![m.member]);
  });

  it("each variant's spec in v1beta1: its own initialSyncBehavior values, respelled, and no field the union took", () => {
    const behaviors = (from: string) => member(from).spec.properties!["syncOptions"]!.properties!["initialSyncBehavior"]!.enum;
    expect(behaviors("code-host")).toEqual(["OverwriteDestination"]);
    expect(behaviors("cloud-secrets-manager")).toEqual(["OverwriteDestination", "ImportPrioritizeSource", "ImportPrioritizeDestination"]);
    for (const m of members) {
      expect(Object.keys(m.spec.properties!), m.from).not.toContain("destination");
      expect(Object.keys(m.spec.properties!), m.from).not.toContain("destinationConfig");
      expect(Object.keys(m.spec.properties!), m.from).toContain("connectionID");
      expect(Object.keys(m.spec.properties!["syncOptions"]!.properties!), m.from).not.toContain("keyID");
    }
    expect(Object.keys(member("cloud-secrets-manager").struct.properties!)).toEqual(expect.arrayContaining(["keyID", "tags"]));
  });

  it("none for a kind without a union", () => {
    expect(v1beta1UnionMembers(kindNamed("Project"))).toEqual([]);
  });
});
