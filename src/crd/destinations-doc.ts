// The generated parts of the destination pages (docs/destinations/): each destination's options as
// the SecretSync CRD takes them, per variant of its spec's union (the CRD merges the variants into
// one object, so only here does a reader see which fields a destination requires), and the index's
// table of destinations. Generation reads no service client (src/api): each page names its
// connection kind by hand, and test/unit/docs/destinations.test.ts holds it to the client's table.
import { z } from "zod";
import type { Kind } from "../resources/kind.ts";
import { fieldTable, mdCode } from "./reference.ts";
import { structuralSchema } from "./schema.ts";
import type { JSONSchemaProps } from "./crd.ts";

export const destinationsDir = "docs/destinations";
export const destinationPage = (d: string): string => `${destinationsDir}/${d}.md`;
export const destinationsIndex = `${destinationsDir}/index.md`;

/** SecretSync's spec, one structural schema per destination. */
function variants(kinds: readonly Kind[]): Map<string, JSONSchemaProps> {
  const spec = kinds.find((k) => k.ref.kind === "SecretSync")?.crd.spec;
  if (!(spec instanceof z.ZodDiscriminatedUnion)) throw new Error("SecretSync's spec is not a union on destination");
  const out = new Map<string, JSONSchemaProps>();
  for (const variant of spec.options as readonly z.ZodType[]) {
    const node = structuralSchema(variant);
    const value = node.properties?.["destination"]?.enum?.[0];
    if (typeof value !== "string") throw new Error("a SecretSync variant without one destination value");
    out.set(value, node);
  }
  return out;
}

/** The destinations, in the union's order. */
export function destinationsOf(kinds: readonly Kind[]): string[] {
  return [...variants(kinds).keys()];
}

function variant(kinds: readonly Kind[], d: string): JSONSchemaProps {
  const node = variants(kinds).get(d);
  if (!node) throw new Error(`SecretSync has no variant for destination ${d}`);
  return node;
}

/** Whether the variant's initialSyncBehavior takes more than overwrite-destination. */
const canImport = (node: JSONSchemaProps): boolean =>
  (node.properties?.["syncOptions"]?.properties?.["initialSyncBehavior"]?.enum ?? []).length > 1;

const requiredWord = (node: JSONSchemaProps, field: string): string => (node.required?.includes(field) ? "required" : "optional");

/** A destination page's options: what identifies it, then its destinationConfig and syncOptions fields. */
export function destinationOptions(kinds: readonly Kind[], d: string): string {
  const node = variant(kinds, d);
  const part = (field: string): string[] => [
    `\`spec.${field}\` (${requiredWord(node, field)}):`,
    "",
    ...fieldTable(node.properties?.[field], `spec.${field}`),
  ];
  return [
    "| | |",
    "|---|---|",
    `| \`spec.destination\` | ${mdCode(d)} |`,
    `| first sync can import from the destination | ${canImport(node) ? "yes" : "no: `overwrite-destination` only"} |`,
    "",
    ...part("destinationConfig"),
    ...part("syncOptions"),
  ].join("\n");
}

/** The index's table: every destination, its page and its required destinationConfig fields. */
export function destinationsTable(kinds: readonly Kind[]): string {
  return [
    "| destination | `destinationConfig` requires | first sync can import |",
    "|---|---|---|",
    ...[...variants(kinds)].map(([d, node]) => {
      const required = (node.properties?.["destinationConfig"]?.required ?? []).map(mdCode).join(", ") || "—";
      return `| [${d}](${d}.md) | ${required} | ${canImport(node) ? "yes" : "no"} |`;
    }),
    "",
  ].join("\n");
}
