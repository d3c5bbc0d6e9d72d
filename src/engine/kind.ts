// What a kind is, as data: its names, its schemas and the columns and rules its CRD carries.
// Read at run time by the kinds (their zod schemas parse specs) and at build time by the CRD
// generator (src/crd), which is never loaded by the running operator.
import type { z } from "zod";
import type { ValidationRule } from "./cel.ts";

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

/** A printer column showing the status of one condition (Ready, Synced). */
export function conditionColumn(type: string, description?: string): PrinterColumn {
  const column: PrinterColumn = { name: type, type: "string", jsonPath: `.status.conditions[?(@.type=="${type}")].status` };
  return description ? { ...column, description } : column;
}

export const ageColumn: PrinterColumn = { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" };
