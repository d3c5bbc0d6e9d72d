// Widget: a test-only kind (group test.keyward.dev) over an in-process widget store (store.ts),
// written against the seams a kind of src/resources uses — its Kind record (src/resources/kind.ts)
// and its module (src/engine/module.ts) — and nothing else: no file of src names it, it is in no
// registry, and serving it takes `createOperator({ kinds: [...] })`. It declares what it refers to
// (refers.project: spec.projectRef), so a served Project's change wakes it with no wiring of its
// own (the Project kind declares the wake-ups it gives its referrers).
import { z } from "zod";
import type { CrdSource, ReasonTable } from "../../../src/engine/kind.ts";
import { ReconcileError } from "../../../src/engine/errors.ts";
import type { DeleteResult, ManagedContext, Observation } from "../../../src/engine/module.ts";
import type { KindRef } from "../../../src/kube/client.ts";
import { ageColumn, commonStatus, isObserveOnly, managementPolicy, projectRef, readyColumns } from "../../../src/resources/common.ts";
import type { Kind, KindModule } from "../../../src/resources/kind.ts";
import { isStoreNotFound, widgetColors, type StoredWidget, type WidgetStore } from "./store.ts";

export const ref: KindRef = { group: "test.keyward.dev", version: "v1alpha1", kind: "Widget", plural: "widgets" };

/** How soon a widget being repainted is looked at again. */
const PAINT_RECHECK_MS = 200;

export const specSchema = z
  .object({
    size: z.number().int().min(1).max(10).describe("Size of the widget, 1 to 10."),
    color: z.enum(widgetColors).describe("Color of the widget; changing it repaints the widget."),
    deletionPolicy: z
      .enum(["Retain", "Delete"])
      .optional()
      .describe("Retain (default): deleting the resource leaves the widget in the store. Delete: delete it there too."),
    managementPolicy: managementPolicy.optional(),
    projectRef: projectRef.optional(),
  })
  .strict()
  // A rule with no schema form: the apiserver admits a gold widget of size 5, the kind's parse
  // refuses it (the engine's InvalidSpec).
  .refine((s) => s.color !== "gold" || s.size <= 3, { message: "a gold widget is at most size 3", path: ["size"] });
type WidgetSpec = z.infer<typeof specSchema>;

const statusSchema = z.object({
  ...commonStatus,
  id: z.string().optional().describe("The widget's id in the store."),
  size: z.number().int().optional().describe("The widget's size in the store."),
  color: z.string().optional().describe("The widget's color in the store."),
});
type WidgetStatus = z.infer<typeof statusSchema>;

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

const reasons = {
  Painting: { means: "progress", doc: "The store is repainting the widget after its color changed." },
  WidgetMissing: { means: "failed", doc: "managementPolicy ObserveOnly, and the store has no widget of this name." },
  WidgetTaken: { means: "failed", doc: "The store holds a widget of this name that this resource did not create." },
} as const satisfies ReasonTable;

type Ctx = ManagedContext<WidgetSpec, WidgetStatus, WidgetStore>;
type Seen = Observation<WidgetStatus, StoredWidget>;

/** The widget's name in the store, its natural key: a create whose answer was lost is found by it. */
export function storeName(key: { namespace: string; name: string }): string {
  return `${key.namespace}/${key.name}`;
}

/** The widget this resource stands for: by its id, else by its name when that is known to be ours. */
async function find(c: Ctx): Promise<StoredWidget | undefined> {
  const byId = c.status.id ? await c.conn.get(c.status.id) : undefined;
  if (byId) return byId;
  // Being deleted, a widget of the name made since by someone else is never deleted in our name.
  if (c.obj.metadata.deletionTimestamp !== undefined && !c.createPending) return undefined;
  const name = storeName(c.key);
  const byName = await c.conn.find(name);
  if (!byName || c.createPending || c.observeOnly || byName.id === c.status.id) return byName;
  throw new ReconcileError("WidgetTaken", `the store already holds widget ${byName.id} named ${name}, which this resource did not create`, {
    retryable: false,
  });
}

function seen(c: Ctx, w: StoredWidget): Seen {
  const diff = (["size", "color"] as const).filter((field) => w[field] !== c.spec[field]);
  const painting = w.painting
    ? {
        readiness: { ready: false, reason: "Painting", message: `the store is painting widget ${w.id} ${w.color}` },
        requeueAfterMs: PAINT_RECHECK_MS,
      }
    : {};
  return { exists: true, upToDate: diff.length === 0, diff, status: { id: w.id, size: w.size, color: w.color }, external: w, ...painting };
}

async function observe(c: Ctx): Promise<Seen> {
  const w = await find(c);
  if (w) return seen(c, w);
  if (!c.observeOnly) return { exists: false, upToDate: false, status: {} };
  const absent = {
    reason: "WidgetMissing",
    message: `the store has no widget named ${storeName(c.key)} (managementPolicy ObserveOnly: none is made)`,
  };
  return { exists: false, upToDate: false, status: { id: null, size: null, color: null }, absent };
}

async function create(c: Ctx): Promise<Seen> {
  return seen(c, await c.conn.create({ name: storeName(c.key), size: c.spec.size, color: c.spec.color }));
}

async function update(c: Ctx, obs: Seen): Promise<Partial<WidgetStatus>> {
  if (!obs.status.id) throw new ReconcileError("NotFound", "the widget's id is unknown", { retryable: true });
  const w = await c.conn.update(obs.status.id, { size: c.spec.size, color: c.spec.color });
  // Repainting: the next pass reports Ready=False Painting until the store is done.
  if (w.painting) c.requeueAfter(PAINT_RECHECK_MS);
  return { id: w.id, size: w.size, color: w.color };
}

async function remove(c: Ctx, obs: Seen): Promise<DeleteResult> {
  if (!obs.status.id) return { done: true };
  try {
    await c.conn.delete(obs.status.id);
  } catch (err) {
    if (!isStoreNotFound(err)) throw err;
  }
  return { done: true };
}

function widgetModule(store: WidgetStore): KindModule<WidgetSpec, WidgetStatus, WidgetStore, StoredWidget> {
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
    // One version: nothing to convert.
    conversion: { from: ref.version, to: ref.version, edits: [] },
    refers: { project: true },
    serviceIdFields: ["id"],
    // The store assigns the id on create: the create rule's mark precedes the call.
    externalId: "id",
    controller: (d) => ({ reconcile: d.managed(widgetModule(store)) }),
  };
}
