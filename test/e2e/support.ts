// Helpers of the e2e tests: kubectl and helm against the e2e cluster (real binaries, real
// cluster), waiting for conditions, the emulator as a Deployment + Service in the cluster (its
// admin API reached through the API server's service proxy), and keyward's samples.
import { execFile } from "node:child_process";
import { readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { inject } from "vitest";
import { parseYamlDocuments, type Doc } from "../unit/chart/helm.ts";
import { readFileSync } from "node:fs";
import type { E2eContext } from "./global-setup.ts";
import { waitForCrdsEstablished } from "../controlplane/crds-established.ts";
import { storageVersionCrdDir } from "../controlplane/crds-without-webhook.ts";
import { emulatorManifests, emulatorServiceUrl } from "../emulator/manifests.ts";
import { keywardSamples, sampleFiles, samplesDir } from "../support/samples.ts";

export const repoRoot = resolve(import.meta.dirname, "..", "..");
export const chartDir = join(repoRoot, "charts", "keyward");

export function context(): E2eContext {
  return inject("e2e");
}

export interface RunOptions {
  input?: string | Buffer;
  /** Resolve with the result instead of throwing on a non-zero exit. */
  allowFailure?: boolean;
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

function run(file: string, args: string[], options: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolvePromise, reject) => {
    const child = execFile(
      file,
      args,
      { cwd: repoRoot, maxBuffer: 256 * 1024 * 1024, env: { ...process.env, KUBECONFIG: context().kubeconfig } },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : -1;
        if (code !== 0 && options.allowFailure !== true) {
          reject(new Error(`${file.split("/").pop() ?? file} ${args.join(" ")} exited with ${code}: ${stderr.trim() || stdout.trim()}`));
          return;
        }
        resolvePromise({ code, stdout, stderr });
      },
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}

export async function kubectl(args: string[], options: RunOptions = {}): Promise<string> {
  return (await run(context().kubectl, args, options)).stdout;
}

export function kubectlResult(args: string[], options: RunOptions = {}): Promise<RunResult> {
  return run(context().kubectl, args, { ...options, allowFailure: true });
}

export async function kubectlJson<T = KubeObject>(args: string[]): Promise<T> {
  return JSON.parse(await kubectl([...args, "-o", "json"])) as T;
}

export async function apply(objects: unknown[], namespace?: string): Promise<void> {
  const list = { apiVersion: "v1", kind: "List", items: objects };
  await kubectl(["apply", "--server-side", "--force-conflicts", ...(namespace ? ["-n", namespace] : []), "-f", "-"], {
    input: JSON.stringify(list),
  });
}

export async function helm(args: string[], options: RunOptions = {}): Promise<string> {
  return (await run(context().helm, args, options)).stdout;
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
    finalizers?: string[];
    creationTimestamp?: string;
    deletionTimestamp?: string;
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown> & { conditions?: Condition[] };
}

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  observedGeneration?: number;
}

export interface List<T = KubeObject> {
  items: T[];
}

/** Polls `check` until it returns a value other than undefined/false; fails with `describe()` after the timeout. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false>,
  timeoutMs: number,
  describe?: () => Promise<string>,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      const state = describe ? await describe().catch((error: unknown) => `(could not describe: ${String(error)})`) : "";
      throw new Error(
        `timed out after ${timeoutMs / 1000}s waiting for ${what}${lastError instanceof Error ? `; last error: ${lastError.message}` : ""}${state ? `\n${state}` : ""}`,
      );
    }
    await new Promise((r) => setTimeout(r, 2000));
  }
}

export function ready(obj: KubeObject): Condition | undefined {
  return obj.status?.conditions?.find((c) => c.type === "Ready");
}

/**
 * A fresh namespace. One left by an earlier run is deleted first; keyward's finalizers on its
 * objects and the token Secrets it holds are dropped then, as no keyward may run any more to
 * remove them.
 */
export async function createNamespace(name: string): Promise<string> {
  const exists = await kubectlResult(["get", "namespace", name]);
  if (exists.code === 0) {
    await kubectl(["delete", "namespace", name, "--wait=false"]);
    const secrets = (await kubectlJson<List>(["-n", name, "get", "secrets"]).catch(() => ({ items: [] }))).items;
    for (const obj of [...(await keywardObjects(name).catch(() => [])), ...secrets]) {
      const resource = obj.kind === "Secret" ? "secrets" : `${obj.kind.toLowerCase()}s.v1alpha1.keyward.dev`;
      await kubectlResult(["-n", name, "patch", resource, obj.metadata.name, "--type", "merge", "-p", '{"metadata":{"finalizers":null}}']);
    }
    await kubectl(["wait", "--for=delete", `namespace/${name}`, "--timeout=180s"], { allowFailure: true });
  }
  await kubectl(["create", "namespace", name]);
  return name;
}

// --- the emulator --------------------------------------------------------------------------

export const emulatorToken = "dev-token";

export interface Emulator {
  namespace: string;
  /** The base URL keyward uses, inside the cluster. */
  baseUrl: string;
}

/**
 * The emulator's token in a Secret marked as credentials, and the ProviderConfig `default` using
 * it against `baseUrl` (with `spec` laid over its spec).
 */
export function providerResources(baseUrl: string, spec: Record<string, unknown> = {}): unknown[] {
  return [
    {
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name: "keyward-token",
        labels: { "keyward.dev/credentials": "true" },
        annotations: { "keyward.dev/allowed-base-urls": baseUrl },
      },
      stringData: { token: emulatorToken },
    },
    {
      apiVersion: "keyward.dev/v1alpha1",
      kind: "ProviderConfig",
      metadata: { name: "default" },
      spec: { baseUrl, credentialsSecretRef: { name: "keyward-token", key: "token" }, ...spec },
    },
  ];
}

/** The emulator as a Deployment + Service `emulator` (port 8080) in `namespace`. */
export async function deployEmulator(namespace: string, extraArgs: string[] = []): Promise<Emulator> {
  await apply(emulatorManifests({ namespace, image: context().emulatorImage, args: ["--token", emulatorToken, ...extraArgs] }), namespace);
  await kubectl(["-n", namespace, "rollout", "status", "deployment/emulator", "--timeout=180s"]);
  return { namespace, baseUrl: emulatorServiceUrl(namespace) };
}

/** GET (or another method) on the emulator's admin API through the API server's service proxy. */
export async function emulatorAdmin<T>(emulator: Emulator, path: string): Promise<T> {
  return JSON.parse(
    await kubectl(["get", "--raw", `/api/v1/namespaces/${emulator.namespace}/services/http:emulator:8080/proxy${path}`]),
  ) as T;
}

export interface RecordedRequest {
  seq: number;
  method: string;
  path: string;
  status: number;
  operation: string;
  body: unknown;
}

export async function emulatorRequests(emulator: Emulator): Promise<RecordedRequest[]> {
  return (await emulatorAdmin<{ requests: RecordedRequest[] }>(emulator, "/_emulator/requests")).requests;
}

/** How many times each key was seen among successful requests of `operation`. */
export function countBy(requests: RecordedRequest[], operation: string, key: (r: RecordedRequest) => string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of requests) {
    if (r.operation !== operation || r.status >= 400) continue;
    const k = key(r);
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  return counts;
}

// --- keyward -------------------------------------------------------------------------------

/** image.repository and image.tag set to `image`: for a chart whose default image is not there (the previous release's). */
export function imageValues(image: string): string[] {
  const at = image.lastIndexOf(":");
  return [
    "--set",
    `image.repository=${image.slice(0, at)}`,
    "--set",
    `image.tag=${image.slice(at + 1)}`,
    "--set",
    "image.pullPolicy=IfNotPresent",
  ];
}

/**
 * keyward's CRDs (crds/, the same the chart's templates render) applied and Established, as a user applies them before
 * anything that creates keyward resources: a file that needs them must not rely on an earlier
 * file's `helm install` having left them. In their stored version alone, as `helm uninstall`
 * leaves them: crds/ converts through the kustomize install's webhook (keyward-webhook in
 * keyward-system), which no e2e file runs, and with objects of earlier files in the cluster every
 * read in v1beta1 (Argo CD's cache lists in it) would fail until a release puts its own CRDs in.
 */
export async function installCrds(): Promise<void> {
  const dir = join(repoRoot, "crds");
  const names = readdirSync(dir)
    .filter((f) => f.endsWith(".yaml"))
    .map((f) => `crd/${f.slice(0, -".yaml".length)}`);
  const storageOnly = await storageVersionCrdDir(dir);
  await kubectl(["apply", "--server-side", "--force-conflicts", "-f", storageOnly]);
  // An apply leaves fields other managers own (an earlier release's v1beta1 and webhook): the
  // replace makes each CRD exactly that.
  await kubectl(["replace", "-f", storageOnly]);
  await waitForCrdsEstablished(kubectl, names);
}

/**
 * `helm uninstall --wait`, then until the release's pods are gone too: helm waits for the objects
 * it deleted, not for the pods the garbage collector removes after them, and a keyward pod still
 * stopping would write to the next file's objects (it watches every namespace).
 */
export async function uninstallKeyward(release: string, namespace: string): Promise<void> {
  await helm(["uninstall", release, "-n", namespace, "--wait", "--ignore-not-found"]);
  await waitFor(
    `the pods of ${release} gone`,
    async () => {
      const pods = await kubectlJson<List>(["-n", namespace, "get", "pods", "-l", `app.kubernetes.io/instance=${release}`]);
      return pods.items.length === 0;
    },
    180_000,
  );
}

/**
 * `helm install --wait` of the release's packaged chart with only the values a user sets: its
 * default image is the release's (loaded into the cluster under that reference), so no
 * image.repository or image.tag.
 */
export async function installKeyward(release: string, namespace: string, extra: string[] = []): Promise<void> {
  await uninstallKeyward(release, namespace);
  await helm([
    "install",
    release,
    context().keywardChart,
    "-n",
    namespace,
    "--create-namespace",
    "--wait",
    "--timeout",
    "5m",
    // The CRDs outlive a release (crds.keep): the next file's release takes them over.
    "--take-ownership",
    ...extra,
  ]);
}

/** The operator's pods of a release (not its conversion webhook's, whose name label is keyward-webhook). */
export async function keywardPods(namespace: string, release: string): Promise<KubeObject[]> {
  const pods = await kubectlJson<List>([
    "-n",
    namespace,
    "get",
    "pods",
    "-l",
    `app.kubernetes.io/name=keyward,app.kubernetes.io/instance=${release}`,
  ]);
  return pods.items;
}

/**
 * The namespaced samples of config/samples in `version` (as written: v1beta1), the
 * ProviderConfigs (and the base URLs their Secrets allow, keyward.dev/allowed-base-urls) pointed
 * at `baseUrl`. The ClusterProviderConfig sample is left out: it is cluster-scoped, served only by
 * a cluster-wide install with clusterProviderConfig enabled, and no namespaced sample refers to it.
 */
export function samples(baseUrl: string, version: "v1alpha1" | "v1beta1" = "v1beta1"): Doc[] {
  const docs = sampleFiles()
    .flatMap((f) => {
      const secrets = parseYamlDocuments(readFileSync(join(samplesDir, f), "utf8")).filter((d) => d.kind === "Secret");
      return [...secrets, ...(keywardSamples(version, [f]) as unknown as Doc[])];
    })
    .filter((doc) => doc.kind !== "ClusterProviderConfig");
  for (const doc of docs) {
    if (doc.kind === "ProviderConfig") (doc["spec"] as Record<string, string>)[version === "v1alpha1" ? "baseUrl" : "baseURL"] = baseUrl;
    const annotations = (doc["metadata"] as { annotations?: Record<string, string> }).annotations;
    if (doc.kind === "Secret" && annotations?.["keyward.dev/allowed-base-urls"]) annotations["keyward.dev/allowed-base-urls"] = baseUrl;
  }
  return docs;
}

export const keywardKinds = ["providerconfigs", "projects", "projectmemberships", "secretsyncs", "accesstokens", "certificateprofiles"];

/** keyward's objects of a namespace in v1alpha1, whose fields the e2e files read (v1beta1 renames some: syncID, projectID). */
export async function keywardObjects(namespace: string): Promise<KubeObject[]> {
  return (await kubectlJson<List>(["-n", namespace, "get", keywardKinds.map((k) => `${k}.v1alpha1.keyward.dev`).join(",")])).items;
}

export function describeReadiness(objects: KubeObject[]): string {
  return objects.map((o) => `${o.kind}/${o.metadata.name}: ${JSON.stringify(ready(o) ?? "no Ready condition")}`).join("\n");
}

/** Waits until every keyward object in `namespace` is Ready=True; returns them. */
export async function waitAllReady(namespace: string, expected: number, timeoutMs: number): Promise<KubeObject[]> {
  let last: KubeObject[] = [];
  return waitFor(
    `${expected} keyward objects Ready in ${namespace}`,
    async () => {
      last = await keywardObjects(namespace);
      return last.length === expected && last.every((o) => ready(o)?.status === "True") ? last : undefined;
    },
    timeoutMs,
    () => Promise.resolve(describeReadiness(last)),
  );
}
