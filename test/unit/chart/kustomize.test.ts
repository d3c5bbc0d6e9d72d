// The kustomize bases, file by file (the integration suite renders and applies them): every
// generated CRD listed, the same least-privilege rules as the chart, the same locked-down pod.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  expectedWorkloadGrants,
  findDoc,
  flattenRules,
  leaseGrants,
  metricsAuthGrants,
  readYamlFile,
  repoRoot,
  secretWriterGrants,
  type PolicyRule,
} from "./helm.ts";

const config = join(repoRoot, "config");
const kustomization = (dir: string): { resources: string[]; namespace?: string; namePrefix?: string } =>
  readYamlFile(join(config, dir, "kustomization.yaml"))[0] as unknown as { resources: string[]; namespace?: string; namePrefix?: string };

describe("config/crd", () => {
  it("lists every CRD the generator wrote into bases/, and nothing else", () => {
    const generated = readdirSync(join(config, "crd", "bases"))
      .filter((f) => f.endsWith(".yaml"))
      .map((f) => `bases/${f}`)
      .sort();
    expect(generated.length).toBeGreaterThan(0);
    expect([...kustomization("crd").resources].sort()).toEqual(generated);
  });
});

describe("config/samples", () => {
  it("lists every sample", () => {
    const samples = readdirSync(join(config, "samples"))
      .filter((f) => f.endsWith(".yaml") && !f.startsWith("kustomization"))
      .sort();
    expect([...kustomization("samples").resources].sort()).toEqual(samples);
  });
});

describe("config/default", () => {
  it("installs crd, rbac and manager into keyward-system", () => {
    const k = kustomization("default");
    expect(k.namespace).toBe("keyward-system");
    expect(k.namePrefix).toBe("keyward-");
    expect(k.resources).toEqual(expect.arrayContaining(["../crd", "../rbac", "../manager"]));
  });
});

describe("config/rbac", () => {
  it("grants keyward exactly what the chart grants", () => {
    const role = readYamlFile(join(config, "rbac", "role.yaml"))[0] as unknown as { kind: string; rules: PolicyRule[] };
    expect(role.kind).toBe("ClusterRole");
    expect(flattenRules(role.rules)).toEqual(expectedWorkloadGrants);
    const writer = readYamlFile(join(config, "rbac", "secret_writer_role.yaml"))[0] as unknown as { rules: PolicyRule[] };
    expect(flattenRules(writer.rules)).toEqual(secretWriterGrants);
    expect(kustomization("rbac").resources).toEqual(expect.arrayContaining(["secret_writer_role.yaml", "secret_writer_role_binding.yaml"]));
  });

  it("lets keyward review /metrics callers, and offers scrapers a reader role", () => {
    const auth = readYamlFile(join(config, "rbac", "metrics_auth_role.yaml"))[0] as unknown as { kind: string; rules: PolicyRule[] };
    expect(flattenRules(auth.rules)).toEqual(metricsAuthGrants);
    const reader = readYamlFile(join(config, "rbac", "metrics_reader_role.yaml"))[0] as unknown as { rules: object[] };
    expect(reader.rules).toEqual([{ nonResourceURLs: ["/metrics"], verbs: ["get"] }]);
    expect(kustomization("rbac").resources).toEqual(
      expect.arrayContaining(["metrics_auth_role.yaml", "metrics_auth_role_binding.yaml", "metrics_reader_role.yaml"]),
    );
  });

  it("limits leader election to the Lease the manager uses", () => {
    const role = readYamlFile(join(config, "rbac", "leader_election_role.yaml"))[0] as unknown as { rules: PolicyRule[] };
    const manager = readYamlFile(join(config, "manager", "manager.yaml"));
    const env =
      (
        findDoc(manager, "Deployment") as unknown as {
          spec: { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } };
        }
      ).spec.template.spec.containers[0]?.env ?? [];
    const leaseName = env.find((e) => e.name === "LEADER_ELECTION_ID")?.value;
    expect(leaseName).toBe("keyward-leader");
    expect(flattenRules(role.rules)).toEqual(leaseGrants("keyward-leader"));
  });
});

describe("config/manager", () => {
  it("runs keyward locked down with probes and POD_NAME", () => {
    const docs = readYamlFile(join(config, "manager", "manager.yaml"));
    const pod = (
      findDoc(docs, "Deployment") as unknown as {
        spec: { template: { spec: Record<string, unknown> & { containers: Record<string, unknown>[] } } };
      }
    ).spec.template.spec;
    expect(pod["securityContext"]).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } });
    const c = pod.containers[0];
    expect(c?.["securityContext"]).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ["ALL"] },
    });
    expect(c?.["livenessProbe"]).toMatchObject({ httpGet: { path: "/healthz", port: "health" } });
    expect(c?.["readinessProbe"]).toMatchObject({ httpGet: { path: "/readyz", port: "health" } });
    expect(c?.["env"]).toEqual(expect.arrayContaining([{ name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } }]));
    expect(c?.["volumeMounts"]).toEqual([{ name: "tmp", mountPath: "/tmp" }]);
  });
});

describe("the conversion webhook in the kustomize install", () => {
  interface DeploymentDoc {
    metadata: { name: string };
    spec: {
      selector: { matchLabels: Record<string, string> };
      template: {
        metadata: { labels: Record<string, string> };
        spec: {
          serviceAccountName: string;
          containers: { args?: string[]; env: { name: string; value?: string }[]; ports: { name: string }[] }[];
        };
      };
    };
  }
  const deployment = (dir: string, file: string): DeploymentDoc =>
    findDoc(readYamlFile(join(config, dir, file)), "Deployment") as unknown as DeploymentDoc;
  const matches = (selector: Record<string, string>, labels: Record<string, string>): boolean =>
    Object.entries(selector).every(([k, v]) => labels[k] === v);

  it("is a Deployment of its own (config/webhook, `keyward webhook`), and the manager's pods serve no webhook", () => {
    expect(kustomization("default").resources).toContain("../webhook");
    const webhook = deployment("webhook", "deployment.yaml");
    const manager = deployment("manager", "manager.yaml");
    expect(webhook.spec.template.spec.containers[0]?.args).toEqual(["webhook"]);
    expect(webhook.spec.template.spec.serviceAccountName).toBe("webhook");
    expect(manager.spec.template.spec.containers[0]?.env.filter((e) => e.name.startsWith("WEBHOOK_"))).toEqual([]);
    expect(manager.spec.template.spec.containers[0]?.ports.map((p) => p.name)).not.toContain("webhook");
    // Neither Deployment selects the other's pods, and the Service and budget select the webhook's alone.
    expect(matches(manager.spec.selector.matchLabels, webhook.spec.template.metadata.labels)).toBe(false);
    expect(matches(webhook.spec.selector.matchLabels, manager.spec.template.metadata.labels)).toBe(false);
    const service = readYamlFile(join(config, "webhook", "service.yaml"))[0] as unknown as { spec: { selector: Record<string, string> } };
    const pdb = readYamlFile(join(config, "webhook", "pdb.yaml"))[0] as unknown as {
      spec: { minAvailable: number; selector: { matchLabels: Record<string, string> } };
    };
    for (const selector of [service.spec.selector, pdb.spec.selector.matchLabels]) {
      expect(matches(selector, webhook.spec.template.metadata.labels)).toBe(true);
      expect(matches(selector, manager.spec.template.metadata.labels)).toBe(false);
    }
    expect(pdb.spec.minAvailable).toBe(1);
  });

  it("names the Service the generated CRDs call, and grants the webhook's ServiceAccount its Secret and those CRDs alone", () => {
    const k = kustomization("default");
    const w = kustomization("webhook");
    expect(w.resources).toEqual(
      expect.arrayContaining(["service.yaml", "role.yaml", "deployment.yaml", "service_account.yaml", "pdb.yaml"]),
    );
    const service = readYamlFile(join(config, "webhook", "service.yaml"))[0] as unknown as { metadata: { name: string } };
    const serviceName = `${k.namePrefix ?? ""}${service.metadata.name}`;
    const env = deployment("webhook", "deployment.yaml").spec.template.spec.containers[0]?.env ?? [];
    const value = (name: string): string | undefined => env.find((e) => e.name === name)?.value;
    expect(value("WEBHOOK_SERVICE")).toBe(serviceName);
    const crdFiles = readdirSync(join(config, "crd", "bases")).filter((f) => f.endsWith(".yaml"));
    for (const file of crdFiles) {
      const crd = readYamlFile(join(config, "crd", "bases", file))[0] as unknown as {
        spec: { conversion: { webhook: { clientConfig: { service: { namespace: string; name: string } } } } };
      };
      expect(crd.spec.conversion.webhook.clientConfig.service, file).toMatchObject({ namespace: k.namespace, name: serviceName });
    }
    const [role, binding, clusterRole, clusterBinding] = readYamlFile(join(config, "webhook", "role.yaml")) as unknown as {
      rules: PolicyRule[];
      subjects?: { name: string }[];
    }[];
    expect(flattenRules(role?.rules ?? [])).toEqual(
      flattenRules([
        { apiGroups: [""], resources: ["secrets"], verbs: ["create"] },
        { apiGroups: [""], resources: ["secrets"], resourceNames: [value("WEBHOOK_SECRET") ?? "?"], verbs: ["get", "update"] },
      ]),
    );
    expect(flattenRules(clusterRole?.rules ?? [])).toEqual(
      flattenRules([
        {
          apiGroups: ["apiextensions.k8s.io"],
          resources: ["customresourcedefinitions"],
          resourceNames: crdFiles.map((f) => f.slice(0, -".yaml".length)),
          verbs: ["get", "patch"],
        },
      ]),
    );
    expect([binding?.subjects, clusterBinding?.subjects]).toEqual([
      [expect.objectContaining({ name: "webhook" })],
      [expect.objectContaining({ name: "webhook" })],
    ]);
  });
});
