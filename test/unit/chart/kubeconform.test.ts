// `npm run lint:chart` (hack/lint/chart.ts): helm lint --strict and helm template | kubeconform
// -strict against schemas derived offline (hack/lint/schemas.ts). The lint must pass on the chart
// as it is, and fail on a broken template, a value the values schema lets through but Kubernetes
// refuses, a wrong custom resource and a kind no schema describes.
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadAll } from "js-yaml";
import {
  chartDir,
  helmBinary,
  kubeconform,
  kubeconformBinary,
  lintValueSet,
  run,
  valueSets,
  valueSetsDir,
} from "../../../hack/lint/chart.ts";
import { crdSchemas, kindsOf, loadSchemaSources, schemaFile, strictFromOpenApiV3, type SchemaSources } from "../../../hack/lint/schemas.ts";

let tools: { helm: string; kubeconform: string; sources: SchemaSources };
let work: string;

beforeAll(async () => {
  const [helm, kubeconformBin, sources] = await Promise.all([helmBinary(), kubeconformBinary(), loadSchemaSources()]);
  tools = { helm, kubeconform: kubeconformBin, sources };
  work = await mkdtemp(join(tmpdir(), "keyward-kubeconform-"));
}, 300_000);

afterAll(() => rm(work, { recursive: true, force: true }));

describe("the chart", () => {
  it("passes helm lint --strict and kubeconform -strict with the defaults and every value set", async () => {
    const sets = await valueSets();
    expect(sets.map((s) => s.name)).toEqual(["defaults", "cluster-wide", "monitoring", "namespaced", "operability", "sharding"]);
    for (const set of sets) {
      const result = await lintValueSet(set, tools);
      expect(result.ok, `${set.name}: ${result.output}`).toBe(true);
      // Every document was validated: none skipped for want of a schema.
      expect(result.output).toMatch(/Invalid: 0, Errors: 0, Skipped: 0/);
    }
  });

  it("renders ServiceMonitor and PrometheusRule in the monitoring set, validated against prometheus-operator's CRDs", async () => {
    const monitoring = ["ServiceMonitor", "PrometheusRule"].flatMap((kind) => ["--api-versions", `monitoring.coreos.com/v1/${kind}`]);
    const rendered = await run(tools.helm, [
      "template",
      "keyward",
      chartDir,
      "--values",
      join(valueSetsDir, "monitoring.yaml"),
      ...monitoring,
    ]);
    expect(rendered.code, rendered.stderr).toBe(0);
    const kinds = kindsOf(loadAll(rendered.stdout)).map((k) => `${k.apiVersion}/${k.kind}`);
    expect(kinds).toEqual(expect.arrayContaining(["monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PrometheusRule"]));
    const checked = await kubeconform(rendered.stdout, tools.sources, tools.kubeconform);
    expect(checked.code, checked.stdout + checked.stderr).toBe(0);
  });

  it("renders the operability set's spread, priority class, volumes, environment and extra objects, and kubeconform checks them", async () => {
    const rendered = await run(tools.helm, ["template", "keyward", chartDir, "--values", join(valueSetsDir, "operability.yaml")]);
    expect(rendered.code, rendered.stderr).toBe(0);
    for (const text of [
      "topologySpreadConstraints:",
      "priorityClassName: system-cluster-critical",
      "mountPath: /etc/keyward/ca",
      "name: NODE_EXTRA_CA_CERTS",
      "name: keyward-extra",
    ]) {
      expect(rendered.stdout).toContain(text);
    }
    const checked = await kubeconform(rendered.stdout, tools.sources, tools.kubeconform);
    expect(checked.code, checked.stdout + checked.stderr).toBe(0);
  });

  it("fails on a broken template: a misspelt Deployment field", async () => {
    const chart = join(work, "broken-template");
    await cp(chartDir, chart, { recursive: true });
    const deployment = join(chart, "templates", "deployment.yaml");
    const text = await readFile(deployment, "utf8");
    expect(text).toMatch(/^ {2}replicas: /m);
    await writeFile(deployment, text.replace(/^ {2}replicas: /m, "  replica: "));
    const result = await lintValueSet({ name: "broken" }, tools, chart);
    expect(result.ok).toBe(false);
    expect(result.output).toContain("additional properties 'replica' not allowed");
  });

  it("fails at helm lint --strict on a value the values schema refuses", async () => {
    const values = join(work, "schema.yaml");
    await writeFile(values, 'replicas: "three"\n');
    const result = await lintValueSet({ name: "schema", file: values }, tools);
    expect(result.ok).toBe(false);
    expect(result.output).toMatch(/^helm lint --strict:/);
    expect(result.output).toContain("replicas");
  });

  it("fails on a value the values schema lets through but Kubernetes refuses (a misspelt toleration field)", async () => {
    const values = join(work, "typo.yaml");
    await writeFile(values, "tolerations:\n  - key: dedicated\n    operatr: Exists\n");
    const result = await lintValueSet({ name: "typo", file: values }, tools);
    expect(result.ok).toBe(false);
    expect(result.output).toContain("additional properties 'operatr' not allowed");
  });
});

describe("kubeconform with the derived schemas", () => {
  const check = (manifest: string): Promise<{ code: number; stdout: string; stderr: string }> =>
    kubeconform(manifest, tools.sources, tools.kubeconform);

  it("refuses a wrong keyward resource and accepts a right one", async () => {
    const right = await check(
      "apiVersion: keyward.dev/v1alpha1\nkind: ProviderConfig\nmetadata: {name: a}\nspec:\n  baseUrl: https://secrets.example.com\n",
    );
    expect(right.code, right.stdout + right.stderr).toBe(0);
    const wrong = await check("apiVersion: keyward.dev/v1alpha1\nkind: ProviderConfig\nmetadata: {name: a}\nspec:\n  baseUrl: 3\n");
    expect(wrong.code).toBe(1);
    expect(wrong.stdout).toContain("at '/spec/baseUrl': got number, want string");
  });

  it("refuses a ServiceMonitor endpoint field prometheus-operator does not know", async () => {
    const result = await check(
      "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: a}\nspec:\n  selector: {}\n  endpoints:\n    - port: metrics\n      bearerTokenFil: /token\n",
    );
    expect(result.code).toBe(1);
    expect(result.stdout).toContain("additional properties 'bearerTokenFil' not allowed");
  });

  it("refuses a wrong type in a built-in kind (a string replica count)", async () => {
    const result = await check(
      "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\nspec:\n  replicas: two\n  selector: {matchLabels: {a: b}}\n  template:\n    spec:\n      containers: [{name: c, image: i}]\n",
    );
    expect(result.code).toBe(1);
    expect(result.stdout).toContain("at '/spec/replicas': got string, want integer");
  });

  it("fails on a kind no schema describes, instead of skipping it", async () => {
    const result = await check("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: a}\n");
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("no schema for: example.com/v1 Widget");
  });
});

describe("the schema conversion", () => {
  it("closes objects with listed properties, keeps maps and preserve-unknown-fields open, and maps int-or-string and nullable", () => {
    const converted = strictFromOpenApiV3({
      type: "object",
      properties: {
        port: { "x-kubernetes-int-or-string": true, description: "p" },
        labels: { type: "object", additionalProperties: { type: "string" } },
        raw: { type: "object", "x-kubernetes-preserve-unknown-fields": true, properties: { a: { type: "string" } } },
        note: { type: "string", nullable: true },
      },
    });
    expect(converted).toEqual({
      type: "object",
      additionalProperties: false,
      properties: {
        port: { description: "p", oneOf: [{ type: "string" }, { type: "integer" }] },
        labels: { type: "object", additionalProperties: { type: "string" } },
        raw: { type: "object", properties: { a: { type: "string" } } },
        note: { type: ["string", "null"] },
      },
    });
  });

  it("reads every version of a CRD, and names files as kubeconform's location template does", () => {
    const schemas = crdSchemas([
      "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec:\n  group: example.com\n  names: {kind: Widget}\n  versions:\n    - name: v1\n      schema: {openAPIV3Schema: {type: object}}\n    - name: v2\n      schema: {openAPIV3Schema: {type: object}}\n",
    ]);
    expect([...schemas.keys()]).toEqual(["example.com/v1/Widget", "example.com/v2/Widget"]);
    expect(schemaFile("v1", "ConfigMap")).toBe(join("v1", "configmap_v1.json"));
    expect(schemaFile("apps/v1", "Deployment")).toBe(join("apps", "deployment_v1.json"));
  });
});
