import { loadYaml } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { toYaml } from "../../../src/crd/yaml.ts";

// client-node's loader (js-yaml) reads it back; a non-built-in apiVersion keeps fields as they are.
function roundTrip(data: unknown): unknown {
  const loaded = loadYaml<{ data: unknown }>(toYaml({ apiVersion: "test.keyward.dev/v1", kind: "Raw", data }));
  return loaded.data;
}

describe("toYaml", () => {
  it("writes block style with sequences at their key's indentation", () => {
    expect(toYaml({ a: 1, b: { c: [1, { d: "x", e: [] }], f: {} }, g: [[1, 2], "z"] })).toBe(
      ["a: 1", "b:", "  c:", "  - 1", "  - d: x", "    e: []", "  f: {}", "g:", "- - 1", "  - 2", "- z", ""].join("\n"),
    );
  });

  it("quotes every string YAML would read as something else", () => {
    const tricky = [
      "true",
      "False",
      "yes",
      "no",
      "on",
      "Off",
      "y",
      "N",
      "null",
      "~",
      "",
      " lead",
      "trail ",
      "1",
      "1.5",
      "-1",
      ".5",
      "0x1F",
      "1e3",
      ".inf",
      ".NaN",
      "2024-01-01",
      "a: b",
      "a #b",
      "#c",
      "-x",
      "- x",
      "key:",
      "*ref",
      "&anchor",
      "!tag",
      "|",
      ">",
      "'q'",
      '"dq"',
      "{a}",
      "[a]",
      "%x",
      "@x",
      "`x`",
      "a\nb",
      "tab\there",
      "=",
      "<<",
      "é",
      "self.x != 'a' || has(self.y)",
    ];
    for (const s of tricky) expect(roundTrip({ s })).toEqual({ s });
  });

  it("leaves ordinary words, paths and sentences plain", () => {
    expect(
      toYaml({ a: "keyward.dev", b: ".metadata.creationTimestamp", c: "A sentence, with (parens) and it's fine.", d: "https://x.example" }),
    ).toBe("a: keyward.dev\nb: .metadata.creationTimestamp\nc: A sentence, with (parens) and it's fine.\nd: https://x.example\n");
  });

  it("round-trips nested data, numbers, booleans and null", () => {
    const data = { n: [0, -3, 2.5, 1e21], b: [true, false], z: null, deep: { list: [{ a: [{ b: "c" }] }] } };
    expect(roundTrip(data)).toEqual(data);
    expect(toYaml({})).toBe("{}\n");
  });
});
