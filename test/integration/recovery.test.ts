// A missing token Secret, a service that is down, and references across namespaces: each is a
// Synced=False condition with a reason, and keyward recovers by itself once it is fixed.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { startEmulator, type Emulator } from "../emulator/server.ts";
import { createTestNamespace, testKubeConfig, waitFor } from "../controlplane/testenv.ts";
import { freePort } from "../controlplane/controlplane.ts";
import {
  condition,
  credentialsLabels,
  projectObject as project,
  createCustom,
  getCustom,
  installProvider,
  startKeyward,
  type RunningKeyward,
} from "./support/keyward.ts";

const TOKEN = "kw-recovery-token-e5";
let kc: KubeConfig;
let emulator: Emulator;
let port: number;
let stateDir: string;
let home: { name: string; cleanup(): Promise<void> };
let other: { name: string; cleanup(): Promise<void> };
let keyward: RunningKeyward;

async function reasonOf(ns: string, name: string, type: string, reason: string): Promise<{ status: string; message: string }> {
  return waitFor(
    async () => {
      const c = condition(await getCustom(kc, ns, "projects", name), type);
      return c?.reason === reason ? c : undefined;
    },
    { timeoutMs: 30_000, description: `${ns}/${name} ${type} reason ${reason}` },
  );
}

beforeAll(async () => {
  kc = testKubeConfig();
  port = await freePort();
  stateDir = mkdtempSync(join(tmpdir(), "keyward-recovery-"));
  emulator = await startEmulator({ tokens: [TOKEN], port, persistPath: join(stateDir, "state.json") });
  home = await createTestNamespace("recovery");
  other = await createTestNamespace("recovery-other");
  keyward = await startKeyward(kc, { namespaces: [home.name, other.name], resyncIntervalMs: 2_000 });
});

afterAll(async () => {
  await keyward.stop();
  await emulator.close();
  await home.cleanup();
  await other.cleanup();
  rmSync(stateDir, { recursive: true, force: true });
});

it("waits for a missing token Secret with a reason and recovers when it appears", async () => {
  await createCustom(kc, home.name, "providerconfigs", {
    apiVersion: "keyward.dev/v1alpha1",
    kind: "ProviderConfig",
    metadata: { name: "default" },
    spec: { baseUrl: emulator.url, credentialsSecretRef: { name: "later-token" }, rateLimit: { requestsPerSecond: 200, burst: 200 } },
  });
  await createCustom(kc, home.name, "projects", project("patient", { slug: "patient-project" }));
  const waiting = await reasonOf(home.name, "patient", "Synced", "CredentialsNotFound");
  expect(waiting.status).toBe("False");
  expect(waiting.message).toContain("later-token");
  await kc.makeApiClient(CoreV1Api).createNamespacedSecret({
    namespace: home.name,
    body: { metadata: { name: "later-token", labels: credentialsLabels }, stringData: { token: TOKEN } },
  });
  expect((await reasonOf(home.name, "patient", "Ready", "Available")).status).toBe("True");
});

it("reports the service down and recovers when it is back, without a restart", async () => {
  await emulator.close();
  await createCustom(kc, home.name, "projects", project("during-outage", { slug: "outage-project" }));
  const down = await reasonOf(home.name, "during-outage", "Synced", "ServiceUnavailable");
  expect(down.status).toBe("False");
  expect(down.message).not.toContain(TOKEN);
  // The same service comes back on the same address, with its state.
  emulator = await startEmulator({ tokens: [TOKEN], port, persistPath: join(stateDir, "state.json") });
  expect((await reasonOf(home.name, "during-outage", "Ready", "Available")).status).toBe("True");
  const res = await fetch(`${emulator.url}/api/v1/projects`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const slugs = ((await res.json()) as { projects: Array<{ slug: string }> }).projects.map((p) => p.slug);
  expect(slugs.filter((s) => s === "outage-project")).toHaveLength(1);
  expect(slugs).toContain("patient-project");
});

it("never uses a ProviderConfig or a Secret of another namespace", async () => {
  // `other` has no ProviderConfig; home's `default` must not be used for it.
  await createCustom(kc, other.name, "projects", project("stranger", { slug: "stranger-project" }));
  const missing = await reasonOf(other.name, "stranger", "Synced", "ProviderConfigNotFound");
  expect(missing.message).toContain(`${other.name}/default`);
  // A ProviderConfig in `other` naming a Secret that exists only in `home`.
  await createCustom(kc, other.name, "providerconfigs", {
    apiVersion: "keyward.dev/v1alpha1",
    kind: "ProviderConfig",
    metadata: { name: "default" },
    spec: { baseUrl: emulator.url, credentialsSecretRef: { name: "later-token" } },
  });
  const noSecret = await reasonOf(other.name, "stranger", "Synced", "CredentialsNotFound");
  expect(noSecret.message).toContain(`${other.name}/later-token`);
  const res = await fetch(`${emulator.url}/api/v1/projects`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const slugs = ((await res.json()) as { projects: Array<{ slug: string }> }).projects.map((p) => p.slug);
  expect(slugs).not.toContain("stranger-project");
  // Given its own token, it works.
  await installProvider(kc, other.name, emulator.url, TOKEN, "own");
  await createCustom(kc, other.name, "projects", project("own-project", { slug: "own-project-x", providerConfigRef: { name: "own" } }));
  expect((await reasonOf(other.name, "own-project", "Ready", "Available")).status).toBe("True");
});
