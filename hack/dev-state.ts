// The emulator's state file (.keyward/emulator.json) belongs to one control plane: its projects
// and syncs were created for the resources of that cluster. `npm run dev` against a new control
// plane (the old one was stopped) with the old state would find every sample's project and sync
// already taken (AlreadyExists), so the state is kept only while the cluster is the same one,
// recognised by the UID of its `default` namespace.
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export type EmulatorState = "kept" | "reset" | "new";

/** Keeps, resets or starts the emulator's state in `stateDir` for the cluster `clusterUid`. */
export function prepareEmulatorState(stateDir: string, clusterUid: string): EmulatorState {
  const uidFile = join(stateDir, "cluster-uid");
  const stateFile = join(stateDir, "emulator.json");
  const known = existsSync(uidFile) ? readFileSync(uidFile, "utf8").trim() : undefined;
  writeFileSync(uidFile, `${clusterUid}\n`);
  if (!existsSync(stateFile)) return "new";
  if (known === clusterUid) return "kept";
  rmSync(stateFile);
  return "reset";
}
