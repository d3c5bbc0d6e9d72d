// Writing a resource's status the one way every kind shares: the conditions set with
// observedGeneration (apimachinery's SetStatusCondition), the whole status through /status and
// only when it changed, and an Event when Ready changes (Normal on the way up or while
// progressing, Warning otherwise).
import type { EventRecorder } from "../kube/events.ts";
import type { KindRef, Kube } from "../kube/client.ts";
import { patchStatus } from "../kube/objects.ts";
import { setCondition, statusEqual } from "./conditions.ts";
import { progressReasons } from "./kind.ts";
import { engineReasons } from "./reasons.ts";
import type { CommonStatus, Condition, KubeObject } from "./types.ts";

export type ConditionInput = Omit<Condition, "lastTransitionTime" | "observedGeneration">;

export interface ConditionsToSet {
  ready?: ConditionInput;
  synced?: ConditionInput;
}

/** Ready=False reasons that mean "on its way" (Normal events, not Warnings) unless the writer says otherwise. */
const engineProgress = progressReasons(engineReasons);

export interface StatusWrite {
  kube: Kube;
  ref: KindRef;
  obj: KubeObject<unknown>;
  /** The kind's own status fields (everything but conditions and observedGeneration). */
  kindStatus: Record<string, unknown>;
  conditions: ConditionsToSet;
  now: Date;
  /** Where a Ready change is told; absent: the caller tells it in an Event of its own. */
  events?: EventRecorder;
  /** The kind's progress reasons (src/engine/kind.ts progressReasons); default the engine's own. */
  progress?: ReadonlySet<string>;
  /** Only on `obj`'s resourceVersion: a 409 when the object changed since it was read. */
  exact?: boolean;
}

/** The object after the write, or the object itself when the status is already what it would be. */
export async function writeStatus(w: StatusWrite): Promise<KubeObject<unknown>> {
  const old: Record<string, unknown> & CommonStatus = w.obj.status ?? {};
  const generation = w.obj.metadata.generation ?? 0;
  const at = w.now.toISOString();
  let conditions: Condition[] = old.conditions ?? [];
  for (const cond of [w.conditions.ready, w.conditions.synced]) {
    if (cond) conditions = setCondition(conditions, { ...cond, observedGeneration: generation, lastTransitionTime: at }, at);
  }
  const next = { ...w.kindStatus, observedGeneration: generation, conditions };
  if (statusEqual(old, next)) return w.obj;
  if (w.events) recordReadyChange(w.events, w.progress ?? engineProgress, w.obj, old.conditions ?? [], conditions);
  return patchStatus(w.kube, w.ref, w.obj, next, { exact: w.exact === true });
}

function recordReadyChange(
  events: EventRecorder,
  progress: ReadonlySet<string>,
  obj: KubeObject<unknown>,
  before: Condition[],
  after: Condition[],
): void {
  const ready = after.find((x) => x.type === "Ready");
  const was = before.find((x) => x.type === "Ready");
  if (ready && (ready.status !== was?.status || ready.reason !== was.reason)) {
    const progressing = ready.status === "True" || progress.has(ready.reason);
    events.record(obj, progressing ? "Normal" : "Warning", ready.reason, ready.message);
  }
}
