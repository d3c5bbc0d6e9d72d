// The kind registry is the one list everything else is derived from: each kind's descriptor is
// whole, and every reason keyward writes anywhere in src is registered (and every registered
// reason is written somewhere), so status.ts's progress set, health.lua and docs/kinds.md
// cannot drift from the code.
import { readFileSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { issueReasons } from "../../../src/resources/accesstoken.ts";
import { kinds, projectDependents, providerConfigUsers, reasonRegistry } from "../../../src/resources/registry.ts";

const src = fileURLToPath(new URL("../../../src", import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts"))
    .map((e) => join(e.parentPath, e.name));
}

/** Reason literals as the code writes them: conditions, ReconcileError, Events, absent/vanished, actions' events. */
const emitted =
  /(?:reason:\s*|ReconcileError\(\s*|classification\(\s*|"(?:Normal|Warning)",\s*|event:\s*|conditionReason\s*=\s*)"([A-Z][A-Za-z]+)"/g;

function emittedReasons(): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const file of sources(src)) {
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(emitted)) {
      const name = m[1] ?? "";
      found.set(name, [...(found.get(name) ?? []), relative(src, file)]);
    }
  }
  return found;
}

describe("the kind registry", () => {
  it("has one descriptor per kind, each naming its own CRD", () => {
    expect(new Set(kinds.map((k) => k.ref.kind)).size).toBe(kinds.length);
    for (const k of kinds) {
      expect([k.crd.group, k.crd.version, k.crd.kind, k.crd.plural]).toEqual([k.ref.group, k.ref.version, k.ref.kind, k.ref.plural]);
      expect(k.crd.scope === "Cluster").toBe(k.ref.clusterScoped === true);
    }
  });

  it("derives who uses a ProviderConfig and who depends on a Project from what each kind refers to", () => {
    expect(providerConfigUsers().map((r) => r.kind)).toEqual([
      "Project",
      "ProjectMembership",
      "AccessToken",
      "CertificateProfile",
      "SecretSync",
    ]);
    expect(projectDependents().map((r) => r.kind)).toEqual(["ProjectMembership", "CertificateProfile", "SecretSync"]);
  });

  it("refuses a reason two tables give different meanings", () => {
    const clash = { ...kinds[2]!, reasons: { Available: { means: "failed", doc: "x" } } } as (typeof kinds)[number];
    expect(() => reasonRegistry([clash])).toThrow(/Available/);
  });

  it("registers every reason src writes", () => {
    const registry = reasonRegistry();
    // Why an AccessToken's token was issued is a status field (lastIssueReason), not a condition reason.
    const notConditions = new Set<string>(issueReasons);
    const missing = [...emittedReasons()]
      .filter(([name]) => !registry.has(name) && !notConditions.has(name))
      .map(([name, files]) => `${name} (${files.join(", ")})`);
    expect(missing).toEqual([]);
  });

  it("registers no reason src never writes", () => {
    const written = emittedReasons();
    const text = sources(src)
      .filter((f) => !f.endsWith("reasons.ts") && !f.endsWith("registry.ts"))
      .map((f) => readFileSync(f, "utf8"))
      .join("\n");
    // A reason may also be written through a table of the kind's own (secretsync's readiness, statusReasons).
    const dead = [...reasonRegistry().keys()].filter(
      (name) => !written.has(name) && !text.includes(`"${name}"`) && !text.includes(` ${name}:`),
    );
    expect(dead).toEqual([]);
  });
});
