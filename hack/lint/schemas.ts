// JSON schemas for kubeconform, derived offline from sources the build already has: no schema
// repository is reachable here, and kubeconform's default one is on GitHub.
//   - built-in kinds: the kube-apiserver's OpenAPI document (api/openapi-spec/swagger.json) in the
//     k8s.io/kubernetes module source, at the version the test control plane builds
//     (hack/controlplane-go/kube/<test-version>/go.mod);
//   - keyward's kinds: the openAPIV3Schema of each version of the CRDs in crds/;
//   - monitoring.coreos.com (ServiceMonitor, PrometheusRule): prometheus-operator's own CRDs, from
//     its Go module's example/prometheus-operator-crd/.
// kubeconform only checks what the schema says: "strict" here means every object schema that
// lists its properties gets additionalProperties: false (as the kubernetes-json-schema project's
// -strict schemas do), so a misspelt or misplaced field fails.
import { execFile } from "node:child_process";
import { mkdir, readFile, readdir, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { loadAll } from "js-yaml";
import { kubernetesVersionOf, testMinor } from "../../test/controlplane/versions.ts";

const execFileAsync = promisify(execFile);

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The prometheus-operator module whose CRDs give ServiceMonitor's and PrometheusRule's schemas. */
export const prometheusOperatorModule = "github.com/prometheus-operator/prometheus-operator";
export const prometheusOperatorVersion = "v0.85.0";

type Schema = Record<string, unknown>;

export interface Gvk {
  apiVersion: string;
  kind: string;
}

const gvkKey = (apiVersion: string, kind: string): string => `${apiVersion}/${kind}`;

/** The Kubernetes version npm test's control plane is built at (hack/controlplane-go/test-version). */
export function kubernetesVersion(): Promise<string> {
  return Promise.resolve(kubernetesVersionOf(testMinor()));
}

/** The source directory of one Go module version, downloaded into Go's module cache if needed. */
export async function goModuleDir(module: string, version: string): Promise<string> {
  const { stdout } = await execFileAsync("go", ["mod", "download", "-json", `${module}@${version}`], {
    cwd: repoRoot,
    env: { ...process.env, GOFLAGS: "-mod=mod" },
    maxBuffer: 16 * 1024 * 1024,
  });
  const info = JSON.parse(stdout) as { Dir?: string; Error?: string };
  if (info.Dir === undefined) throw new Error(`go mod download ${module}@${version}: ${info.Error ?? "no directory"}`);
  return info.Dir;
}

/** Where kubeconform looks for a kind's schema, relative to the schema directory: `-schema-location DIR/{{.Group}}/{{.ResourceKind}}_{{.ResourceAPIVersion}}.json`. */
export const schemaLocationTemplate = "{{.Group}}/{{.ResourceKind}}_{{.ResourceAPIVersion}}.json";

/** The file schemaLocationTemplate names for one kind (core kinds: group "v1"). */
export function schemaFile(apiVersion: string, kind: string): string {
  const parts = apiVersion.split("/");
  const group = parts[0] ?? apiVersion;
  const version = parts[parts.length - 1] ?? apiVersion;
  return join(group, `${kind.toLowerCase()}_${version}.json`);
}

const intOrString = (description: unknown): Schema => ({
  ...(description === undefined ? {} : { description }),
  oneOf: [{ type: "string" }, { type: "integer" }],
});

/** A Kubernetes structural schema (a CRD's openAPIV3Schema) as a strict JSON schema. */
export function strictFromOpenApiV3(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(strictFromOpenApiV3);
  if (node === null || typeof node !== "object") return node;
  const source = node as Schema;
  if (source["x-kubernetes-int-or-string"] === true) return intOrString(source["description"]);
  const out: Schema = {};
  for (const [key, value] of Object.entries(source)) {
    if (key === "properties" && value !== null && typeof value === "object") {
      out[key] = Object.fromEntries(Object.entries(value as Schema).map(([name, sub]) => [name, strictFromOpenApiV3(sub)]));
    } else if (key === "nullable" || key.startsWith("x-kubernetes-")) {
      continue;
    } else {
      out[key] = strictFromOpenApiV3(value);
    }
  }
  if (source["nullable"] === true && typeof source["type"] === "string") out["type"] = [source["type"], "null"];
  if (
    source["properties"] !== undefined &&
    source["additionalProperties"] === undefined &&
    source["x-kubernetes-preserve-unknown-fields"] !== true
  ) {
    out["additionalProperties"] = false;
  }
  return out;
}

/** Every served version of every CustomResourceDefinition in these YAML texts: apiVersion/kind → strict schema. */
export function crdSchemas(yamlTexts: string[]): Map<string, Schema> {
  const schemas = new Map<string, Schema>();
  for (const text of yamlTexts) {
    for (const doc of loadAll(text)) {
      const crd = doc as {
        kind?: string;
        spec?: { group: string; names: { kind: string }; versions: { name: string; schema?: { openAPIV3Schema?: unknown } }[] };
      };
      if (crd?.kind !== "CustomResourceDefinition" || crd.spec === undefined) continue;
      for (const version of crd.spec.versions) {
        const openApi = version.schema?.openAPIV3Schema;
        if (openApi === undefined) continue;
        schemas.set(gvkKey(`${crd.spec.group}/${version.name}`, crd.spec.names.kind), strictFromOpenApiV3(openApi) as Schema);
      }
    }
  }
  return schemas;
}

/** The YAML texts of every file in a directory (sorted), for crdSchemas. */
export async function yamlFilesIn(dir: string): Promise<string[]> {
  const names = (await readdir(dir)).filter((n) => /\.ya?ml$/.test(n)).sort();
  return Promise.all(names.map((n) => readFile(join(dir, n), "utf8")));
}

interface Swagger {
  definitions: Record<string, Schema>;
}

const definitionRef = /^#\/definitions\/(.+)$/;

/** One swagger definition (and its nested schemas) made strict; refs stay #/definitions/... */
function strictFromSwagger(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(strictFromSwagger);
  if (node === null || typeof node !== "object") return node;
  const source = node as Schema;
  if (source["format"] === "int-or-string") return intOrString(source["description"]);
  const out: Schema = {};
  for (const [key, value] of Object.entries(source)) {
    if (key.startsWith("x-kubernetes-")) continue;
    if (key === "properties" && value !== null && typeof value === "object") {
      out[key] = Object.fromEntries(Object.entries(value as Schema).map(([name, sub]) => [name, strictFromSwagger(sub)]));
    } else {
      out[key] = strictFromSwagger(value);
    }
  }
  if (source["properties"] !== undefined && source["additionalProperties"] === undefined) out["additionalProperties"] = false;
  return out;
}

function refsIn(node: unknown, into: Set<string>): void {
  if (Array.isArray(node)) {
    for (const item of node) refsIn(item, into);
  } else if (node !== null && typeof node === "object") {
    for (const [key, value] of Object.entries(node)) {
      if (key === "$ref" && typeof value === "string") {
        const name = definitionRef.exec(value)?.[1];
        if (name !== undefined) into.add(name);
      } else {
        refsIn(value, into);
      }
    }
  }
}

/** The built-in kinds of one Kubernetes OpenAPI (v2) document: apiVersion/kind → a standalone strict schema (its definitions embedded). */
export function kubernetesSchemas(swagger: Swagger, wanted: Gvk[]): Map<string, Schema> {
  const byGvk = new Map<string, string>();
  for (const [name, definition] of Object.entries(swagger.definitions)) {
    const gvks = definition["x-kubernetes-group-version-kind"] as { group: string; version: string; kind: string }[] | undefined;
    for (const gvk of gvks ?? []) {
      byGvk.set(gvkKey(gvk.group === "" ? gvk.version : `${gvk.group}/${gvk.version}`, gvk.kind), name);
    }
  }
  const schemas = new Map<string, Schema>();
  for (const { apiVersion, kind } of wanted) {
    const root = byGvk.get(gvkKey(apiVersion, kind));
    if (root === undefined) continue;
    const needed = new Set<string>([root]);
    const queue = [root];
    while (queue.length > 0) {
      const found = new Set<string>();
      refsIn(swagger.definitions[queue.pop() ?? ""], found);
      for (const name of found) {
        if (!needed.has(name)) {
          needed.add(name);
          queue.push(name);
        }
      }
    }
    const definitions: Schema = {};
    for (const name of needed) definitions[name] = strictFromSwagger(swagger.definitions[name]);
    // Quantity is a string in the document, but `memory: 1` (a YAML number) is a valid Quantity.
    const quantity = "io.k8s.apimachinery.pkg.api.resource.Quantity";
    if (needed.has(quantity)) definitions[quantity] = { oneOf: [{ type: "string" }, { type: "number" }] };
    const intstr = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
    if (needed.has(intstr)) definitions[intstr] = intOrString(undefined);
    schemas.set(gvkKey(apiVersion, kind), { ...(definitions[root] as Schema), definitions });
  }
  return schemas;
}

/** The apiVersion/kind of each document, once each. */
export function kindsOf(docs: unknown[]): Gvk[] {
  const seen = new Map<string, Gvk>();
  for (const doc of docs) {
    const d = doc as { apiVersion?: unknown; kind?: unknown } | null;
    if (typeof d?.apiVersion === "string" && typeof d.kind === "string")
      seen.set(gvkKey(d.apiVersion, d.kind), { apiVersion: d.apiVersion, kind: d.kind });
  }
  return [...seen.values()];
}

export interface SchemaSources {
  /** The kube-apiserver's swagger.json. */
  swagger: Swagger;
  /** CRD schemas (keyward's and prometheus-operator's), apiVersion/kind → schema. */
  crds: Map<string, Schema>;
}

/** Reads every source named at the top of this file (go mod download of the two modules if needed). */
export async function loadSchemaSources(): Promise<SchemaSources> {
  const [kubernetesDir, prometheusOperatorDir] = await Promise.all([
    kubernetesVersion().then((version) => goModuleDir("k8s.io/kubernetes", version)),
    goModuleDir(prometheusOperatorModule, prometheusOperatorVersion),
  ]);
  const swagger = JSON.parse(await readFile(join(kubernetesDir, "api", "openapi-spec", "swagger.json"), "utf8")) as Swagger;
  const keywardCrds = await yamlFilesIn(join(repoRoot, "crds"));
  const monitoringCrds = await Promise.all(
    ["monitoring.coreos.com_servicemonitors.yaml", "monitoring.coreos.com_prometheusrules.yaml"].map((name) =>
      readFile(join(prometheusOperatorDir, "example", "prometheus-operator-crd", name), "utf8"),
    ),
  );
  return { swagger, crds: crdSchemas([...keywardCrds, ...monitoringCrds]) };
}

/**
 * Writes the schema of each wanted kind under `dir` (as schemaLocationTemplate names them) and
 * returns the kinds no source describes (kubeconform fails on those too: no schema is skipped).
 */
export async function writeSchemas(dir: string, sources: SchemaSources, wanted: Gvk[]): Promise<Gvk[]> {
  const builtIn = kubernetesSchemas(sources.swagger, wanted);
  const missing: Gvk[] = [];
  for (const gvk of wanted) {
    const key = gvkKey(gvk.apiVersion, gvk.kind);
    const schema = sources.crds.get(key) ?? builtIn.get(key);
    if (schema === undefined) {
      missing.push(gvk);
      continue;
    }
    const file = join(dir, schemaFile(gvk.apiVersion, gvk.kind));
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, JSON.stringify(schema));
  }
  return missing;
}
