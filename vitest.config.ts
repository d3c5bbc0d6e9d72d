import { defineConfig } from "vitest/config";
import { LongFilesFirstSequencer } from "./test/sequencer.ts";

// Two projects: `unit` needs nothing but Node (pure functions, the client against the
// emulator over loopback HTTP, the conformance probe); `integration` starts one real
// kube-apiserver + etcd per run (test/controlplane/global-setup.ts) and one namespace per test.
// The projects run one after the other (integration, then unit); test/sequencer.ts starts the
// files that take minutes first.
export default defineConfig({
  test: {
    sequence: { sequencer: LongFilesFirstSequencer },
    projects: [
      {
        test: {
          name: "unit",
          include: ["test/unit/**/*.test.ts", "test/emulator/**/*.test.ts", "test/conformance/**/*.test.ts"],
          globalSetup: ["test/unit/global-setup.ts"],
          testTimeout: 30_000,
          // Two at a time: a unit file spends about as long being loaded as running.
          maxWorkers: 2,
        },
      },
      {
        test: {
          name: "integration",
          include: ["test/integration/**/*.test.ts"],
          globalSetup: ["test/controlplane/global-setup.ts"],
          testTimeout: 120_000,
          hookTimeout: 900_000,
          // The control plane is shared; files run in parallel against it, one namespace each.
          fileParallelism: true,
          maxWorkers: 2,
        },
      },
    ],
  },
});
