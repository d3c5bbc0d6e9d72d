import { readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, test } from "vitest";
import { declaredOrder, e2eFileOrder } from "../../e2e/sequencer.ts";

const e2eDir = resolve(import.meta.dirname, "..", "..", "e2e");

describe("the e2e files' declared order", () => {
  test("names every e2e file exactly once", () => {
    const files = readdirSync(e2eDir)
      .filter((f) => f.endsWith(".test.ts"))
      .sort();
    expect([...e2eFileOrder].sort()).toEqual(files);
    expect(new Set(e2eFileOrder).size).toBe(e2eFileOrder.length);
  });

  test("sorts by the declared order whatever the input order (vitest's cold order was by size)", () => {
    const bySize = [
      "argocd.test.ts",
      "install.test.ts",
      "first-hour.test.ts",
      "upgrade.test.ts",
      "sharding.test.ts",
      "scale.test.ts",
      "namespaced.test.ts",
      "soak.test.ts",
      "conversion.test.ts",
      "check.test.ts",
    ].map((f) => ({
      moduleId: join(e2eDir, f),
    }));
    expect(declaredOrder(bySize).map((s) => s.moduleId.split("/").pop())).toEqual(e2eFileOrder);
    expect(declaredOrder([...bySize].reverse()).map((s) => s.moduleId.split("/").pop())).toEqual(e2eFileOrder);
  });

  test("a file the list does not name runs after the named ones, by path", () => {
    const specs = [
      { moduleId: join(e2eDir, "zz.test.ts") },
      { moduleId: join(e2eDir, "aa.test.ts") },
      { moduleId: join(e2eDir, "argocd.test.ts") },
    ];
    expect(declaredOrder(specs).map((s) => s.moduleId.split("/").pop())).toEqual(["argocd.test.ts", "aa.test.ts", "zz.test.ts"]);
  });
});
