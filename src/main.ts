// keyward's process: flags → configuration → the manager (src/manager/manager.ts: caches,
// leases, lifecycle), which runs until SIGTERM; or `keyward webhook` (the conversion webhook
// alone, src/webhook/run.ts); or `keyward uninstall`.
import { loadConfig, usage, type Config } from "./config.ts";
import { createLogger, type Logger } from "./log.ts";
import { guardUncaughtExceptions } from "./process-guard.ts";
import { loadKubeConfig, createKube, podNamespace } from "./kube/client.ts";
import { setResponseBudget } from "./api/http.ts";
import { createManager } from "./manager/manager.ts";
import { refuseMixedStorage, releaseFinalizers, stopConversion, stopDeployment } from "./uninstall.ts";
import { kinds as registry } from "./resources/registry.ts";
import { callsService } from "./webhook/keeper.ts";
import { crdNamesOf } from "./webhook/webhook.ts";
import { runWebhook } from "./webhook/run.ts";

/**
 * `keyward uninstall [flags]`: releases keyward's finalizers in the namespaces the flags name
 * (src/uninstall.ts); with --stop-deployment (the chart's pre-delete hook) it first scales
 * keyward's Deployment to 0 and waits for its pods to go; with --webhook-service it then takes the
 * conversion webhook out of keyward's CRDs that call that Service.
 */
async function uninstall(config: Config, log: Logger): Promise<void> {
  const kc = loadKubeConfig(config.kubeconfig ? { kubeconfigPath: config.kubeconfig } : {});
  const kube = createKube(kc);
  // Refused before anything is done: keyward keeps running and the release stays until the rewrite.
  if (config.webhookService) await refuseMixedStorage(kube, crdNamesOf(registry), callsService(podNamespace(), config.webhookService));
  if (config.stopDeployment) await stopDeployment(kube, config.stopDeployment, log);
  const released = await releaseFinalizers({
    kube,
    namespaces: config.namespaces,
    clusterProviderConfigs: config.clusterProviderConfigs,
    log,
  });
  log.info({ released: released.length }, "released keyward's finalizers");
  // The chart's pre-delete hook: the webhook's Deployment goes with the release, the CRDs stay.
  if (config.webhookService) {
    const changed = await stopConversion(kube, crdNamesOf(registry), callsService(podNamespace(), config.webhookService), log);
    log.info({ crds: changed.length }, "keyward's CRDs serve their stored version alone");
  }
}

const modes = ["uninstall", "webhook"] as const;
type Mode = (typeof modes)[number] | "run";

export async function main(argv: string[]): Promise<void> {
  const mode: Mode = modes.find((m) => m === argv[0]) ?? "run";
  if (mode !== "run") argv = argv.slice(1);
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(`${usage}\n`);
    return;
  }
  let config: Config;
  try {
    config = loadConfig(argv, process.env);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${usage}\n`);
    process.exitCode = 2;
    return;
  }
  const log = createLogger({ level: config.logLevel });
  guardUncaughtExceptions(log);
  if (mode === "uninstall") await uninstall(config, log);
  else if (mode === "webhook") await runWebhook(config, log);
  else {
    // One budget for the response bodies of every service client of this process.
    setResponseBudget(config.responseBudgetBytes, config.maxResponseBytes);
    await createManager(config, log).run();
  }
}

if (import.meta.url === `file://${process.argv[1] ?? ""}` || process.argv[1]?.endsWith("main.ts") || process.argv[1]?.endsWith("main.js")) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`keyward: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
