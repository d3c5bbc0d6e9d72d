// Resolving a kind's project: spec.projectRef (a Project in the same namespace, which must have
// its id in status) or spec.projectId (a project keyward does not manage).
import type { Kube } from "../kube/client.ts";
import { keyString } from "../kube/keys.ts";
import { readCached } from "../kube/objects.ts";
import { ReconcileError } from "../engine/managed.ts";
import { ref as projectRef } from "./project.ts";

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
 * Project is gone, or the spec names none), and the resource is released without a call. A
 * Project that exists without an id yet — restored from a backup, before its first pass — is
 * waited for (retryable): releasing now would skip the cleanup the deletion owes (a
 * remove-secrets, a revoke). The Project's pass writes the id even while it is being deleted
 * itself, and one whose project is gone at the service goes away, so the wait ends either way.
 */
export async function projectIdForCleanup(kube: Kube, namespace: string, spec: ProjectReference): Promise<string | undefined> {
  try {
    return await resolveProjectId(kube, namespace, spec);
  } catch (err) {
    if (!(err instanceof ReconcileError) || err.reason !== "ReferenceNotReady") return undefined;
    const key = { namespace, name: spec.projectRef?.name ?? "" };
    if (!(await readCached(kube, projectRef, key))) return undefined;
    throw new ReconcileError(
      "ReferenceNotReady",
      `Project ${keyString(key)} has no project id yet: this resource's cleanup at the service waits for it`,
      { retryable: true },
    );
  }
}
