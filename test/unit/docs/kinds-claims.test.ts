// What the prose of the docs says about every kind's conditions, columns and pausing, held to the
// kind registry (src/resources/registry.ts) through kindView, the same derivation that writes the
// per-kind table of docs/kinds.md: a page may say "every kind" of a condition or of pausing only
// while the registry makes it true of every kind, and troubleshooting's `-o wide` line names the
// kinds whose wide columns carry the reason.
import { readFileSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { kindView } from "../../../src/crd/derived.ts";
import { kinds } from "../../../src/resources/registry.ts";

const root = resolve(import.meta.dirname, "..", "..", "..");
const pages = [
  "README.md",
  ...(readdirSync(join(root, "docs"), { recursive: true }) as string[])
    .filter((f) => f.endsWith(".md") && !f.includes(".vitepress"))
    .map((f) => join("docs", f)),
];

/** The sentences of a page's prose (fenced code left out; a table row or a heading is one), on one line each. */
function sentences(text: string): string[] {
  const units: string[] = [];
  let paragraph: string[] = [];
  const flush = (): void => {
    if (paragraph.length > 0) units.push(paragraph.join(" "));
    paragraph = [];
  };
  for (const line of text.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, "").split("\n")) {
    if (line.trim() === "" || /^\s*[|#]/.test(line)) {
      flush();
      if (line.trim() !== "") units.push(line.trim());
    } else paragraph.push(line.trim());
  }
  flush();
  return units.flatMap((u) => u.split(/(?<=[.;:])\s+(?=[A-Z`*])/));
}

const views = kinds.map((k) => ({ kind: k.ref.kind, plural: k.crd.plural, ...kindView(k) }));

describe("the docs' claims about every kind", () => {
  it("the registry gives provider configs Ready alone, not paused, and the others Ready and Synced", () => {
    const of = (kind: string) => views.find((v) => v.kind === kind);
    expect(of("ProviderConfig")).toMatchObject({ conditions: ["Ready"], pausable: false });
    expect(of("ClusterProviderConfig")).toMatchObject({ conditions: ["Ready"], pausable: false });
    expect(of("Project")).toMatchObject({ conditions: ["Ready", "Synced"], pausable: true });
  });

  it.each([
    ["a Synced condition", /\bSynced\b/, views.every((v) => v.conditions.includes("Synced"))],
    ["keyward.dev/paused", /\bpaused\b/, views.every((v) => v.pausable)],
  ])("say every kind has %s only if the registry says so", (_what, subject, trueOfEveryKind) => {
    const claims = pages.flatMap((page) =>
      sentences(readFileSync(join(root, page), "utf8"))
        // Table rows are left out: "all kinds" in the reason table is where a reason is written.
        .filter((s) => !s.startsWith("|") && /\b(every|each|all) (keyward )?kinds?\b/i.test(s) && subject.test(s))
        .filter((s) => !/\b(kinds? that write|but ProviderConfig|except)\b/i.test(s))
        .map((s) => `${page}: ${s}`),
    );
    expect(trueOfEveryKind ? [] : claims).toEqual([]);
  });

  it("troubleshooting names the kinds whose `-o wide` shows the reason, and only those", () => {
    const text = readFileSync(join(root, "docs", "troubleshooting.md"), "utf8");
    const line = sentences(text).find((s) => s.startsWith("`-o wide` adds the Ready reason"));
    expect(line).toBeDefined();
    const named = views.filter((v) => new RegExp(`\\b${v.plural}\\.keyward\\.dev\\b`).test(line ?? "")).map((v) => v.kind);
    expect(named).toEqual(views.filter((v) => v.wide.includes("Reason")).map((v) => v.kind));
  });
});
