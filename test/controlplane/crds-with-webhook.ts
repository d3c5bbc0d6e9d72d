// keyward's CRDs as a user's cluster has them (v1alpha1 stored, v1beta1 served beside it and
// converted by keyward's webhook), on a control plane with no pods: the integration suite's shared
// one and `npm run dev`'s. The webhook is keyward's own (src/webhook/webhook.ts), run in this
// process on the loopback and called by URL, with its own CA and certificate kept in a Secret and
// the caBundle written into the CRDs the way it does in a release. The samples and the docs are
// v1beta1, so everything that applies them needs v1beta1 served.
import { execFile } from "node:child_process";
import { KubeConfig } from "@kubernetes/client-node";
import { servedCrd } from "../../src/crd/conversion-schema.ts";
import { crdToYaml } from "../../src/crd/crd.ts";
import { createKube } from "../../src/kube/client.ts";
import { createLogger } from "../../src/log.ts";
import { kinds } from "../../src/resources/registry.ts";
import { crdNamesOf, startConversionWebhook } from "../../src/webhook/webhook.ts";
import { freePort } from "./controlplane.ts";
import { waitForCrdsEstablished } from "./crds-established.ts";

/** Where the webhook keeps its CA and serving certificate. */
export const WEBHOOK_NAMESPACE = "keyward-test-conversion";

export interface CrdsWithWebhook {
  /** The URL the CRDs' conversion calls. */
  url: string;
  stop(): Promise<void>;
}

type Kubectl = (args: string[], input?: string) => Promise<string>;

/** Runs `kubectlPath` against `kubeconfig`: resolves to its stdout, rejects with its stderr. */
function kubectlOn(kubectlPath: string, kubeconfig: string, env?: NodeJS.ProcessEnv): Kubectl {
  return (args, input) =>
    new Promise((resolve, reject) => {
      const child = execFile(kubectlPath, ["--kubeconfig", kubeconfig, ...args], { env }, (error, stdout, stderr) => {
        if (error) reject(new Error(`kubectl ${args.slice(0, 2).join(" ")} failed: ${stderr.trim() || error.message}`));
        else resolve(stdout);
      });
      child.stdin?.end(input ?? "");
    });
}

/**
 * Applies every kind's CRD serving both versions through a webhook at a free loopback port, starts
 * that webhook and resolves once an object converts. `kubectl` is the binary to run (found on
 * `env`'s PATH when it is a bare name) against the cluster of `kubeconfig`.
 */
export async function installCrdsWithWebhook(options: {
  kubeconfig: string;
  kubectl: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
}): Promise<CrdsWithWebhook> {
  const kubectl = kubectlOn(options.kubectl, options.kubeconfig, options.env);
  const timeoutMs = options.timeoutMs ?? 120_000;
  const port = await freePort();
  const url = `https://127.0.0.1:${port}/convert`;
  const crdNames = crdNamesOf(kinds);
  // --force-conflicts: a plane kept from an earlier run (`npm run dev`) may hold the CRDs another
  // field manager applied, storage version alone.
  await kubectl(
    ["apply", "--server-side", "--force-conflicts", "-f", "-"],
    kinds.map((k) => crdToYaml(servedCrd(k, { url }))).join("---\n"),
  );
  await waitForCrdsEstablished(
    kubectl,
    crdNames.map((n) => `crd/${n}`),
    timeoutMs,
  );
  await kubectl(["create", "namespace", WEBHOOK_NAMESPACE]).catch((error: unknown) => {
    if (!(error as Error).message.includes("AlreadyExists")) throw error;
  });
  const kc = new KubeConfig();
  kc.loadFromFile(options.kubeconfig);
  const webhook = startConversionWebhook({
    kube: createKube(kc),
    log: createLogger({ level: "warn" }),
    port,
    bindAddress: "127.0.0.1",
    selfSigned: {
      namespace: WEBHOOK_NAMESPACE,
      service: "keyward-webhook",
      secretName: "keyward-webhook-tls",
      extraIpAddresses: ["127.0.0.1"],
      // A plane kept from an earlier run has the CRDs calling that run's port: this one takes them over.
      ours: (config) => config.url?.startsWith("https://127.0.0.1:") === true,
    },
    crdNames,
    kinds,
  });
  try {
    await webhook.serving;
    await waitForConversion(kubectl, crdNames, timeoutMs);
  } catch (error) {
    await webhook.stop();
    throw error;
  }
  return { url, stop: () => webhook.stop() };
}

/**
 * The apiserver converts once the CRDs carry the webhook's caBundle, which the webhook writes after
 * it has a certificate; a list of no objects converts nothing, so a probe object is written as
 * v1beta1 (stored as v1alpha1) and read back as v1beta1 before the suite starts.
 */
async function waitForConversion(kubectl: Kubectl, crdNames: string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const probe = JSON.stringify({
    apiVersion: "keyward.dev/v1beta1",
    kind: "Project",
    metadata: { name: "conversion-probe", namespace: WEBHOOK_NAMESPACE },
    spec: { name: "Conversion probe" },
  });
  const attempt = async (): Promise<void> => {
    const bundles = await kubectl([
      "get",
      ...crdNames.map((n) => `crd/${n}`),
      "-o",
      'jsonpath={range .items[*]}{.spec.conversion.webhook.clientConfig.caBundle}{"\\n"}{end}',
    ]);
    const missing = bundles
      .split("\n")
      .slice(0, crdNames.length)
      .filter((b) => b === "").length;
    if (missing > 0) throw new Error(`${missing} CRD(s) without the webhook's caBundle yet`);
    await kubectl(["apply", "-f", "-"], probe);
    await kubectl(["get", "projects.v1beta1.keyward.dev", "-n", WEBHOOK_NAMESPACE, "conversion-probe", "-o", "name"]);
    await kubectl(["delete", "projects.v1alpha1.keyward.dev", "-n", WEBHOOK_NAMESPACE, "conversion-probe", "--wait=true"]);
  };
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (Date.now() >= deadline)
        throw new Error(`keyward's CRDs not converting after ${timeoutMs / 1000}s: ${(error as Error).message}`, { cause: error });
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}
