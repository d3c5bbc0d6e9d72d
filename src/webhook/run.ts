// `keyward webhook`: the conversion webhook as a process of its own (the chart's webhook
// Deployment). It runs the conversion server, the TLS keeper and /healthz,/readyz, and nothing of
// the operator: no informers, no leader election, no service client. Kept apart so that the
// operator crash-looping, scaled to 0 or mid-upgrade never breaks a read of keyward's kinds
// (docs/contributing/architecture.md).
import { once } from "node:events";
import type { Config } from "../config.ts";
import type { Logger } from "../log.ts";
import { createKube, loadKubeConfig, podNamespace } from "../kube/client.ts";
import { startProbes, type Health } from "../endpoints.ts";
import { startConversionWebhook, type ConversionWebhookOptions } from "./webhook.ts";

/**
 * How long a stopping pod keeps serving after SIGTERM, not ready: the apiserver picks a webhook
 * endpoint per request from the Service's EndpointSlices, which drop a terminating pod only after
 * the kubelet and the endpoint controller have seen it go; a review sent meanwhile still finds a
 * server, and its answer closes the connection (drain), so the next review goes elsewhere. Well
 * below the pod's grace period (30 s).
 */
export const DRAIN_MS = 5_000;

/** The webhook's TLS from the configuration: a mounted certificate, or keyward's own CA for --webhook-service. */
export function webhookTls(config: Config, namespace: string): Pick<ConversionWebhookOptions, "certDir" | "selfSigned"> {
  if (config.webhookCertDir) return { certDir: config.webhookCertDir };
  if (config.webhookService) return { selfSigned: { namespace, service: config.webhookService, secretName: config.webhookSecret } };
  throw new Error("keyward webhook needs --webhook-service (keyward's own CA) or --webhook-cert-dir (a mounted certificate)");
}

export async function runWebhook(config: Config, log: Logger, drainMs = DRAIN_MS): Promise<void> {
  const tls = webhookTls(config, podNamespace());
  const loaded = loadKubeConfig({
    ...(config.kubeconfig ? { kubeconfigPath: config.kubeconfig } : {}),
    execTimeoutMs: config.execPluginTimeout,
  });
  const kube = createKube({ ...loaded, requestTimeoutMs: config.kubeRequestTimeout });
  const health: Health = { ready: false };
  const probes = await startProbes(config.healthPort, config.bindAddress, health);
  const stopSignal = Promise.race([once(process, "SIGTERM").then(() => "SIGTERM"), once(process, "SIGINT").then(() => "SIGINT")]);
  const webhook = startConversionWebhook({ kube, log, port: config.webhookPort, bindAddress: config.bindAddress, ...tls });
  // Ready once it serves with a certificate: before that a review sent here would fail.
  void webhook.serving.then(() => (health.ready = true));
  const signal = await stopSignal;
  log.info({ signal, drainMs }, "webhook stopping: not ready, still serving while the endpoints drop this pod");
  health.ready = false;
  webhook.drain();
  await new Promise((resolve) => setTimeout(resolve, drainMs));
  await Promise.all([webhook.stop(), new Promise<void>((resolve) => probes.close(() => resolve()))]);
  log.info("bye");
}
