// Runs Argo CD health scripts with a real Lua 5.1 interpreter (Debian's lua5.1; Argo CD's
// gopher-lua implements 5.1) the way Argo CD calls them: `obj` global, `hs` returned.
// Used by hack/tools/render-argocd-cm.ts (the messages of health_test.yaml) and the unit tests.
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export function luaBinary(): string {
  const fromEnv = process.env["KEYWARD_LUA"];
  if (fromEnv) return fromEnv;
  for (const dir of (process.env["PATH"] ?? "").split(":")) {
    if (dir && existsSync(join(dir, "lua5.1"))) return join(dir, "lua5.1");
  }
  throw new Error("lua5.1 not found on PATH (nor $KEYWARD_LUA): install it with `apt-get update && apt-get install -y lua5.1`");
}

/** A JSON value as a Lua table constructor (null fields left out, as Argo CD's conversion does). */
export function luaLiteral(value: unknown): string {
  if (value === null || value === undefined) return "nil";
  if (typeof value === "string") return luaString(value);
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (Array.isArray(value)) return `{${value.map(luaLiteral).join(", ")}}`;
  const fields = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== null && v !== undefined)
    .map(([k, v]) => `[${luaString(k)}] = ${luaLiteral(v)}`);
  return `{${fields.join(", ")}}`;
}

export function luaString(text: string): string {
  // Lua 5.1 decimal escapes for every control character, quote and backslash.
  let out = "";
  for (const c of text) {
    const code = c.charCodeAt(0);
    out += code < 32 || c === '"' || c === "\\" ? `\\${code}` : c;
  }
  return `"${out}"`;
}

export interface Health {
  status: string;
  message: string;
}

/** Runs one script over every object in one interpreter. */
export async function assessWithLua(scriptPath: string, objects: object[]): Promise<Health[]> {
  const program = [
    `local run = assert(loadfile(${luaString(scriptPath)}))`,
    `local objects = {${objects.map(luaLiteral).join(",\n")}}`,
    "for i, o in ipairs(objects) do",
    "  obj = o",
    "  hs = nil",
    "  local ok, result = pcall(run)",
    "  if not ok then io.write('ERROR\\t', tostring(result), '\\n')",
    "  elseif type(result) ~= 'table' then io.write('ERROR\\tno table returned\\n')",
    "  else io.write(tostring(result.status), '\\t', (string.gsub(tostring(result.message), '[\\t\\n]', ' ')), '\\n') end",
    "end",
  ].join("\n");
  const dir = mkdtempSync(join(tmpdir(), "keyward-lua-"));
  try {
    const file = join(dir, "run.lua");
    writeFileSync(file, program);
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile(luaBinary(), [file], { maxBuffer: 64 * 1024 * 1024 }, (error, out, err) =>
        error ? reject(new Error(`lua5.1 failed: ${err || error.message}`)) : resolve(out),
      );
    });
    return stdout
      .trimEnd()
      .split("\n")
      .map((line) => {
        const [status = "", message = ""] = line.split("\t");
        return { status, message };
      });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
