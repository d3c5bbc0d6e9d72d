// Fixing a ProviderConfig requeues the resources that use it at once, not at their next resync
// (which is set to an hour here, so only the secondary watch can explain the recovery).
import { afterAll, beforeAll, expect, it } from "vitest";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Emulator } from "../emulator/server.ts";
import { waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import {
  condition,
  createCustom,
  getCustom,
  installProvider,
  mergePatchCustom,
  startKeyward,
  startTestEnv,
  waitForObject,
  type TestEnv,
} from "./support/keyward.ts";

const TOKEN = "kw-dependents-good-token";
let env: TestEnv | undefined;
let kc: KubeConfig;
let emulator: Emulator;
let ns: TestNamespace;

beforeAll(async () => {
  // The default ProviderConfig holds a wrong token; "spare" the good one. keyward starts once both exist.
  env = await startTestEnv({ prefix: "pc-dependents", token: TOKEN, provider: false, keyward: false });
  ({ kc, emulator, ns } = env);
  await installProvider(kc, ns.name, emulator.url, "kw-dependents-wrong-token");
  await installProvider(kc, ns.name, emulator.url, TOKEN, "spare");
  const keyward = await startKeyward(kc, { namespaces: [ns.name], resyncIntervalMs: 3_600_000 });
  env.onStop(() => keyward.stop());
});

afterAll(() => env?.stop());

it("recovers a Project as soon as its ProviderConfig is fixed", async () => {
  await createCustom(kc, ns.name, "projects", {
    apiVersion: "keyward.dev/v1alpha1",
    kind: "Project",
    metadata: { name: "waiting" },
    spec: { slug: "waiting-project" },
  });
  await waitFor(
    async () => (condition(await getCustom(kc, ns.name, "projects", "waiting"), "Synced")?.reason === "Forbidden" ? true : undefined),
    { timeoutMs: 30_000, description: "Forbidden first" },
  );
  // Point the default ProviderConfig at the Secret holding the good token.
  await mergePatchCustom(kc, ns.name, "providerconfigs", "default", { spec: { credentialsSecretRef: { name: "spare-token" } } });
  const ready = await waitForObject(kc, ns.name, "projects", "waiting", {
    until: (o) => condition(o, "Ready")?.status === "True",
    timeoutMs: 60_000,
    description: "Project Ready after the fix",
  });
  expect((ready.status as { projectId?: string }).projectId).toBeDefined();
  expect(emulator.requests().filter((r) => r.operation === "createProject")).toHaveLength(1);
});
