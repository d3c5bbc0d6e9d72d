// Runs keyward in-process against the test control plane and an emulator, with its log lines
// captured so tests can scan them (for secrets, for reasons).
import { Writable } from "node:stream";
import type { KubeConfig } from "@kubernetes/client-node";
import { CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import { createLogger } from "../../../src/log.ts";
import { createOperator, type Operator } from "../../../src/operator.ts";
import { GROUP, VERSION, type KubeObject } from "../../../src/engine/types.ts";

export interface RunningKeyward {
  operator: Operator;
  logs: string[];
  stop(): Promise<void>;
}

export async function startKeyward(kc: KubeConfig, opts: { namespaces: string[]; resyncIntervalMs?: number; concurrency?: number }): Promise<RunningKeyward> {
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      logs.push(...chunk.toString("utf8").split("\n").filter(Boolean));
      cb();
    },
  });
  const log = createLogger({ level: "debug" }, sink);
  const operator = createOperator({
    kc,
    log,
    namespaces: opts.namespaces,
    concurrency: opts.concurrency ?? 4,
    resyncIntervalMs: opts.resyncIntervalMs ?? 3_000,
  });
  await operator.start();
  return { operator, logs, stop: () => operator.stop() };
}

/** A token Secret and the default ProviderConfig pointing at the emulator. */
export async function installProvider(kc: KubeConfig, namespace: string, baseUrl: string, token: string, name = "default"): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespacedSecret({
    namespace,
    body: { metadata: { name: `${name}-token` }, stringData: { token } },
  });
  await createCustom(kc, namespace, "providerconfigs", {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: "ProviderConfig",
    metadata: { name },
    spec: { baseUrl, credentialsSecretRef: { name: `${name}-token` }, rateLimit: { requestsPerSecond: 200, burst: 200 }, timeoutSeconds: 5 },
  });
}

export async function createCustom(kc: KubeConfig, namespace: string, plural: string, body: object): Promise<KubeObject> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  return (await custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural, body })) as KubeObject;
}

export async function getCustom(kc: KubeConfig, namespace: string, plural: string, name: string): Promise<KubeObject | undefined> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  try {
    return (await custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural, name })) as KubeObject;
  } catch (err) {
    if ((err as { code?: number }).code === 404) return undefined;
    throw err;
  }
}

export async function mergePatchCustom(kc: KubeConfig, namespace: string, plural: string, name: string, patch: object): Promise<void> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const { setHeaderOptions, PatchStrategy } = await import("@kubernetes/client-node");
  await custom.patchNamespacedCustomObject(
    { group: GROUP, version: VERSION, namespace, plural, name, body: patch },
    setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
  );
}

export async function deleteCustom(kc: KubeConfig, namespace: string, plural: string, name: string): Promise<void> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  await custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural, name });
}

export function condition(obj: KubeObject | undefined, type: string): { status: string; reason: string; message: string; observedGeneration?: number } | undefined {
  return obj?.status?.conditions?.find((c) => c.type === type);
}

export function isReady(obj: KubeObject | undefined): boolean {
  const c = condition(obj, "Ready");
  return c?.status === "True" && c.observedGeneration === obj?.metadata.generation;
}
