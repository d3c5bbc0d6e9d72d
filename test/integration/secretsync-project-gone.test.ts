// A SecretSync (deletionPolicy RemoveSecrets) whose id only its metadata holds — the create pass
// announced it (keyward.dev/external-id) and died before its status write, as a sharded replica
// exiting on a lost shard Lease does — deleted together with its Project (deletionPolicy Retain:
// gone from Kubernetes at once, the project and the sync stay at the service). The deletion can no
// longer check the sync's project; the sync is still the one this resource's own create made.
import { afterAll, beforeAll, expect, it } from "vitest";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Emulator } from "../emulator/server.ts";
import { loadDefaultSeed } from "../emulator/default-seed.ts";
import { kubectl, testKubeconfigPath, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import { createCustom, deleteCustom, getCustom, isReady, startTestEnv, waitForObject, type TestEnv } from "./support/keyward.ts";
import { keywardProcesses } from "./support/keyward-process.ts";
import { ANNOTATION_EXTERNAL_ID } from "../../src/engine/holder.ts";
import { ANNOTATION_CREATE_STARTED } from "../../src/engine/create-rule.ts";

const TOKEN = "kw-secretsync-project-gone-token-4e02";
const DATA_PLATFORM_CONNECTION = "a1b2c3d4-0004-4a00-8000-000000000003";

let env: TestEnv | undefined;
let kc: KubeConfig;
let emulator: Emulator;
let ns: TestNamespace;
const keywards = keywardProcesses(testKubeconfigPath, () => ns.name, { resyncIntervalMs: 600_000 });

beforeAll(async () => {
  env = await startTestEnv({ prefix: "secretsync-project-gone", token: TOKEN, emulator: { seed: loadDefaultSeed() }, keyward: false });
  ({ kc, emulator, ns } = env);
  env.onStop(() => keywards.stopAll());
});

afterAll(() => env?.stop());

const gone = (plural: string, name: string) => async () => ((await getCustom(kc, ns.name, plural, name)) === undefined ? true : undefined);

it("removes the secrets of a sync known only from its own create's announcement when its Project is already gone", async () => {
  const first = await keywards.start();
  await createCustom(kc, ns.name, "projects", {
    apiVersion: "keyward.dev/v1alpha1",
    kind: "Project",
    metadata: { name: "demo" },
    spec: { slug: "demo-project", creationPolicy: "Adopt" },
  });
  await createCustom(kc, ns.name, "secretsyncs", {
    apiVersion: "keyward.dev/v1alpha1",
    kind: "SecretSync",
    metadata: { name: "leaky" },
    spec: {
      projectRef: { name: "demo" },
      destination: "data-platform",
      connectionId: DATA_PLATFORM_CONNECTION,
      environment: "prod",
      secretPath: "/",
      destinationConfig: { scope: "workspace" },
      deletionPolicy: "RemoveSecrets",
    },
  });
  const ready = await waitForObject(kc, ns.name, "secretsyncs", "leaky", {
    until: (o) => isReady(o) && typeof o.status?.["syncId"] === "string",
    timeoutMs: 60_000,
    description: "SecretSync Ready with its id",
  });
  const id = ready.status?.["syncId"] as string;
  expect(await first.kill()).toBe("SIGKILL");

  // What a create pass that died after announcing the id and before its status write leaves.
  const strip = await kubectl([
    "patch",
    "secretsyncs.v1alpha1.keyward.dev",
    "leaky",
    "-n",
    ns.name,
    "--subresource=status",
    "--type=merge",
    "-p",
    JSON.stringify({ status: { syncId: null } }),
  ]);
  expect(strip.code).toBe(0);
  const announced = await getCustom(kc, ns.name, "secretsyncs", "leaky");
  expect(announced?.status?.["syncId"]).toBeUndefined();
  expect(announced?.metadata.annotations?.[ANNOTATION_EXTERNAL_ID]).toBe(id);
  expect(announced?.metadata.annotations?.[ANNOTATION_CREATE_STARTED]).toContain(announced?.metadata.uid);

  await deleteCustom(kc, ns.name, "projects", "demo");
  await waitFor(gone("projects", "demo"), { timeoutMs: 30_000, description: "Project gone" });
  await deleteCustom(kc, ns.name, "secretsyncs", "leaky");

  await keywards.start();
  await waitFor(gone("secretsyncs", "leaky"), { timeoutMs: 60_000, description: "SecretSync released" });
  const removes = emulator.requests().filter((r) => r.operation === "removeSecretSyncSecrets");
  expect(removes.map((r) => r.path)).toEqual([`/api/v1/secret-syncs/data-platform/${id}/remove-secrets`]);
});
