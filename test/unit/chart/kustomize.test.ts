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
