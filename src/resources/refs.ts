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
