// Every string, list and map of every generated CRD, spec and status, has a size bound: a string
// a maxLength (or an enum, or a format whose length the apiserver knows), a list maxItems, a map
// maxProperties. Without one a tenant may store up to the apiserver's object limit in a field
// keyward then parses and copies, and CEL rules are costed as if every string were that long.
// The bounds themselves, and the reason for each number, are in src/resources/common.ts (bounds).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { load } from "js-yaml";
import { describe, expect, it } from "vitest";
import type { JSONSchemaProps } from "../../../src/crd/types.ts";
import { bounds } from "../../../src/resources/common.ts";
import { specSchema as secretSyncSpec } from "../../../src/resources/secretsync-schema.ts";
import { specSchema as cpcSpec } from "../../../src/resources/clusterproviderconfig.ts";

const repoRoot = fileURLToPath(new URL("../../..", import.meta.url));

/** Formats whose values have a fixed, short length the apiserver's CEL cost estimate knows. */
const boundedFormats = new Set(["uuid", "date-time", "date"]);

/** The path of every unbounded string, list or map under `node`, e.g. ".spec.syncOptions.tags[].key: string without maxLength". */
function unboundedFields(node: JSONSchemaProps, path = ""): string[] {
  const out: string[] = [];
  const here = path || "<root>";
  if (node.type === "string" && node.maxLength === undefined && node.enum === undefined && !boundedFormats.has(node.format ?? "")) {
    out.push(`${here}: string without maxLength`);
  }
  if (node.type === "array" && node.maxItems === undefined) out.push(`${here}: array without maxItems`);
  if (node.additionalProperties && node.maxProperties === undefined) out.push(`${here}: map without maxProperties`);
  for (const [key, child] of Object.entries(node.properties ?? {})) out.push(...unboundedFields(child, `${path}.${key}`));
  if (node.items) out.push(...unboundedFields(node.items, `${path}[]`));
  if (node.additionalProperties) out.push(...unboundedFields(node.additionalProperties, `${path}.*`));
  return out;
}

interface CrdFile {
  spec: { names: { kind: string }; versions: { name: string; schema: { openAPIV3Schema: JSONSchemaProps } }[] };
}

// The committed CRDs; test/unit/crd/generated.test.ts checks they are what the schemas generate
// (and the chart's and config/crd's copies the same).
const crdDir = join(repoRoot, "crds");
const files = readdirSync(crdDir).filter((f) => f.endsWith(".yaml"));

describe("every field of every generated CRD is bounded", () => {
  it("finds the CRDs", () => {
    expect(files.length).toBeGreaterThanOrEqual(7);
  });

  it.each(files)("%s", (file) => {
    const crd = load(readFileSync(join(crdDir, file), "utf8")) as CrdFile;
    const problems = crd.spec.versions.flatMap((v) =>
      unboundedFields(v.schema.openAPIV3Schema).map((p) => `${crd.spec.names.kind} ${v.name} ${p}`),
    );
    expect(problems).toEqual([]);
  });
});

describe("the walker", () => {
  it("names the path of each unbounded string, list and map, and accepts bounded ones", () => {
    const schema: JSONSchemaProps = {
      type: "object",
      properties: {
        spec: {
          type: "object",
          properties: {
            free: { type: "string" },
            short: { type: "string", maxLength: 10 },
            word: { type: "string", enum: ["a", "b"] },
            id: { type: "string", format: "uuid" },
            url: { type: "string", format: "uri" },
            tags: { type: "array", items: { type: "object", properties: { key: { type: "string" } } } },
            ids: { type: "array", maxItems: 5, items: { type: "integer" } },
            labels: { type: "object", additionalProperties: { type: "string", maxLength: 63 } },
            bounded: { type: "object", maxProperties: 4, additionalProperties: { type: "string" } },
          },
        },
      },
    };
    expect(unboundedFields(schema)).toEqual([
      ".spec.free: string without maxLength",
      ".spec.url: string without maxLength",
      ".spec.tags: array without maxItems",
      ".spec.tags[].key: string without maxLength",
      ".spec.labels: map without maxProperties",
      ".spec.bounded.*: string without maxLength",
    ]);
  });
});

describe("keyward's own parse of a spec keeps the same bounds, and no stricter ones", () => {
  const cloudSync = (over: Record<string, unknown>) => ({
    projectId: "p",
    connectionId: "3f1c2d4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
    environment: "e".repeat(64),
    name: "n".repeat(64),
    description: "d".repeat(256),
    secretPath: `/${"a".repeat(bounds.PATH - 1)}`,
    destination: "cloud-secrets-manager",
    destinationConfig: { mappingBehavior: "one-to-one", region: "r".repeat(bounds.NAME) },
    syncOptions: {
      keySchema: `${"K".repeat(bounds.KEY_SCHEMA - "{{secretKey}}".length)}{{secretKey}}`,
      keyId: "k".repeat(bounds.KMS_KEY_ID),
      tags: Array.from({ length: bounds.TAGS }, (_, i) => ({
        key: `${i}`.padEnd(bounds.TAG_KEY, "k"),
        value: "v".repeat(bounds.TAG_VALUE),
      })),
    },
    ...over,
  });

  it("accepts every field at its bound (the service's limits: name and environment 64, description 256)", () => {
    expect(secretSyncSpec.safeParse(cloudSync({})).error?.issues).toBeUndefined();
  });

  it.each([
    ["secretPath", { secretPath: `/${"a".repeat(bounds.PATH)}` }],
    ["name", { name: "n".repeat(65) }],
    ["region", { destinationConfig: { mappingBehavior: "one-to-one", region: "r".repeat(bounds.NAME + 1) } }],
    ["keyId", { syncOptions: { keyId: "k".repeat(bounds.KMS_KEY_ID + 1) } }],
    ["tags", { syncOptions: { tags: Array.from({ length: bounds.TAGS + 1 }, () => ({ key: "k", value: "v" })) } }],
    ["tag key", { syncOptions: { tags: [{ key: "k".repeat(bounds.TAG_KEY + 1), value: "v" }] } }],
  ])("refuses %s beyond its bound", (_field, over) => {
    expect(secretSyncSpec.safeParse(cloudSync(over)).success).toBe(false);
  });

  it("a code-host sync takes up to bounds.SELECTED_REPOSITORIES repository ids", () => {
    const codeHost = (n: number) => ({
      projectId: "p",
      connectionId: "3f1c2d4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
      environment: "prod",
      secretPath: "/",
      destination: "code-host",
      destinationConfig: {
        scope: "organization",
        org: "acme",
        visibility: "all",
        selectedRepositoryIds: Array.from({ length: n }, (_, i) => i),
      },
    });
    expect(secretSyncSpec.safeParse(codeHost(bounds.SELECTED_REPOSITORIES)).success).toBe(true);
    expect(secretSyncSpec.safeParse(codeHost(bounds.SELECTED_REPOSITORIES + 1)).success).toBe(false);
  });

  it("a ClusterProviderConfig's namespaceSelector.matchLabels: at most bounds.MATCH_LABELS labels, keys at most bounds.LABEL_KEY", () => {
    const cpc = (labels: Record<string, string>) => ({
      baseUrl: "https://secrets.example.com",
      credentialsSecretRef: { name: "token" },
      namespaceSelector: { matchLabels: labels },
    });
    const labels = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`example.com/l${i}`, "v"]));
    expect(cpcSpec.safeParse(cpc(labels(bounds.MATCH_LABELS))).success).toBe(true);
    expect(cpcSpec.safeParse(cpc(labels(bounds.MATCH_LABELS + 1))).success).toBe(false);
    expect(cpcSpec.safeParse(cpc({ ["k".repeat(bounds.LABEL_KEY + 1)]: "v" })).success).toBe(false);
  });
});
