// The process guard in a real Node process: undici's SocketError thrown out of the event loop
// (what an HTTP/2 stream undici let go of throws when its connection ends later) is logged at warn
// and the process goes on; any other uncaught exception is logged at fatal and ends it with 1.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { isOrphanedSocketError } from "../../src/process-guard.ts";

const guard = fileURLToPath(new URL("../../src/process-guard.ts", import.meta.url));
const log = fileURLToPath(new URL("../../src/log.ts", import.meta.url));

/** Runs a process that installs the guard, then runs `statement` (a throw, say) from a timer. */
function runThrowing(statement: string): { status: number | null; lines: { level: number; msg: string; reason?: string }[] } {
  const script = `
    import { guardUncaughtExceptions } from ${JSON.stringify(guard)};
    import { createLogger } from ${JSON.stringify(log)};
    guardUncaughtExceptions(createLogger({ level: "info" }));
    setTimeout(() => { ${statement}; }, 10);
    setTimeout(() => process.stdout.write(JSON.stringify({ level: 30, msg: "still running" }) + "\\n"), 200);
  `;
  const run = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", timeout: 30_000 });
  const lines = run.stdout
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as { level: number; msg: string; reason?: string });
  return { status: run.status, lines };
}

const socketError = `Object.assign(new Error("other side closed"), { name: "SocketError", code: "UND_ERR_SOCKET" })`;

describe("process guard", () => {
  it("logs undici's orphaned SocketError at warn and keeps the process running", () => {
    const { status, lines } = runThrowing(`throw ${socketError}`);
    expect(status).toBe(0);
    expect(lines).toContainEqual(expect.objectContaining({ level: 40, reason: "other side closed" }));
    expect(lines.map((l) => l.msg)).toContain("still running");
  });

  it("ends the process with 1 on any other uncaught exception, after a fatal line", () => {
    const { status, lines } = runThrowing(`throw new TypeError("boom")`);
    expect(status).toBe(1);
    expect(lines).toContainEqual(expect.objectContaining({ level: 60, msg: "uncaught exception; exiting", reason: "boom" }));
    expect(lines.map((l) => l.msg)).not.toContain("still running");
  });

  it("ends the process after a fatal line when what was thrown is not an Error at all", () => {
    const { status, lines } = runThrowing(`throw null`);
    expect(status).toBe(1);
    expect(lines).toContainEqual(expect.objectContaining({ level: 60, reason: "null" }));
  });

  it("keeps a promise rejected with it and never awaited fatal: that is keyward's bug, not a connection's end", () => {
    const { status, lines } = runThrowing(`void Promise.reject(${socketError})`);
    expect(status).toBe(1);
    expect(lines).toContainEqual(expect.objectContaining({ level: 60, origin: "unhandledRejection" }));
  });

  it("tells undici's SocketError from other errors with the same words", () => {
    expect(isOrphanedSocketError(Object.assign(new Error("other side closed"), { name: "SocketError", code: "UND_ERR_SOCKET" }))).toBe(
      true,
    );
    expect(isOrphanedSocketError(Object.assign(new Error("other side closed"), { code: "UND_ERR_SOCKET" }))).toBe(false);
    expect(isOrphanedSocketError(Object.assign(new Error("x"), { name: "SocketError", code: "ECONNRESET" }))).toBe(false);
    expect(isOrphanedSocketError("UND_ERR_SOCKET")).toBe(false);
  });
});
