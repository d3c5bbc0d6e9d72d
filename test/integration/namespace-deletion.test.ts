// Deleting a namespace deletes a ProviderConfig, its token Secret and the resources that use
// them at once. The ProviderConfig and its Secret stay until those resources are finalized, so
// a Project with deletionPolicy Delete is deleted at the service and the namespace goes away.
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { CoreV1Api, Watch, type KubeConfig } from "@kubernetes/client-node";
import { startEmulator, type Emulator } from "../emulator/server.ts";
import { createTestNamespace, goneWhen404, testKubeConfig, waitFor } from "../controlplane/testenv.ts";
import {
  condition,
  credentialsLabels,
  projectObject as project,
  createCustom,
  deleteCustom,
  getCustom,
  installProvider,
  isReady,
  startKeyward,
  type RunningKeyward,
} from "./support/keyward.ts";

const TOKEN = "kw-nsdelete-token-d7";
let kc: KubeConfig;
let emulator: Emulator;
let keyward: RunningKeyward;
let doomed: { name: string; cleanup(): Promise<void> };
let kept: { name: string; cleanup(): Promise<void> };

async function projectExists(id: string): Promise<boolean> {
  const res = await fetch(`${emulator.url}/api/v1/projects/${id}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  return res.status === 200;
}

beforeAll(async () => {
  kc = testKubeConfig();
  emulator = await startEmulator({ tokens: [TOKEN] });
  doomed = await createTestNamespace("ns-delete");
  kept = await createTestNamespace("ns-kept");
  await installProvider(kc, doomed.name, emulator.url, TOKEN);
  await installProvider(kc, kept.name, emulator.url, TOKEN);
  keyward = await startKeyward(kc, { namespaces: [doomed.name, kept.name], resyncIntervalMs: 2_000 });
});

afterAll(async () => {
  await keyward.stop();
  await emulator.close();
  await kept.cleanup();
});

it("holds the ProviderConfig and its token Secret while a resource uses them", async () => {
  await createCustom(kc, kept.name, "projects", project("user", { slug: "kept-user-project" }));
  await waitFor(async () => (isReady(await getCustom(kc, kept.name, "projects", "user")) ? true : undefined), {
    timeoutMs: 30_000,
    description: "Project Ready",
  });
  const pc = await waitFor(
    async () => {
      const o = await getCustom(kc, kept.name, "providerconfigs", "default");
      return o?.metadata.finalizers?.includes("keyward.dev/in-use") ? o : undefined;
    },
    { timeoutMs: 30_000, description: "ProviderConfig finalizer" },
  );
  expect((pc.status as { heldSecret?: string }).heldSecret).toBe("default-token");
  const core = kc.makeApiClient(CoreV1Api);
  const secret = await core.readNamespacedSecret({ name: "default-token", namespace: kept.name });
  expect(secret.metadata?.finalizers).toContain("keyward.dev/in-use");

  await deleteCustom(kc, kept.name, "providerconfigs", "default");
  const inUse = await waitFor(
    async () => {
      const o = await getCustom(kc, kept.name, "providerconfigs", "default");
      return condition(o, "Ready")?.reason === "InUse" ? o : undefined;
    },
    { timeoutMs: 30_000, description: "InUse condition" },
  );
  expect(condition(inUse, "Ready")?.message).toContain("Project/user");
  await deleteCustom(kc, kept.name, "projects", "user");
  await waitFor(async () => ((await getCustom(kc, kept.name, "providerconfigs", "default")) ? undefined : true), {
    timeoutMs: 30_000,
    description: "ProviderConfig released",
  });
  const after = await core.readNamespacedSecret({ name: "default-token", namespace: kept.name });
  expect(after.metadata?.finalizers ?? []).not.toContain("keyward.dev/in-use");
});

it("lets a token Secret the user deletes go, after a grace that lets a namespace deletion show", async () => {
  await installProvider(kc, kept.name, emulator.url, TOKEN, "second");
  const core = kc.makeApiClient(CoreV1Api);
  await waitFor(
    async () => {
      const s = await core.readNamespacedSecret({ name: "second-token", namespace: kept.name });
      return s.metadata?.finalizers?.includes("keyward.dev/in-use") ? true : undefined;
    },
    { timeoutMs: 30_000, description: "Secret held" },
  );
  await core.deleteNamespacedSecret({ name: "second-token", namespace: kept.name });
  await waitFor(() => goneWhen404(core.readNamespacedSecret({ name: "second-token", namespace: kept.name })), {
    timeoutMs: 60_000,
    description: "Secret gone",
  });
  const pc = await waitFor(
    async () => {
      const o = await getCustom(kc, kept.name, "providerconfigs", "second");
      return condition(o, "Ready")?.reason === "CredentialsNotFound" ? o : undefined;
    },
    { timeoutMs: 30_000, description: "CredentialsNotFound" },
  );
  expect(condition(pc, "Ready")?.status).toBe("False");
});

it("deletes a Delete-policy Project at the service when its whole namespace is deleted", async () => {
  if (!inject("keywardControllerManager")) throw new Error("this test needs kube-controller-manager's namespace controller");
  await createCustom(kc, doomed.name, "projects", project("goner", { slug: "ns-goner-project", deletionPolicy: "Delete" }));
  const ready = await waitFor(
    async () => {
      const o = await getCustom(kc, doomed.name, "projects", "goner");
      return isReady(o) ? o : undefined;
    },
    { timeoutMs: 30_000, description: "Project Ready" },
  );
  const id = (ready.status as { projectId: string }).projectId;
  expect(await projectExists(id)).toBe(true);
  await doomed.cleanup();
  const core = kc.makeApiClient(CoreV1Api);
  await waitFor(() => goneWhen404(core.readNamespace({ name: doomed.name })), { timeoutMs: 90_000, description: "namespace gone" });
  expect(await projectExists(id)).toBe(false);
});

it("keeps a Secret held while another ProviderConfig still names it", async () => {
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespacedSecret({
    namespace: kept.name,
    body: { metadata: { name: "shared-token", labels: credentialsLabels }, stringData: { token: TOKEN } },
  });
  for (const name of ["one", "two"]) {
    await createCustom(kc, kept.name, "providerconfigs", {
      apiVersion: "keyward.dev/v1alpha1",
      kind: "ProviderConfig",
      metadata: { name },
      spec: { baseUrl: emulator.url, credentialsSecretRef: { name: "shared-token" } },
    });
  }
  for (const name of ["one", "two"]) {
    await waitFor(
      async () =>
        ((await getCustom(kc, kept.name, "providerconfigs", name))?.status as { heldSecret?: string } | undefined)?.heldSecret ===
          "shared-token" || undefined,
      {
        timeoutMs: 30_000,
        description: `${name} holds the Secret`,
      },
    );
  }
  const heldBy = async (): Promise<string[]> =>
    (await core.readNamespacedSecret({ name: "shared-token", namespace: kept.name })).metadata?.finalizers ?? [];
  expect(await heldBy()).toContain("keyward.dev/in-use");
  // Every version of the Secret while "one" goes: "two" would put a removed finalizer back on its
  // next pass, so only the watch shows a release in between.
  const versions: string[][] = [];
  const watch = await new Watch(kc).watch(
    `/api/v1/namespaces/${kept.name}/secrets`,
    { fieldSelector: "metadata.name=shared-token" },
    (_type: string, obj: { metadata?: { finalizers?: string[] } }) => versions.push(obj.metadata?.finalizers ?? []),
    () => undefined,
  );
  try {
    await deleteCustom(kc, kept.name, "providerconfigs", "one");
    await waitFor(async () => ((await getCustom(kc, kept.name, "providerconfigs", "one")) ? undefined : true), {
      timeoutMs: 30_000,
      description: "one released",
    });
  } finally {
    watch.abort();
  }
  expect(versions.length).toBeGreaterThan(0);
  expect(versions.filter((f) => !f.includes("keyward.dev/in-use"))).toEqual([]);
  expect(await heldBy()).toContain("keyward.dev/in-use");
  await deleteCustom(kc, kept.name, "providerconfigs", "two");
  await waitFor(async () => ((await heldBy()).includes("keyward.dev/in-use") ? undefined : true), {
    timeoutMs: 30_000,
    description: "the Secret released with the last ProviderConfig",
  });
});

it("lets go, with the ProviderConfig, of a Secret whose hold was lost in a restore; never of another's", async () => {
  const core = kc.makeApiClient(CoreV1Api);
  // Held by keyward, but no ProviderConfig records it: a restore of a ProviderConfig backed up
  // after its credentialsSecretRef moved away from this Secret and before keyward let go of it.
  await core.createNamespacedSecret({
    namespace: kept.name,
    body: {
      metadata: { name: "stale-token", labels: credentialsLabels, finalizers: ["keyward.dev/in-use"] },
      stringData: { token: TOKEN },
    },
  });
  for (const name of ["restored", "keeper"]) {
    await core.createNamespacedSecret({
      namespace: kept.name,
      body: { metadata: { name: `${name}-token`, labels: credentialsLabels }, stringData: { token: TOKEN } },
    });
    await createCustom(kc, kept.name, "providerconfigs", {
      apiVersion: "keyward.dev/v1alpha1",
      kind: "ProviderConfig",
      metadata: { name },
      spec: { baseUrl: emulator.url, credentialsSecretRef: { name: `${name}-token` } },
    });
  }
  const finalizersOf = async (name: string): Promise<string[]> =>
    (await core.readNamespacedSecret({ name, namespace: kept.name })).metadata?.finalizers ?? [];
  for (const name of ["restored-token", "keeper-token"]) {
    await waitFor(async () => ((await finalizersOf(name)).includes("keyward.dev/in-use") ? true : undefined), {
      timeoutMs: 30_000,
      description: `${name} held`,
    });
  }

  await deleteCustom(kc, kept.name, "providerconfigs", "restored");
  await waitFor(async () => ((await getCustom(kc, kept.name, "providerconfigs", "restored")) ? undefined : true), {
    timeoutMs: 30_000,
    description: "restored released",
  });
  expect(await finalizersOf("restored-token")).toEqual([]);
  expect(await finalizersOf("stale-token")).toEqual([]);
  // Another ProviderConfig's Secret stays held.
  expect(await finalizersOf("keeper-token")).toContain("keyward.dev/in-use");
  await deleteCustom(kc, kept.name, "providerconfigs", "keeper");
  await waitFor(async () => ((await finalizersOf("keeper-token")).includes("keyward.dev/in-use") ? undefined : true), {
    timeoutMs: 30_000,
    description: "keeper-token released with keeper",
  });
  for (const name of ["stale-token", "restored-token", "keeper-token"]) await core.deleteNamespacedSecret({ namespace: kept.name, name });
});
