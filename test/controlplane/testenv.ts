// Helpers for integration tests running against the control plane of global-setup.ts.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  ApiException,
  ApiextensionsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  V1Namespace,
  V1ObjectMeta,
} from "@kubernetes/client-node";
import { inject } from "vitest";
import { isKubeNotFound } from "../../src/kube/objects.ts";

/** Set on every namespace createTestNamespace makes, to find leftovers. */
export const testNamespaceLabel = "keyward.dev/test";

function provided(key: "keywardKubeconfig" | "keywardKubectl", envVar: string): string {
  let value: string | undefined;
  try {
    value = inject(key);
  } catch {
    // Not inside a vitest worker (a script reusing these helpers): fall back to the env var.
  }
  value ??= process.env[envVar];
  if (value === undefined || value === "") {
    throw new Error(`no ${key}: run through the vitest integration project (test/controlplane/global-setup.ts) or set ${envVar}`);
  }
  return value;
}

export function testKubeconfigPath(): string {
  return provided("keywardKubeconfig", "KEYWARD_TEST_KUBECONFIG");
}

export function testKubectlPath(): string {
  return provided("keywardKubectl", "KEYWARD_TEST_KUBECTL");
}

export function testKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(testKubeconfigPath());
  return kc;
}

/** client-node's typed clients, for a test's own setup and checks (keyward itself does not use them). */
export interface TestApis {
  custom: CustomObjectsApi;
  core: CoreV1Api;
  coordination: CoordinationV1Api;
  apiext: ApiextensionsV1Api;
}

export function testApis(kc: KubeConfig = testKubeConfig()): TestApis {
  return {
    custom: kc.makeApiClient(CustomObjectsApi),
    core: kc.makeApiClient(CoreV1Api),
    coordination: kc.makeApiClient(CoordinationV1Api),
    apiext: kc.makeApiClient(ApiextensionsV1Api),
  };
}

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs kubectl against the test cluster; never throws for a non-zero exit. */
/** true once the read answers 404; any other error fails the test instead of counting as gone. */
export function goneWhen404(read: Promise<unknown>): Promise<true | undefined> {
  return read.then(
    () => undefined,
    (err: unknown) => {
      if (isKubeNotFound(err)) return true;
      throw err;
    },
  );
}

/** kubectl against the test cluster, resolving to its stdout; a non-zero exit rejects with its stderr. */
export async function kubectlStdout(args: string[]): Promise<string> {
  const result = await kubectl(args);
  if (result.code !== 0) throw new Error(`kubectl ${args.join(" ")}: ${result.stderr.trim()}`);
  return result.stdout;
}

/** `kubeconfig`: a control plane of the test's own instead of the suite's. */
export function kubectl(args: string[], opts: { input?: string; kubeconfig?: string } = {}): Promise<KubectlResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(testKubectlPath(), ["--kubeconfig", opts.kubeconfig ?? testKubeconfigPath(), ...args], {
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(opts.input ?? "");
  });
}

/**
 * `kubectl apply -f -` of `yamlText` in `namespace`. Throws when kubectl fails, unless
 * `allowFailure` (for tests that expect a rejection and inspect the result).
 */
export async function applyYaml(
  yamlText: string,
  namespace: string,
  opts: { allowFailure?: boolean; extraArgs?: string[] } = {},
): Promise<KubectlResult> {
  const result = await kubectl(["apply", "--namespace", namespace, ...(opts.extraArgs ?? []), "-f", "-"], { input: yamlText });
  if (result.code !== 0 && opts.allowFailure !== true) {
    throw new Error(`kubectl apply in ${namespace} failed (exit ${result.code}): ${result.stderr.trim()}`);
  }
  return result;
}

export interface TestNamespace {
  name: string;
  cleanup(): Promise<void>;
}

/** A fresh namespace `<prefix>-<random>`; cleanup() deletes it without waiting for it to go. */
export async function createTestNamespace(prefix: string): Promise<TestNamespace> {
  const base =
    prefix
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, "-")
      .replace(/^-+|-+$/g, "")
      .slice(0, 50) || "test";
  const name = `${base}-${randomBytes(4).toString("hex")}`;
  const core = testKubeConfig().makeApiClient(CoreV1Api);
  const metadata = Object.assign(new V1ObjectMeta(), { name, labels: { [testNamespaceLabel]: "true" } });
  await core.createNamespace({ body: Object.assign(new V1Namespace(), { metadata }) });
  return {
    name,
    cleanup: async () => {
      try {
        await core.deleteNamespace({ name });
      } catch (error) {
        if (!(error instanceof ApiException && error.code === 404)) throw error;
      }
    },
  };
}

export interface WaitForOptions {
  /** A safety net against hanging, not a timing assertion: be generous. */
  timeoutMs: number;
  intervalMs?: number;
  /** What is awaited, for the timeout error: "ConfigMap owned-1 to be garbage-collected". */
  description: string;
}

/** Polls `fn` until it returns something other than undefined. Errors thrown by `fn` propagate. */
export async function waitFor<T>(fn: () => Promise<T | undefined>, opts: WaitForOptions): Promise<T> {
  const interval = opts.intervalMs ?? 250;
  const deadline = Date.now() + opts.timeoutMs;
  for (;;) {
    const value = await fn();
    if (value !== undefined) return value;
    if (Date.now() >= deadline) throw new Error(`timed out after ${opts.timeoutMs}ms waiting for ${opts.description}`);
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
}
