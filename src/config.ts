// keyward's configuration: flags override environment variables; both are validated with zod
// and a bad value stops the process with a message naming the setting.
import { parseArgs } from "node:util";
import { z } from "zod";
import { invalidBaseUrl, parseBaseUrlList } from "./lib/baseurl.ts";
import { parseFlagDuration } from "./lib/duration.ts";
import { leaseTimesProblems } from "./kube/lease.ts";
import { DEFAULT_KUBE_API_LIMIT } from "./kube/rest.ts";

const duration = z.string().transform((s, ctx) => {
  try {
    return parseFlagDuration(s);
  } catch (err) {
    ctx.addIssue({ code: "custom", message: (err as Error).message });
    return z.NEVER;
  }
});

const sizePattern = /^(\d+)(Ki|Mi|Gi)?$/;
const sizeUnits = { "": 1, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3 } as const;

/** "4Mi", "512Ki", "1048576" (Kubernetes' binary suffixes) → bytes. */
export function parseSize(text: string): number {
  const m = sizePattern.exec(text.trim());
  if (!m?.[1]) throw new Error(`"${text}" is not a size like 4Mi, 512Ki or 1048576`);
  return Number(m[1]) * sizeUnits[(m[2] ?? "") as keyof typeof sizeUnits];
}

const size = z.string().transform((s, ctx) => {
  try {
    return parseSize(s);
  } catch (err) {
    ctx.addIssue({ code: "custom", message: (err as Error).message });
    return z.NEVER;
  }
});

/** A comma-separated list (a flag or environment variable); empty entries dropped. */
const commaList = z
  .string()
  .default("")
  .transform((s) =>
    s
      .split(",")
      .map((x) => x.trim())
      .filter(Boolean),
  );
/** A byte size from 1 KiB to 1 GiB. */
const byteSize = size.pipe(
  z
    .number()
    .int()
    .min(1024)
    .max(1024 ** 3),
);
/** "auto", or requests a second from 0 to 10,000. */
const apiQps = z.string().transform((s, ctx): number | "auto" => {
  const text = s.trim();
  if (text === "auto") return "auto";
  const qps = Number(text);
  if (text !== "" && Number.isFinite(qps) && qps >= 0 && qps <= 10_000) return qps;
  ctx.addIssue({ code: "custom", message: `"${s}" is neither auto nor a number from 0 to 10000` });
  return z.NEVER;
});
const bool = z.enum(["true", "false", "1", "0", "yes", "no"]).transform((s) => s === "true" || s === "1" || s === "yes");

export const configSchema = z
  .object({
    kubeconfig: z.string().optional(),
    namespaces: commaList,
    concurrency: z.coerce.number().int().min(1).max(256).default(4),
    // The most workers of a controller one namespace holds at once; absent: half of them (all when
    // one namespace is watched); 0: no cap.
    maxInFlightPerNamespace: z.coerce.number().int().min(0).max(256).optional(),
    // The ceiling on every ProviderConfig's and ClusterProviderConfig's spec.timeoutSeconds.
    maxRequestTimeout: duration.pipe(z.number().min(1000).max(300_000)).default(30_000),
    resyncInterval: duration.pipe(z.number().min(1000)).default(600_000),
    metricsPort: z.coerce.number().int().min(0).max(65535).default(8080),
    healthPort: z.coerce.number().int().min(0).max(65535).default(8081),
    bindAddress: z.string().default("0.0.0.0"),
    metricsAuth: z.enum(["kubernetes", "localhost"]).default("kubernetes"),
    logLevel: z.enum(["trace", "debug", "info", "warn", "error", "fatal"]).default("info"),
    leaderElect: bool.default(false),
    leaderElectionNamespace: z.string().optional(),
    leaderElectionId: z.string().min(1).default("keyward-leader"),
    leaseDuration: duration.default(15_000),
    renewDeadline: duration.default(10_000),
    retryPeriod: duration.default(2_000),
    identity: z.string().optional(),
    sharding: bool.default(false),
    shutdownTimeout: duration.default(30_000),
    clusterProviderConfigs: bool.default(false),
    credentialsNamespace: z
      .string()
      .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
      .max(63)
      .optional(),
    // A service response body past this fails its call (ResponseTooLarge) instead of growing memory.
    maxResponseBytes: byteSize.default(16 * 1024 * 1024),
    // The bytes of service response bodies all calls together may hold while they are read, one
    // namespace at most --max-response-bytes of them; a body that would pass either fails its
    // call with a retryable error (src/api/http.ts).
    responseBudgetBytes: byteSize.default(32 * 1024 * 1024),
    // Each apiserver request (headers and body; a watch's headers, not its stream) must be answered within this.
    kubeRequestTimeout: duration.pipe(z.number().min(100).max(600_000)).default(30_000),
    // The client-side limit on apiserver requests (watches exempt), shared fairly between kinds
    // (src/kube/rest.ts createRequestLimiter): a sustained rate and a burst; 0 qps: no limit;
    // auto: none while the apiserver shows API Priority and Fairness, else AUTO_FALLBACK_QPS.
    kubeApiQps: apiQps.default(DEFAULT_KUBE_API_LIMIT.qps),
    kubeApiBurst: z.coerce.number().int().min(1).max(20_000).default(DEFAULT_KUBE_API_LIMIT.burst),
    // An exec credential plugin of the kubeconfig is killed after this.
    execPluginTimeout: duration.pipe(z.number().min(100).max(600_000)).default(30_000),
    // `keyward webhook` only (src/webhook/run.ts): the conversion webhook, served on this port
    // once it has a certificate, from keyward's own CA (--webhook-service names the Service whose
    // DNS names the certificate carries; the CA and certificate are kept in the Secret
    // --webhook-secret) or from tls.crt and tls.key in --webhook-cert-dir (cert-manager's).
    webhookPort: z.coerce.number().int().min(0).max(65535).default(9443),
    webhookService: z
      .string()
      .regex(/^[a-z]([-a-z0-9]*[a-z0-9])?$/)
      .max(63)
      .optional(),
    webhookSecret: z
      .string()
      .regex(/^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/)
      .max(253)
      .default("keyward-webhook-tls"),
    webhookCertDir: z.string().min(1).optional(),
    // `keyward uninstall` only (the chart's pre-delete hook): keyward's Deployment, scaled to 0 and
    // waited for before the finalizers are released, as namespace/name.
    stopDeployment: z
      .string()
      .optional()
      .transform((text, ctx) => {
        if (text === undefined) return undefined;
        const match = /^([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)\/([a-z0-9](?:[-.a-z0-9]*[a-z0-9])?)$/.exec(text);
        if (!match?.[1] || !match[2]) {
          ctx.addIssue({ code: "custom", message: `"${text}" is not namespace/name of a Deployment` });
          return z.NEVER;
        }
        return { namespace: match[1], name: match[2] };
      }),
    // Empty: a token goes only where its Secret's keyward.dev/allowed-base-urls says; `*` alone: anywhere.
    allowedBaseUrls: z
      .string()
      .default("")
      .transform(parseBaseUrlList)
      .superRefine((urls, ctx) => {
        if (urls.includes("*")) {
          if (urls.length > 1) ctx.addIssue({ code: "custom", message: `"*" (every URL) stands alone, without URLs beside it` });
          return;
        }
        for (const url of urls) {
          const why = invalidBaseUrl(url);
          if (why) ctx.addIssue({ code: "custom", message: why });
        }
      }),
    // The namespaces whose AccessTokens keyward serves (it writes their Secrets); empty: every watched one.
    accessTokenNamespaces: commaList,
  })
  // Checked at start, in client-go's terms, naming the setting to change.
  .superRefine((c, ctx) => {
    const settingOf = { leaseDurationMs: "leaseDuration", renewDeadlineMs: "renewDeadline", retryPeriodMs: "retryPeriod" } as const;
    for (const problem of leaseTimesProblems({
      leaseDurationMs: c.leaseDuration,
      renewDeadlineMs: c.renewDeadline,
      retryPeriodMs: c.retryPeriod,
    })) {
      ctx.addIssue({ code: "custom", message: problem.message, path: [settingOf[problem.setting]] });
    }
  })
  // One namespace may hold at most --max-response-bytes of the budget (src/api/http.ts): with twice
  // that, a body of the largest size of any other namespace still fits while one holds its share.
  .refine((c) => c.responseBudgetBytes >= 2 * c.maxResponseBytes, {
    message:
      "must be at least twice --max-response-bytes (one namespace may hold a response of that size; another's must still fit beside it)",
    path: ["responseBudgetBytes"],
  })
  .refine((c) => c.webhookService === undefined || c.webhookCertDir === undefined, {
    message: "the webhook's certificate is keyward's own (--webhook-service) or mounted (--webhook-cert-dir), not both",
    path: ["webhookCertDir"],
  })
  // The sharder runs on the leader; a replica's identity is its shard label's value.
  .refine((c) => !c.sharding || c.leaderElect, {
    message: "sharding needs leader election (--leader-elect true): the leader assigns the objects",
    path: ["sharding"],
  })
  .refine((c) => !c.sharding || c.identity === undefined || /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(c.identity), {
    message: "with sharding the identity is a label value and a Lease name: at most 63 lowercase letters, digits and '-'",
    path: ["identity"],
  })
  // "localhost" puts /metrics on 127.0.0.1; sharing that server would hide the probes from the kubelet.
  .refine((c) => c.metricsAuth !== "localhost" || c.metricsPort !== c.healthPort, {
    message: "localhost serves /metrics on 127.0.0.1 only, so the health port (the kubelet's probes) must differ from the metrics port",
    path: ["metricsAuth"],
  });
export type Config = z.infer<typeof configSchema>;

const settings = {
  kubeconfig: "KUBECONFIG",
  namespaces: "WATCH_NAMESPACES",
  concurrency: "CONCURRENCY",
  maxInFlightPerNamespace: "MAX_IN_FLIGHT_PER_NAMESPACE",
  maxRequestTimeout: "MAX_REQUEST_TIMEOUT",
  resyncInterval: "RESYNC_INTERVAL",
  metricsPort: "METRICS_PORT",
  healthPort: "HEALTH_PORT",
  bindAddress: "BIND_ADDRESS",
  metricsAuth: "METRICS_AUTH",
  logLevel: "LOG_LEVEL",
  leaderElect: "LEADER_ELECT",
  leaderElectionNamespace: "LEADER_ELECTION_NAMESPACE",
  leaderElectionId: "LEADER_ELECTION_ID",
  leaseDuration: "LEASE_DURATION",
  renewDeadline: "RENEW_DEADLINE",
  retryPeriod: "RETRY_PERIOD",
  identity: "POD_NAME",
  sharding: "SHARDING",
  shutdownTimeout: "SHUTDOWN_TIMEOUT",
  clusterProviderConfigs: "CLUSTER_PROVIDER_CONFIGS",
  credentialsNamespace: "CREDENTIALS_NAMESPACE",
  allowedBaseUrls: "ALLOWED_BASE_URLS",
  accessTokenNamespaces: "ACCESS_TOKEN_NAMESPACES",
  maxResponseBytes: "MAX_RESPONSE_BYTES",
  responseBudgetBytes: "RESPONSE_BUDGET_BYTES",
  kubeRequestTimeout: "KUBE_REQUEST_TIMEOUT",
  kubeApiQps: "KUBE_API_QPS",
  kubeApiBurst: "KUBE_API_BURST",
  execPluginTimeout: "EXEC_PLUGIN_TIMEOUT",
  stopDeployment: "STOP_DEPLOYMENT",
  webhookPort: "WEBHOOK_PORT",
  webhookService: "WEBHOOK_SERVICE",
  webhookSecret: "WEBHOOK_SECRET",
  webhookCertDir: "WEBHOOK_CERT_DIR",
} as const satisfies Record<keyof Config, string>;

const flagName = (key: string): string => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

export const usage = `keyward — Kubernetes operator for the secrets service

  keyward [flags]             the operator
  keyward webhook [flags]     the conversion webhook alone (--webhook-*, --health-port)
  keyward uninstall [flags]   release keyward's finalizers (the chart's pre-delete hook)

Every setting is a flag or an environment variable (the flag wins):
${Object.entries(settings)
  .map(([k, env]) => `  --${flagName(k).padEnd(28)} ${env}`)
  .join("\n")}
Durations: 500ms, 30s, 10m, 1h. Sizes: 4Mi, 512Ki, 1048576. Booleans: true/false.`;

/** Reads the configuration; throws an Error whose message names every bad setting. */
export function loadConfig(argv: string[], env: NodeJS.ProcessEnv): Config {
  const options = Object.fromEntries(Object.keys(settings).map((k) => [flagName(k), { type: "string" as const }]));
  const { values } = parseArgs({ args: argv, options, strict: true, allowPositionals: false });
  const raw: Record<string, string | undefined> = {};
  for (const [key, envName] of Object.entries(settings)) {
    const fromFlag = values[flagName(key)];
    const value = typeof fromFlag === "string" ? fromFlag : env[envName];
    if (value !== undefined && value !== "") raw[key] = value;
  }
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => {
      const key = String(i.path[0] ?? "");
      const name = key in settings ? `--${flagName(key)} / ${settings[key as keyof Config]}` : key;
      return `  ${name}: ${i.message}`;
    });
    throw new Error(`invalid configuration:\n${lines.join("\n")}`);
  }
  return parsed.data;
}
