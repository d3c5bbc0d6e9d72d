// Resolving a kind's project: spec.projectRef (a Project in the same namespace, which must have
// its id in status) or spec.projectId (a project keyward does not manage).
import type { Kube } from "../kube/client.ts";
import { keyString } from "../kube/keys.ts";
import { readCached } from "../kube/objects.ts";
import { ReconcileError } from "../engine/errors.ts";
import { engineReasons } from "../engine/reasons.ts";
import { createScope } from "../engine/create-rule.ts";
import { ANNOTATION_EXTERNAL_ID } from "../engine/holder.ts";
import type { ManagedContext } from "../engine/module.ts";
import { kind as projectKind, ref as projectRef } from "./project.ts";
import { sharedReasons } from "./reasons.ts";
import { ANNOTATION_PROJECT_ID, projectId as projectIdField } from "./common.ts";

export interface ProjectReference {
  projectRef?: { name: string } | undefined;
  projectId?: string | undefined;
}

/** The project id a spec refers to; a Project not yet Ready is a retryable ReferenceNotReady. */
export async function resolveProjectId(kube: Kube, namespace: string, spec: ProjectReference): Promise<string> {
  if (spec.projectId) return spec.projectId;
  const name = spec.projectRef?.name;
  if (!name) throw new ReconcileError("InvalidSpec", "one of spec.projectRef or spec.projectId is required", { retryable: false });
  const key = { namespace, name };
  const project = await readCached(kube, projectRef, key);
  if (!project) throw new ReconcileError("ReferenceNotReady", `Project ${keyString(key)} does not exist`, { retryable: true });
  const id = (project.status as { projectId?: string } | undefined)?.projectId;
  if (!id) throw new ReconcileError("ReferenceNotReady", `Project ${keyString(key)} has no project id yet`, { retryable: true });
  return id;
}

/** What a deletion's cleanup reads of its resource: the pass's context. */
export type CleanupContext = Pick<ManagedContext<ProjectReference, unknown, unknown>, "kube" | "key" | "spec" | "obj" | "recording">;

/**
 * The project id for a resource being deleted; undefined when nothing can tell it any more (the
 * Project is gone and the resource recorded no project of its own, or the spec names none, or the
 * Project failed for a reason that needs a person), and the resource is released without a call.
 * A Project that may still get its id — restored from a backup and not passed over yet, or failing
 * for a reason keyward retries — is waited for (retryable): releasing now would skip the cleanup
 * the deletion owes (a remove-secrets, a revoke). The Project's pass writes the id even while it is
 * being deleted itself. With the Project gone, the project the resource recorded (recordedProject).
 */
export async function projectIdForCleanup(c: CleanupContext): Promise<string | undefined> {
  const { kube, spec } = c;
  const namespace = c.key.namespace;
  try {
    return await resolveProjectId(kube, namespace, spec);
  } catch (err) {
    if (!(err instanceof ReconcileError)) throw err;
    if (err.reason !== "ReferenceNotReady") return undefined;
    const key = { namespace, name: spec.projectRef?.name ?? "" };
    const project = await readCached(kube, projectRef, key);
    if (!project) return recordedProject(c);
    const synced = project.status?.conditions?.find((s) => s.type === "Synced");
    if (synced && (synced.status === "True" || reasonMeans(synced.reason) !== "retrying")) return undefined;
    const why = synced ? ` (its Synced condition: ${synced.reason})` : " (keyward has not passed over it yet)";
    throw new ReconcileError(
      "ReferenceNotReady",
      `Project ${keyString(key)} has no project id yet${why}: this resource's cleanup at the service waits for it; set deletionPolicy Retain to let it go without`,
      { retryable: true },
    );
  }
}

/**
 * The project this resource's external object lives in as its own metadata records it, for a
 * deletion whose Project resource is gone (deleted with deletionPolicy Retain, or not restored):
 * keyward.dev/project-id, which keyward writes with the finalizer, else the project this object's
 * own create-started mark (its UID) records. Metadata is anyone's to write, so it is only a name to
 * check: a project that a Project of another namespace records is that namespace's, and is never
 * acted on from here (undefined: released without a call). What else the deletion does there
 * passes the checks every adoption passes — the resource's own credential, its own member or sync
 * (name and project), the claim rule.
 */
export async function recordedProject(c: CleanupContext): Promise<string | undefined> {
  const recorded = projectRecordedIn(c.obj);
  if (recorded === undefined) return undefined;
  const others = (await c.recording(projectRef, "projectId", recorded)).filter(
    (p) =>
      p.metadata.namespace !== c.key.namespace &&
      ((p.status as { projectId?: string } | undefined)?.projectId === recorded ||
        p.metadata.annotations?.[ANNOTATION_EXTERNAL_ID] === recorded),
  );
  return others.length === 0 ? recorded : undefined;
}

/** The project an object's metadata records (recordedProject), unchecked. */
export function projectRecordedIn(obj: CleanupContext["obj"]): string | undefined {
  const annotations = obj.metadata.annotations ?? {};
  return asProjectId(annotations[ANNOTATION_PROJECT_ID]) ?? asProjectId(createScope(annotations, obj.metadata.uid));
}

/** A value read from metadata as a project id: within a project id's bounds, else undefined. */
export function asProjectId(value: string | undefined): string | undefined {
  return projectIdField.safeParse(value).success ? value : undefined;
}

/** What a reason a Project's condition carries means (engine, shared and Project reasons). */
function reasonMeans(reason: string): string | undefined {
  const tables: Readonly<Record<string, { means: string }>>[] = [engineReasons, sharedReasons, projectKind.reasons];
  return tables.find((t) => Object.hasOwn(t, reason))?.[reason]?.means;
}
