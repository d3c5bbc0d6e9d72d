import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadYaml } from "@kubernetes/client-node";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  atMostOneOf,
  conditionColumn,
  crdFileName,
  crdFromSources,
  crdToYaml,
  exactlyOneOf,
  generatedHeader,
} from "../../../src/crd/crd.ts";
import type { CrdSource } from "../../../src/crd/crd.ts";
import {
  chartCrdDir,
  chartCrdTemplate,
  chartGeneratedHeader,
  crdDirs,
  crdFileProblems,
  crdFileText,
  renderCrdFiles,
  writeCrdFiles,
} from "../../../src/crd/files.ts";
import { exampleSource } from "./secret-sync-example.ts";

describe("crdFromSources", () => {
  const crd = crdFromSources(exampleSource("keyward.dev"));
  const [version] = crd.spec.versions;
  const schema = version?.schema.openAPIV3Schema;

  it("names a namespaced CRD with the kind's names, categories and short names", () => {
    expect(crd.apiVersion).toBe("apiextensions.k8s.io/v1");
    expect(crd.kind).toBe("CustomResourceDefinition");
    expect(crd.metadata.name).toBe("examplesyncs.keyward.dev");
    expect(crd.spec.scope).toBe("Namespaced");
    expect(crd.spec.names).toEqual({
      kind: "ExampleSync",
      listKind: "ExampleSyncList",
      plural: "examplesyncs",
      singular: "examplesync",
      shortNames: ["exsync"],
      categories: ["keyward-test"],
    });
  });

  it("serves and stores one version with the status subresource and printer columns", () => {
    expect(crd.spec.versions).toHaveLength(1);
    expect(version?.name).toBe("v1alpha1");
    expect(version?.served).toBe(true);
    expect(version?.storage).toBe(true);
    expect(version?.subresources).toEqual({ status: {} });
    expect(version?.additionalPrinterColumns?.map((c) => c.name)).toEqual(["Destination", "Ready", "Age"]);
    expect(conditionColumn("Synced")).toEqual({
      name: "Synced",
      type: "string",
      jsonPath: `.status.conditions[?(@.type=="Synced")].status`,
    });
  });

  it("describes the kind and requires spec; status is keyward's", () => {
    expect(schema?.description).toBe("A SecretSync-shaped resource for testing generated CRDs.");
    expect(schema?.required).toEqual(["spec"]);
    expect(Object.keys(schema?.properties ?? {})).toEqual(["apiVersion", "kind", "metadata", "spec", "status"]);
    expect(schema?.properties?.metadata).toEqual({ type: "object" });
    expect(schema?.properties?.status?.required).toBeUndefined();
  });

  it("appends the spec validations after the generated ones", () => {
    const rules = schema?.properties?.spec?.["x-kubernetes-validations"] ?? [];
    expect(rules.at(-1)).toEqual({
      rule: "has(self.projectRef) != has(self.projectId)",
      message: "exactly one of projectRef, projectId must be set",
    });
  });

  it("does not require a spec zod accepts as absent", () => {
    const src: CrdSource = { ...exampleSource(), spec: z.object({ a: z.string().optional() }).default({}) };
    expect(crdFromSources(src).spec.versions[0]?.schema.openAPIV3Schema.required).toBeUndefined();
  });
});

describe("CEL helpers", () => {
  it("builds exactly-one and at-most-one rules", () => {
    expect(exactlyOneOf(["a", "b", "c"])).toEqual({
      rule: "[has(self.a), has(self.b), has(self.c)].exists_one(x, x)",
      message: "exactly one of a, b, c must be set",
    });
    expect(atMostOneOf(["a", "b"], "pick one")).toEqual({ rule: "!(has(self.a) && has(self.b))", message: "pick one" });
    // CEL reaches property names through the apiserver's escaping
    expect(exactlyOneOf(["x-id", "namespace"]).rule).toBe("has(self.x__dash__id) != has(self.__namespace__)");
  });
});

describe("crdToYaml", () => {
  it("is stable, starts with the generated header and reads back as the same object", () => {
    const crd = crdFromSources(exampleSource());
    const text = crdToYaml(crd);
    expect(text.startsWith(generatedHeader)).toBe(true);
    expect(crdToYaml(crdFromSources(exampleSource()))).toBe(text);
    // read back untyped (the typed CRD model would rename the x-kubernetes keys)
    const wrapped = crdToYaml({ ...crd, apiVersion: "test.keyward.dev/v1" as "apiextensions.k8s.io/v1" });
    const loaded = loadYaml<{ spec: unknown }>(wrapped);
    expect(JSON.parse(JSON.stringify(loaded.spec))).toEqual(crd.spec);
  });
});

describe("generated files", () => {
  let root: string;
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  const source = exampleSource("keyward.dev");
  const name = crdFileName(source);

  it("writes every CRD into crds/, the chart and kustomize, then reports nothing to do", () => {
    root = mkdtempSync(join(tmpdir(), "keyward-crd-"));
    const files = renderCrdFiles([source]);
    expect([...files.keys()]).toEqual(["examplesyncs.keyward.dev.yaml"]);
    expect(crdFileProblems(root, files).map((p) => p.problem)).toEqual(["missing", "missing", "missing"]);
    writeCrdFiles(root, files);
    for (const dir of crdDirs) expect(readFileSync(join(root, dir, name), "utf8")).toBe(crdFileText(dir, files.get(name) ?? ""));
    expect(readFileSync(join(root, "crds", name), "utf8")).toBe(files.get(name));
    expect(crdFileProblems(root, files)).toEqual([]);
  });

  it("finds an edited chart template, and deletes generated CRDs left in the chart's former crds/ folder", () => {
    root = mkdtempSync(join(tmpdir(), "keyward-crd-"));
    const files = renderCrdFiles([source]);
    writeCrdFiles(root, files);
    writeFileSync(join(root, chartCrdDir, name), `${crdFileText(chartCrdDir, files.get(name) ?? "")}# edited\n`);
    mkdirSync(join(root, "charts/keyward/crds"), { recursive: true });
    writeFileSync(join(root, "charts/keyward/crds", name), files.get(name) ?? "");
    expect(crdFileProblems(root, files)).toEqual([
      { path: join(chartCrdDir, name), problem: "differs" },
      { path: join("charts/keyward/crds", name), problem: "stale" },
    ]);
    writeCrdFiles(root, files);
    expect(crdFileProblems(root, files)).toEqual([]);
    expect(existsSync(join(root, "charts/keyward/crds"))).toBe(false);
  });

  it("finds edited and stale generated files, deletes only generated ones", () => {
    root = mkdtempSync(join(tmpdir(), "keyward-crd-"));
    const files = renderCrdFiles([source]);
    writeCrdFiles(root, files);
    writeFileSync(join(root, "crds", name), `${files.get(name) ?? ""}# edited\n`);
    writeFileSync(join(root, "crds", "olds.keyward.dev.yaml"), `${generatedHeader}kind: Old\n`);
    mkdirSync(join(root, "config/crd"), { recursive: true });
    writeFileSync(join(root, "config/crd/bases/kustomization.yaml"), "resources: []\n");
    expect(crdFileProblems(root, files)).toEqual([
      { path: join("crds", name), problem: "differs" },
      { path: join("crds", "olds.keyward.dev.yaml"), problem: "stale" },
    ]);
    writeCrdFiles(root, files);
    expect(crdFileProblems(root, files)).toEqual([]);
    expect(existsSync(join(root, "crds", "olds.keyward.dev.yaml"))).toBe(false);
    expect(existsSync(join(root, "config/crd/bases/kustomization.yaml"))).toBe(true);
  });

  it("makes a chart template of a CRD: guarded by crds.enabled, the chart's metadata, every {{ escaped", () => {
    const text = `${generatedHeader}apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: things.keyward.dev\nspec:\n  description: "a {{key}} and {{{x}}}"\n`;
    expect(chartCrdTemplate(text)).toBe(
      [
        chartGeneratedHeader.trimEnd(),
        "{{- if .Values.crds.enabled }}",
        "apiVersion: apiextensions.k8s.io/v1",
        "kind: CustomResourceDefinition",
        "metadata:",
        "  name: things.keyward.dev",
        "  labels:",
        '    {{- include "keyward.crdLabels" . | nindent 4 }}',
        '  {{- with include "keyward.crdAnnotations" . }}',
        "  annotations:",
        "    {{- . | nindent 4 }}",
        "  {{- end }}",
        "spec:",
        '  description: "a {{ "{{" }}key}} and {{ "{{" }}{x}}}"',
        "{{- end }}",
        "",
      ].join("\n"),
    );
    expect(() => chartCrdTemplate(text.replace("  name: things.keyward.dev\n", "  name: things.keyward.dev\n  labels: {}\n"))).toThrow(
      /metadata with a name only/,
    );
  });

  it("refuses two kinds writing the same file", () => {
    expect(() => renderCrdFiles([source, source])).toThrow(/two kinds/);
  });
});
