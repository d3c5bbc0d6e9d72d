import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { countsOf, matrixTable, smokeFiles, type MatrixRow } from "../../controlplane/matrix.ts";

const repoRoot = join(import.meta.dirname, "..", "..", "..");

describe("npm run test:matrix", () => {
  it("counts a vitest JSON report's passed and failed tests, skipped ones in neither", () => {
    const report = {
      testResults: [
        {
          assertionResults: [
            { fullName: "a one", status: "passed" },
            { fullName: "a two", status: "failed" },
          ],
        },
        {
          assertionResults: [
            { fullName: "b one", status: "skipped" },
            { fullName: "b two", status: "passed" },
          ],
        },
        {},
      ],
    };
    expect(countsOf(report)).toEqual({ passed: 2, failed: ["a two"] });
    expect(countsOf({})).toEqual({ passed: 0, failed: [] });
  });

  it("prints one row per version, then what failed where", () => {
    const rows: MatrixRow[] = [
      { version: "v1.32.13", build: 611, crdsEstablished: true, testSeconds: 95, passed: 60, failed: 0, failures: [] },
      { version: "v1.33.13", build: "cached", crdsEstablished: false, testSeconds: 3, passed: 0, failed: 1, failures: ["no test ran"] },
    ];
    expect(matrixTable(rows)).toBe(
      [
        "| Kubernetes | build (s) | CRDs Established | tests (s) | passed | failed |",
        "|---|---|---|---|---|---|",
        "| v1.32.13 | 611 | yes | 95 | 60 | 0 |",
        "| v1.33.13 | cached | no | 3 | 0 | 1 |",
        "",
        "Failed:",
        "- v1.33.13: no test ran",
        "",
      ].join("\n"),
    );
    expect(matrixTable(rows.slice(0, 1)).endsWith("| 0 |\n")).toBe(true);
  });

  it("runs test files that exist, through an npm script", () => {
    for (const file of smokeFiles) expect(existsSync(join(repoRoot, file)), file).toBe(true);
    const pkg = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { scripts: Record<string, string> };
    expect(pkg.scripts["test:matrix"]).toBe("node test/controlplane/matrix.ts");
  });
});
