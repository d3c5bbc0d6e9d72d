// The Helm chart: lint, renderings for the default values, a namespaced install and every
// option on, the schema rejecting bad values, and the chart's CRDs (templates) equal to crds/.
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  clusterProviderConfigGrants,
  credentialsGrants,
  chartDir,
  expectedWorkloadGrants,
  findDoc,
  flattenRules,
  helm,
  leaseGrants,
  shardingLeaseGrants,
  metricsAuthGrants,
  parseYamlDocuments,
  secretWriterGrants,
  uninstallGrants,
  renderChart,
  repoRoot,
  templateArgs,
  valuesAllFile,
  type Doc,
  type PolicyRule,
} from "./helm.ts";

interface Container {
  name: string;
  image: string;
  env: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  ports: { name: string; containerPort: number }[];
  livenessProbe: { httpGet: { path: string; port: string } };
  readinessProbe: { httpGet: { path: string; port: string } };
  securityContext: Record<string, unknown>;
  volumeMounts: { name: string; mountPath: string }[];
}
interface PodSpec {
  serviceAccountName: string;
  securityContext: Record<string, unknown>;
  containers: Container[];
  volumes: { name: string; emptyDir?: object }[];
  nodeSelector?: Record<string, string>;
  tolerations?: object[];
  affinity?: object;
  topologySpreadConstraints?: object[];
  imagePullSecrets?: { name: string }[];
}

/** The operator's Deployment's pod (the first Deployment rendered), or the named Deployment's. */
const podSpec = (docs: Doc[], name?: string): PodSpec =>
  (findDoc(docs, "Deployment", name) as unknown as { spec: { template: { spec: PodSpec } } }).spec.template.spec;
const container = (docs: Doc[], name?: string): Container => {
  const c = podSpec(docs, name).containers[0];
  if (!c) throw new Error("no container");
  return c;
};
const envOf = (docs: Doc[], name?: string): Record<string, string | undefined> =>
  Object.fromEntries(
    container(docs, name).env.map((e) => [
      e.name,
      e.value ?? (e.valueFrom?.fieldRef ? `fieldRef:${e.valueFrom.fieldRef.fieldPath}` : "valueFrom"),
    ]),
  );
const rulesOf = (doc: Doc): string[] => flattenRules((doc as unknown as { rules: PolicyRule[] }).rules);
const kinds = (docs: Doc[]): string[] => docs.map((d) => `${d.kind}/${d.metadata.namespace ?? ""}/${d.metadata.name}`).sort();

/** The generated CRDs of crds/, by file name. */
const rootCrdFiles = (): string[] =>
  readdirSync(join(repoRoot, "crds"))
    .filter((f) => f.endsWith(".yaml"))
    .sort();
/** kinds() entries of the seven CRDs the chart renders with crds.enabled. */
const crdKinds = (): string[] => rootCrdFiles().map((f) => `CustomResourceDefinition//${f.slice(0, -".yaml".length)}`);

/** The chart's appVersion: its default image tag. */
const appVersion = /^appVersion:\s*"?([^"\s]+)"?\s*$/m.exec(readFileSync(join(chartDir, "Chart.yaml"), "utf8"))?.[1];

let defaults: Doc[];
let namespaced: Doc[];
let everything: Doc[];

beforeAll(async () => {
  [defaults, namespaced, everything] = await Promise.all([
    renderChart().then(parseYamlDocuments),
    renderChart({ setJson: { watchNamespaces: ["a", "b"] } }).then(parseYamlDocuments),
    renderChart({ valuesFiles: [valuesAllFile] }).then(parseYamlDocuments),
  ]);
});

describe("helm lint", () => {
  it("is clean, also with every option on", async () => {
    for (const extra of [[], ["--values", valuesAllFile]]) {
      const result = await helm(["lint", "--strict", chartDir, ...extra]);
      expect(result.code, result.stdout + result.stderr).toBe(0);
      expect(result.stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
    }
  });
});

describe("default values", () => {
  it("render a cluster-wide install", () => {
    expect(kinds(defaults).filter((k) => !k.startsWith("CustomResourceDefinition/"))).toEqual([
      "ClusterRole//kw-keyward",
      "ClusterRole//kw-keyward-edit",
      "ClusterRole//kw-keyward-metrics-auth",
      "ClusterRole//kw-keyward-metrics-reader",
      "ClusterRole//kw-keyward-secret-writer",
      "ClusterRole//kw-keyward-uninstall",
      "ClusterRole//kw-keyward-view",
      "ClusterRole//kw-keyward-webhook",
      "ClusterRoleBinding//kw-keyward",
      "ClusterRoleBinding//kw-keyward-metrics-auth",
      "ClusterRoleBinding//kw-keyward-secret-writer",
      "ClusterRoleBinding//kw-keyward-uninstall",
      "ClusterRoleBinding//kw-keyward-webhook",
      "Deployment/keyward-system/kw-keyward",
      "Deployment/keyward-system/kw-keyward-webhook",
      "Job/keyward-system/kw-keyward-uninstall",
      "NetworkPolicy/keyward-system/kw-keyward",
      "NetworkPolicy/keyward-system/kw-keyward-webhook",
      "PodDisruptionBudget/keyward-system/kw-keyward-webhook",
      "Role/keyward-system/kw-keyward-holders",
      "Role/keyward-system/kw-keyward-leader-election",
      "Role/keyward-system/kw-keyward-uninstall",
      "Role/keyward-system/kw-keyward-webhook",
      "RoleBinding/keyward-system/kw-keyward-holders",
      "RoleBinding/keyward-system/kw-keyward-leader-election",
      "RoleBinding/keyward-system/kw-keyward-uninstall",
      "RoleBinding/keyward-system/kw-keyward-webhook",
      "Service/keyward-system/kw-keyward-metrics",
      "Service/keyward-system/kw-keyward-webhook",
      "ServiceAccount/keyward-system/kw-keyward",
      "ServiceAccount/keyward-system/kw-keyward-webhook",
    ]);
    expect(kinds(defaults).filter((k) => k.startsWith("CustomResourceDefinition/"))).toEqual(crdKinds());
  });

  it("grant exactly what keyward uses, cluster-wide, to its ServiceAccount", () => {
    expect(rulesOf(findDoc(defaults, "ClusterRole", "kw-keyward"))).toEqual(expectedWorkloadGrants);
    const binding = findDoc(defaults, "ClusterRoleBinding", "kw-keyward") as unknown as { roleRef: { name: string }; subjects: object[] };
    expect(binding.roleRef.name).toBe("kw-keyward");
    expect(binding.subjects).toEqual([{ kind: "ServiceAccount", name: "kw-keyward", namespace: "keyward-system" }]);
    expect(rulesOf(findDoc(defaults, "Role", "kw-keyward-leader-election"))).toEqual(leaseGrants("kw-keyward-leader"));
    // The claim rule's locks: Leases named by a digest of an id, in the release namespace only.
    expect(rulesOf(findDoc(defaults, "Role", "kw-keyward-holders"))).toEqual(
      flattenRules([{ apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get", "list", "create", "update", "delete"] }]),
    );
  });

  it("run keyward locked down: non-root, read-only root, no capabilities, RuntimeDefault seccomp, a /tmp emptyDir", () => {
    const pod = podSpec(defaults);
    expect(pod.serviceAccountName).toBe("kw-keyward");
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: "RuntimeDefault" } });
    const c = container(defaults);
    expect(c.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ["ALL"] },
    });
    expect(c.volumeMounts).toEqual([{ name: "tmp", mountPath: "/tmp" }]);
    expect(pod.volumes).toEqual([{ name: "tmp", emptyDir: { sizeLimit: "64Mi" } }]);
    expect(c.image).toBe(`ghcr.io/keyward/keyward:${appVersion}`);
  });

  it("run the released image by digest when image.digest is set (the tag is then not used)", async () => {
    const digest = `sha256:${"a1".repeat(32)}`;
    const docs = parseYamlDocuments(await renderChart({ setJson: { image: { tag: "ignored", digest } } }));
    expect(container(docs).image).toBe(`ghcr.io/keyward/keyward@${digest}`);
  });

  it("probe /healthz and /readyz on the health port and expose metrics", () => {
    const c = container(defaults);
    expect(c.livenessProbe.httpGet).toEqual({ path: "/healthz", port: "health" });
    expect(c.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "health" });
    expect(c.ports.map((p) => [p.name, p.containerPort])).toEqual([
      ["metrics", 8080],
      ["health", 8081],
    ]);
    const service = findDoc(defaults, "Service", "kw-keyward-metrics") as unknown as {
      spec: { ports: { port: number; targetPort: string }[]; selector: object };
    };
    expect(service.spec.ports[0]).toMatchObject({ port: 8080, targetPort: "metrics" });
    expect(service.spec.selector).toEqual({ "app.kubernetes.io/name": "keyward", "app.kubernetes.io/instance": "kw" });
  });

  it("configure keyward through its environment, POD_NAME from the downward API", () => {
    // No ALLOWED_BASE_URLS: keyward's default, a token goes only where its Secret's annotation says.
    expect(envOf(defaults)).toEqual({
      POD_NAME: "fieldRef:metadata.name",
      WATCH_NAMESPACES: "",
      NODE_OPTIONS: "--max-semi-space-size=1 --max-old-space-size=144",
      CONCURRENCY: "4",
      MAX_REQUEST_TIMEOUT: "30s",
      KUBE_API_QPS: "auto",
      KUBE_API_BURST: "600",
      RESYNC_INTERVAL: "10m",
      LOG_LEVEL: "info",
      METRICS_PORT: "8080",
      HEALTH_PORT: "8081",
      METRICS_AUTH: "kubernetes",
      SHUTDOWN_TIMEOUT: "30s",
      MAX_RESPONSE_BYTES: "16Mi",
      RESPONSE_BUDGET_BYTES: "32Mi",
      KUBE_REQUEST_TIMEOUT: "30s",
      LEADER_ELECT: "true",
      LEADER_ELECTION_NAMESPACE: "keyward-system",
      LEADER_ELECTION_ID: "kw-keyward-leader",
    });
  });
});

describe("a namespaced install (watchNamespaces: [a, b])", () => {
  it("renders no cluster-scoped object but the CRDs and the ClusterRoles on them of the webhook and the uninstall hook, even with rbac.aggregateToDefaultRoles (the default) on", () => {
    const webhookRbac = [
      "ClusterRole/kw-keyward-uninstall",
      "ClusterRole/kw-keyward-webhook",
      "ClusterRoleBinding/kw-keyward-uninstall",
      "ClusterRoleBinding/kw-keyward-webhook",
    ];
    expect(
      namespaced
        .filter((d) => d.kind.startsWith("Cluster"))
        .map((d) => `${d.kind}/${d.metadata.name}`)
        .sort(),
    ).toEqual(webhookRbac);
    expect(
      namespaced
        .filter((d) => d.metadata.namespace === undefined && d.kind !== "CustomResourceDefinition")
        .map((d) => `${d.kind}/${d.metadata.name}`)
        .sort(),
    ).toEqual(webhookRbac);
    expect(kinds(namespaced)).toEqual([
      "ClusterRole//kw-keyward-uninstall",
      "ClusterRole//kw-keyward-webhook",
      "ClusterRoleBinding//kw-keyward-uninstall",
      "ClusterRoleBinding//kw-keyward-webhook",
      ...crdKinds(),
      "Deployment/keyward-system/kw-keyward",
      "Deployment/keyward-system/kw-keyward-webhook",
      "Job/keyward-system/kw-keyward-uninstall",
      "NetworkPolicy/keyward-system/kw-keyward",
      "NetworkPolicy/keyward-system/kw-keyward-webhook",
      "PodDisruptionBudget/keyward-system/kw-keyward-webhook",
      "Role/a/kw-keyward",
      "Role/a/kw-keyward-secret-writer",
      "Role/b/kw-keyward",
      "Role/b/kw-keyward-secret-writer",
      "Role/keyward-system/kw-keyward-holders",
      "Role/keyward-system/kw-keyward-leader-election",
      "Role/keyward-system/kw-keyward-uninstall",
      "Role/keyward-system/kw-keyward-webhook",
      "RoleBinding/a/kw-keyward",
      "RoleBinding/a/kw-keyward-secret-writer",
      "RoleBinding/b/kw-keyward",
      "RoleBinding/b/kw-keyward-secret-writer",
      "RoleBinding/keyward-system/kw-keyward-holders",
      "RoleBinding/keyward-system/kw-keyward-leader-election",
      "RoleBinding/keyward-system/kw-keyward-uninstall",
      "RoleBinding/keyward-system/kw-keyward-webhook",
      "Service/keyward-system/kw-keyward-metrics",
      "Service/keyward-system/kw-keyward-webhook",
      "ServiceAccount/keyward-system/kw-keyward",
      "ServiceAccount/keyward-system/kw-keyward-webhook",
    ]);
  });

  it("says in its notes and README that the CRDs are the only cluster-scoped objects", () => {
    const notes = readFileSync(join(chartDir, "templates", "NOTES.txt"), "utf8");
    expect(notes).not.toContain("nothing cluster-wide");
    expect(notes).toMatch(/no cluster-scoped objects[^{]*\{\{- if \.Values\.crds\.enabled \}\}, except the seven CRDs \(crds\.enabled\)/);
    expect(notes).toMatch(/\{\{- else \}\}; its CRDs are a cluster admin's\s+to apply \(crds\.enabled=false\)/);
    expect(readFileSync(join(chartDir, "README.md"), "utf8")).toMatch(
      /no cluster-scoped object at all[^#]*seven CRDs[^#]*crds\.enabled=false/,
    );
  });

  it("has a Role and RoleBinding in each watched namespace", () => {
    for (const ns of ["a", "b"]) {
      expect(rulesOf(findDoc(namespaced, "Role", "kw-keyward", ns))).toEqual(expectedWorkloadGrants);
      const binding = findDoc(namespaced, "RoleBinding", "kw-keyward", ns) as unknown as { roleRef: object; subjects: object[] };
      expect(binding.roleRef).toEqual({ apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "kw-keyward" });
      expect(binding.subjects).toEqual([{ kind: "ServiceAccount", name: "kw-keyward", namespace: "keyward-system" }]);
    }
    expect(rulesOf(findDoc(namespaced, "Role", "kw-keyward-leader-election", "keyward-system"))).toEqual(leaseGrants("kw-keyward-leader"));
    expect(envOf(namespaced)["WATCH_NAMESPACES"]).toBe("a,b");
  });
});

describe("every option on (values-all.yaml)", () => {
  it("renders every optional object", () => {
    // watchNamespaces is set, so no ClusterRole although rbac.aggregateToDefaultRoles is on, but
    // for metrics.auth kubernetes, whose reviews are cluster-scoped APIs.
    expect(kinds(everything)).toEqual([
      "ClusterRole//keyward-operator-metrics-auth",
      "ClusterRole//keyward-operator-metrics-reader",
      "ClusterRoleBinding//keyward-operator-metrics-auth",
      "ClusterRoleBinding//keyward-operator-metrics-reader",
      "ConfigMap/keyward-system/internal-ca",
      "ConfigMap/keyward-system/keyward-operator-dashboard",
      "Deployment/keyward-system/keyward-operator",
      "Deployment/keyward-system/keyward-operator-webhook",
      "Job/keyward-system/keyward-operator-uninstall",
      "NetworkPolicy/keyward-system/keyward-operator",
      "NetworkPolicy/keyward-system/keyward-operator-webhook",
      "PodDisruptionBudget/keyward-system/keyward-operator",
      "PodDisruptionBudget/keyward-system/keyward-operator-webhook",
      "PrometheusRule/keyward-system/keyward-operator",
      "ProviderConfig/keyward-system/default",
      "Role/keyward-system/keyward-operator-holders",
      "Role/keyward-system/keyward-operator-leader-election",
      "Role/keyward-system/keyward-operator-uninstall",
      "Role/keyward-system/keyward-operator-webhook",
      "Role/team-a/keyward-operator",
      "Role/team-a/keyward-operator-secret-writer",
      "Role/team-b/keyward-operator",
      "RoleBinding/keyward-system/keyward-operator-holders",
      "RoleBinding/keyward-system/keyward-operator-leader-election",
      "RoleBinding/keyward-system/keyward-operator-uninstall",
      "RoleBinding/keyward-system/keyward-operator-webhook",
      "RoleBinding/team-a/keyward-operator",
      "RoleBinding/team-a/keyward-operator-secret-writer",
      "RoleBinding/team-b/keyward-operator",
      "Service/keyward-system/keyward-operator-metrics",
      "Service/keyward-system/keyward-operator-webhook",
      "ServiceAccount/keyward-system/keyward-operator-webhook",
      "ServiceAccount/keyward-system/keyward-sa",
      "ServiceMonitor/keyward-system/keyward-operator",
    ]);
  });

  it("passes every value through", () => {
    const pod = podSpec(everything);
    const c = container(everything);
    expect(c.image).toBe("registry.example.test/platform/keyward:0.1.0-rc.1");
    expect(pod.imagePullSecrets).toEqual([{ name: "registry-credentials" }]);
    expect(pod.nodeSelector).toEqual({ "kubernetes.io/os": "linux" });
    expect(pod.tolerations).toHaveLength(1);
    expect(pod.affinity).toHaveProperty("podAntiAffinity");
    // A spread constraint without a labelSelector spreads keyward's own pods.
    expect(pod.topologySpreadConstraints).toEqual([
      {
        maxSkew: 1,
        topologyKey: "topology.kubernetes.io/zone",
        whenUnsatisfiable: "ScheduleAnyway",
        labelSelector: { matchLabels: { "app.kubernetes.io/name": "kw", "app.kubernetes.io/instance": "kw" } },
      },
    ]);
    expect(pod.volumes).toContainEqual({ name: "ca", configMap: { name: "internal-ca" } });
    expect(c.volumeMounts).toContainEqual({ name: "ca", mountPath: "/etc/keyward/ca", readOnly: true });
    expect(pod.serviceAccountName).toBe("keyward-sa");
    expect(pod.securityContext).toMatchObject({ runAsUser: 10001 });
    expect(envOf(everything)).toMatchObject({
      WATCH_NAMESPACES: "team-a,team-b",
      ALLOWED_BASE_URLS: "https://secrets.example.test,https://secrets-eu.example.test/api",
      ACCESS_TOKEN_NAMESPACES: "team-a",
      CONCURRENCY: "16",
      MAX_IN_FLIGHT_PER_NAMESPACE: "3",
      MAX_REQUEST_TIMEOUT: "60s",
      RESYNC_INTERVAL: "5m",
      LOG_LEVEL: "debug",
      METRICS_PORT: "9090",
      HEALTH_PORT: "9091",
      LEADER_ELECTION_ID: "keyward-operator-lease",
      SHUTDOWN_TIMEOUT: "45s",
      MAX_RESPONSE_BYTES: "4Mi",
      RESPONSE_BUDGET_BYTES: "8Mi",
      KUBE_REQUEST_TIMEOUT: "20s",
      NODE_OPTIONS: "valueFrom",
    });
    expect(rulesOf(findDoc(everything, "Role", "keyward-operator-leader-election"))).toEqual(leaseGrants("keyward-operator-lease"));
    expect(findDoc(everything, "ProviderConfig")).toMatchObject({
      spec: { baseUrl: "https://secrets.example.test/api", credentialsSecretRef: { name: "keyward-token", key: "access-token" } },
    });
    expect(findDoc(everything, "PodDisruptionBudget", "keyward-operator")).toMatchObject({ spec: { maxUnavailable: 1 } });
    expect(findDoc(everything, "NetworkPolicy", "keyward-operator")).toMatchObject({
      spec: {
        ingress: [
          { ports: [{ port: 9090 }], from: [{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } } }] },
          { ports: [{ port: 9091 }] },
        ],
        egress: [
          { ports: [{ port: 6443 }], to: [{ ipBlock: { cidr: "192.168.10.0/28" } }] },
          { to: [{ podSelector: { matchLabels: { "k8s-app": "kube-dns" } } }] },
          // allowedBaseUrls is set, so servicePorts (8443) are not used: the URLs' hostnames open 443.
          { ports: [{ port: 443 }] },
          { ports: [{ port: 443 }], to: [{ ipBlock: { cidr: "203.0.113.0/24" } }] },
        ],
      },
    });
    expect(findDoc(everything, "ServiceMonitor")).toMatchObject({
      metadata: { labels: { release: "prometheus" } },
      spec: {
        endpoints: [
          {
            port: "metrics",
            path: "/metrics",
            interval: "15s",
            scrapeTimeout: "10s",
            honorLabels: true,
            authorization: { type: "Bearer", credentials: { name: "prometheus-keyward-token", key: "bearer" } },
          },
        ],
      },
    });
    expect(envOf(everything)["METRICS_AUTH"]).toBe("kubernetes");
    const readers = findDoc(everything, "ClusterRoleBinding", "keyward-operator-metrics-reader") as unknown as {
      roleRef: { name: string };
      subjects: object[];
    };
    expect(readers.roleRef.name).toBe("keyward-operator-metrics-reader");
    expect(readers.subjects).toEqual([
      { kind: "ServiceAccount", name: "prometheus-k8s", namespace: "monitoring" },
      { kind: "Group", name: "metrics-scrapers", apiGroup: "rbac.authorization.k8s.io" },
    ]);
  });

  it("aggregates keyward's kinds into the built-in roles in a cluster-wide install only", async () => {
    const clusterWide = parseYamlDocuments(await renderChart({ valuesFiles: [valuesAllFile], setJson: { watchNamespaces: [] } }));
    expect(
      clusterWide
        .filter((d) => d.kind === "ClusterRole")
        .map((d) => d.metadata.name)
        .sort(),
    ).toEqual([
      "keyward-operator",
      "keyward-operator-edit",
      "keyward-operator-metrics-auth",
      "keyward-operator-metrics-reader",
      "keyward-operator-uninstall",
      "keyward-operator-view",
      "keyward-operator-webhook",
    ]);
  });

  it("renders a PodDisruptionBudget only with more than one replica", async () => {
    const one = parseYamlDocuments(await renderChart({ setJson: { replicas: 1 } }));
    const two = parseYamlDocuments(await renderChart({ setJson: { replicas: 2 } }));
    expect(one.some((d) => d.kind === "PodDisruptionBudget" && d.metadata.name === "kw-keyward")).toBe(false);
    expect(findDoc(two, "PodDisruptionBudget", "kw-keyward")).toMatchObject({ spec: { minAvailable: 1 } });
  });
});

describe("clusterProviderConfig", () => {
  const values = {
    clusterProviderConfig: {
      enabled: true,
      credentialsNamespace: "creds",
      create: true,
      name: "shared",
      baseUrl: "https://secrets.example.test",
      secretName: "bootstrap",
      secretKey: "token",
      identityId: "a1b2c3d4-0003-4a00-8000-000000000002",
      namespaceSelector: { matchLabels: { team: "payments" } },
      namespaces: ["extra"],
    },
  };

  it("adds ClusterProviderConfig and Namespace reads to the ClusterRole and reads Secrets in the credentials namespace only", async () => {
    const docs = parseYamlDocuments(await renderChart({ setJson: values }));
    expect(rulesOf(findDoc(docs, "ClusterRole", "kw-keyward"))).toEqual([...expectedWorkloadGrants, ...clusterProviderConfigGrants].sort());
    expect(rulesOf(findDoc(docs, "Role", "kw-keyward-credentials", "creds"))).toEqual(credentialsGrants);
    const binding = findDoc(docs, "RoleBinding", "kw-keyward-credentials", "creds") as unknown as {
      roleRef: { kind: string; name: string };
      subjects: object[];
    };
    expect(binding.roleRef).toMatchObject({ kind: "Role", name: "kw-keyward-credentials" });
    expect(binding.subjects).toEqual([{ kind: "ServiceAccount", name: "kw-keyward", namespace: "keyward-system" }]);
    expect(envOf(docs)).toMatchObject({ CLUSTER_PROVIDER_CONFIGS: "true", CREDENTIALS_NAMESPACE: "creds" });
    expect(findDoc(docs, "ClusterProviderConfig", "shared")).toMatchObject({
      spec: {
        baseUrl: "https://secrets.example.test",
        tokenAuth: { identityId: "a1b2c3d4-0003-4a00-8000-000000000002", bootstrapSecretRef: { name: "bootstrap", key: "token" } },
        namespaceSelector: { matchLabels: { team: "payments" } },
        namespaces: ["extra"],
      },
    });
    expect(findDoc(docs, "ClusterProviderConfig", "shared").metadata.namespace).toBeUndefined();
  });

  it("defaults the credentials namespace to the release namespace and renders a static token with no identityId", async () => {
    const docs = parseYamlDocuments(
      await renderChart({
        setJson: { clusterProviderConfig: { ...values.clusterProviderConfig, credentialsNamespace: "", identityId: "" } },
      }),
    );
    expect(rulesOf(findDoc(docs, "Role", "kw-keyward-credentials", "keyward-system"))).toEqual(credentialsGrants);
    expect(envOf(docs)["CREDENTIALS_NAMESPACE"]).toBe("keyward-system");
    expect(findDoc(docs, "ClusterProviderConfig", "shared")).toMatchObject({
      spec: { credentialsSecretRef: { name: "bootstrap", key: "token" } },
    });
  });

  it("is ignored by a namespaced install, which renders nothing cluster-scoped but the CRDs and the ClusterRoles on them", async () => {
    const docs = parseYamlDocuments(await renderChart({ setJson: { ...values, watchNamespaces: ["a"] } }));
    expect(
      docs
        .filter((d) => d.kind !== "CustomResourceDefinition")
        .filter((d) => d.kind.startsWith("Cluster") || d.metadata.namespace === undefined)
        .map((d) => `${d.kind}/${d.metadata.name}`)
        .sort(),
    ).toEqual([
      "ClusterRole/kw-keyward-uninstall",
      "ClusterRole/kw-keyward-webhook",
      "ClusterRoleBinding/kw-keyward-uninstall",
      "ClusterRoleBinding/kw-keyward-webhook",
    ]);
    expect(docs.some((d) => d.metadata.name === "kw-keyward-credentials")).toBe(false);
    expect(envOf(docs)["CLUSTER_PROVIDER_CONFIGS"]).toBeUndefined();
  });

  it("refuses create without enabled", async () => {
    const result = await helm(templateArgs({ setJson: { clusterProviderConfig: { ...values.clusterProviderConfig, enabled: false } } }));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("/clusterProviderConfig/enabled");
  });
});

describe("a PodDisruptionBudget", () => {
  const pdb = async (replicas: number, budget: object): Promise<Doc> =>
    findDoc(parseYamlDocuments(await renderChart({ setJson: { replicas, podDisruptionBudget: budget } })), "PodDisruptionBudget");

  it("renders a budget that allows at least one eviction", async () => {
    expect(await pdb(3, { minAvailable: 2 })).toMatchObject({ spec: { minAvailable: 2 } });
    // 60% of 3 rounds up to 2: one pod may go.
    expect(await pdb(3, { minAvailable: "60%" })).toMatchObject({ spec: { minAvailable: "60%" } });
    const maxOne = (await pdb(2, { minAvailable: 5, maxUnavailable: 1 })) as unknown as { spec: Record<string, unknown> };
    expect(maxOne.spec["maxUnavailable"]).toBe(1);
    expect(maxOne.spec).not.toHaveProperty("minAvailable");
  });

  // minAvailable against replicas, as the disruption controller rounds it (up).
  const blocking: [string, number, number | string][] = [
    ["minAvailable equal to replicas", 2, 2],
    ["minAvailable above replicas", 2, 3],
    ["a percentage that rounds up to every replica", 2, "60%"],
    ["minAvailable 100%", 3, "100%"],
  ];

  it.each(blocking)("fails the render for %s, which would block every node drain", async (_name, replicas, minAvailable) => {
    const result = await helm(templateArgs({ setJson: { replicas, podDisruptionBudget: { minAvailable } } }));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(
      `podDisruptionBudget.minAvailable ${String(minAvailable)} keeps all ${String(replicas)} replicas up and blocks every node drain`,
    );
  });

  it("does not check minAvailable without a budget (one replica)", async () => {
    const docs = parseYamlDocuments(await renderChart({ setJson: { replicas: 1, podDisruptionBudget: { minAvailable: 1 } } }));
    expect(docs.some((d) => d.kind === "PodDisruptionBudget" && d.metadata.name === "kw-keyward")).toBe(false);
  });
});

describe("metrics.port equal to health.port", () => {
  it("renders one containerPort, with the probes and the Service on it", async () => {
    const docs = parseYamlDocuments(await renderChart({ setJson: { metrics: { port: 9000 }, health: { port: 9000 } } }));
    const c = container(docs);
    expect(c.ports.map((p) => [p.name, p.containerPort])).toEqual([["metrics", 9000]]);
    expect(c.livenessProbe.httpGet).toEqual({ path: "/healthz", port: "metrics" });
    expect(c.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "metrics" });
    const service = findDoc(docs, "Service", "kw-keyward-metrics") as unknown as { spec: { ports: { targetPort: string }[] } };
    expect(service.spec.ports.map((p) => p.targetPort)).toEqual(["metrics"]);
    // keyward serves /metrics, /healthz and /readyz from one server when the two are equal (src/main.ts).
    expect(envOf(docs)).toMatchObject({ METRICS_PORT: "9000", HEALTH_PORT: "9000" });
  });
});

interface PolicyPort {
  port: number;
  protocol: string;
}
interface NetworkPolicyRule {
  ports: PolicyPort[];
  to?: object[];
  from?: object[];
}
interface NetworkPolicySpec {
  podSelector: { matchLabels: Record<string, string> };
  policyTypes: string[];
  ingress: NetworkPolicyRule[];
  egress: NetworkPolicyRule[];
}
const networkPolicy = (docs: Doc[], name?: string): NetworkPolicySpec =>
  (findDoc(docs, "NetworkPolicy", name) as unknown as { spec: NetworkPolicySpec }).spec;
const tcp = (...ports: number[]): PolicyPort[] => ports.map((port) => ({ port, protocol: "TCP" }));
const dnsRule: NetworkPolicyRule = {
  ports: [
    { port: 53, protocol: "UDP" },
    { port: 53, protocol: "TCP" },
  ],
};

describe("the NetworkPolicy", () => {
  it("by default selects keyward's pods, admits the metrics and health ports, and lets out the apiserver, DNS and 443", () => {
    const np = networkPolicy(defaults);
    expect(np.podSelector.matchLabels).toEqual({ "app.kubernetes.io/name": "keyward", "app.kubernetes.io/instance": "kw" });
    expect(np.policyTypes).toEqual(["Ingress", "Egress"]);
    expect(np.ingress).toEqual([{ ports: tcp(8080) }, { ports: tcp(8081) }]);
    // No allowedBaseUrls: the service may be anywhere, so servicePorts (443) to any address.
    expect(np.egress).toEqual([{ ports: tcp(443, 6443) }, dnsRule, { ports: tcp(443) }]);
  });

  it("derives the service's ports from allowedBaseUrls, and its address when the URL names an IP", async () => {
    const np = networkPolicy(
      parseYamlDocuments(
        await renderChart({
          setJson: {
            allowedBaseUrls: [
              "https://secrets.example.test",
              "http://10.1.2.3:8080/api",
              "https://[fd00::7]:9443",
              "http://10.1.2.4:8080",
              "https://192.0.2.9",
            ],
            networkPolicy: { enabled: true, apiServer: { ports: [6443], cidrs: ["192.168.0.10/32"] } },
          },
        }),
      ),
    );
    expect(np.egress).toEqual([
      { ports: tcp(6443), to: [{ ipBlock: { cidr: "192.168.0.10/32" } }] },
      dnsRule,
      // A hostname on 443: no NetworkPolicy can match it, so 443 goes to any address (192.0.2.9 included).
      { ports: tcp(443) },
      { ports: tcp(8080), to: [{ ipBlock: { cidr: "10.1.2.3/32" } }, { ipBlock: { cidr: "10.1.2.4/32" } }] },
      { ports: tcp(9443), to: [{ ipBlock: { cidr: "fd00::7/128" } }] },
    ]);
  });

  it('allowedBaseUrls ["*"]: keyward may call any URL (ALLOWED_BASE_URLS=*), so servicePorts go to any address', async () => {
    const docs = parseYamlDocuments(await renderChart({ setJson: { allowedBaseUrls: ["*"], networkPolicy: { servicePorts: [8443] } } }));
    expect(envOf(docs)["ALLOWED_BASE_URLS"]).toBe("*");
    expect(networkPolicy(docs).egress).toEqual([{ ports: tcp(443, 6443) }, dnsRule, { ports: tcp(8443) }]);
  });

  it("takes extra egress rules, DNS peers and metrics scrapers as given", async () => {
    const dnsPeer = {
      namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "kube-system" } },
      podSelector: { matchLabels: { "k8s-app": "kube-dns" } },
    };
    const scraper = { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } } };
    const extra = { to: [{ ipBlock: { cidr: "203.0.113.0/24" } }], ports: [{ port: 8443, protocol: "TCP" }] };
    const np = networkPolicy(
      parseYamlDocuments(
        await renderChart({
          setJson: {
            metrics: { port: 9000 },
            health: { port: 9000 },
            networkPolicy: {
              enabled: true,
              dns: { to: [dnsPeer] },
              servicePorts: [443, 8443],
              metricsFrom: [scraper],
              extraEgress: [extra],
            },
          },
        }),
      ),
    );
    // One port serves metrics and health: one ingress rule, restricted to the scrapers given.
    expect(np.ingress).toEqual([{ ports: tcp(9000), from: [scraper] }]);
    expect(np.egress).toEqual([{ ports: tcp(443, 6443) }, { ...dnsRule, to: [dnsPeer] }, { ports: tcp(443) }, { ports: tcp(8443) }, extra]);
  });

  it("is not rendered with networkPolicy.enabled false", async () => {
    const docs = parseYamlDocuments(await renderChart({ setJson: { networkPolicy: { enabled: false } } }));
    expect(docs.some((d) => d.kind === "NetworkPolicy")).toBe(false);
  });
});

describe("metrics.auth", () => {
  it("defaults to kubernetes cluster-wide: keyward may review tokens, and a reader role exists for scrapers", () => {
    expect(envOf(defaults)["METRICS_AUTH"]).toBe("kubernetes");
    expect(rulesOf(findDoc(defaults, "ClusterRole", "kw-keyward-metrics-auth"))).toEqual(metricsAuthGrants);
    const binding = findDoc(defaults, "ClusterRoleBinding", "kw-keyward-metrics-auth") as unknown as {
      roleRef: { name: string };
      subjects: object[];
    };
    expect(binding.roleRef.name).toBe("kw-keyward-metrics-auth");
    expect(binding.subjects).toEqual([{ kind: "ServiceAccount", name: "kw-keyward", namespace: "keyward-system" }]);
    expect((findDoc(defaults, "ClusterRole", "kw-keyward-metrics-reader") as unknown as { rules: object[] }).rules).toEqual([
      { nonResourceURLs: ["/metrics"], verbs: ["get"] },
    ]);
    // No readers given: nobody is bound to it.
    expect(defaults.some((d) => d.kind === "ClusterRoleBinding" && d.metadata.name === "kw-keyward-metrics-reader")).toBe(false);
  });

  it("defaults to localhost in a namespaced install, which keeps it free of cluster-scoped objects", () => {
    expect(envOf(namespaced)["METRICS_AUTH"]).toBe("localhost");
  });

  it("localhost renders no review roles, even cluster-wide", async () => {
    const docs = parseYamlDocuments(await renderChart({ setJson: { metrics: { auth: "localhost" } } }));
    expect(envOf(docs)["METRICS_AUTH"]).toBe("localhost");
    expect(docs.filter((d) => d.metadata.name.includes("metrics-")).map((d) => d.kind)).toEqual([]);
  });

  it("refuses localhost with one port for metrics and probes, and a ServiceMonitor that could not scrape", async () => {
    const shared = await helm(templateArgs({ setJson: { metrics: { auth: "localhost", port: 9000 }, health: { port: 9000 } } }));
    expect(shared.code).not.toBe(0);
    expect(shared.stderr).toContain("metrics.auth localhost serves /metrics on 127.0.0.1 only");
    const monitor = await helm(templateArgs({ setJson: { metrics: { auth: "localhost" }, serviceMonitor: { enabled: true } } }));
    expect(monitor.code).not.toBe(0);
    expect(monitor.stderr).toContain("serviceMonitor.enabled needs metrics.auth kubernetes");
  });
});

describe("the process", () => {
  const deployment = (
    docs: Doc[],
  ): { spec: { strategy?: { type: string }; template: { spec: { terminationGracePeriodSeconds: number } } } } =>
    findDoc(docs, "Deployment") as unknown as {
      spec: { strategy?: { type: string }; template: { spec: { terminationGracePeriodSeconds: number } } };
    };

  it("gives the pod its shutdown timeout plus a margin to stop in", async () => {
    expect(deployment(defaults).spec.template.spec.terminationGracePeriodSeconds).toBe(45);
    expect(deployment(everything).spec.template.spec.terminationGracePeriodSeconds).toBe(60);
    const long = parseYamlDocuments(await renderChart({ setJson: { shutdownTimeout: "2m" } }));
    expect(deployment(long).spec.template.spec.terminationGracePeriodSeconds).toBe(135);
    expect(envOf(long)["SHUTDOWN_TIMEOUT"]).toBe("2m");
  });

  it("refuses SHUTDOWN_TIMEOUT in extraEnv, which the grace period would not follow", async () => {
    const result = await helm(templateArgs({ setJson: { extraEnv: [{ name: "SHUTDOWN_TIMEOUT", value: "5m" }] } }));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("set shutdownTimeout, not SHUTDOWN_TIMEOUT in extraEnv");
  });

  it("recreates the pod when leader election is off, so two never reconcile side by side; rolls with a lease", async () => {
    expect(deployment(defaults).spec.strategy).toBeUndefined();
    const noLease = parseYamlDocuments(await renderChart({ setJson: { leaderElection: { enabled: false } } }));
    expect(deployment(noLease).spec.strategy).toEqual({ type: "Recreate" });
  });
});

describe("sharding (sharding.enabled)", () => {
  it("is off by default: no SHARDING, the leader Lease alone", () => {
    expect(envOf(defaults)["SHARDING"]).toBeUndefined();
    expect(rulesOf(findDoc(defaults, "Role", "kw-keyward-leader-election"))).toEqual(leaseGrants("kw-keyward-leader"));
  });

  it("runs every replica on its share: SHARDING, and each replica's shard Lease plus the leader's list of them", async () => {
    const sharded = parseYamlDocuments(await renderChart({ setJson: { replicas: 3, sharding: { enabled: true } } }));
    expect(envOf(sharded)["SHARDING"]).toBe("true");
    expect(envOf(sharded)["LEADER_ELECT"]).toBe("true");
    expect((findDoc(sharded, "Deployment") as unknown as { spec: { replicas: number } }).spec.replicas).toBe(3);
    expect(rulesOf(findDoc(sharded, "Role", "kw-keyward-leader-election"))).toEqual(
      [...new Set([...leaseGrants("kw-keyward-leader"), ...shardingLeaseGrants])].sort(),
    );
  });

  it("refuses sharding without leader election, which assigns the shares", async () => {
    const result = await helm(templateArgs({ setJson: { sharding: { enabled: true }, leaderElection: { enabled: false } } }));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("sharding.enabled needs leaderElection.enabled=true");
  });
});

describe("Secret writes (accessTokens.namespaces)", () => {
  it("cluster-wide by default: reads and the in-use patch in the ClusterRole, writes in their own ClusterRole", () => {
    expect(rulesOf(findDoc(defaults, "ClusterRole", "kw-keyward")).filter((g) => g.startsWith("core/secrets"))).toEqual([
      "core/secrets: get",
      "core/secrets: list",
      "core/secrets: patch",
      "core/secrets: watch",
    ]);
    expect(rulesOf(findDoc(defaults, "ClusterRole", "kw-keyward-secret-writer"))).toEqual(secretWriterGrants);
    const binding = findDoc(defaults, "ClusterRoleBinding", "kw-keyward-secret-writer") as unknown as {
      roleRef: { kind: string; name: string };
      subjects: object[];
    };
    expect(binding.roleRef).toMatchObject({ kind: "ClusterRole", name: "kw-keyward-secret-writer" });
    expect(binding.subjects).toEqual([{ kind: "ServiceAccount", name: "kw-keyward", namespace: "keyward-system" }]);
  });

  it("only in the listed namespaces when set, also in a cluster-wide install", async () => {
    const docs = parseYamlDocuments(await renderChart({ setJson: { accessTokens: { namespaces: ["tokens-a", "tokens-b"] } } }));
    expect(docs.some((d) => d.kind === "ClusterRole" && d.metadata.name === "kw-keyward-secret-writer")).toBe(false);
    expect(
      docs
        .filter((d) => d.metadata.name === "kw-keyward-secret-writer")
        .map((d) => `${d.kind}/${d.metadata.namespace ?? ""}`)
        .sort(),
    ).toEqual(["Role/tokens-a", "Role/tokens-b", "RoleBinding/tokens-a", "RoleBinding/tokens-b"]);
    expect(rulesOf(findDoc(docs, "Role", "kw-keyward-secret-writer", "tokens-a"))).toEqual(secretWriterGrants);
    // Reading stays cluster-wide: ProviderConfigs everywhere hold their credentials Secrets.
    expect(rulesOf(findDoc(docs, "ClusterRole", "kw-keyward"))).toEqual(expectedWorkloadGrants);
  });

  it("tell keyward the namespaces too: the main role's patch reaches every Secret, so keyward refuses AccessTokens elsewhere itself", async () => {
    expect(envOf(defaults)["ACCESS_TOKEN_NAMESPACES"]).toBeUndefined();
    const docs = parseYamlDocuments(await renderChart({ setJson: { accessTokens: { namespaces: ["tokens-a", "tokens-b"] } } }));
    expect(envOf(docs)["ACCESS_TOKEN_NAMESPACES"]).toBe("tokens-a,tokens-b");
  });

  it("in each watched namespace of a namespaced install, or only the listed ones", () => {
    expect(rulesOf(findDoc(namespaced, "Role", "kw-keyward-secret-writer", "a"))).toEqual(secretWriterGrants);
    expect(rulesOf(findDoc(namespaced, "Role", "kw-keyward-secret-writer", "b"))).toEqual(secretWriterGrants);
    expect(
      everything.filter((d) => d.kind === "Role" && d.metadata.name === "keyward-operator-secret-writer").map((d) => d.metadata.namespace),
    ).toEqual(["team-a"]);
  });
});

describe("values.schema.json", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "keyward-chart-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  // Each bad values file, and the path helm must name in its error.
  const bad: [string, string, string][] = [
    ["replicas as text", "replicas: two\n", "/replicas"],
    ["an unknown log level", "logLevel: verbose\n", "/logLevel"],
    ["a resync interval that is not a duration", "resyncInterval: 10 minutes\n", "/resyncInterval"],
    ["concurrency 0", "concurrency: 0\n", "/concurrency"],
    ["a namespace that is not a DNS label", "watchNamespaces: [Team_A]\n", "/watchNamespaces/0"],
    ["a misspelt key", "replica: 2\n", "replica"],
    ["a base-URL list with `*` beside a URL", "allowedBaseUrls: ['*', 'https://a.test']\n", "/allowedBaseUrls"],
    ["a base URL that is not http(s)", "allowedBaseUrls: ['a.test']\n", "/allowedBaseUrls"],
    ["an unknown pull policy", "image:\n  repository: keyward\n  pullPolicy: Sometimes\n", "/image/pullPolicy"],
    ["a digest that is not sha256:<64 hex>", "image:\n  repository: keyward\n  digest: 0.1.0\n", "/image/digest"],
    ["a ProviderConfig without base URL or Secret", "providerConfig:\n  create: true\n", "/providerConfig"],
    [
      "a base URL that is not http(s)",
      "providerConfig:\n  create: true\n  baseUrl: ftp://files.example.test\n  secretName: token\n",
      "/providerConfig/baseUrl",
    ],
    ["running as root", "podSecurityContext:\n  runAsNonRoot: false\n", "/podSecurityContext/runAsNonRoot"],
    ["user 0", "podSecurityContext:\n  runAsUser: 0\n", "/podSecurityContext/runAsUser"],
    ["pod runAsNonRoot dropped with null", "podSecurityContext:\n  runAsNonRoot: null\n", "/podSecurityContext"],
    [
      "an Unconfined pod seccomp profile",
      "podSecurityContext:\n  seccompProfile:\n    type: Unconfined\n",
      "/podSecurityContext/seccompProfile/type",
    ],
    ["the pod seccomp profile dropped with null", "podSecurityContext:\n  seccompProfile: null\n", "/podSecurityContext"],
    [
      "a Localhost seccomp profile without its file",
      "podSecurityContext:\n  seccompProfile:\n    type: Localhost\n",
      "/podSecurityContext/seccompProfile",
    ],
    ["pod sysctls", 'podSecurityContext:\n  sysctls:\n    - {name: kernel.msgmax, value: "65536"}\n', "/podSecurityContext"],
    [
      "an Unconfined pod AppArmor profile",
      "podSecurityContext:\n  appArmorProfile:\n    type: Unconfined\n",
      "/podSecurityContext/appArmorProfile/type",
    ],
    ["a privileged container", "securityContext:\n  privileged: true\n", "/securityContext/privileged"],
    ["privilege escalation", "securityContext:\n  allowPrivilegeEscalation: true\n", "/securityContext/allowPrivilegeEscalation"],
    ["a writable root filesystem", "securityContext:\n  readOnlyRootFilesystem: false\n", "/securityContext/readOnlyRootFilesystem"],
    ["a container running as root", "securityContext:\n  runAsNonRoot: false\n", "/securityContext/runAsNonRoot"],
    ["a hardening field dropped with null", "securityContext:\n  allowPrivilegeEscalation: null\n", "/securityContext"],
    ["an added capability", "securityContext:\n  capabilities:\n    add: [NET_ADMIN]\n", "/securityContext/capabilities/add"],
    ["capabilities that do not drop ALL", "securityContext:\n  capabilities:\n    drop: [NET_RAW]\n", "/securityContext/capabilities/drop"],
    ["an unknown securityContext key", "securityContext:\n  procMount: Unmasked\n", "/securityContext"],
    [
      "an Unconfined container seccomp profile",
      "securityContext:\n  seccompProfile:\n    type: Unconfined\n",
      "/securityContext/seccompProfile/type",
    ],
    ["a PodDisruptionBudget with maxUnavailable 0", "podDisruptionBudget:\n  maxUnavailable: 0\n", "/podDisruptionBudget/maxUnavailable"],
    ["a PodDisruptionBudget with maxUnavailable 0%", "podDisruptionBudget:\n  maxUnavailable: 0%\n", "/podDisruptionBudget/maxUnavailable"],
    ["a PodDisruptionBudget percentage above 100%", "podDisruptionBudget:\n  minAvailable: 150%\n", "/podDisruptionBudget/minAvailable"],
    ["leader election as a string", 'leaderElection:\n  enabled: "yes"\n', "/leaderElection/enabled"],
    [
      "an extra env var with both value and valueFrom",
      "extraEnv:\n  - name: X\n    value: a\n    valueFrom: {secretKeyRef: {name: s, key: k}}\n",
      "/extraEnv/0",
    ],
    [
      "a NetworkPolicy apiserver address that is not a CIDR",
      "networkPolicy:\n  enabled: true\n  apiServer:\n    cidrs: [10.0.0.1]\n",
      "/networkPolicy/apiServer/cidrs/0",
    ],
    [
      "a NetworkPolicy service port out of range",
      "networkPolicy:\n  enabled: true\n  servicePorts: [70000]\n",
      "/networkPolicy/servicePorts/0",
    ],
    ["a shutdown timeout the chart cannot turn into seconds", "shutdownTimeout: 1.5m\n", "/shutdownTimeout"],
    ["an AccessToken namespace that is not a DNS label", "accessTokens:\n  namespaces: [Tokens]\n", "/accessTokens/namespaces/0"],
    ["an unknown metrics.auth", "metrics:\n  auth: none\n", "/metrics/auth"],
    ["crds.enabled as a string", 'crds:\n  enabled: "yes"\n', "/crds/enabled"],
    ["crds.keep as a string", 'crds:\n  keep: "false"\n', "/crds/keep"],
    ["an unknown crds key", "crds:\n  install: true\n", "/crds"],
    ["a metrics reader of an unknown kind", "metrics:\n  readers:\n    - {kind: Robot, name: r}\n", "/metrics/readers/0/kind"],
    [
      "a ServiceMonitor interval that is not a duration",
      "serviceMonitor:\n  enabled: true\n  interval: fast\n",
      "/serviceMonitor/interval",
    ],
  ];

  it.each(bad)("rejects %s", async (_name, yaml, path) => {
    const file = join(dir, `bad-${String(Math.random()).slice(2)}.yaml`);
    writeFileSync(file, yaml);
    const result = await helm(templateArgs({ valuesFiles: [file] }));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("values don't meet the specifications of the schema");
    expect(result.stderr).toContain(path);
  });

  it("accepts other users and groups and a Localhost seccomp profile, hardening kept", async () => {
    const docs = parseYamlDocuments(
      await renderChart({
        setJson: {
          podSecurityContext: {
            runAsUser: 1000,
            runAsGroup: 1001,
            fsGroup: 2000,
            seccompProfile: { type: "Localhost", localhostProfile: "profiles/keyward.json" },
          },
          securityContext: {
            runAsUser: 1000,
            runAsGroup: 1001,
            privileged: false,
            seccompProfile: { type: "RuntimeDefault" },
            capabilities: { drop: ["ALL", "NET_RAW"] },
          },
        },
      }),
    );
    expect(podSpec(docs).securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 1000,
      runAsGroup: 1001,
      fsGroup: 2000,
      seccompProfile: { type: "Localhost", localhostProfile: "profiles/keyward.json" },
    });
    expect(container(docs).securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      runAsUser: 1000,
      runAsGroup: 1001,
      privileged: false,
      seccompProfile: { type: "RuntimeDefault" },
      capabilities: { drop: ["ALL", "NET_RAW"] },
    });
  });

  it("rejects more than one replica without leader election", async () => {
    const result = await helm(templateArgs({ setJson: { replicas: 2, leaderElection: { enabled: false } } }));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("replicas > 1 needs leaderElection.enabled=true");
  });
});

describe("the chart's CRDs (crds.enabled, crds.keep)", () => {
  const crdDocs = (docs: Doc[]): Doc[] => docs.filter((d) => d.kind === "CustomResourceDefinition");
  type Meta = { labels?: Record<string, string>; annotations?: Record<string, string> };
  const keepAnnotations = { "helm.sh/resource-policy": "keep", "argocd.argoproj.io/sync-options": "Prune=false,Delete=false" };

  it("are templates only: the chart has no crds/ folder (Helm fails on a CRD in both)", () => {
    expect(existsSync(join(chartDir, "crds"))).toBe(false);
    expect(readdirSync(join(chartDir, "templates", "crds")).sort()).toEqual(rootCrdFiles());
  });

  it("are rendered by default, labelled as the chart's and annotated to be kept by Helm and Argo CD", () => {
    const crds = crdDocs(defaults);
    expect(crds.map((d) => d.metadata.name).sort()).toEqual(rootCrdFiles().map((f) => f.slice(0, -".yaml".length)));
    for (const crd of crds) {
      const meta = crd.metadata as Meta;
      expect(meta.annotations, crd.metadata.name).toEqual(keepAnnotations);
      expect(meta.labels, crd.metadata.name).toEqual({
        "helm.sh/chart": expect.stringMatching(/^keyward-\d+\.\d+\.\d+/) as unknown,
        "app.kubernetes.io/name": "keyward",
        "app.kubernetes.io/instance": "kw",
        "app.kubernetes.io/version": expect.any(String) as unknown,
        "app.kubernetes.io/managed-by": "Helm",
        "app.kubernetes.io/part-of": "keyward",
        "app.kubernetes.io/component": "crds",
      });
    }
    // A namespaced install renders them too: they are cluster-scoped by nature.
    expect(crdDocs(namespaced)).toHaveLength(crds.length);
  });

  it("are not rendered with crds.enabled=false", async () => {
    expect(crdDocs(parseYamlDocuments(await renderChart({ setJson: { crds: { enabled: false } } })))).toEqual([]);
    expect(crdDocs(everything)).toEqual([]);
  });

  it("carry no keep annotation with crds.keep=false", async () => {
    const crds = crdDocs(parseYamlDocuments(await renderChart({ setJson: { crds: { keep: false } } })));
    expect(crds).toHaveLength(rootCrdFiles().length);
    for (const crd of crds) expect((crd.metadata as Meta).annotations, crd.metadata.name).toBeUndefined();
  });

  it("render exactly the generated CRDs of crds/ (and config/crd/bases), metadata.labels and annotations aside", () => {
    const rendered = new Map(crdDocs(defaults).map((d) => [d.metadata.name, d]));
    for (const file of rootCrdFiles()) {
      const [generated, ...more] = parseYamlDocuments(readFileSync(join(repoRoot, "crds", file), "utf8"));
      expect(more).toEqual([]);
      if (!generated) throw new Error(`crds/${file} holds no document`);
      expect(readFileSync(join(repoRoot, "config", "crd", "bases", file), "utf8")).toBe(readFileSync(join(repoRoot, "crds", file), "utf8"));
      const crd = rendered.get(generated.metadata.name);
      if (!crd) throw new Error(`the chart renders no ${generated.metadata.name}`);
      const { labels: _labels, annotations: _annotations, ...metadata } = crd.metadata as Meta & Doc["metadata"];
      // the conversion webhook is the release's Service, in the release's namespace
      const ownService = structuredClone(generated) as Doc & { spec: { conversion: { webhook: { clientConfig: { service: object } } } } };
      ownService.spec.conversion.webhook.clientConfig.service = {
        namespace: "keyward-system",
        name: "kw-keyward-webhook",
        path: "/convert",
        port: 443,
      };
      expect({ ...crd, metadata }, file).toEqual(ownService);
    }
  });
});

describe("the uninstall hook (uninstall.releaseFinalizers, on by default)", () => {
  type JobSpec = {
    metadata: { annotations: Record<string, string> };
    spec: { template: { metadata: { labels: Record<string, string> }; spec: PodSpec & { restartPolicy: string } } };
  };
  const job = (docs: Doc[]): JobSpec => findDoc(docs, "Job", "kw-keyward-uninstall") as unknown as JobSpec;

  it("is a pre-delete Job that stops keyward's Deployment and releases its finalizers in the release's namespaces", () => {
    const j = job(namespaced);
    expect(j.metadata.annotations["helm.sh/hook"]).toBe("pre-delete");
    const pod = j.spec.template.spec;
    expect(pod.serviceAccountName).toBe("kw-keyward");
    expect(pod.restartPolicy).toBe("Never");
    const c = pod.containers[0];
    expect((c as { args?: string[] } | undefined)?.args).toEqual(["uninstall"]);
    const env = Object.fromEntries((c?.env ?? []).map((e) => [e.name, e.value]));
    expect(env).toMatchObject({ STOP_DEPLOYMENT: "keyward-system/kw-keyward", WATCH_NAMESPACES: "a,b" });
    expect(c?.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
  });

  it("runs in a pod keyward's selector does not match, so it never waits for itself", () => {
    const deployment = findDoc(defaults, "Deployment") as unknown as { spec: { selector: { matchLabels: Record<string, string> } } };
    const labels = job(defaults).spec.template.metadata.labels;
    const matches = Object.entries(deployment.spec.selector.matchLabels).every(([k, v]) => labels[k] === v);
    expect(matches).toBe(false);
  });

  it("may scale and read keyward's Deployment only, and list pods, in the release namespace", () => {
    expect(rulesOf(findDoc(defaults, "Role", "kw-keyward-uninstall", "keyward-system"))).toEqual(uninstallGrants("kw-keyward"));
    const binding = findDoc(defaults, "RoleBinding", "kw-keyward-uninstall") as unknown as { subjects: object[] };
    expect(binding.subjects).toEqual([{ kind: "ServiceAccount", name: "kw-keyward", namespace: "keyward-system" }]);
  });

  it("then takes the conversion webhook out of keyward's CRDs: WEBHOOK_SERVICE, and get/update of those CRDs alone, granted as hooks for the uninstall only", async () => {
    const env = Object.fromEntries((job(defaults).spec.template.spec.containers[0]?.env ?? []).map((e) => [e.name, e.value]));
    expect(env["WEBHOOK_SERVICE"]).toBe("kw-keyward-webhook");
    const crdNames = rootCrdFiles().map((f) => f.slice(0, -".yaml".length));
    const role = findDoc(defaults, "ClusterRole", "kw-keyward-uninstall");
    expect(rulesOf(role)).toEqual(
      flattenRules([
        {
          apiGroups: ["apiextensions.k8s.io"],
          resources: ["customresourcedefinitions"],
          resourceNames: crdNames,
          verbs: ["get", "update"],
        },
      ]),
    );
    const binding = findDoc(defaults, "ClusterRoleBinding", "kw-keyward-uninstall") as unknown as { subjects: object[] };
    expect(binding.subjects).toEqual([{ kind: "ServiceAccount", name: "kw-keyward", namespace: "keyward-system" }]);
    for (const doc of [role, binding as unknown as Doc]) {
      expect((doc.metadata as { annotations?: Record<string, string> }).annotations).toMatchObject({
        "helm.sh/hook": "pre-delete",
        "helm.sh/hook-weight": "-1",
        "helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded",
      });
    }
    const off = parseYamlDocuments(await renderChart({ setJson: { webhook: { enabled: false } } }));
    expect(kinds(off).filter((k) => k.startsWith("Cluster") && k.includes("uninstall"))).toEqual([]);
    expect(Object.fromEntries((job(off).spec.template.spec.containers[0]?.env ?? []).map((e) => [e.name, e.value]))).not.toHaveProperty(
      "WEBHOOK_SERVICE",
    );
  });

  it("renders nothing with uninstall.releaseFinalizers false", async () => {
    const docs = parseYamlDocuments(await renderChart({ setJson: { uninstall: { releaseFinalizers: false } } }));
    expect(kinds(docs).filter((k) => k.includes("uninstall"))).toEqual([]);
  });
});

describe("providerConfig.create", () => {
  const values = ["--set", "providerConfig.create=true", "--set", "providerConfig.baseUrl=https://secrets.example.test"];
  const render = async (extra: string[]): Promise<Doc> => {
    const result = await helm([...templateArgs({}), ...values, "--set", "providerConfig.secretName=token", ...extra]);
    expect(result.code, result.stderr).toBe(0);
    return findDoc(parseYamlDocuments(result.stdout), "ProviderConfig", "default");
  };
  const annotations = (doc: Doc): Record<string, string> | undefined =>
    (doc.metadata as { annotations?: Record<string, string> }).annotations;

  it("is a post-install hook where the cluster has no ProviderConfig CRD yet: Helm could not map it before the CRDs exist", async () => {
    expect(annotations(await render([]))).toEqual({
      "helm.sh/resource-policy": "keep",
      "helm.sh/hook": "post-install,post-upgrade",
      "helm.sh/hook-delete-policy": "hook-failed",
    });
  });

  it("is an ordinary release object, kept by helm uninstall, where the CRD is served", async () => {
    expect(annotations(await render(["--api-versions", "keyward.dev/v1alpha1/ProviderConfig"]))).toEqual({
      "helm.sh/resource-policy": "keep",
    });
  });
});

describe("ServiceMonitor and PrometheusRule where the cluster serves no prometheus-operator CRDs", () => {
  const enabled = { serviceMonitor: { enabled: true }, prometheusRule: { enabled: true } };

  it("are left out by default (renderMode skipIfMissing), not a failed install", async () => {
    const docs = parseYamlDocuments(await renderChart({ setJson: enabled, monitoringCrds: false }));
    expect(docs.filter((d) => d.kind === "ServiceMonitor" || d.kind === "PrometheusRule")).toEqual([]);
    // The scraper identity is the ServiceMonitor's: left out with it.
    expect(docs.filter((d) => d.metadata.name === "kw-keyward-scraper")).toEqual([]);
    const served = parseYamlDocuments(await renderChart({ setJson: enabled }));
    expect(
      served
        .filter((d) => d.kind === "ServiceMonitor" || d.kind === "PrometheusRule")
        .map((d) => d.kind)
        .sort(),
    ).toEqual(["PrometheusRule", "ServiceMonitor"]);
  });

  it("fail the render with renderMode failIfMissing, and render anyway with alwaysRender", async () => {
    const failing = await helm(
      templateArgs({ setJson: { serviceMonitor: { enabled: true, renderMode: "failIfMissing" } }, monitoringCrds: false }),
    );
    expect(failing.code).not.toBe(0);
    expect(failing.stderr).toContain("serviceMonitor.enabled: the cluster serves no monitoring.coreos.com/v1 ServiceMonitor");
    const always = parseYamlDocuments(
      await renderChart({ setJson: { prometheusRule: { enabled: true, renderMode: "alwaysRender" } }, monitoringCrds: false }),
    );
    expect(always.map((d) => d.kind)).toContain("PrometheusRule");
  });
});

describe("the conversion webhook (webhook)", () => {
  type ServiceDoc = Doc & { spec: { selector: Record<string, string>; ports: { port: number; targetPort: string }[] } };
  type DeploymentDoc = Doc & {
    spec: {
      replicas: number;
      selector: { matchLabels: Record<string, string> };
      template: { metadata: { labels: Record<string, string> } };
    };
  };
  const crdNames = (): string[] => rootCrdFiles().map((f) => f.slice(0, -".yaml".length));
  const webhookPods = { "app.kubernetes.io/name": "keyward-webhook", "app.kubernetes.io/instance": "kw" };
  const matches = (selector: Record<string, string>, labels: Record<string, string>): boolean =>
    Object.entries(selector).every(([k, v]) => labels[k] === v);

  it("is a Deployment of its own, `keyward webhook` of the same image, two replicas, with keyward's own CA by default", () => {
    const deployment = findDoc(defaults, "Deployment", "kw-keyward-webhook") as DeploymentDoc;
    expect(deployment.spec.replicas).toBe(2);
    const c = container(defaults, "kw-keyward-webhook");
    expect(c.image).toBe(container(defaults).image);
    expect((c as unknown as { args: string[] }).args).toEqual(["webhook"]);
    expect(envOf(defaults, "kw-keyward-webhook")).toEqual({
      NODE_OPTIONS: "--max-semi-space-size=1 --max-old-space-size=64",
      LOG_LEVEL: "info",
      HEALTH_PORT: "8081",
      KUBE_REQUEST_TIMEOUT: "30s",
      WEBHOOK_PORT: "9443",
      WEBHOOK_SERVICE: "kw-keyward-webhook",
      WEBHOOK_SECRET: "kw-keyward-webhook-tls",
    });
    expect(c.ports.map((p) => [p.name, p.containerPort])).toEqual([
      ["webhook", 9443],
      ["health", 8081],
    ]);
    expect(c.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "health" });
    expect(c.securityContext).toEqual(container(defaults).securityContext);
    const pod = podSpec(defaults, "kw-keyward-webhook");
    expect(pod.serviceAccountName).toBe("kw-keyward-webhook");
    expect(pod.topologySpreadConstraints).toEqual([
      {
        maxSkew: 1,
        topologyKey: "kubernetes.io/hostname",
        whenUnsatisfiable: "ScheduleAnyway",
        labelSelector: { matchLabels: webhookPods },
      },
    ]);
  });

  it("leaves the operator's pods without the webhook: no port, no WEBHOOK_ setting, no webhook RBAC on its ServiceAccount", () => {
    expect(container(defaults).ports.map((p) => p.name)).not.toContain("webhook");
    expect(Object.keys(envOf(defaults)).filter((k) => k.startsWith("WEBHOOK_"))).toEqual([]);
    for (const kind of ["RoleBinding", "ClusterRoleBinding"]) {
      const binding = findDoc(defaults, kind, "kw-keyward-webhook") as unknown as { subjects: object[] };
      expect(binding.subjects).toEqual([{ kind: "ServiceAccount", name: "kw-keyward-webhook", namespace: "keyward-system" }]);
    }
  });

  it("keeps the two sets of pods apart: each Deployment, Service, PodDisruptionBudget and NetworkPolicy selects its own pods only", async () => {
    const docs = parseYamlDocuments(await renderChart({ setJson: { replicas: 2 } }));
    const operator = (findDoc(docs, "Deployment", "kw-keyward") as DeploymentDoc).spec.template.metadata.labels;
    const webhook = (findDoc(docs, "Deployment", "kw-keyward-webhook") as DeploymentDoc).spec.template.metadata.labels;
    const selectors: [string, Record<string, string>, "operator" | "webhook"][] = [
      ["Deployment kw-keyward", (findDoc(docs, "Deployment", "kw-keyward") as DeploymentDoc).spec.selector.matchLabels, "operator"],
      ["Service kw-keyward-metrics", (findDoc(docs, "Service", "kw-keyward-metrics") as ServiceDoc).spec.selector, "operator"],
      ["NetworkPolicy kw-keyward", networkPolicy(docs, "kw-keyward").podSelector.matchLabels, "operator"],
      [
        "Deployment kw-keyward-webhook",
        (findDoc(docs, "Deployment", "kw-keyward-webhook") as DeploymentDoc).spec.selector.matchLabels,
        "webhook",
      ],
      ["Service kw-keyward-webhook", (findDoc(docs, "Service", "kw-keyward-webhook") as ServiceDoc).spec.selector, "webhook"],
      ["NetworkPolicy kw-keyward-webhook", networkPolicy(docs, "kw-keyward-webhook").podSelector.matchLabels, "webhook"],
    ];
    for (const name of ["kw-keyward", "kw-keyward-webhook"]) {
      const pdb = findDoc(docs, "PodDisruptionBudget", name) as Doc & { spec: { selector: { matchLabels: Record<string, string> } } };
      selectors.push([`PodDisruptionBudget ${name}`, pdb.spec.selector.matchLabels, name === "kw-keyward" ? "operator" : "webhook"]);
    }
    for (const [what, selector, own] of selectors) {
      expect([matches(selector, operator), matches(selector, webhook)], what).toEqual([own === "operator", own === "webhook"]);
    }
  });

  it("is a Service on 443 to the webhook pods' port, admitted by their NetworkPolicy, with a PodDisruptionBudget of minAvailable 1", async () => {
    const service = findDoc(defaults, "Service", "kw-keyward-webhook") as ServiceDoc;
    expect(service.spec.ports).toEqual([{ name: "webhook", port: 443, targetPort: "webhook", protocol: "TCP" }]);
    expect(service.spec.selector).toEqual(webhookPods);
    const np = networkPolicy(defaults, "kw-keyward-webhook");
    expect(np.ingress).toEqual([{ ports: tcp(9443) }, { ports: tcp(8081) }]);
    expect(np.egress).toEqual([{ ports: tcp(443, 6443) }, dnsRule]);
    expect(findDoc(defaults, "PodDisruptionBudget", "kw-keyward-webhook")).toMatchObject({
      spec: { minAvailable: 1, selector: { matchLabels: webhookPods } },
    });
    const one = parseYamlDocuments(await renderChart({ setJson: { webhook: { replicas: 1 } } }));
    expect(one.some((d) => d.kind === "PodDisruptionBudget" && d.metadata.name === "kw-keyward-webhook")).toBe(false);
  });

  it("passes its values through (values-all.yaml): replicas, resources, V8 flags, affinity, spread, the apiserver's addresses", () => {
    expect((findDoc(everything, "Deployment", "keyward-operator-webhook") as DeploymentDoc).spec.replicas).toBe(3);
    const c = container(everything, "keyward-operator-webhook");
    expect((c as unknown as { resources: object }).resources).toEqual({
      requests: { cpu: "20m", memory: "100Mi" },
      limits: { memory: "200Mi" },
    });
    expect(envOf(everything, "keyward-operator-webhook")).toMatchObject({
      NODE_OPTIONS: "--max-old-space-size=80",
      LOG_LEVEL: "debug",
      HEALTH_PORT: "9091",
    });
    const pod = podSpec(everything, "keyward-operator-webhook");
    expect(pod.affinity).toHaveProperty("podAntiAffinity");
    expect(pod.nodeSelector).toEqual({ "kubernetes.io/os": "linux" });
    expect(pod.topologySpreadConstraints).toEqual([
      {
        maxSkew: 1,
        topologyKey: "topology.kubernetes.io/zone",
        whenUnsatisfiable: "DoNotSchedule",
        labelSelector: { matchLabels: { "app.kubernetes.io/name": "kw-webhook", "app.kubernetes.io/instance": "kw" } },
      },
    ]);
    expect(networkPolicy(everything, "keyward-operator-webhook").ingress).toEqual([
      { ports: tcp(9443), from: [{ ipBlock: { cidr: "192.168.10.0/28" } }] },
      { ports: tcp(9091) },
    ]);
  });

  it("may create Secrets, read and update only its TLS Secret, and read and patch only keyward's CRDs", () => {
    expect(rulesOf(findDoc(defaults, "Role", "kw-keyward-webhook", "keyward-system"))).toEqual(
      flattenRules([
        { apiGroups: [""], resources: ["secrets"], verbs: ["create"] },
        { apiGroups: [""], resources: ["secrets"], resourceNames: ["kw-keyward-webhook-tls"], verbs: ["get", "update"] },
      ]),
    );
    expect(rulesOf(findDoc(defaults, "ClusterRole", "kw-keyward-webhook"))).toEqual(
      flattenRules([
        {
          apiGroups: ["apiextensions.k8s.io"],
          resources: ["customresourcedefinitions"],
          resourceNames: crdNames(),
          verbs: ["get", "patch"],
        },
      ]),
    );
  });

  it("with webhook.certManager.enabled: a cert-manager Issuer and Certificate, mounted, the CA injected by cert-manager, no RBAC and no token", async () => {
    const docs = parseYamlDocuments(await renderChart({ setJson: { webhook: { certManager: { enabled: true } } } }));
    expect(findDoc(docs, "Certificate", "kw-keyward-webhook")).toMatchObject({
      spec: {
        secretName: "kw-keyward-webhook-tls",
        issuerRef: { kind: "Issuer", name: "kw-keyward-webhook" },
        dnsNames: ["kw-keyward-webhook.keyward-system.svc", "kw-keyward-webhook.keyward-system.svc.cluster.local"],
      },
    });
    expect(findDoc(docs, "Issuer", "kw-keyward-webhook")).toMatchObject({ spec: { selfSigned: {} } });
    for (const crd of docs.filter((d) => d.kind === "CustomResourceDefinition")) {
      expect((crd.metadata as { annotations?: Record<string, string> }).annotations).toMatchObject({
        "cert-manager.io/inject-ca-from": "keyward-system/kw-keyward-webhook",
        "helm.sh/resource-policy": "keep",
      });
    }
    const env = envOf(docs, "kw-keyward-webhook");
    expect(env["WEBHOOK_CERT_DIR"]).toBe("/var/run/keyward/webhook-tls");
    expect(env).not.toHaveProperty("WEBHOOK_SERVICE");
    expect(container(docs, "kw-keyward-webhook").volumeMounts).toContainEqual({
      name: "webhook-tls",
      mountPath: "/var/run/keyward/webhook-tls",
      readOnly: true,
    });
    const pod = podSpec(docs, "kw-keyward-webhook") as PodSpec & { automountServiceAccountToken: boolean };
    expect(pod.volumes).toContainEqual({ name: "webhook-tls", secret: { secretName: "kw-keyward-webhook-tls" } });
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(
      docs
        .filter((d) => d.metadata.name === "kw-keyward-webhook")
        .map((d) => d.kind)
        .sort(),
    ).toEqual(["Certificate", "Deployment", "Issuer", "NetworkPolicy", "PodDisruptionBudget", "Service", "ServiceAccount"]);
  });
});

describe("webhook.enabled=false", () => {
  it("renders the CRDs in their storage version alone, without a conversion webhook, and nothing of the webhook", async () => {
    const docs = parseYamlDocuments(await renderChart({ setJson: { webhook: { enabled: false } } }));
    const crds = docs.filter((d) => d.kind === "CustomResourceDefinition") as (Doc & {
      spec: { versions: { name: string }[]; conversion?: unknown };
    })[];
    expect(crds).toHaveLength(rootCrdFiles().length);
    for (const crd of crds) {
      expect(
        crd.spec.versions.map((v) => v.name),
        crd.metadata.name,
      ).toEqual(["v1alpha1"]);
      expect(crd.spec.conversion, crd.metadata.name).toBeUndefined();
    }
    expect(docs.filter((d) => d.metadata.name.endsWith("-webhook")).map((d) => d.kind)).toEqual([]);
  });
});

describe("crds.storageVersion", () => {
  type VersionedCrd = Doc & { spec: { versions: { name: string; storage: boolean }[] } };
  const stored = (docs: Doc[]): Record<string, string[]> =>
    Object.fromEntries(
      (docs.filter((d) => d.kind === "CustomResourceDefinition") as VersionedCrd[]).map((crd) => [
        crd.metadata.name,
        crd.spec.versions.filter((v) => v.storage).map((v) => v.name),
      ]),
    );

  it("stores v1alpha1 by default and v1beta1 when set, in every CRD, one version each", async () => {
    const byDefault = stored(parseYamlDocuments(await renderChart()));
    expect(Object.keys(byDefault)).toHaveLength(rootCrdFiles().length);
    expect(Object.values(byDefault)).toEqual(rootCrdFiles().map(() => ["v1alpha1"]));
    const beta = stored(parseYamlDocuments(await renderChart({ setJson: { crds: { storageVersion: "v1beta1" } } })));
    expect(Object.values(beta)).toEqual(rootCrdFiles().map(() => ["v1beta1"]));
  });

  it("deprecates v1alpha1 once v1beta1 is stored, with a warning naming the replacement, and not before", async () => {
    type Version = { name: string; deprecated?: boolean; deprecationWarning?: string };
    const versions = (docs: Doc[]): [string, Version[]][] =>
      (
        docs.filter((d) => d.kind === "CustomResourceDefinition") as (Doc & { spec: { names: { kind: string }; versions: Version[] } })[]
      ).map((crd) => [crd.spec.names.kind, crd.spec.versions]);
    for (const [, vs] of versions(parseYamlDocuments(await renderChart()))) {
      for (const v of vs) expect(v, v.name).not.toHaveProperty("deprecated");
    }
    const beta = versions(parseYamlDocuments(await renderChart({ setJson: { crds: { storageVersion: "v1beta1" } } })));
    expect(beta).toHaveLength(rootCrdFiles().length);
    for (const [kind, vs] of beta) {
      expect(
        vs.find((v) => v.name === "v1alpha1"),
        kind,
      ).toMatchObject({
        deprecated: true,
        deprecationWarning: `keyward.dev/v1alpha1 ${kind} is deprecated; use keyward.dev/v1beta1 ${kind}`,
      });
      expect(
        vs.find((v) => v.name === "v1beta1"),
        kind,
      ).not.toHaveProperty("deprecated");
    }
  });

  it("refuses v1beta1 without the webhook, and any other version", async () => {
    const noWebhook = await helm(templateArgs({ setJson: { crds: { storageVersion: "v1beta1" }, webhook: { enabled: false } } }));
    expect(noWebhook.code).not.toBe(0);
    expect(noWebhook.stderr).toContain("crds.storageVersion=v1beta1 needs webhook.enabled");
    const other = await helm(templateArgs({ setJson: { crds: { storageVersion: "v1" } } }));
    expect(other.code).not.toBe(0);
    expect(other.stderr).toContain("/crds/storageVersion");
  });
});
