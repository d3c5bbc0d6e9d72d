// ProviderConfig status says whether the service answers with its token; a Project behind a
// bad token or an unreachable service gets a condition with a reason, not a crash loop.
import { afterAll, beforeAll, expect, it } from "vitest";
import type { KubeConfig } from "@kubernetes/client-node";
import { waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import { freePort } from "../controlplane/controlplane.ts";
import {
  condition,
  createCustom,
  exposedTexts,
  getCustom,
  installProvider,
  startKeyward,
  startTestEnv,
  type RunningKeyward,
  type TestEnv,
} from "./support/keyward.ts";

const TOKEN = "kw-pc-good-token-a1";
const BAD = "kw-pc-wrong-token-b2";
let env: TestEnv | undefined;
let kc: KubeConfig;
let ns: TestNamespace;
let keyward: RunningKeyward;

beforeAll(async () => {
  // Three ProviderConfigs and no default; keyward starts once they exist.
  env = await startTestEnv({ prefix: "providerconfig", token: TOKEN, provider: false, keyward: false });
  ({ kc, ns } = env);
  await installProvider(kc, ns.name, env.emulator.url, TOKEN, "good");
  await installProvider(kc, ns.name, env.emulator.url, BAD, "bad");
  await installProvider(kc, ns.name, `http://127.0.0.1:${await freePort()}`, TOKEN, "unreachable");
  keyward = await startKeyward(kc, { namespaces: [ns.name], resyncIntervalMs: 2_000 });
  env.onStop(() => keyward.stop());
});

afterAll(() => env?.stop());

const readyReason = async (plural: string, name: string, reason: string): Promise<{ status: string; message: string }> =>
  waitFor(
    async () => {
      const c = condition(await getCustom(kc, ns.name, plural, name), plural === "projects" ? "Synced" : "Ready");
      return c?.reason === reason ? c : undefined;
    },
    { timeoutMs: 30_000, description: `${plural}/${name} reason ${reason}` },
  );

it("reports Connected for a working token, Forbidden for a wrong one, unavailable for no service", async () => {
  expect((await readyReason("providerconfigs", "good", "Connected")).status).toBe("True");
  const bad = await readyReason("providerconfigs", "bad", "Forbidden");
  expect(bad.status).toBe("False");
  const down = await readyReason("providerconfigs", "unreachable", "ServiceUnavailable");
  expect(down.status).toBe("False");
  expect(down.message.length).toBeGreaterThan(0);
});

it("gives a Project behind a bad token or no service a reason, and keyward keeps running", async () => {
  await createCustom(kc, ns.name, "projects", {
    apiVersion: "keyward.dev/v1alpha1",
    kind: "Project",
    metadata: { name: "p-bad" },
    spec: { slug: "bad-token-project", providerConfigRef: { name: "bad" } },
  });
  await createCustom(kc, ns.name, "projects", {
    apiVersion: "keyward.dev/v1alpha1",
    kind: "Project",
    metadata: { name: "p-down" },
    spec: { slug: "down-project", providerConfigRef: { name: "unreachable" } },
  });
  await createCustom(kc, ns.name, "projects", {
    apiVersion: "keyward.dev/v1alpha1",
    kind: "Project",
    metadata: { name: "p-none" },
    spec: { slug: "no-config-project", providerConfigRef: { name: "missing" } },
  });
  expect((await readyReason("projects", "p-bad", "Forbidden")).status).toBe("False");
  expect((await readyReason("projects", "p-down", "ServiceUnavailable")).status).toBe("False");
  expect((await readyReason("projects", "p-none", "ProviderConfigNotFound")).message).toContain("missing");
  // The good path still works beside them.
  await createCustom(kc, ns.name, "projects", {
    apiVersion: "keyward.dev/v1alpha1",
    kind: "Project",
    metadata: { name: "p-good" },
    spec: { slug: "good-project", providerConfigRef: { name: "good" } },
  });
  await waitFor(
    async () => (condition(await getCustom(kc, ns.name, "projects", "p-good"), "Ready")?.status === "True" ? true : undefined),
    { timeoutMs: 30_000, description: "good project Ready" },
  );
  for (const text of (await exposedTexts(ns.name, keyward.logs)).all) {
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain(BAD);
  }
});
