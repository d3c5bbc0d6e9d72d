// docs/reference/api.md, rendered from the registry: every kind and every spec/status field is in
// it, and nothing in it is raw HTML or a Vue interpolation the docs site would compile.
import { describe, expect, it } from "vitest";
import { crdFromSources } from "../../../src/crd/crd.ts";
import { apiReference, fieldRows, mdCode, mdText } from "../../../src/crd/reference.ts";
import { kinds } from "../../../src/resources/registry.ts";

/** The page's text outside code spans and <code v-pre> elements. */
function prose(markdown: string): string {
  return markdown.replace(/<code v-pre>.*?<\/code>/g, "").replace(/`[^`]*`/g, "");
}

describe("docs/reference/api.md", () => {
  const page = apiReference(kinds);

  it("has a section per kind with its group/version, scope and short names", () => {
    for (const k of kinds) {
      const crd = crdFromSources(k.crd);
      expect(page).toContain(`## ${k.ref.kind}\n`);
      expect(page).toContain(`| apiVersion | \`${crd.spec.group}/${crd.spec.versions[0]?.name}\` |`);
      expect(page).toContain(`| scope | ${crd.spec.scope} |`);
      for (const s of crd.spec.names.shortNames ?? []) expect(page).toContain(`\`${s}\``);
    }
  });

  it("lists every field of every spec and status with its description", () => {
    let fields = 0;
    for (const k of kinds) {
      const schema = crdFromSources(k.crd).spec.versions[0]?.schema.openAPIV3Schema;
      for (const part of ["spec", "status"] as const) {
        const node = schema?.properties?.[part];
        if (!node) continue;
        for (const row of fieldRows(node, part)) {
          fields++;
          expect(page).toContain(`| ${mdCode(row.path)} |`);
          expect(page).toContain(mdText(row.node.description ?? "<none>"));
        }
      }
    }
    expect(fields).toBeGreaterThan(300);
  });

  it("lists the annotations keyward reads and writes", () => {
    for (const key of [
      "keyward.dev/paused",
      "keyward.dev/external-id",
      "keyward.dev/sync-requested-at",
      "handled.keyward.dev/sync-requested-at",
    ]) {
      expect(page).toContain(`\`${key}\``);
    }
  });

  it("holds no Vue interpolation and no raw HTML outside v-pre code", () => {
    expect(prose(page)).not.toContain("{{");
    expect(prose(page).replace(/<!-- Generated .*? -->/, "")).not.toMatch(/<[a-zA-Z/!]/);
  });
});

describe("mdText and mdCode", () => {
  it("escape what markdown tables, HTML and Vue would read", () => {
    expect(mdText("a | b <c> {{ x }}")).toBe("a \\| b &lt;c&gt; {&#8203;{ x }}");
    expect(mdCode("(a|b)")).toBe("`(a\\|b)`");
    expect(mdCode("APP_{{secretKey}}<x>")).toBe("<code v-pre>APP_{{secretKey}}&lt;x&gt;</code>");
  });
});
