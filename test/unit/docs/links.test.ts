// The pages of docs/ are read in two places: on the docs site (VitePress) and in a Git host's file
// view. A link written from the site's root (`](/install)`) works on the first and is a 404 on the
// second; a link relative to the page, to the Markdown file (`](install.md)`), works on both
// (VitePress turns it into the page's URL; its dead-link check is site.test.ts's).
import { readFileSync, readdirSync, existsSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { relativeLinks } from "./support.ts";

const root = resolve(import.meta.dirname, "..", "..", "..");
const docs = join(root, "docs");

const pages = (readdirSync(docs, { recursive: true }) as string[])
  .filter((f) => f.endsWith(".md") && !f.split("/").includes(".vitepress") && !f.split("/").includes("node_modules"))
  .sort();

describe("links between the pages of docs/", () => {
  it("are relative to the page, never from the site's root", () => {
    const rooted = pages.flatMap((page) =>
      relativeLinks(readFileSync(join(docs, page), "utf8"))
        .filter((t) => t.startsWith("/"))
        .map((t) => `${page} -> ${t}`),
    );
    expect(rooted).toEqual([]);
  });

  it("name files that exist, as a Git host resolves them", () => {
    let checked = 0;
    const missing: string[] = [];
    for (const page of pages) {
      for (const target of relativeLinks(readFileSync(join(docs, page), "utf8"))) {
        checked++;
        const path = resolve(dirname(join(docs, page)), target);
        if (!existsSync(path)) missing.push(`${page} -> ${target} (${relative(root, path)})`);
      }
    }
    expect(missing).toEqual([]);
    expect(checked).toBeGreaterThan(50);
  });
});
