// Every keyward manifest a user is shown (the README, the chart's README, docs/ but the contributor
// notes: ```yaml blocks and the heredocs of ```sh blocks with an apiVersion of keyward.dev) is
// keyward.dev/v1beta1, the version to write, and fits its kind's v1beta1 schema: each spec's
// types, enums, bounds, patterns and required fields, and no field the schema lacks (the apiserver
// would prune it). The CEL rules are checked the way keyward reads the object: converted to
// v1alpha1 with nothing left over for the conversion annotation, its spec accepted by the kind's
// own spec schema. Placeholders a user fills in are given values of their form first.
import { readFileSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { loadAll } from "js-yaml";
import { describe, expect, it } from "vitest";
import { v1beta1Schema } from "../../../src/crd/conversion-schema.ts";
import type { JSONSchemaProps } from "../../../src/crd/crd.ts";
import { convert, CONVERSION_ANNOTATION_PREFIX, type ConvertibleObject } from "../../../src/resources/conversion.ts";
import { kinds } from "../../../src/resources/registry.ts";

const root = resolve(import.meta.dirname, "..", "..", "..");
const GROUP = "keyward.dev";
const VERSION = "v1beta1";

const userDocs = [
  "README.md",
  "charts/keyward/README.md",
  ...(readdirSync(join(root, "docs"), { recursive: true }) as string[])
    .filter((f) => f.endsWith(".md") && !f.startsWith("contributing") && !f.includes(".vitepress") && !f.includes("node_modules"))
    .map((f) => join("docs", f)),
];

/** The placeholders of the docs' manifests, each with a value of the form its field takes. */
const placeholders: Record<string, string> = {
  "<connection id>": "0b6c5e2a-7d1f-4c3b-9a8e-5f4d3c2b1a09",
  "<the connection's id at the service>": "0b6c5e2a-7d1f-4c3b-9a8e-5f4d3c2b1a09",
  "<identity id>": "2f0c1f4e-0000-4000-8000-000000000001",
};

interface Manifest {
  where: string;
  text: string;
}

/** The manifests of a Markdown page: ```yaml blocks, and heredocs in ```sh blocks, naming keyward's group. */
function manifestsOf(file: string, markdown: string): Manifest[] {
  const lines = markdown.split("\n");
  const out: Manifest[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```(\w*)\s*$/.exec(lines[i] ?? "");
    if (!fence) continue;
    const end = lines.findIndex((l, j) => j > i && l.startsWith("```"));
    if (end < 0) throw new Error(`${file}:${i + 1}: a fence that does not close`);
    if (fence[1] === "yaml") out.push({ where: `${file}:${i + 1}`, text: lines.slice(i + 1, end).join("\n") });
    if (fence[1] === "sh") {
      for (let j = i + 1; j < end; j++) {
        const tag = /<<-?\s*'?"?(\w+)'?"?\s*$/.exec(lines[j] ?? "")?.[1];
        if (tag === undefined) continue;
        const close = lines.findIndex((l, k) => k > j && l.trim() === tag);
        out.push({ where: `${file}:${j + 1}`, text: lines.slice(j + 1, close).join("\n") });
        j = close;
      }
    }
    i = end;
  }
  return out.filter((m) => m.text.includes(`apiVersion: ${GROUP}/`));
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** Why `value` does not fit `schema` (its structural part, as the apiserver checks it before CEL), one line each. */
function schemaViolations(schema: JSONSchemaProps, value: unknown, path: string): string[] {
  if (schema["x-kubernetes-int-or-string"]) return typeof value === "string" || Number.isInteger(value) ? [] : [`${path}: not int-or-string`];
  if (schema.enum && !schema.enum.includes(value)) return [`${path}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`];
  const out: string[] = [];
  switch (schema.type) {
    case "string": {
      if (typeof value !== "string") return [`${path}: not a string`];
      // Code points, as the apiserver counts a string's length.
      const length = Array.from(value).length;
      if (schema.maxLength !== undefined && length > schema.maxLength) out.push(`${path}: longer than ${schema.maxLength}`);
      if (schema.minLength !== undefined && length < schema.minLength) out.push(`${path}: shorter than ${schema.minLength}`);
      if (schema.pattern !== undefined && !new RegExp(schema.pattern, "u").test(value)) out.push(`${path}: does not match ${schema.pattern}`);
      return out;
    }
    case "integer":
    case "number":
      if (typeof value !== "number" || (schema.type === "integer" && !Number.isInteger(value))) return [`${path}: not a ${schema.type}`];
      if (schema.minimum !== undefined && value < schema.minimum) out.push(`${path}: below ${schema.minimum}`);
      if (schema.maximum !== undefined && value > schema.maximum) out.push(`${path}: above ${schema.maximum}`);
      return out;
    case "boolean":
      return typeof value === "boolean" ? [] : [`${path}: not a boolean`];
    case "array":
      if (!Array.isArray(value)) return [`${path}: not a list`];
      if (schema.maxItems !== undefined && value.length > schema.maxItems) out.push(`${path}: more than ${schema.maxItems} items`);
      if (schema.minItems !== undefined && value.length < schema.minItems) out.push(`${path}: fewer than ${schema.minItems} items`);
      return [...out, ...value.flatMap((v, i) => (schema.items ? schemaViolations(schema.items, v, `${path}[${i}]`) : []))];
    case "object": {
      if (!isObj(value)) return [`${path}: not an object`];
      for (const r of schema.required ?? []) if (!(r in value)) out.push(`${path}.${r}: required`);
      for (const [k, v] of Object.entries(value)) {
        const sub = schema.properties?.[k] ?? (typeof schema.additionalProperties === "object" ? schema.additionalProperties : undefined);
        if (sub) out.push(...schemaViolations(sub, v, `${path}.${k}`));
        else if (!schema["x-kubernetes-preserve-unknown-fields"]) out.push(`${path}.${k}: no such field`);
      }
      return out;
    }
    default:
      return out;
  }
}

/** What is wrong with one keyward object of the docs: its version, its fit to the v1beta1 schema, and how keyward reads it. */
function problemsOf(obj: Obj): string[] {
  const kind = kinds.find((k) => k.ref.kind === obj["kind"]);
  if (!kind) return [`${String(obj["kind"])} is not a kind of ${GROUP}`];
  if (obj["apiVersion"] !== `${GROUP}/${VERSION}`) return [`apiVersion ${String(obj["apiVersion"])}, not ${GROUP}/${VERSION}`];
  const spec = v1beta1Schema(kind).properties?.["spec"];
  if (!spec) return [`${kind.ref.kind} has no v1beta1 spec`];
  const fit = schemaViolations(spec, obj["spec"], "spec");
  if (fit.length > 0) return fit;
  const alpha = convert({ metadata: {}, ...obj } as ConvertibleObject, kind.conversion.from);
  const leftOver = Object.keys(alpha.metadata?.annotations ?? {}).filter((a) => a.startsWith(CONVERSION_ANNOTATION_PREFIX));
  if (leftOver.length > 0) return [`converted to ${kind.conversion.from}, it keeps ${leftOver.join(", ")}`];
  const parsed = kind.crd.spec.safeParse((alpha as Obj)["spec"]);
  return parsed.success ? [] : parsed.error.issues.map((i) => `spec.${i.path.join(".")}: ${i.message}`);
}

/** The keyward objects of a manifest, with its placeholders filled in. */
function objectsOf(m: Manifest): Obj[] {
  const text = Object.entries(placeholders).reduce((t, [p, v]) => t.replaceAll(p, v), m.text);
  return (loadAll(text)).filter(isObj).filter((d) => String(d["apiVersion"]).startsWith(`${GROUP}/`));
}

const manifests = userDocs.flatMap((file) => manifestsOf(file, readFileSync(join(root, file), "utf8")));

describe("the keyward manifests of the user docs", () => {
  it("are found: the README's, the getting-started page's, connect's and each destination page's", () => {
    for (const file of ["README.md", "docs/getting-started.md", "docs/connect.md", "docs/credentials.md", "docs/destinations/code-host.md"]) {
      expect(
        manifests.some((m) => m.where.startsWith(`${file}:`)),
        file,
      ).toBe(true);
    }
    expect(manifests.flatMap(objectsOf).length).toBeGreaterThanOrEqual(15);
  });

  it.each(manifests.map((m) => [m.where, m] as const))("%s is keyward.dev/v1beta1 and fits its kind's v1beta1 schema", (_, m) => {
    const objects = objectsOf(m);
    expect(objects.length).toBeGreaterThan(0);
    for (const obj of objects) expect(problemsOf(obj), `${String(obj["kind"])} ${JSON.stringify(obj["metadata"])}`).toEqual([]);
  });

  it("leave no placeholder a user fills in unlisted here (a new one needs a value of its field's form)", () => {
    const unlisted = manifests.flatMap((m) =>
      [...m.text.matchAll(/<[^<>\n]+>/g)].map((p) => p[0]).filter((p) => !(p in placeholders) && !["<bootstrap token>"].includes(p)),
    );
    expect(unlisted).toEqual([]);
  });
});

describe("the checks of a docs manifest", () => {
  const project = (apiVersion: string, spec: Obj): Obj => ({ apiVersion, kind: "Project", metadata: { name: "p" }, spec });
  const sync = (destination: Obj): Obj => ({
    apiVersion: `${GROUP}/${VERSION}`,
    kind: "SecretSync",
    spec: { projectRef: { name: "p" }, connectionID: placeholders["<connection id>"], environment: "prod", secretPath: "/", destination },
  });

  it("pass a v1beta1 Project and SecretSync", () => {
    expect(problemsOf(project(`${GROUP}/${VERSION}`, { name: "P", slug: "payments", type: "SecretManager" }))).toEqual([]);
    expect(problemsOf(sync({ type: "DataPlatform", dataPlatform: { scope: "workspace" } }))).toEqual([]);
  });

  it("refuse v1alpha1, a v1alpha1 field name or value, and a field the schema lacks", () => {
    expect(problemsOf(project(`${GROUP}/v1alpha1`, { name: "P", slug: "payments", type: "secret-manager" }))).toEqual([
      `apiVersion ${GROUP}/v1alpha1, not ${GROUP}/${VERSION}`,
    ]);
    expect(problemsOf(project(`${GROUP}/${VERSION}`, { name: "P", slug: "payments", type: "secret-manager" }))[0]).toMatch(/^spec\.type: /);
    expect(problemsOf(project(`${GROUP}/${VERSION}`, { name: "P", slug: "payments", type: "SecretManager", shouldCreateDefaultEnvs: true }))).toEqual([
      "spec.shouldCreateDefaultEnvs: no such field",
    ]);
  });

  it("refuse what only the rules refuse: a union member other than the type's", () => {
    expect(problemsOf(sync({ type: "DataPlatform", codeHost: { scope: "organization", org: "acme", visibility: "All" } }))).not.toEqual([]);
  });
});
