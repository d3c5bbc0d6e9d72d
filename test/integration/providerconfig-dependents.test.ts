// Fixing a ProviderConfig requeues the resources that use it at once, not at their next resync
// (which is set to an hour here, so only the secondary watch can explain the recovery).
import { afterAll, beforeAll, expect, it } from "vitest";
import type { KubeConfig } from "@kubernetes/client-node";
import { startEmulator, type Emulator } from "../emulator/server.ts";
import { createTestNamespace, testKubeConfig, waitFor } from "../controlplane/testenv.ts";
import { condition, createCustom, getCustom, installProvider, mergePatchCustom, startKeyward, type RunningKeyward } from "./support/keyward.ts";

const TOKEN = "kw-dependents-good-token";
let kc: KubeConfig;
let emulator: Emulator;
let ns: { name: string; cleanup(): Promise<void> };
let keyward: RunningKeyward;

beforeAll(async () => {
  kc = testKubeConfig();
  emulator = await startEmulator({ tokens: [TOKEN] });
  ns = await createTestNamespace("pc-dependents");
  await installProvider(kc, ns.name, emulator.url, "kw-dependents-wrong-token");
  await installProvider(kc, ns.name, emulator.url, TOKEN, "spare");
  keyward = await startKeyward(kc, { namespaces: [ns.name], resyncIntervalMs: 3_600_000 });
});

afterAll(async () => {
  await keyward.stop();
  await emulator.close();
  await ns.cleanup();
});

it("recovers a Project as soon as its ProviderConfig is fixed", async () => {
  await createCustom(kc, ns.name, "projects", { apiVersion: "keyward.dev/v1alpha1", kind: "Project", metadata: { name: "waiting" }, spec: { slug: "waiting-project" } });
  await waitFor(async () => (condition(await getCustom(kc, ns.name, "projects", "waiting"), "Synced")?.reason === "Forbidden" ? true : undefined), { timeoutMs: 30_000, description: "Forbidden first" });
  // Point the default ProviderConfig at the Secret holding the good token.
  await mergePatchCustom(kc, ns.name, "providerconfigs", "default", { spec: { credentialsSecretRef: { name: "spare-token" } } });
  const ready = await waitFor(async () => {
    const o = await getCustom(kc, ns.name, "projects", "waiting");
    return condition(o, "Ready")?.status === "True" ? o : undefined;
  }, { timeoutMs: 60_000, description: "Project Ready after the fix" });
  expect((ready.status as { projectId?: string }).projectId).toBeDefined();
  expect(emulator.requests().filter((r) => r.operation === "createProject")).toHaveLength(1);
});
