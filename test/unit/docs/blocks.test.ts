// How the executed-docs tests cut pages and the chart's notes into blocks (test/unit/docs/blocks.ts).
import { describe, expect, it } from "vitest";
import { fill, markdownBlocks, notesBlocks } from "./blocks.ts";

describe("notesBlocks", () => {
  it("takes a run of kubectl lines with its heredoc, to the terminator a reader sees, and nothing of the prose around it", () => {
    const notes = [
      "Check that it runs:",
      "  kubectl -n ks rollout status deployment/kw",
      "  kubectl -n ks logs deployment/kw",
      "",
      "Next: create a Secret:",
      "",
      "  kubectl -n <namespace> apply -f - <<YAML",
      "  kind: ProviderConfig",
      "",
      "  YAML",
      "Then declare them:",
      "kubectl get keyward -A        # every keyward.dev resource",
      "Metrics: service kw-metrics.",
    ].join("\n");
    expect(notesBlocks(notes).map((b) => [b.where, b.text])).toEqual([
      ["NOTES.txt:2", "  kubectl -n ks rollout status deployment/kw\n  kubectl -n ks logs deployment/kw\n"],
      ["NOTES.txt:7", "  kubectl -n <namespace> apply -f - <<YAML\n  kind: ProviderConfig\n\n  YAML\n"],
      ["NOTES.txt:12", "kubectl get keyward -A        # every keyward.dev resource\n"],
    ]);
  });
});

describe("markdownBlocks", () => {
  const page = [
    "# Page",
    "## One",
    "<!-- not run: needs a registry -->",
    "",
    "```sh",
    "docker build .",
    "```",
    "```yaml",
    "# project.yaml",
    "kind: Project",
    "```",
    "```yaml",
    "kind: NotAFile",
    "```",
    "```sh",
    "kubectl apply -f project.yaml",
    "```",
    "## Two",
    "```sh",
    "kubectl get keyward",
    "```",
  ].join("\n");

  it("gives the sh blocks, the not-run mark, and the yaml blocks that name a file", () => {
    const blocks = markdownBlocks("page.md", page);
    expect(blocks.commands).toEqual([
      { where: "page.md:5", text: "docker build .\n", notRun: "needs a registry" },
      { where: "page.md:15", text: "kubectl apply -f project.yaml\n" },
      { where: "page.md:19", text: "kubectl get keyward\n" },
    ]);
    expect(blocks.files).toEqual([{ where: "page.md:8", name: "project.yaml", text: "# project.yaml\nkind: Project\n" }]);
  });

  it("reads one section alone when asked", () => {
    expect(markdownBlocks("page.md", page, "Two").commands.map((b) => b.where)).toEqual(["page.md:19"]);
    expect(() => markdownBlocks("page.md", page, "Three")).toThrow(/no section "Three"/);
  });
});

describe("fill", () => {
  it("replaces every occurrence of every placeholder", () => {
    expect(fill("-n team-a x team-a <access token>", { "team-a": "ns1", "<access token>": "t" })).toBe("-n ns1 x ns1 t");
  });
});
