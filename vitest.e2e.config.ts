import { defineConfig } from "vitest/config";
import { DeclaredOrderSequencer } from "./test/e2e/sequencer.ts";

// The `e2e` project, run by `npm run test:e2e` only (never by `npm test`): keyward in a real
// kind cluster (test/e2e/global-setup.ts builds or reuses it through hack/e2e/up.sh). The files
// install and uninstall their own keyward releases, so they run one at a time, in the order
// test/e2e/sequencer.ts declares (not vitest's cache-dependent one).
export default defineConfig({
  test: {
    sequence: { sequencer: DeclaredOrderSequencer },
    projects: [
      {
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          globalSetup: ["test/e2e/global-setup.ts"],
          testTimeout: 600_000,
          hookTimeout: 900_000,
          fileParallelism: false,
          sequence: { concurrent: false },
        },
      },
    ],
  },
});
