// A create the service refuses (a 4xx other than 429) is a known outcome: keyward records it,
// removes its pending mark — a write of its own that must not wake it — and tries again only on
// a spec change or at the resync. Counted over several resync periods, for Project and SecretSync
// (each once caused a hot loop of ~46 creates a second).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Emulator } from "../emulator/server.ts";
import { loadDefaultSeed } from "../emulator/default-seed.ts";
import { waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import {
  condition,
  createCustom,
  dataPlatformSync,
  mergePatchCustom,
  projectObject,
  startTestEnv,
  waitForObject,
  type KeywardTestEnv,
} from "./support/keyward.ts";

const TOKEN = "kw-refused-create-token-71c0aa";
const RESYNC_MS = 2_000;

let env: KeywardTestEnv | undefined;
let kc: KubeConfig;
let emulator: Emulator;
let ns: TestNamespace;

beforeAll(async () => {
  env = await startTestEnv({
    prefix: "refused-create",
    token: TOKEN,
    emulator: { seed: loadDefaultSeed(), jobDelayMs: 50 },
    keyward: { resyncIntervalMs: RESYNC_MS },
  });
  ({ kc, emulator, ns } = env);
});

afterAll(() => env?.stop());

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Case {
  plural: string;
  operation: string;
  pathPattern: string;
  object: (name: string) => object;
  specChange: object;
}

const cases: Record<string, Case> = {
  Project: {
    plural: "projects",
    operation: "createProject",
    pathPattern: "^/api/v2/workspace$",
    object: (name) => projectObject(name, { slug: `${name}-slug` }),
    specChange: { spec: { description: "changed" } },
  },
  SecretSync: {
    plural: "secretsyncs",
    operation: "createSecretSync",
    pathPattern: "^/api/v1/secret-syncs/data-platform$",
    object: (name) => dataPlatformSync(name),
    specChange: { spec: { description: "changed" } },
  },
};

describe.each(Object.entries(cases))("a refused %s create", (kind, c) => {
  it("is attempted once, then only at a resync or a spec change", async () => {
    const name = `refused-${kind.toLowerCase()}`;
    const attempts = () => emulator.requests().filter((r) => r.operation === c.operation && r.fault === "error").length;
    emulator.setFaults({ match: { method: "POST", pathPattern: c.pathPattern }, errorRate: 1, errorStatus: 422 });
    try {
      await createCustom(kc, ns.name, c.plural, c.object(name));
      // Refused: the outcome is known, so the pending mark goes (a resync's next attempt sets it
      // again for its own call, so wait for a moment between attempts).
      const failed = await waitForObject(kc, ns.name, c.plural, name, {
        until: (o) => condition(o, "Synced")?.status === "False" && o.metadata.annotations?.["keyward.dev/create-started"] === undefined,
        timeoutMs: 60_000,
        description: `${kind} refused, its pending mark removed`,
      });
      expect(condition(failed, "Synced")?.reason).toBe("ValidationFailed");

      // Three resync periods: at most one attempt per resync (jittered ±10%), plus the first.
      const began = Date.now();
      const first = attempts();
      await sleep(3 * RESYNC_MS);
      const periods = (Date.now() - began) / (0.9 * RESYNC_MS);
      const during = attempts() - first;
      expect(first).toBeGreaterThanOrEqual(1);
      expect(during).toBeLessThanOrEqual(Math.ceil(periods) + 1);

      // A spec change is a new reason to try: one more attempt, promptly.
      const beforeChange = attempts();
      await mergePatchCustom(kc, ns.name, c.plural, name, c.specChange);
      await waitFor(() => Promise.resolve(attempts() > beforeChange ? true : undefined), {
        timeoutMs: 30_000,
        description: "an attempt after the spec change",
      });
    } finally {
      emulator.setFaults({});
    }
    // Accepted again: Ready with one successful create.
    await waitForObject(kc, ns.name, c.plural, name, {
      until: (o) => condition(o, "Ready")?.status === "True",
      timeoutMs: 60_000,
      description: `${kind} Ready once accepted`,
    });
    expect(emulator.requests().filter((r) => r.operation === c.operation && r.status === 200)).toHaveLength(1);
  });
});
