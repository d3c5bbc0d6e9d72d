// Widget: a test-only kind (group test.keyward.dev), written the way a kind of src/resources is —
// a zod spec and status, a CRD source, a reason table and a ManagedModule — whose external system
// is an in-process widget store (store.ts). It proves the engine (src/engine/managed.ts) and
// createOperator's wiring on a kind keyward does not ship: nothing in src knows of it, it is in
// no registry, and nothing derived from the registry (CRDs, docs/kinds.md, health.lua, the
// kubectl plugin) includes it. Serving it takes `createOperator({ kinds: [widgetKind(store)] })`.
import { z } from "zod";
import type { CrdSource, ReasonTable } from "../../../src/engine/kind.ts";
import { ReconcileError } from "../../../src/engine/errors.ts";
import { type DeleteResult, type ManagedContext, type Observation } from "../../../src/engine/module.ts";
import type { KindRef } from "../../../src/kube/client.ts";
import { ageColumn, commonStatus, isObserveOnly, managementPolicy, readyColumns } from "../../../src/resources/common.ts";
import type { Kind, KindModule } from "../../../src/resources/kind.ts";
import { isStoreNotFound, widgetColors, type StoredWidget, type WidgetStore } from "./store.ts";

export const ref: KindRef = { group: "test.keyward.dev", version: "v1alpha1", kind: "Widget", plural: "widgets" };

/** How soon a painting widget is looked at again. */
export const PAINT_RECHECK_MS = 200;

export const specSchema = z
  .object({
    size: z.number().int().min(1).max(10).describe("Size of the widget, 1 to 10."),
    color: z.enum(widgetColors).describe("Color of the widget; changing it repaints the widget."),
    deletionPolicy: z
      .enum(["Retain", "Delete"])
      .optional()
      .describe("Retain (default): deleting the resource leaves the widget in the store. Delete: delete it there too."),
    managementPolicy: managementPolicy.optional(),
  })
  .strict()
  // A rule the CRD cannot carry (a refinement has no schema form): the apiserver admits a gold
  // widget of size 5, keyward's own parse refuses it (InvalidSpec).
  .refine((s) => s.color !== "gold" || s.size <= 3, { message: "a gold widget is at most size 3", path: ["size"] });
export type WidgetSpec = z.infer<typeof specSchema>;

export const statusSchema = z.object({
  ...commonStatus,
  id: z.string().optional().describe("The widget's id in the store."),
  size: z.number().int().optional().describe("The widget's size in the store."),
  color: z.string().optional().describe("The widget's color in the store."),
});
export type WidgetStatus = z.infer<typeof statusSchema>;

export const crdSource: CrdSource = {
  ...ref,
  singular: "widget",
  description: "A widget in the in-process widget store of keyward's tests (a test-only kind).",
  spec: specSchema,
  status: statusSchema,
  printerColumns: [
    { name: "Color", type: "string", jsonPath: ".spec.color" },
    { name: "Size", type: "integer", jsonPath: ".spec.size" },
    { name: "Widget-ID", type: "string", jsonPath: ".status.id" },
    ...readyColumns,
    ageColumn,
  ],
  specValidations: [
    {
      rule: "!(has(self.managementPolicy) && self.managementPolicy == 'ObserveOnly' && has(self.deletionPolicy) && self.deletionPolicy == 'Delete')",
      message: "an ObserveOnly widget is never deleted from the store: deletionPolicy Delete needs managementPolicy Default",
    },
  ],
};

export const reasons = {
  Painting: { means: "progress", doc: "The store is repainting the widget after its color changed." },
  WidgetMissing: { means: "failed", doc: "managementPolicy ObserveOnly, and the store has no widget of this name." },
  WidgetTaken: { means: "failed", doc: "The store holds a widget of this name that this resource did not create." },
} as const satisfies ReasonTable;

type Ctx = ManagedContext<WidgetSpec, WidgetStatus, WidgetStore>;

/** The widget's name in the store: its natural key, so a create whose answer was lost can be found. */
export function storeName(key: { namespace: string; name: string }): string {
  return `${key.namespace}/${key.name}`;
}

async function find(c: Ctx): Promise<StoredWidget | undefined> {
  if (c.status.id) {
    const byId = await c.conn.get(c.status.id);
    if (byId) return byId;
  }
  // Being deleted, only what is known to be ours counts: a widget of the same name made since by
  // someone else is never deleted in this resource's name.
  if (c.obj.metadata.deletionTimestamp !== undefined && !c.createPending) return undefined;
  const name = storeName(c.key);
  const byName = await c.conn.find(name);
  if (!byName) return undefined;
  // A create that was marked pending and never confirmed: found by its name, it is ours.
  if (c.createPending || c.observeOnly || byName.id === c.status.id) return byName;
  throw new ReconcileError("WidgetTaken", `the store already holds widget ${byName.id} named ${name}, which this resource did not create`, {
    retryable: false,
  });
}

function observed(c: Ctx, w: StoredWidget): Observation<WidgetStatus, StoredWidget> {
  const diff = [...(w.size !== c.spec.size ? ["size"] : []), ...(w.color !== c.spec.color ? ["color"] : [])];
  return {
    exists: true,
    upToDate: diff.length === 0,
    diff,
    status: { id: w.id, size: w.size, color: w.color },
    external: w,
    ...(w.painting
      ? {
          readiness: { ready: false, reason: "Painting", message: `the store is painting widget ${w.id} ${w.color}` },
          requeueAfterMs: PAINT_RECHECK_MS,
        }
      : {}),
  };
}

async function observe(c: Ctx): Promise<Observation<WidgetStatus, StoredWidget>> {
  const w = await find(c);
  if (w) return observed(c, w);
  if (!c.observeOnly) return { exists: false, upToDate: false, status: {} };
  return {
    exists: false,
    upToDate: false,
    status: { id: null, size: null, color: null },
    absent: {
      reason: "WidgetMissing",
      message: `the store has no widget named ${storeName(c.key)} (managementPolicy ObserveOnly: none is made)`,
    },
  };
}

async function create(c: Ctx): Promise<Observation<WidgetStatus, StoredWidget>> {
  const w = await c.conn.create({ name: storeName(c.key), size: c.spec.size, color: c.spec.color });
  return observed(c, w);
}

async function update(c: Ctx, obs: Observation<WidgetStatus, StoredWidget>): Promise<Partial<WidgetStatus>> {
  const id = obs.status.id;
  if (!id) throw new ReconcileError("NotFound", "the widget's id is unknown", { retryable: true });
  const w = await c.conn.update(id, { size: c.spec.size, color: c.spec.color });
  // Repainting: the next pass reports it (Ready=False Painting) until the store is done.
  if (w.painting) c.requeueAfter(PAINT_RECHECK_MS);
  return { id: w.id, size: w.size, color: w.color };
}

async function remove(c: Ctx, obs: Observation<WidgetStatus, StoredWidget>): Promise<DeleteResult> {
  const id = obs.status.id;
  if (!id) return { done: true };
  try {
    await c.conn.delete(id);
  } catch (err) {
    if (!isStoreNotFound(err)) throw err;
  }
  return { done: true };
}

export function widgetModule(store: WidgetStore): KindModule<WidgetSpec, WidgetStatus, WidgetStore, StoredWidget> {
  return {
    ref,
    parseSpec: (raw) => specSchema.parse(raw),
    needsFinalizer: (spec) => spec.deletionPolicy === "Delete",
    connect: () => Promise.resolve(store),
    observe,
    create,
    update,
    delete: remove,
    observeOnly: isObserveOnly,
  };
}

/** The Widget kind, served against `store`. */
export function widgetKind(store: WidgetStore): Kind {
  return {
    ref,
    crd: crdSource,
    reasons,
    refers: {},
    // the Widget has one version
    conversion: { from: ref.version, to: ref.version, edits: [] },
    serviceIdFields: ["id"],
    // The store assigns the id on create: the create rule's mark precedes the call.
    externalId: "id",
    controller: (d) => ({ reconcile: d.managed(widgetModule(store)) }),
  };
}
