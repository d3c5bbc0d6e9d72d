// Runs keyward in-process against the test control plane and an emulator, with its log lines
// captured so tests can scan them (for secrets, for reasons); startTestEnv sets up the whole
// environment of one end-to-end test file.
import { Writable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import type { KubeConfig } from "@kubernetes/client-node";
import { CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import { createLogger } from "../../../src/log.ts";
import { createOperator, type Operator } from "../../../src/operator.ts";
import { GROUP, VERSION, type KubeObject } from "../../../src/engine/types.ts";
import { startEmulator, type Emulator, type EmulatorOptions } from "../../emulator/server.ts";
import type { RecordedRequest } from "../../emulator/types.ts";
import { connectionIds, seedIds } from "../../emulator/default-seed.ts";
import { ALLOWED_BASE_URLS_ANNOTATION, CREDENTIALS_LABEL } from "../../../src/resources/provider/credentials.ts";
import { createTestNamespace, kubectl, testKubeConfig, waitFor, type TestNamespace } from "../../controlplane/testenv.ts";

/** The label a Secret needs before keyward uses it as credentials. */
export const credentialsLabels = { [CREDENTIALS_LABEL]: "true" };

export interface RunningKeyward {
  operator: Operator;
  logs: string[];
  stop(): Promise<void>;
}

export interface KeywardOptions {
  namespaces: string[];
  resyncIntervalMs?: number;
  concurrency?: number;
  /** Serve ClusterProviderConfigs, their Secrets read in this namespace (off by default: they are cluster-wide, shared by every test file). */
  clusterProviderConfigs?: { credentialsNamespace: string };
  /**
   * --allowed-base-urls. Default here `["*"]` (every URL: the emulators listen on ports chosen at
   * random, and the tests' Secrets carry no keyward.dev/allowed-base-urls); `null`: keyward's own
   * default, none (a token goes only where its Secret's annotation says).
   */
  allowedBaseUrls?: string[] | null;
  /** --access-token-namespaces (default: every watched namespace). */
  accessTokenNamespaces?: string[];
  /** --max-response-bytes (default keyward's). */
  maxResponseBytes?: number;
  /** Where the claim rule's Leases go: keyward's own namespace (default: "default"). */
  holderNamespace?: string;
  /** How often the claim rule's locks of gone resources are swept (default keyward's). */
  lockSweepIntervalMs?: number;
  /** The engine's clock (OperatorOptions.clock). */
  clock?: () => Date;
}

export async function startKeyward(kc: KubeConfig, opts: KeywardOptions): Promise<RunningKeyward> {
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
    ...(opts.clusterProviderConfigs ? { clusterProviderConfigs: opts.clusterProviderConfigs } : {}),
    ...(opts.allowedBaseUrls === null ? {} : { allowedBaseUrls: opts.allowedBaseUrls ?? ["*"] }),
    ...(opts.accessTokenNamespaces ? { accessTokenNamespaces: opts.accessTokenNamespaces } : {}),
    ...(opts.maxResponseBytes !== undefined ? { maxResponseBytes: opts.maxResponseBytes } : {}),
    ...(opts.holderNamespace !== undefined ? { holderNamespace: opts.holderNamespace } : {}),
    ...(opts.lockSweepIntervalMs !== undefined ? { lockSweepIntervalMs: opts.lockSweepIntervalMs } : {}),
    ...(opts.clock ? { clock: opts.clock } : {}),
  });
  await operator.start();
  return { operator, logs, stop: () => operator.stop() };
}

/**
 * A token Secret and the default ProviderConfig pointing at the emulator. The Secret is marked as
 * credentials and pins its token to `baseUrl`, as its owner would: enough for keyward's default
 * (no --allowed-base-urls), whether in-process or a process of src/main.ts.
 */
export async function installProvider(kc: KubeConfig, namespace: string, baseUrl: string, token: string, name = "default"): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespacedSecret({
    namespace,
    body: {
      metadata: { name: `${name}-token`, labels: credentialsLabels, annotations: { [ALLOWED_BASE_URLS_ANNOTATION]: baseUrl } },
      stringData: { token },
    },
  });
  await createCustom(kc, namespace, "providerconfigs", {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: "ProviderConfig",
    metadata: { name },
    spec: {
      baseUrl,
      credentialsSecretRef: { name: `${name}-token` },
      rateLimit: { requestsPerSecond: 200, burst: 200 },
      timeoutSeconds: 5,
    },
  });
}

/** A data-platform SecretSync of the default seed's demo project, with `spec` laid over it. */
export function dataPlatformSync(name: string, spec: Record<string, unknown> = {}): object {
  return {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: "SecretSync",
    metadata: { name },
    spec: {
      projectId: seedIds.demoProject,
      destination: "data-platform",
      connectionId: connectionIds["data-platform"],
      environment: "prod",
      secretPath: "/",
      destinationConfig: { scope: "workspace" },
      ...spec,
    },
  };
}

/** A Project manifest. */
export function projectObject(name: string, spec: Record<string, unknown>): object {
  return { apiVersion: `${GROUP}/${VERSION}`, kind: "Project", metadata: { name }, spec };
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

export function condition(
  obj: KubeObject | undefined,
  type: string,
): { status: string; reason: string; message: string; observedGeneration?: number } | undefined {
  return obj?.status?.conditions?.find((c) => c.type === type);
}

export function isReady(obj: KubeObject | undefined): boolean {
  const c = condition(obj, "Ready");
  return c?.status === "True" && c.observedGeneration === obj?.metadata.generation;
}

export interface TestEnvOptions {
  /** Prefix of the fresh namespace's name. */
  prefix: string;
  /** The operator's token: the emulator accepts it, the default ProviderConfig's Secret holds it. */
  token: string;
  emulator?: Omit<EmulatorOptions, "tokens">;
  /** A ProviderConfig `default` pointing at the emulator with `token` (default true). */
  provider?: boolean;
  /** keyward in-process, watching the namespace; false for a test that runs its own. */
  keyward?: false | Omit<KeywardOptions, "namespaces">;
}

/** An emulator, a fresh namespace and (unless told otherwise) its default ProviderConfig. */
export interface TestEnv {
  kc: KubeConfig;
  emulator: Emulator;
  ns: TestNamespace;
  token: string;
  /** Adds a step to stop(), run before the others (the last added first). */
  onStop(step: () => Promise<unknown>): void;
  /** Runs the onStop steps, stops keyward, closes the emulator and deletes the namespace: each step even after one failed. */
  stop(): Promise<void>;
}

export interface KeywardTestEnv extends TestEnv {
  keyward: RunningKeyward;
}

/** What one end-to-end test file needs; a failure half way undoes what was done. */
export function startTestEnv(opts: TestEnvOptions & { keyward: false }): Promise<TestEnv>;
export function startTestEnv(opts: TestEnvOptions & { keyward?: Omit<KeywardOptions, "namespaces"> }): Promise<KeywardTestEnv>;
export async function startTestEnv(opts: TestEnvOptions): Promise<TestEnv | KeywardTestEnv> {
  const kc = testKubeConfig();
  const extraSteps: Array<() => Promise<unknown>> = [];
  let emulator: Emulator | undefined;
  let ns: TestNamespace | undefined;
  let keyward: RunningKeyward | undefined;
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= runEach([
      ...[...extraSteps].reverse(),
      async () => keyward?.stop(),
      async () => emulator?.close(),
      async () => ns?.cleanup(),
    ]));
  try {
    emulator = await startEmulator({ ...opts.emulator, tokens: [opts.token] });
    ns = await createTestNamespace(opts.prefix);
    if (opts.provider ?? true) await installProvider(kc, ns.name, emulator.url, opts.token);
    const env: TestEnv = { kc, emulator, ns, token: opts.token, onStop: (step) => extraSteps.push(step), stop };
    if (opts.keyward === false) return env;
    keyward = await startKeyward(kc, { ...opts.keyward, namespaces: [ns.name] });
    return { ...env, keyward };
  } catch (err) {
    await stop().catch(() => undefined);
    throw err;
  }
}

/** Runs every step in turn; throws the failure (or all of them) once all have run. */
async function runEach(steps: Array<() => Promise<unknown>>): Promise<void> {
  const failures: unknown[] = [];
  for (const step of steps) {
    try {
      await step();
    } catch (err) {
      failures.push(err);
    }
  }
  if (failures.length === 1) throw failures[0];
  if (failures.length > 1) throw new AggregateError(failures, `${failures.length} steps of the test environment's stop failed`);
}

/** Creates a Project per name (its spec from `spec`) and waits until every one is Ready. */
export async function createReadyProjects(
  kc: KubeConfig,
  namespace: string,
  names: readonly string[],
  spec: (name: string) => Record<string, unknown>,
): Promise<void> {
  for (const name of names) await createCustom(kc, namespace, "projects", projectObject(name, spec(name)));
  for (const name of names) {
    await waitForObject(kc, namespace, "projects", name, {
      until: (o) => condition(o, "Ready")?.status === "True",
      timeoutMs: 60_000,
      description: `${name} Ready`,
    });
  }
}

/**
 * The service requests of steady state: one resync period is let pass (the first resync of
 * objects just Ready), then the emulator's log is cleared and read `periods` periods later. The
 * window's length comes back too, for bounds per period.
 */
export async function steadyRequests(
  emulator: Emulator,
  resyncMs: number,
  periods = 3,
): Promise<{ requests: RecordedRequest[]; windowMs: number }> {
  await sleep(resyncMs);
  emulator.clearRequests();
  const began = Date.now();
  await sleep(periods * resyncMs);
  return { requests: emulator.requests(), windowMs: Date.now() - began };
}

/** Polls one custom object until `until` holds for it, and returns it. */
export async function waitForObject(
  kc: KubeConfig,
  namespace: string,
  plural: string,
  name: string,
  opts: { until: (obj: KubeObject) => boolean; timeoutMs: number; description: string },
): Promise<KubeObject> {
  return waitFor(
    async () => {
      const obj = await getCustom(kc, namespace, plural, name);
      return obj && opts.until(obj) ? obj : undefined;
    },
    { timeoutMs: opts.timeoutMs, description: opts.description },
  );
}

/**
 * Where a credential must never appear: keyward's log lines, the namespace's Events and, with
 * `kinds` ("projects,providerconfigs"), those objects as kubectl prints them. A failing kubectl
 * throws, so a scan never passes over an empty text.
 */
export async function exposedTexts(
  namespace: string,
  logs: readonly string[],
  kinds?: string,
): Promise<{ events: string; objects: string; all: string[] }> {
  const read = async (what: string): Promise<string> => {
    const result = await kubectl(["get", what, "-n", namespace, "-o", "json"]);
    if (result.code !== 0) throw new Error(`kubectl get ${what} -n ${namespace} failed: ${result.stderr.trim()}`);
    return result.stdout;
  };
  const events = await read("events");
  // Qualified by group: other files on the shared control plane install test CRDs of the same
  // plurals in groups of their own (v1beta1 ones win kubectl's short-name resolution).
  const objects =
    kinds === undefined
      ? ""
      : await read(
          kinds
            .split(",")
            .map((k) => (k.includes(".") ? k : `${k}.keyward.dev`))
            .join(","),
        );
  return { events, objects, all: [logs.join("\n"), events, objects] };
}

/** The roles the service gives `username` in `projectId`, asked with `token` as any client would. */
export async function memberRoles(emulator: Emulator, token: string, projectId: string, username: string): Promise<string[]> {
  const res = await fetch(`${emulator.url}/api/v1/projects/${projectId}/memberships/details`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ username }),
  });
  if (!res.ok) throw new Error(`membership details of ${username} in ${projectId}: HTTP ${String(res.status)}`);
  const body = (await res.json()) as { membership: { roles: { role: string }[] } };
  return body.membership.roles.map((r) => r.role);
}
