// A bench namespace as keyward needs it: a credentials Secret and the ProviderConfig `default`
// pointing at the emulator, with a rate limit high enough never to be what is measured.
import type { CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import { eventKind } from "../../src/kube/events.ts";
import { resourcePath, secretKind, type Kube, type KindRef } from "../../src/kube/client.ts";
import { isKubeNotFound } from "../../src/kube/objects.ts";
import { kubeJson, MERGE_PATCH } from "../../src/kube/rest.ts";
import { GROUP, VERSION } from "../../src/kube/types.ts";
import { listAll } from "../../src/kube/watch.ts";
import { runInFlight } from "./in-flight.ts";

export const SERVICE_RATE_LIMIT = { requestsPerSecond: 10_000, burst: 10_000 };

export async function setUpNamespace(
  api: { core: CoreV1Api; custom: CustomObjectsApi },
  namespace: string,
  service: { url: string; token: string },
): Promise<void> {
  await api.core.createNamespace({ body: { metadata: { name: namespace } } });
  await api.core.createNamespacedSecret({
    namespace,
    body: {
      metadata: {
        name: "default-token",
        labels: { "keyward.dev/credentials": "true" },
        annotations: { "keyward.dev/allowed-base-urls": service.url },
      },
      stringData: { token: service.token },
    },
  });
  await api.custom.createNamespacedCustomObject({
    group: "keyward.dev",
    version: "v1alpha1",
    namespace,
    plural: "providerconfigs",
    body: {
      apiVersion: "keyward.dev/v1alpha1",
      kind: "ProviderConfig",
      metadata: { name: "default" },
      spec: { baseUrl: service.url, credentialsSecretRef: { name: "default-token" }, rateLimit: SERVICE_RATE_LIMIT, timeoutSeconds: 10 },
    },
  });
}

// What a contender leaves in its namespace: kinds whose objects a stopped operator's finalizers hold, and its Events.
const PROJECTS: KindRef = { group: GROUP, version: VERSION, plural: "projects", kind: "Project" };
const HELD: KindRef[] = [PROJECTS, { group: GROUP, version: VERSION, plural: "providerconfigs", kind: "ProviderConfig" }, secretKind];

/**
 * Empties a contender's namespace before the next contender starts. The bench's control plane has
 * no controller manager, so deleting a namespace deletes nothing in it: thousands of Projects
 * stayed in etcd and in the kube-apiserver's watch cache, and each later run — keyward's always
 * after the Go peers' — paid for them in the apiserver's CPU. The operator is stopped, so the
 * finalizers on its objects are taken off first; then each kind is deleted as a collection.
 */
export async function emptyNamespace(kube: Kube, namespace: string): Promise<void> {
  for (const ref of HELD) {
    const { items } = await listAll(kube, resourcePath(ref, namespace), { metadataOnly: true });
    const held = items.filter((o) => (o.metadata.finalizers ?? []).length > 0);
    await runInFlight(held, 32, (o) =>
      kubeJson(kube.access, {
        method: "PATCH",
        path: resourcePath(ref, namespace, o.metadata.name),
        body: { metadata: { finalizers: null } },
        contentType: MERGE_PATCH,
      }).catch((err: unknown) => {
        if (!isKubeNotFound(err)) throw err;
      }),
    );
  }
  for (const ref of [...HELD, eventKind]) await kubeJson(kube.access, { method: "DELETE", path: resourcePath(ref, namespace) });
  const { items } = await listAll(kube, resourcePath(PROJECTS, namespace), { metadataOnly: true });
  if (items.length > 0) throw new Error(`namespace ${namespace}: ${items.length} Projects left after deleting them`);
}
