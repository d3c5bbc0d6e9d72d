// Every key of the chart's values.schema.json has a description (docs/reference/values.md shows it
// and editors show it on hover), and docs/reference/values.md lists every key with its default.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { mdCode } from "../../../src/crd/reference.ts";
import {
  undescribedValues,
  valuesFile,
  valuesKeys,
  valuesReference,
  valuesSchemaFile,
  type ValuesSchema,
} from "../../../src/crd/values-reference.ts";

const root = fileURLToPath(new URL("../../..", import.meta.url));
const schemaText = readFileSync(`${root}/${valuesSchemaFile}`, "utf8");
const schema = JSON.parse(schemaText) as ValuesSchema;

describe("values.schema.json", () => {
  it("describes every key, in the values and in the definitions they share", () => {
    expect(undescribedValues(schema)).toEqual([]);
  });

  it("the check finds a key without a description, in lists, maps and definitions", () => {
    const bare: ValuesSchema = {
      properties: {
        a: { type: "string", description: "A." },
        b: { type: "array", description: "B.", items: { type: "object", properties: { c: { type: "string" } } } },
        d: { type: "object", description: " ", additionalProperties: { type: "object", properties: { e: { description: "E." } } } },
      },
      definitions: { f: { type: "object", properties: { g: { type: "string" } } } },
    };
    expect(undescribedValues(bare)).toEqual(["b[].c", "d", "definitions.f.g"]);
  });
});

describe("docs/reference/values.md", () => {
  const page = valuesReference(schemaText, readFileSync(`${root}/${valuesFile}`, "utf8"));

  it("has a row per key with its description", () => {
    const keys = valuesKeys(schema);
    expect(keys.length).toBeGreaterThan(100);
    for (const k of keys) expect(page).toMatch(new RegExp(`^\\| ${mdCode(k.path).replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} \\|`, "m"));
  });

  it("takes defaults from values.yaml and bounds from the schema", () => {
    expect(page).toContain('| `logLevel` | string | `"info"` | one of `"trace"`, `"debug"`, `"info"`, `"warn"`, `"error"`, `"fatal"` |');
    expect(page).toContain("| `concurrency` | integer | `4` | value ≥ 1, ≤ 256 |");
  });
});
