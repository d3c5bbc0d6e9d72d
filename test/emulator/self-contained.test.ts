// The emulator ships as an image of test/emulator alone (hack/e2e/images.sh stages only it, its
// package.json and zod): an import of keyward's src, or of another test folder, would start there
// as ERR_MODULE_NOT_FOUND and crash-loop in the e2e — as it once did. It also stands in for the
// service, so it shares no code with the client it checks.
import { readFileSync, readdirSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const dir = import.meta.dirname;

function sources(): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts") && !e.name.endsWith(".test.ts"))
    .map((e) => join(e.parentPath, e.name));
}

describe("the emulator", () => {
  it("imports nothing outside test/emulator but node: built-ins and zod", () => {
    const outside: string[] = [];
    for (const file of sources()) {
      for (const m of readFileSync(file, "utf8").matchAll(/^\s*(?:import|export)\b[^;]*?from\s+"([^"]+)"/gm)) {
        const spec = m[1] ?? "";
        if (spec.startsWith("node:") || spec === "zod") continue;
        const target = resolve(file, "..", spec);
        if (!spec.startsWith(".") || relative(dir, target).startsWith("..")) outside.push(`${relative(dir, file)}: ${spec}`);
      }
    }
    expect(sources().length).toBeGreaterThan(10);
    expect(outside).toEqual([]);
  });
});
