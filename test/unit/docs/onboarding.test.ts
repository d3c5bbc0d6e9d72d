// The onboarding pages (docs/connect.md, docs/destinations/) against what keyward is: a page per
// destination naming its connection kind as the client's table has it, the calls the connect
// page lists per kind covering every operation the client has, every YAML sample a file the
// executed-docs test applies (test/integration/docs-onboarding.test.ts), and the pages on the
// site's sidebar. Their options tables are generated (test/unit/crd/generated.test.ts).
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { connectionAppByDestination, destinations, operations } from "../../../src/api/index.ts";
import { destinationMembers } from "../../../src/crd/destinations-doc.ts";
import { kinds } from "../../../src/resources/registry.ts";
import { markdownBlocks } from "./blocks.ts";
import { documentedCalls, isDocumented } from "./calls.ts";

const root = resolve(import.meta.dirname, "..", "..", "..");
const read = (file: string): string => readFileSync(join(root, file), "utf8");
const pages = ["docs/connect.md", "docs/destinations/index.md", ...destinations.map((d) => `docs/destinations/${d}.md`)];

describe("the destination pages", () => {
  it.each(destinations)("%s: names its connection kind as the client's table does, in its prose and in what its last command prints", (d) => {
    const page = read(`docs/destinations/${d}.md`);
    const app = connectionAppByDestination[d];
    expect(page).toContain(`of kind \`${app}\``);
    expect(page).toContain(`writes through: \`${app}\``);
    // its sample names the destination by its v1beta1 type
    const type = destinationMembers(kinds).find((m) => m.from === d)?.type;
    expect(type).toBeDefined();
    expect(page).toContain(`\n    type: ${type}\n`);
  });

  it("are linked from the index, the connect page and the site's sidebar", () => {
    const index = read("docs/destinations/index.md");
    for (const d of destinations) expect(index).toContain(`](${d}.md)`);
    expect(read("docs/connect.md")).toContain("](destinations/index.md)");
    const config = read("docs/.vitepress/config.mts");
    for (const link of ["/connect", "/destinations/", ...destinations.map((d) => `/destinations/${d}`)]) {
      expect(config).toContain(`link: "${link}"`);
    }
  });
});

describe("the calls docs/connect.md lists", () => {
  const calls = documentedCalls(read("docs/connect.md"));

  it("cover every operation of the client the kinds use", () => {
    // The kinds read user memberships through the project path; the workspace path is the same list.
    const used = operations.filter((op) => op.name !== "listWorkspaceMemberships");
    const missing = used.filter((op) => !calls.some((c) => c.method === op.method && c.path === op.path)).map((op) => op.name);
    expect(missing).toEqual([]);
  });

  it("match a request by its method and its path's segments", () => {
    expect(isDocumented(calls, "GET", "/api/v1/projects")).toBe(true);
    expect(isDocumented(calls, "POST", "/api/v1/secret-syncs/code-host/6c0e/sync-secrets")).toBe(true);
    expect(isDocumented(calls, "DELETE", "/api/v1/projects/p1/memberships/m1")).toBe(false);
    expect(isDocumented(calls, "GET", "/api/v1/projects/p1/extra")).toBe(false);
  });
});

describe("the YAML samples of the onboarding pages", () => {
  it.each(pages)("%s: every yaml block names its file, so the executed-docs test applies it", (file) => {
    const text = read(file);
    const fences = text.split("\n").filter((l) => l.startsWith("```yaml")).length;
    expect(markdownBlocks(file, text).files).toHaveLength(fences);
  });
});
