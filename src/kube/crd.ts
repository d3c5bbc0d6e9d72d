// CustomResourceDefinitions generated from the zod schemas of each kind (`npm run generate`).
import type { z } from "zod";
import type { JSONSchemaProps, ValidationRule } from "./crd-types.ts";
import { orderSchema, structuralSchema, structuralViolations } from "./crd-schema.ts";
import { toYaml } from "./crd-yaml.ts";

export type { JSONSchemaProps, ValidationRule } from "./crd-types.ts";
export { structuralSchema, structuralViolations } from "./crd-schema.ts";
export { atMostOneOf, exactlyOneOf, immutable, validations } from "./crd-cel.ts";

export interface PrinterColumn {
  name: string;
  type: "string" | "integer" | "number" | "boolean" | "date";
  jsonPath: string;
  description?: string;
  priority?: number;
}

export interface CrdSource {
  group: string;
  version: string;
  kind: string;
  plural: string;
  singular?: string;
  shortNames?: string[];
  categories?: string[];
  /** The kind's description, shown by `kubectl explain <kind>`. */
  description: string;
  /** Default Namespaced. */
  scope?: "Namespaced" | "Cluster";
  spec: z.ZodType;
  status: z.ZodType;
  printerColumns: PrinterColumn[];
  /** Extra CEL rules on spec (e.g. `exactlyOneOf(["projectRef", "projectId"])`). */
  specValidations?: ValidationRule[];
  /** CEL rules on the whole object, where `self.metadata.name` is visible. */
  rootValidations?: ValidationRule[];
}

export interface CustomResourceDefinitionVersion {
  name: string;
  served: boolean;
  storage: boolean;
  schema: { openAPIV3Schema: JSONSchemaProps };
  subresources: { status: Record<string, never> };
  additionalPrinterColumns?: PrinterColumn[];
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
  };
};

/** A printer column showing the status of one condition (Ready, Synced). */
export function conditionColumn(type: string, description?: string): PrinterColumn {
  const column: PrinterColumn = { name: type, type: "string", jsonPath: `.status.conditions[?(@.type=="${type}")].status` };
  return description ? { ...column, description } : column;
}

export const ageColumn: PrinterColumn = { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" };

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
      },
      kind: {
        description:
          "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. In CamelCase.",
        type: "string",
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
