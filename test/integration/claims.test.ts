// Two namespaces whose credentials reach the same service account (one token, as a shared
// ClusterProviderConfig gives them): a resource in B that adopts A's project by slug, or names A's
// sync by spec.syncId, must not take it over — the first resource to hold an external id keeps it —
// and deleting B's resource must not delete the project or remove A's synced secrets.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KubeConfig } from "@kubernetes/client-node";
import { GROUP, VERSION } from "../../src/engine/types.ts";
import type { Emulator } from "../emulator/server.ts";
import { connectionIds, loadDefaultSeed } from "../emulator/default-seed.ts";
import { createTestNamespace, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import {
  condition,
  createCustom,
  deleteCustom,
  getCustom,
  installProvider,
  isReady,
  startKeyward,
  startTestEnv,
  waitForObject,
  type TestEnv,
} from "./support/keyward.ts";

const TOKEN = "kw-claims-token-7d21f4";
const api = `${GROUP}/${VERSION}`;

let env: TestEnv;
let kc: KubeConfig;
let emulator: Emulator;
let a: TestNamespace;
let b: TestNamespace;

const calls = (operation: string, since: number): number =>
  emulator
    .requests()
    .slice(since)
    .filter((r) => r.operation === operation).length;

const sync = (name: string, spec: Record<string, unknown>): object => ({
  apiVersion: api,
  kind: "SecretSync",
  metadata: { name },
  spec: {
    projectRef: { name: "shop" },
    destination: "data-platform",
    connectionId: connectionIds["data-platform"],
    environment: "prod",
    secretPath: "/",
    destinationConfig: { scope: "workspace" },
    ...spec,
  },
});

beforeAll(async () => {
  env = await startTestEnv({ prefix: "claims-a", token: TOKEN, emulator: { seed: loadDefaultSeed(), jobDelayMs: 50 }, keyward: false });
  ({ kc, emulator, ns: a } = env);
  b = await createTestNamespace("claims-b");
  env.onStop(() => b.cleanup());
  await installProvider(kc, b.name, emulator.url, TOKEN);
  const keyward = await startKeyward(kc, { namespaces: [a.name, b.name] });
  env.onStop(() => keyward.stop());
});

afterAll(() => env.stop());

describe("an external object held by a resource of another namespace", () => {
  it("is refused to the second resource, which changes and deletes nothing", async () => {
    await createCustom(kc, a.name, "projects", {
      apiVersion: api,
      kind: "Project",
      metadata: { name: "shop" },
      spec: { slug: "shop-claims" },
    });
    const projectA = await waitForObject(kc, a.name, "projects", "shop", {
      until: isReady,
      timeoutMs: 60_000,
      description: "A's Project Ready",
    });
    await createCustom(kc, a.name, "secretsyncs", sync("orders", {}));
    const syncA = await waitForObject(kc, a.name, "secretsyncs", "orders", {
      until: isReady,
      timeoutMs: 60_000,
      description: "A's SecretSync Ready",
    });
    const syncId = String(syncA.status?.["syncId"]);

    const mark = emulator.requests().length;
    // B adopts A's project by its slug, and names A's sync by id, with deletion policies that
    // would delete the project and remove the synced secrets.
    await createCustom(kc, b.name, "projects", {
      apiVersion: api,
      kind: "Project",
      metadata: { name: "shop" },
      spec: { slug: "shop-claims", creationPolicy: "Adopt", description: "taken over by B", deletionPolicy: "Delete" },
    });
    await createCustom(
      kc,
      b.name,
      "secretsyncs",
      sync("orders", {
        projectRef: undefined,
        projectId: projectA.status?.["projectId"],
        syncId,
        description: "taken over by B",
        deletionPolicy: "RemoveSecrets",
      }),
    );
    for (const plural of ["projects", "secretsyncs"]) {
      const o = await waitForObject(kc, b.name, plural, plural === "projects" ? "shop" : "orders", {
        until: (x) => condition(x, "Synced")?.reason === "ExternalIdClaimed",
        timeoutMs: 60_000,
        description: `B's ${plural} ExternalIdClaimed`,
      });
      expect(condition(o, "Synced")?.message).toContain(`${a.name}/`);
      expect(o.status?.["projectId"] ?? o.status?.["syncId"]).toBeUndefined();
    }
    for (const [plural, name] of [
      ["secretsyncs", "orders"],
      ["projects", "shop"],
    ] as const) {
      await deleteCustom(kc, b.name, plural, name);
      await waitFor(async () => ((await getCustom(kc, b.name, plural, name)) ? undefined : true), {
        timeoutMs: 60_000,
        description: `B's ${name} released`,
      });
    }
    for (const op of [
      "updateProject",
      "deleteProject",
      "updateSecretSync",
      "removeSecretSyncSecrets",
      "deleteSecretSync",
      "createProject",
      "createSecretSync",
    ]) {
      expect(calls(op, mark), op).toBe(0);
    }
    // A still manages both, with the same ids.
    const projectAfter = await getCustom(kc, a.name, "projects", "shop");
    expect(isReady(projectAfter)).toBe(true);
    expect(projectAfter?.status?.["projectId"]).toBe(projectA.status?.["projectId"]);
    expect(isReady(await getCustom(kc, a.name, "secretsyncs", "orders"))).toBe(true);
  });
});
