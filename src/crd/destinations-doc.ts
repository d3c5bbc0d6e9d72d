// The generated parts of the destination pages (docs/destinations/): each destination's options as
// SecretSync's v1beta1 schema takes them (its member of the `destination` union, and the sync
// options as its variant of the spec has them: only here does a reader see which values of the
// shared fields a destination takes), and the index's table of destinations. Pages are named by
// the service's spelling of a destination (`code-host`), the v1alpha1 discriminator. Generation
// reads no service client (src/api): each page names its connection kind by hand, and
// test/unit/docs/onboarding.test.ts holds it to the client's table.
import type { Kind } from "../resources/kind.ts";
import { fieldTable, mdCode } from "./reference.ts";
import { v1beta1UnionMembers, type UnionMemberSchema } from "./conversion-schema.ts";
import type { JSONSchemaProps } from "./crd.ts";

export const destinationsDir = "docs/destinations";
export const destinationPage = (d: string): string => `${destinationsDir}/${d}.md`;
export const destinationsIndex = `${destinationsDir}/index.md`;

/** SecretSync's union members in v1beta1, one per destination, in the union's order. */
export function destinationMembers(kinds: readonly Kind[]): UnionMemberSchema[] {
  const kind = kinds.find((k) => k.ref.kind === "SecretSync");
  const members = kind ? v1beta1UnionMembers(kind) : [];
  if (members.length === 0) throw new Error("SecretSync has no v1beta1 union of destinations");
  return members;
}

/** The destinations, as the service spells them (the pages' names), in the union's order. */
export function destinationsOf(kinds: readonly Kind[]): string[] {
  return destinationMembers(kinds).map((m) => m.from);
}

function memberOf(kinds: readonly Kind[], d: string): UnionMemberSchema {
  const member = destinationMembers(kinds).find((m) => m.from === d);
  if (!member) throw new Error(`SecretSync has no member for destination ${d}`);
  return member;
}

/** The values of initialSyncBehavior the destination takes: more than one when it can import. */
const initialSyncBehaviors = (spec: JSONSchemaProps): unknown[] =>
  spec.properties?.["syncOptions"]?.properties?.["initialSyncBehavior"]?.enum ?? [];

const requiredWord = (node: JSONSchemaProps, field: string): string => (node.required?.includes(field) ? "required" : "optional");

/** A destination page's options: what identifies it, then its member's fields and its syncOptions. */
export function destinationOptions(kinds: readonly Kind[], d: string): string {
  const m = memberOf(kinds, d);
  const behaviors = initialSyncBehaviors(m.spec);
  const memberPath = `${m.union}.${m.member}`;
  return [
    "| | |",
    "|---|---|",
    `| \`${m.union}.type\` | ${mdCode(m.type)} |`,
    `| first sync can import from the destination | ${behaviors.length > 1 ? "yes" : `no: ${behaviors.map((b) => mdCode(String(b))).join(", ")} only`} |`,
    "",
    `\`${memberPath}\` (required with \`type: ${m.type}\`, and set with no other type):`,
    "",
    ...fieldTable(m.struct, memberPath),
    `\`spec.syncOptions\` (${requiredWord(m.spec, "syncOptions")}):`,
    "",
    ...fieldTable(m.spec.properties?.["syncOptions"], "spec.syncOptions"),
  ].join("\n");
}

/** The index's table: every destination, its page, its type and member, the member's required fields. */
export function destinationsTable(kinds: readonly Kind[]): string {
  return [
    "| destination | `destination.type` | member | the member requires | first sync can import |",
    "|---|---|---|---|---|",
    ...destinationMembers(kinds).map((m) => {
      const required = (m.struct.required ?? []).map(mdCode).join(", ") || "—";
      return `| [${m.from}](${m.from}.md) | ${mdCode(m.type)} | ${mdCode(m.member)} | ${required} | ${initialSyncBehaviors(m.spec).length > 1 ? "yes" : "no"} |`;
    }),
    "",
  ].join("\n");
}
