// A bench namespace as keyward needs it: a credentials Secret and the ProviderConfig `default`
// pointing at the emulator, with a rate limit high enough never to be what is measured.
import type { CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";

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
