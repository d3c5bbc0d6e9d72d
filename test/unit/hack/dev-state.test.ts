import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { prepareEmulatorState } from "../../../hack/dev-state.ts";

const dirs: string[] = [];
const stateDir = (): string => {
  const dir = mkdtempSync(join(tmpdir(), "dev-state-"));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("prepareEmulatorState (npm run dev)", () => {
  it("keeps the emulator's state while the control plane is the same one", () => {
    const dir = stateDir();
    expect(prepareEmulatorState(dir, "uid-1")).toBe("new");
    writeFileSync(join(dir, "emulator.json"), '{"projects":{}}');
    expect(prepareEmulatorState(dir, "uid-1")).toBe("kept");
    expect(readFileSync(join(dir, "emulator.json"), "utf8")).toBe('{"projects":{}}');
  });

  it("drops it for a new control plane, whose resources never saw it", () => {
    const dir = stateDir();
    prepareEmulatorState(dir, "uid-1");
    writeFileSync(join(dir, "emulator.json"), '{"projects":{"p":{}}}');
    expect(prepareEmulatorState(dir, "uid-2")).toBe("reset");
    expect(existsSync(join(dir, "emulator.json"))).toBe(false);
    expect(readFileSync(join(dir, "cluster-uid"), "utf8").trim()).toBe("uid-2");
  });

  it("drops a state left by a version that recorded no cluster", () => {
    const dir = stateDir();
    writeFileSync(join(dir, "emulator.json"), "{}");
    expect(prepareEmulatorState(dir, "uid-1")).toBe("reset");
  });
});
