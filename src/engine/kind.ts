// What a kind is: its names, its schemas and the columns and rules its CRD carries, the reasons
// it emits, and how its controller is built.
// Read at run time by the kinds (their zod schemas parse specs) and at build time by the CRD
// generator (src/crd), which is never loaded by the running operator.
import type { z } from "zod";
import type { KindRef } from "../kube/client.ts";
import type { ValidationRule } from "./cel.ts";
import type { SecondaryWatch } from "./controller.ts";
import type { ReconcileFn } from "./types.ts";

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

/**
 * What a condition or Event reason means to someone watching: the Event's type, Argo CD's health
 * (argocd/health.lua) and the reason tables of docs/kinds.md are all derived from it.
 * - available: Ready=True.
 * - progress: on its way (Ready=False, a Normal Event; Argo CD Progressing).
 * - retrying: keyward retries by itself, or it clears once another object appears or becomes
 *   ready (a Warning Event; Argo CD Progressing, not Degraded).
 * - failed: needs a person (a Warning Event; Argo CD Degraded).
 * - done: an Event telling what keyward did (Created, Updated, ...).
 */
export type ReasonMeaning = "available" | "progress" | "retrying" | "failed" | "done";

export interface ReasonInfo {
  readonly means: ReasonMeaning;
  /**
   * Argo CD's health when it is not the one `means` gives: Suspended for a reason that says
   * keyward was told to stand still (argocd/health.lua reads its Synced condition first).
   */
  readonly argoCd?: "Suspended";
  /** One line for the docs. */
  readonly doc: string;
}

export type ReasonTable = Readonly<Record<string, ReasonInfo>>;

/** The progress reasons of some tables: Ready=False with one of them is told as a Normal Event. */
export function progressReasons(...tables: readonly ReasonTable[]): ReadonlySet<string> {
  return new Set(
    tables.flatMap((t) =>
      Object.entries(t)
        .filter(([, r]) => r.means === "progress")
        .map(([name]) => name),
    ),
  );
}

/**
 * One kind, whole: its names and CRD, the reasons it can emit, and how its controller is built.
 * The operator, the CRD generator, the Argo CD health check, the kubectl plugin's constants and
 * docs/kinds.md are all derived from the registry of these (src/resources/registry.ts), so
 * adding a kind is one new unit and one line there. `Deps` is what the operator hands every kind
 * (src/resources/kind.ts), whose `Kind` adds what only the kinds' layer reads.
 */
export interface KindDescriptor<Deps> {
  ref: KindRef;
  crd: CrdSource;
  /** The reasons this kind's conditions and Events carry beyond the engine's own (src/engine/reasons.ts). */
  reasons: ReasonTable;
  /** The reconcile and the kind's own secondary watches; undefined when this kind is not served (a flag turned it off). */
  controller(deps: Deps): ControllerParts | undefined;
}

export interface ControllerParts {
  reconcile: ReconcileFn;
  watches?: readonly SecondaryWatch[];
}
