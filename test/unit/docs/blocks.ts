// The command blocks of the pages a new user follows (the README's "Five minutes with keyward",
// docs/getting-started.md) and of the chart's rendered notes, as the executed-docs tests run
// them: verbatim, in a shell, with only the placeholders a user fills in replaced.
//
// In Markdown, a block is a fenced ```sh block; a ```yaml block whose first line is a comment
// naming a file (`# project.yaml`) is that file, written where the commands run. A block meant
// only to be read carries, on the line before its fence, `<!-- not run: <why> -->`.
// In the notes, a block is a run of lines whose first starts with `kubectl`, ending at a blank
// line or at a line that is not a command, once any heredoc has been closed.
import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";

export interface CommandBlock {
  /** Where it comes from: `<file>:<line>`. */
  where: string;
  text: string;
  /** Why it is not run, when it is marked so. */
  notRun?: string;
}

export interface FileBlock {
  where: string;
  name: string;
  text: string;
}

export interface Page {
  commands: CommandBlock[];
  files: FileBlock[];
}

const NOT_RUN = /^<!--\s*not run:\s*(.+?)\s*-->\s*$/;

/** The lines of `markdown`'s section titled `section` (to the next heading of the same level or above), and where it starts. */
export function markdownSection(file: string, markdown: string, section: string): { lines: string[]; offset: number } {
  const lines = markdown.split("\n");
  const start = lines.findIndex((l) => /^#+ /.test(l) && l.replace(/^#+ /, "") === section);
  if (start < 0) throw new Error(`${file} has no section "${section}"`);
  const level = /^#+/.exec(lines[start] ?? "")?.[0].length ?? 1;
  const end = lines.findIndex((l, i) => i > start && new RegExp(`^#{1,${level}} `).test(l));
  return { lines: lines.slice(start, end < 0 ? undefined : end), offset: start };
}

/** The fenced blocks of `markdown` (or of its section titled `section`). */
export function markdownBlocks(file: string, markdown: string, section?: string): Page {
  const { lines, offset } = section === undefined ? { lines: markdown.split("\n"), offset: 0 } : markdownSection(file, markdown, section);
  const page: Page = { commands: [], files: [] };
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```(\w*)\s*$/.exec(lines[i] ?? "");
    if (!fence) continue;
    const end = lines.findIndex((l, j) => j > i && l.startsWith("```"));
    if (end < 0) throw new Error(`${file}:${offset + i + 1}: a fence that does not close`);
    const body = lines.slice(i + 1, end).join("\n") + "\n";
    const where = `${file}:${offset + i + 1}`;
    const notRun = NOT_RUN.exec(lines[i - 1] ?? "")?.[1] ?? NOT_RUN.exec(lines[i - 2] ?? "")?.[1];
    if (fence[1] === "sh") page.commands.push({ where, text: body, ...(notRun === undefined ? {} : { notRun }) });
    else if (fence[1] === "yaml") {
      const name = /^# (\S+\.ya?ml)\s*$/.exec(lines[i + 1] ?? "")?.[1];
      if (name !== undefined) page.files.push({ where, name, text: body });
    }
    i = end;
  }
  return page;
}

/** The command blocks of the chart's rendered notes (the text after helm's `NOTES:` line). */
export function notesBlocks(notes: string): CommandBlock[] {
  const lines = notes.split("\n");
  const blocks: CommandBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^\s*kubectl\s/.test(lines[i] ?? "")) continue;
    const start = i;
    let heredoc: string | undefined;
    for (; i < lines.length; i++) {
      const line = lines[i] ?? "";
      if (heredoc !== undefined) {
        // The extent a reader sees: the terminator, however indented (the shell wants it alone on its line).
        if (line.trim() === heredoc) heredoc = undefined;
        continue;
      }
      if (line.trim() === "" || !/^\s*kubectl\s/.test(line)) break;
      heredoc = /<<-?\s*'?"?(\w+)'?"?/.exec(line)?.[1];
    }
    blocks.push({ where: `NOTES.txt:${start + 1}`, text: lines.slice(start, i).join("\n") + "\n" });
    i--;
  }
  return blocks;
}

/** `text` with every placeholder replaced by its value. */
export function fill(text: string, placeholders: Readonly<Record<string, string>>): string {
  let out = text;
  for (const [placeholder, value] of Object.entries(placeholders)) out = out.replaceAll(placeholder, value);
  return out;
}

export interface BlockRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs one block in bash as a user pastes it (`set -euo pipefail`: a failing line fails the
 * block), from a file (so a command reading stdin never eats the rest of the block), in `cwd`,
 * with `kubectl` the one in `binDir`.
 */
export async function runBlock(text: string, opts: { cwd: string; binDir: string; env: Record<string, string>; timeoutMs?: number }): Promise<BlockRun> {
  const script = join(opts.cwd, `.block-${Date.now()}-${Math.random().toString(16).slice(2)}.sh`);
  await writeFile(script, `set -euo pipefail\n${text}`);
  return new Promise((resolvePromise) => {
    const child = execFile(
      "bash",
      [script],
      {
        cwd: opts.cwd,
        timeout: opts.timeoutMs ?? 180_000,
        env: { ...process.env, ...opts.env, PATH: `${opts.binDir}:${process.env["PATH"] ?? ""}` },
      },
      (error, stdout, stderr) => {
        resolvePromise({ code: error === null ? 0 : typeof error.code === "number" ? error.code : -1, stdout, stderr });
      },
    );
    child.stdin?.end();
  });
}
