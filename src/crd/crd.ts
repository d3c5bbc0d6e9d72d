// CustomResourceDefinitions generated from the zod schemas of each kind (`npm run generate`).
import type { CrdSource, PrinterColumn } from "../engine/kind.ts";
import type { JSONSchemaProps, ValidationRule } from "./types.ts";
import { orderSchema, structuralSchema, structuralViolations } from "./schema.ts";
import { toYaml } from "./yaml.ts";

export type { JSONSchemaProps, ValidationRule } from "./types.ts";
export { structuralSchema, structuralViolations } from "./schema.ts";
// What the kinds describe themselves with (src/engine), for the generator's callers in one import.
export { atMostOneOf, exactlyOneOf, immutable, validations } from "../engine/cel.ts";
export { ageColumn, conditionColumn, type CrdSource, type PrinterColumn } from "../engine/kind.ts";

export interface CustomResourceDefinitionVersion {
  name: string;
  served: boolean;
  storage: boolean;
  schema: { openAPIV3Schema: JSONSchemaProps };
  subresources: { status: Record<string, never> };
  additionalPrinterColumns?: PrinterColumn[];
  /** Fields a list or watch may select on (`--field-selector`), besides metadata.name and metadata.namespace. */
  selectableFields?: { jsonPath: string }[];
}

// A type alias (not an interface) so it is also a Record<string, unknown>.
export type CustomResourceDefinition = {
  apiVersion: "apiextensions.k8s.io/v1";
  kind: "CustomResourceDefinition";
  metadata: { name: string };
  spec: {
    group: string;
    names: { kind: string; listKind: string; plural: string; singular: string; shortNames?: string[]; categories?: string[] };
    scope: "Namespaced" | "Cluster";
    versions: CustomResourceDefinitionVersion[];
    conversion?: CustomResourceConversion;
  };
};

/** Where the apiserver sends a ConversionReview: a Service in the cluster, or a URL (tests). */
export type WebhookClientConfig =
  { service: { namespace: string; name: string; path: string; port: number }; caBundle?: string } | { url: string; caBundle?: string };

export interface CustomResourceConversion {
  strategy: "Webhook";
  webhook: { conversionReviewVersions: ["v1"]; clientConfig: WebhookClientConfig };
}

function withRules(node: JSONSchemaProps, rules: readonly ValidationRule[] | undefined): JSONSchemaProps {
  if (!rules || rules.length === 0) return node;
  return orderSchema({ ...node, "x-kubernetes-validations": [...(node["x-kubernetes-validations"] ?? []), ...rules] });
}

function rootSchema(src: CrdSource): JSONSchemaProps {
  const spec = withRules(structuralSchema(src.spec), src.specValidations);
  const status = structuralSchema(src.status);
  const root: JSONSchemaProps = {
    description: src.description,
    type: "object",
    properties: {
      apiVersion: {
        description:
          "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values.",
        type: "string",
        // an API group (a DNS subdomain, 253), "/", a version (a DNS label, 63)
        maxLength: 317,
      },
      kind: {
        description:
          "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. In CamelCase.",
        type: "string",
        // a CamelCase name, a DNS label in length
        maxLength: 63,
      },
      metadata: { type: "object" },
      spec: { description: `The desired state of the ${src.kind}.`, ...spec },
      status: { description: `The observed state of the ${src.kind}, written by keyward.`, ...status },
    },
  };
  if (!src.spec.safeParse(undefined).success) root.required = ["spec"];
  return withRules(orderSchema(root), src.rootValidations);
}

/** The apiextensions.k8s.io/v1 CustomResourceDefinition of one kind. */
export function crdFromSources(src: CrdSource): CustomResourceDefinition {
  const openAPIV3Schema = rootSchema(src);
  const problems = structuralViolations(openAPIV3Schema);
  if (problems.length > 0) throw new Error(`${src.kind}: not a structural schema:\n${problems.join("\n")}`);
  const names: CustomResourceDefinition["spec"]["names"] = {
    kind: src.kind,
    listKind: `${src.kind}List`,
    plural: src.plural,
    singular: src.singular ?? src.kind.toLowerCase(),
  };
  if (src.shortNames && src.shortNames.length > 0) names.shortNames = [...src.shortNames];
  if (src.categories && src.categories.length > 0) names.categories = [...src.categories];
  const version: CustomResourceDefinitionVersion = {
    name: src.version,
    served: true,
    storage: true,
    schema: { openAPIV3Schema },
    subresources: { status: {} },
  };
  // priority 0 is the apiserver's default and it does not store it; neither do we
  if (src.printerColumns.length > 0)
    version.additionalPrinterColumns = src.printerColumns.map(({ priority, ...c }) => (priority ? { ...c, priority } : c));
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${src.plural}.${src.group}` },
    spec: { group: src.group, names, scope: src.scope ?? "Namespaced", versions: [version] },
  };
}

export const generatedHeader = "# Generated by `npm run generate` from the zod schemas in src/resources. Do not edit.\n";

/** Stable YAML text of a CRD, with the generated-file header. */
export function crdToYaml(crd: CustomResourceDefinition): string {
  return generatedHeader + toYaml(crd);
}

/** File name of a kind's CRD: `<plural>.<group>.yaml`. */
export function crdFileName(src: Pick<CrdSource, "plural" | "group">): string {
  return `${src.plural}.${src.group}.yaml`;
}
