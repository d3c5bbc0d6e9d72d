// The API reference, rendered from the registry: docs/reference/api.md documents v1beta1 (the
// version to write) and links to api-v1alpha1.md; every kind and every spec/status field of the
// page's version is in it, and nothing in it is raw HTML or a Vue interpolation the docs site
// would compile.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { servedCrd } from "../../../src/crd/conversion-schema.ts";
import { apiReference, apiReferencePages, fieldRows, mdCode, mdText } from "../../../src/crd/reference.ts";
import { kinds } from "../../../src/resources/registry.ts";

const repoRoot = fileURLToPath(new URL("../../..", import.meta.url));

/** The page's text outside code spans and <code v-pre> elements. */
function prose(markdown: string): string {
  return markdown.replace(/<code v-pre>.*?<\/code>/g, "").replace(/`[^`]*`/g, "");
}

describe("the API reference's pages", () => {
  it("are api.md for v1beta1, then api-v1alpha1.md, each linking to the other", () => {
    const pages = apiReferencePages(kinds);
    expect(pages.map((p) => [p.version, p.path])).toEqual([
      ["v1beta1", "docs/reference/api.md"],
      ["v1alpha1", "docs/reference/api-v1alpha1.md"],
    ]);
    expect(apiReference(kinds, pages[0])).toContain("[`v1alpha1`](api-v1alpha1.md)");
    expect(apiReference(kinds, pages[1])).toContain("[API reference](api.md)");
  });

  it("are each on the docs site's sidebar", () => {
    const config = readFileSync(join(repoRoot, "docs/.vitepress/config.mts"), "utf8");
    for (const p of apiReferencePages(kinds)) expect(config).toContain(`link: "/${p.path.replace(/^docs\//, "").replace(/\.md$/, "")}"`);
  });
});

describe.each(apiReferencePages(kinds))("docs/reference/ $version", (ref) => {
  const page = apiReference(kinds, ref);

  it("has a section per kind with its group/version, scope and short names", () => {
    for (const k of kinds) {
      const crd = servedCrd(k);
      expect(page).toContain(`## ${k.ref.kind}\n`);
      expect(page).toContain(`| apiVersion | \`${crd.spec.group}/${ref.version}\` |`);
      expect(page).toContain(`| scope | ${crd.spec.scope} |`);
      for (const s of crd.spec.names.shortNames ?? []) expect(page).toContain(`\`${s}\``);
    }
    const other = ref.version === "v1beta1" ? "v1alpha1" : "v1beta1";
    expect(page).not.toContain(`| apiVersion | \`keyward.dev/${other}\` |`);
  });

  it("lists every field of every spec and status with its description", () => {
    let fields = 0;
    for (const k of kinds) {
      const schema = servedCrd(k).spec.versions.find((v) => v.name === ref.version)?.schema.openAPIV3Schema;
      expect(schema, k.ref.kind).toBeDefined();
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
