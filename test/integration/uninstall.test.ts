// `keyward uninstall` (src/uninstall.ts) on the real apiserver: keyward holds its finalizers for
// real (in-use on the ProviderConfig and its token Secret, keyward.dev/finalizer on a Delete-policy
// Project), stops, and the release lets all of them go, so deleting everything finishes without
// keyward, and nothing reaches the service.
import { afterAll, beforeAll, expect, it } from "vitest";
import { AppsV1Api, CoreV1Api, CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import { createKube } from "../../src/kube/client.ts";
import { createLogger } from "../../src/log.ts";
import { KEYWARD_FINALIZERS, releaseFinalizers, stopDeployment } from "../../src/uninstall.ts";
import { waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import type { Emulator } from "../emulator/server.ts";
import { createCustom, getCustom, isReady, projectObject, startTestEnv, waitForObject, type KeywardTestEnv } from "./support/keyward.ts";

const TOKEN = "kw-uninstall-token-3c19";
let env: KeywardTestEnv | undefined;
let kc: KubeConfig;
let ns: TestNamespace;
let emulator: Emulator;

beforeAll(async () => {
  env = await startTestEnv({ prefix: "uninstall", token: TOKEN, keyward: { resyncIntervalMs: 60_000 } });
  ({ kc, ns, emulator } = env);
});
afterAll(() => env?.stop());

const finalizersOf = (o: { metadata?: { finalizers?: string[] } } | undefined): string[] =>
  (o?.metadata?.finalizers ?? []).filter((f) => (KEYWARD_FINALIZERS as readonly string[]).includes(f));

it("releases every keyward finalizer, after which the objects delete without keyward", async () => {
  await createCustom(kc, ns.name, "projects", projectObject("doomed", { slug: "uninstall-doomed", deletionPolicy: "Delete" }));
  await waitForObject(kc, ns.name, "projects", "doomed", { until: isReady, timeoutMs: 60_000, description: "Project Ready" });
  const core = kc.makeApiClient(CoreV1Api);
  await waitFor(
    async () =>
      finalizersOf(await core.readNamespacedSecret({ name: "default-token", namespace: ns.name })).length > 0 ? true : undefined,
    { timeoutMs: 30_000, description: "Secret held" },
  );
  expect(finalizersOf(await getCustom(kc, ns.name, "providerconfigs", "default"))).toEqual(["keyward.dev/in-use"]);
  expect(finalizersOf(await getCustom(kc, ns.name, "projects", "doomed"))).toEqual(["keyward.dev/finalizer"]);

  // keyward stops first (the pre-delete hook's order): a running keyward would put them back.
  await env?.keyward.stop();
  const released = await releaseFinalizers({ kube: createKube(kc), namespaces: [ns.name], log: createLogger({ level: "fatal" }) });
  expect(released.sort()).toEqual([`Project ${ns.name}/doomed`, `ProviderConfig ${ns.name}/default`, `Secret ${ns.name}/default-token`]);
  expect(finalizersOf(await getCustom(kc, ns.name, "projects", "doomed"))).toEqual([]);
  expect(finalizersOf(await getCustom(kc, ns.name, "providerconfigs", "default"))).toEqual([]);
  expect(finalizersOf(await core.readNamespacedSecret({ name: "default-token", namespace: ns.name }))).toEqual([]);

  // A second run finds nothing to do.
  expect(await releaseFinalizers({ kube: createKube(kc), namespaces: [ns.name], log: createLogger({ level: "fatal" }) })).toEqual([]);

  const deletesBefore = emulator.requests().filter((r) => r.method === "DELETE").length;
  await core.deleteNamespacedSecret({ name: "default-token", namespace: ns.name });
  for (const [plural, name] of [
    ["projects", "doomed"],
    ["providerconfigs", "default"],
  ] as const) {
    await kc
      .makeApiClient(CustomObjectsApi)
      .deleteNamespacedCustomObject({ group: "keyward.dev", version: "v1alpha1", namespace: ns.name, plural, name });
  }
  // Without keyward every deletion finishes at once: nothing is left to wait for.
  await waitFor(
    async () =>
      (await getCustom(kc, ns.name, "projects", "doomed")) === undefined &&
      (await getCustom(kc, ns.name, "providerconfigs", "default")) === undefined
        ? true
        : undefined,
    {
      timeoutMs: 30_000,
      description: "the objects gone",
    },
  );
  await expect(core.readNamespacedSecret({ name: "default-token", namespace: ns.name })).rejects.toMatchObject({ code: 404 });
  // Uninstalling is not deleting: the project stays at the service.
  expect(emulator.requests().filter((r) => r.method === "DELETE").length).toBe(deletesBefore);
});

it("scales keyward's Deployment to 0 and waits for its pods before releasing (the chart's pre-delete hook)", async () => {
  const apps = kc.makeApiClient(AppsV1Api);
  const core = kc.makeApiClient(CoreV1Api);
  const labels = { "app.kubernetes.io/name": "keyward", "app.kubernetes.io/instance": "uninstall-test" };
  await apps.createNamespacedDeployment({
    namespace: ns.name,
    body: {
      metadata: { name: "keyward" },
      spec: {
        replicas: 2,
        selector: { matchLabels: labels },
        template: { metadata: { labels }, spec: { containers: [{ name: "keyward", image: "keyward:test" }] } },
      },
    },
  });
  // The test plane runs no deployment controller and no kubelet: a pod of the Deployment's
  // labels stands for a keyward still shutting down, and the test deletes it as the ReplicaSet
  // controller would.
  await core.createNamespacedPod({
    namespace: ns.name,
    body: { metadata: { name: "keyward-0", labels }, spec: { containers: [{ name: "keyward", image: "keyward:test" }] } },
  });
  let stopped = false;
  const stopping = stopDeployment(createKube(kc), { namespace: ns.name, name: "keyward" }, createLogger({ level: "fatal" }), 60_000).then(
    () => {
      stopped = true;
    },
  );
  await waitFor(
    async () => ((await apps.readNamespacedDeployment({ namespace: ns.name, name: "keyward" })).spec?.replicas === 0 ? true : undefined),
    { timeoutMs: 30_000, description: "scaled to 0" },
  );
  expect(stopped).toBe(false);
  await core.deleteNamespacedPod({ namespace: ns.name, name: "keyward-0", gracePeriodSeconds: 0 });
  await stopping;
  expect(stopped).toBe(true);
  // A Deployment already gone is not an error.
  await apps.deleteNamespacedDeployment({ namespace: ns.name, name: "keyward" });
  await expect(
    stopDeployment(createKube(kc), { namespace: ns.name, name: "keyward" }, createLogger({ level: "fatal" }), 5_000),
  ).resolves.toBeUndefined();
});
