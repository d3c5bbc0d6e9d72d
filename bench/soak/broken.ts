// Builds that break an invariant on purpose, to show the soak catches them: a copy of src/ with
// one rule patched out, run in place of src/main.ts (`npm run soak -- --break <name>`). keyward's
// own code has no switch for this: the patch lives here, and fails loudly when the code it
// patches has moved.
import { cpSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repoRoot } from "../../test/controlplane/binaries.ts";

interface Patch {
  file: string;
  from: string;
  to: string;
  /** The invariant the soak must report broken. */
  breaks: string;
}

export const patches = {
  // A sync or remove-secrets value is never recorded as handled: every pass runs it again.
  "repeat-actions": {
    file: "resources/secretsync.ts",
    from: "return { [requestKinds[action].handled]: value, recentRequests: { ...s.recentRequests, [action]: kept } };",
    to: "void kept;\n  return {};",
    breaks: "each action value ran exactly once",
  },
} satisfies Record<string, Patch>;

export type BrokenBuild = keyof typeof patches;

/**
 * A patched copy of src/ in a temporary directory (outside the repository, so no lint or type
 * check reads it; its node_modules links to the repository's); its main.ts.
 */
export function brokenBuild(name: BrokenBuild): { script: string; breaks: string; dir: string } {
  const patch: Patch = patches[name];
  const dir = mkdtempSync(join(tmpdir(), `keyward-soak-broken-${name}-`));
  cpSync(join(repoRoot, "src"), join(dir, "src"), { recursive: true });
  symlinkSync(join(repoRoot, "node_modules"), join(dir, "node_modules"));
  const file = join(dir, "src", patch.file);
  const text = readFileSync(file, "utf8");
  if (!text.includes(patch.from)) throw new Error(`broken build ${name}: ${patch.file} no longer holds the code it patches`);
  writeFileSync(file, text.replace(patch.from, patch.to));
  return { script: join(dir, "src", "main.ts"), breaks: patch.breaks, dir };
}
