// The chart's operations extras: the Grafana dashboard ConfigMap and the PrometheusRule. Both off
// by default; helm lint --strict with them on; the rules pass `promtool check rules` and the
// promtool unit tests of prometheus-rules.test.yaml; every metric the dashboard and the rules
// query is one keyward exports (read from its real registry) or one of the proposed metrics
// below, and the dashboard shows every metric keyward exports.
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KubeConfig } from "@kubernetes/client-node";
import { createLogger } from "../../../src/log.ts";
import { shardMetrics } from "../../../src/shard/sharder.ts";
import { createOperator } from "../../../src/operator.ts";
import { createShard } from "../../../src/shard/shard.ts";
import { chartDir, findDoc, helm, parseYamlDocuments, promtoolBinary, renderChart, run, templateArgs, type Doc } from "./helm.ts";

/** The per-object gauges the alerts read (definitions: charts/keyward/README.md, "Alerts"): exported, as gauges. */
const proposedGauges = [
  "keyward_resource_ready",
  "keyward_secretsync_last_job_failed",
  "keyward_token_expiry_timestamp_seconds",
  "keyward_token_renewal_due_timestamp_seconds",
];

/** Every series name keyward's registry can expose (histograms as _bucket, _sum and _count). */
async function exportedMetrics(): Promise<Map<string, string>> {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "none", server: "https://127.0.0.1:9", skipTLSVerify: true }],
    users: [{ name: "none" }],
    contexts: [{ name: "none", cluster: "none", user: "none" }],
    currentContext: "none",
  });
  // Built, never started: its registry holds every metric the operator registers (with sharding:
  // a superset, the claim view's gauge among them).
  const operator = createOperator({
    kc,
    log: createLogger({ level: "fatal" }),
    namespaces: [],
    concurrency: 1,
    resyncIntervalMs: 60_000,
    shard: createShard({ identity: "monitoring-test" }),
  });
  // The sharder's gauges, which the leader exports with sharding on.
  shardMetrics(operator.metrics.registry);
  const out = new Map<string, string>();
  for (const m of await operator.metrics.registry.getMetricsAsJSON()) {
    const type = String(m.type);
    if (type === "histogram") for (const suffix of ["_bucket", "_sum", "_count"]) out.set(`${m.name}${suffix}`, type);
    else out.set(m.name, type);
  }
  return out;
}

const PROMQL_WORDS = new Set([
  "by",
  "without",
  "on",
  "ignoring",
  "group_left",
  "group_right",
  "and",
  "or",
  "unless",
  "bool",
  "offset",
  "inf",
  "nan",
]);

/** The metric names a PromQL expression reads: identifiers outside strings, label matchers, ranges and grouping clauses that are not functions. */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, " ")
    .replace(/\[[^\]]*\]/g, " ")
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ");
  const names = new Set<string>();
  for (const m of bare.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const word = m[0];
    const next = bare.slice((m.index ?? 0) + word.length).trimStart();
    if (next.startsWith("(") || PROMQL_WORDS.has(word.toLowerCase())) continue;
    names.add(word);
  }
  return [...names];
}

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface Dashboard {
  uid: string;
  title: string;
  panels: { type: string; title: string; targets?: { expr: string }[] }[];
  templating: { list: { name: string; definition?: string }[] };
}

let exported: Map<string, string>;
let defaults: Doc[];
let enabled: Doc[];
let dir: string;

const withExtras = { grafanaDashboard: { enabled: true }, prometheusRule: { enabled: true }, serviceMonitor: { enabled: true } };
const rulesOf = (docs: Doc[]): Rule[] =>
  (findDoc(docs, "PrometheusRule") as unknown as { spec: { groups: { rules: Rule[] }[] } }).spec.groups.flatMap((g) => g.rules);
const dashboardOf = (docs: Doc[]): { doc: Doc; json: string } => {
  const doc = findDoc(docs, "ConfigMap", "kw-keyward-dashboard");
  return { doc, json: (doc as unknown as { data: Record<string, string> }).data["keyward.json"] ?? "" };
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "keyward-monitoring-"));
  [exported, defaults, enabled] = await Promise.all([
    exportedMetrics(),
    renderChart().then(parseYamlDocuments),
    renderChart({ setJson: withExtras }).then(parseYamlDocuments),
  ]);
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("values", () => {
  it("render neither the dashboard nor the PrometheusRule by default", () => {
    expect(defaults.filter((d) => d.kind === "PrometheusRule" || d.kind === "ConfigMap")).toEqual([]);
  });

  it("pass helm lint --strict with the dashboard, the rule and the ServiceMonitor on", async () => {
    const args = Object.entries(withExtras).flatMap(([k, v]) => ["--set-json", `${k}=${JSON.stringify(v)}`]);
    const result = await helm(["lint", "--strict", chartDir, ...args]);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
  });

  it("pass labels, namespace, thresholds and the job selector through", async () => {
    const docs = parseYamlDocuments(
      await renderChart({
        setJson: {
          grafanaDashboard: {
            enabled: true,
            namespace: "monitoring",
            labels: { team: "platform" },
            annotations: { grafana_folder: "Operators" },
          },
          prometheusRule: {
            enabled: true,
            labels: { release: "prometheus" },
            alertLabels: { team: "platform" },
            notReadyFor: "30m",
            tokenRenewalGrace: "90s",
            jobSelector: 'namespace="ops"',
          },
        },
      }),
    );
    expect(dashboardOf(docs).doc.metadata).toMatchObject({
      namespace: "monitoring",
      labels: { grafana_dashboard: "1", team: "platform" },
      annotations: { grafana_folder: "Operators" },
    });
    expect(findDoc(docs, "PrometheusRule").metadata.labels).toMatchObject({ release: "prometheus" });
    const rules = rulesOf(docs);
    expect(rules.find((r) => r.alert === "KeywardResourceNotReady")).toMatchObject({
      for: "30m",
      labels: { severity: "warning", team: "platform" },
    });
    expect(rules.find((r) => r.alert === "KeywardTokenRenewalOverdue")?.expr).toBe(
      "time() - keyward_token_renewal_due_timestamp_seconds > 90",
    );
    expect(rules.find((r) => r.alert === "KeywardReconcileErrors")?.expr).toContain(
      'controller_runtime_reconcile_errors_total{namespace="ops"}[10m]',
    );
  });

  it.each([
    ["a notReadyFor that is no duration", { prometheusRule: { notReadyFor: "15 minutes" } }, "/prometheusRule/notReadyFor"],
    ["a ratio above 1", { prometheusRule: { reconcileErrorRatio: 2 } }, "/prometheusRule/reconcileErrorRatio"],
    ["an unknown key", { grafanaDashboard: { folder: "x" } }, "/grafanaDashboard"],
  ])("reject %s", async (_name, values, path) => {
    const result = await helm(templateArgs({ setJson: values }));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(path);
  });
});

describe("PrometheusRule", () => {
  let rulesFile: string;
  beforeAll(() => {
    // PrometheusRule's spec is a Prometheus rule file; JSON is YAML.
    rulesFile = join(dir, "rules.yaml");
    writeFileSync(rulesFile, JSON.stringify((findDoc(enabled, "PrometheusRule") as unknown as { spec: object }).spec, null, 2));
  });

  it("passes promtool check rules", async () => {
    const result = await run(promtoolBinary(), ["check", "rules", rulesFile]);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain(`SUCCESS: ${rulesOf(enabled).length} rules found`);
  });

  it("passes its promtool unit tests: each alert fires when it should, with its texts, and not otherwise", async () => {
    const tests = join(dir, "prometheus-rules.test.yaml");
    copyFileSync(join(import.meta.dirname, "prometheus-rules.test.yaml"), tests);
    const result = await run(promtoolBinary(), ["test", "rules", tests]);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain("SUCCESS");
    // every alert of the rule is exercised by the unit tests
    const tested = new Set([...readFileSync(tests, "utf8").matchAll(/alertname: (\w+)/g)].map((m) => m[1]));
    expect(
      rulesOf(enabled)
        .map((r) => r.alert)
        .filter((a) => !tested.has(a)),
    ).toEqual([]);
  });

  it("alerts on resources not Ready for 15 minutes, failed sync jobs, expiring certificates and tokens not renewed", () => {
    const rules = rulesOf(enabled);
    expect(rules.map((r) => r.alert)).toEqual(
      expect.arrayContaining([
        "KeywardResourceNotReady",
        "KeywardSecretSyncJobFailed",
        "KeywardCertificatesExpiring",
        "KeywardTokenRenewalOverdue",
        "KeywardTokenExpired",
      ]),
    );
    expect(rules.find((r) => r.alert === "KeywardResourceNotReady")?.for).toBe("15m");
    for (const r of rules) {
      expect(r.labels?.["severity"], r.alert).toMatch(/^(warning|critical)$/);
      expect(r.annotations?.["summary"], r.alert).toBeTruthy();
    }
  });

  it("reads only metrics keyward exports or the proposed gauges", () => {
    const unknown = rulesOf(enabled).flatMap((r) =>
      metricNames(r.expr)
        .filter((n) => !exported.has(n) && !proposedGauges.includes(n))
        .map((n) => `${r.alert}: ${n}`),
    );
    expect(unknown).toEqual([]);
  });
});

describe("Grafana dashboard", () => {
  let dashboard: Dashboard;
  beforeAll(() => {
    dashboard = JSON.parse(dashboardOf(enabled).json) as Dashboard;
  });

  it('is the chart\'s dashboards/keyward.json in a ConfigMap labelled grafana_dashboard: "1"', () => {
    const { doc, json } = dashboardOf(enabled);
    expect(doc.metadata.labels?.["grafana_dashboard"]).toBe("1");
    expect(doc.metadata.namespace).toBe("keyward-system");
    expect(json.trim()).toBe(readFileSync(join(chartDir, "dashboards", "keyward.json"), "utf8").trim());
    expect(dashboard).toMatchObject({ uid: "keyward-operator", title: "keyward" });
    expect(dashboard.templating.list.map((v) => v.name)).toEqual(["datasource", "job", "controller"]);
  });

  it("queries only metrics keyward exports or the proposed gauges, and shows every metric keyward exports", () => {
    const queries = [
      ...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ where: p.title, expr: t.expr }))),
      ...dashboard.templating.list
        .filter((v) => v.definition)
        .map((v) => ({ where: `variable ${v.name}`, expr: (v.definition ?? "").replace(/^label_values\((.*), *\w+\)$/, "$1") })),
    ];
    expect(dashboard.panels.filter((p) => p.type !== "row" && (p.targets ?? []).length === 0).map((p) => p.title)).toEqual([]);
    const used = new Set<string>();
    const unknown: string[] = [];
    for (const q of queries) {
      const names = metricNames(q.expr);
      expect(names.length, `${q.where}: ${q.expr}`).toBeGreaterThan(0);
      for (const n of names) {
        used.add(n);
        if (!exported.has(n) && !proposedGauges.includes(n)) unknown.push(`${q.where}: ${n}`);
      }
    }
    expect(unknown).toEqual([]);
    // a histogram counts as shown through its _bucket series
    const families = [...exported.keys()].filter((n) => !/_(sum|count)$/.test(n) || exported.get(n) !== "histogram");
    expect(families.filter((n) => !used.has(n))).toEqual([]);
  });

  it("exports the alerts' per-object gauges, as gauges", () => {
    for (const name of proposedGauges) expect(exported.get(name), name).toBe("gauge");
  });
});

describe("metricNames", () => {
  it("finds the metrics of an expression and nothing else", () => {
    expect(
      metricNames(
        'sum by (le, controller) (rate(controller_runtime_reconcile_time_seconds_bucket{job=~"$job", controller=~"a|b"}[$__rate_interval]))',
      ),
    ).toEqual(["controller_runtime_reconcile_time_seconds_bucket"]);
    expect(metricNames("time() - keyward_token_renewal_due_timestamp_seconds > 300")).toEqual([
      "keyward_token_renewal_due_timestamp_seconds",
    ]);
    expect(metricNames('a_total{x="y"} / on (z) group_left b_total and bool c')).toEqual(["a_total", "b_total", "c"]);
  });
});

describe("ServiceMonitor authorization", () => {
  const endpointOf = (docs: Doc[]): Record<string, unknown> =>
    (findDoc(docs, "ServiceMonitor") as unknown as { spec: { endpoints: Record<string, unknown>[] } }).spec.endpoints[0] ?? {};

  it("sends the token of a scraper ServiceAccount the chart creates and binds to metrics-reader, from a Secret, with no bearerTokenFile", () => {
    const endpoint = endpointOf(enabled);
    expect(endpoint["authorization"]).toEqual({ type: "Bearer", credentials: { name: "kw-keyward-scraper-token", key: "token" } });
    expect(endpoint).not.toHaveProperty("bearerTokenFile");
    expect(JSON.stringify(findDoc(enabled, "ServiceMonitor"))).not.toContain("bearerTokenFile");
    expect(findDoc(enabled, "ServiceAccount", "kw-keyward-scraper")).toMatchObject({
      metadata: { namespace: "keyward-system" },
      automountServiceAccountToken: false,
    });
    expect(findDoc(enabled, "Secret", "kw-keyward-scraper-token")).toMatchObject({
      type: "kubernetes.io/service-account-token",
      metadata: { namespace: "keyward-system", annotations: { "kubernetes.io/service-account.name": "kw-keyward-scraper" } },
    });
    expect(findDoc(enabled, "ClusterRoleBinding", "kw-keyward-metrics-scraper")).toMatchObject({
      roleRef: { kind: "ClusterRole", name: "kw-keyward-metrics-reader" },
      subjects: [{ kind: "ServiceAccount", name: "kw-keyward-scraper", namespace: "keyward-system" }],
    });
    // The role it is bound to is the one keyward's /metrics authorizer asks about.
    expect(findDoc(enabled, "ClusterRole", "kw-keyward-metrics-reader")).toMatchObject({
      rules: [{ nonResourceURLs: ["/metrics"], verbs: ["get"] }],
    });
  });

  it("names the user's own Secret instead, and then creates no scraper identity", async () => {
    const docs = parseYamlDocuments(
      await renderChart({
        setJson: { serviceMonitor: { enabled: true, authorization: { secretName: "prometheus-token", key: "bearer" } } },
      }),
    );
    expect(endpointOf(docs)["authorization"]).toEqual({ type: "Bearer", credentials: { name: "prometheus-token", key: "bearer" } });
    expect(docs.filter((d) => d.metadata.name.includes("scraper"))).toEqual([]);
    expect(docs.filter((d) => d.kind === "Secret")).toEqual([]);
  });

  it("renders no scraper identity without the ServiceMonitor", () => {
    expect(defaults.filter((d) => d.metadata.name.includes("scraper") || d.kind === "Secret")).toEqual([]);
  });

  it("refuses a Secret name or key Kubernetes would refuse", async () => {
    for (const authorization of [{ secretName: "Not_A_Name" }, { key: "a/b" }]) {
      const result = await helm(templateArgs({ setJson: { serviceMonitor: { enabled: true, authorization } } }));
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain("/serviceMonitor/authorization");
    }
  });
});
