// The emulator as it runs in a cluster (its image, built by hack/e2e/images.sh): a Deployment and
// a Service `emulator` on port 8080. The kind e2e and the soak on kind both deploy it from here.

export interface EmulatorManifestOptions {
  namespace: string;
  image: string;
  /** The emulator's flags (test/emulator/main.ts). */
  args: readonly string[];
  /** Environment of the container, e.g. EMULATOR_TOKENS from a Secret. */
  env?: readonly Record<string, unknown>[];
  /** NodePort: reached on the node's address, also while the apiserver is down. Default ClusterIP. */
  serviceType?: "ClusterIP" | "NodePort";
}

export const EMULATOR_PORT = 8080;

/** The in-cluster base URL of the emulator deployed in `namespace`. */
export function emulatorServiceUrl(namespace: string): string {
  return `http://emulator.${namespace}.svc:${EMULATOR_PORT}`;
}

export function emulatorManifests(o: EmulatorManifestOptions): Record<string, unknown>[] {
  const labels = { "app.kubernetes.io/name": "emulator" };
  return [
    {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "emulator", namespace: o.namespace, labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            containers: [
              {
                name: "emulator",
                image: o.image,
                imagePullPolicy: "IfNotPresent",
                args: [...o.args],
                ...(o.env ? { env: [...o.env] } : {}),
                ports: [{ name: "http", containerPort: EMULATOR_PORT }],
                readinessProbe: { httpGet: { path: "/_emulator/healthz", port: "http" }, periodSeconds: 2 },
              },
            ],
          },
        },
      },
    },
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "emulator", namespace: o.namespace, labels },
      spec: {
        ...(o.serviceType === "NodePort" ? { type: "NodePort" } : {}),
        selector: labels,
        ports: [{ name: "http", port: EMULATOR_PORT, targetPort: "http" }],
      },
    },
  ];
}
