// The parts of apiextensions.k8s.io/v1 JSONSchemaProps a structural CRD schema uses.
import type { ValidationRule } from "../engine/cel.ts";

export type { ValidationRule } from "../engine/cel.ts";

export type SchemaType = "object" | "array" | "string" | "integer" | "number" | "boolean";

export interface JSONSchemaProps {
  description?: string;
  title?: string;
  type?: SchemaType;
  format?: string;
  enum?: unknown[];
  default?: unknown;
  nullable?: boolean;
  minimum?: number;
  exclusiveMinimum?: boolean;
  maximum?: number;
  exclusiveMaximum?: boolean;
  multipleOf?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  /** Only for several patterns on one string: `[{pattern}, ...]`, never with a type inside. */
  allOf?: JSONSchemaProps[];
  minItems?: number;
  maxItems?: number;
  items?: JSONSchemaProps;
  properties?: Record<string, JSONSchemaProps>;
  required?: string[];
  /** A map's (additionalProperties) most entries: from `.meta({ maxProperties })` on a z.record. */
  maxProperties?: number;
  additionalProperties?: JSONSchemaProps;
  "x-kubernetes-preserve-unknown-fields"?: true;
  "x-kubernetes-int-or-string"?: true;
  "x-kubernetes-embedded-resource"?: boolean;
  "x-kubernetes-list-type"?: "atomic" | "set" | "map";
  "x-kubernetes-list-map-keys"?: string[];
  "x-kubernetes-map-type"?: "granular" | "atomic";
  "x-kubernetes-validations"?: ValidationRule[];
}

/** The extension keys a zod `.meta()` may carry into the schema node it sits on. */
export const passThroughMetaKeys = [
  "x-kubernetes-preserve-unknown-fields",
  "x-kubernetes-int-or-string",
  "x-kubernetes-embedded-resource",
  "x-kubernetes-list-type",
  "x-kubernetes-list-map-keys",
  "x-kubernetes-map-type",
] as const;

/** Key order of every emitted node: what `kubectl explain` readers look for first comes first. */
export const schemaKeyOrder: readonly (keyof JSONSchemaProps)[] = [
  "description",
  "title",
  "type",
  "format",
  "enum",
  "default",
  "nullable",
  "minimum",
  "exclusiveMinimum",
  "maximum",
  "exclusiveMaximum",
  "multipleOf",
  "minLength",
  "maxLength",
  "pattern",
  "allOf",
  "minItems",
  "maxItems",
  "items",
  "properties",
  "required",
  "maxProperties",
  "additionalProperties",
  "x-kubernetes-preserve-unknown-fields",
  "x-kubernetes-int-or-string",
  "x-kubernetes-embedded-resource",
  "x-kubernetes-list-type",
  "x-kubernetes-list-map-keys",
  "x-kubernetes-map-type",
  "x-kubernetes-validations",
];
