// Resolving a kind's project: spec.projectRef (a Project in the same namespace, which must have
// its id in status) or spec.projectId (a project keyward does not manage).
import type { Kube } from "../kube/client.ts";
import { keyString } from "../kube/keys.ts";
import { readCached } from "../kube/objects.ts";
import { ReconcileError } from "../engine/errors.ts";
import { engineReasons } from "../engine/reasons.ts";
import { kind as projectKind, ref as projectRef } from "./project.ts";
import { sharedReasons } from "./reasons.ts";

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

/**
 * The project id for a resource being deleted; undefined when no Project can tell it any more (the
 * Project is gone, or the spec names none, or the Project failed for a reason that needs a person),
 * and the resource is released without a call. A Project that may still get its id — restored from
 * a backup and not passed over yet, or failing for a reason keyward retries — is waited for
 * (retryable): releasing now would skip the cleanup the deletion owes (a remove-secrets, a
 * revoke). The Project's pass writes the id even while it is being deleted itself.
 */
export async function projectIdForCleanup(kube: Kube, namespace: string, spec: ProjectReference): Promise<string | undefined> {
  try {
    return await resolveProjectId(kube, namespace, spec);
  } catch (err) {
    if (!(err instanceof ReconcileError)) throw err;
    if (err.reason !== "ReferenceNotReady") return undefined;
    const key = { namespace, name: spec.projectRef?.name ?? "" };
    const project = await readCached(kube, projectRef, key);
    const synced = project?.status?.conditions?.find((c) => c.type === "Synced");
    if (!project || (synced && (synced.status === "True" || reasonMeans(synced.reason) !== "retrying"))) return undefined;
    const why = synced ? ` (its Synced condition: ${synced.reason})` : " (keyward has not passed over it yet)";
    throw new ReconcileError(
      "ReferenceNotReady",
      `Project ${keyString(key)} has no project id yet${why}: this resource's cleanup at the service waits for it; set deletionPolicy Retain to let it go without`,
      { retryable: true },
    );
  }
}

/** What a reason a Project's condition carries means (engine, shared and Project reasons). */
function reasonMeans(reason: string): string | undefined {
  const tables: Readonly<Record<string, { means: string }>>[] = [engineReasons, sharedReasons, projectKind.reasons];
  return tables.find((t) => Object.hasOwn(t, reason))?.[reason]?.means;
}
