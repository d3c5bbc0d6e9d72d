// Projects: create (v2/workspace), list, get by id, get by slug, update, delete.
import { badRequest, forbidden, notFound } from "../errors.ts";
import {
  addProject,
  deleteProjectCascade,
  findProjectBySlug,
  generateProjectSlug,
  nowIso,
  projectRoles,
  setProjectSlug,
} from "../model.ts";
import type { HandlerContext, Route } from "../router.ts";
import type { ProjectRec, ProjectRoleRec, State } from "../state.ts";
import { parse } from "../schemas/parse.ts";
import { applyDeferredMembers } from "../seed.ts";
import { createProjectBody, listProjectsQuery, projectSlugParam, updateProjectBody } from "../schemas/projects.ts";

/** The project without `_id` and environments: the delete response. */
export function projectBaseView(p: ProjectRec): Record<string, unknown> {
  return {
    id: p.id,
    name: p.name,
    slug: p.slug,
    type: p.type,
    orgId: p.orgId,
    description: p.description,
    defaultProduct: p.defaultProduct,
    autoCapitalization: p.autoCapitalization,
    version: p.version,
    upgradeStatus: p.upgradeStatus,
    pitVersionLimit: p.pitVersionLimit,
    kmsCertificateKeyId: p.kmsCertificateKeyId,
    auditLogsRetentionDays: p.auditLogsRetentionDays,
    hasDeleteProtection: p.hasDeleteProtection,
    secretSharing: p.secretSharing,
    showSnapshotsLegacy: p.showSnapshotsLegacy,
    secretDetectionIgnoreValues: p.secretDetectionIgnoreValues,
    createdAt: p.createdAt,
    updatedAt: p.updatedAt,
  };
}

export function projectView(p: ProjectRec): Record<string, unknown> {
  return { ...projectBaseView(p), _id: p.id, environments: p.environments.map((env) => ({ ...env })) };
}

function roleView(role: ProjectRoleRec): Record<string, unknown> {
  return {
    id: role.id,
    name: role.name,
    description: role.description,
    slug: role.slug,
    permissions: [],
    createdAt: role.createdAt,
    updatedAt: role.updatedAt,
    projectId: role.projectId,
    version: 1,
  };
}

export function requireProject(state: State, projectId: string): ProjectRec {
  const project = state.projects[projectId];
  if (!project) throw notFound(`Project with ID '${projectId}' not found`);
  return project;
}

function createProject({ core, body }: HandlerContext): unknown {
  const input = parse(createProjectBody, body);
  if (input.slug !== undefined && findProjectBySlug(core.state, input.slug)) {
    throw badRequest(`A project with the slug '${input.slug}' already exists`);
  }
  const project = addProject(core.state, {
    name: input.projectName,
    slug: input.slug ?? generateProjectSlug(core.state, input.projectName),
    type: input.type,
    orgId: core.orgId,
    description: input.projectDescription ?? null,
    template: input.template,
    kmsKeyId: input.kmsKeyId ?? null,
    hasDeleteProtection: input.hasDeleteProtection,
    createDefaultEnvs: input.shouldCreateDefaultEnvs,
  });
  applyDeferredMembers(core.state, project);
  return { project: { ...projectView(project), kmsSecretManagerKeyId: project.kmsSecretManagerKeyId } };
}

function listProjects({ core, query }: HandlerContext): unknown {
  const { includeRoles, type } = parse(listProjectsQuery, query);
  const projects = Object.values(core.state.projects)
    .filter((project) => type === undefined || project.type === type)
    .sort((a, b) => a.createdAt.localeCompare(b.createdAt))
    .map((project) =>
      includeRoles ? { ...projectView(project), roles: projectRoles(core.state, project.id).map(roleView) } : projectView(project),
    );
  return { projects };
}

function getProject({ core, params }: HandlerContext): unknown {
  return { project: projectView(requireProject(core.state, params["projectId"] ?? "")) };
}

function getProjectBySlug({ core, params }: HandlerContext): unknown {
  const { slug } = parse(projectSlugParam, params);
  const project = findProjectBySlug(core.state, slug);
  if (!project) throw notFound(`Project with slug '${slug}' not found`);
  return projectView(project);
}

function updateProject({ core, params, body }: HandlerContext): unknown {
  const input = parse(updateProjectBody, body);
  const project = requireProject(core.state, params["projectId"] ?? "");
  if (input.slug !== undefined && input.slug !== project.slug && findProjectBySlug(core.state, input.slug)) {
    throw badRequest(`A project with the slug '${input.slug}' already exists`);
  }
  const { slug, ...rest } = input;
  for (const [key, value] of Object.entries(rest)) {
    if (value !== undefined) Object.assign(project, { [key]: value });
  }
  if (slug !== undefined) setProjectSlug(core.state, project, slug);
  project.updatedAt = nowIso();
  return { project: projectView(project) };
}

function deleteProject({ core, params }: HandlerContext): unknown {
  const project = requireProject(core.state, params["projectId"] ?? "");
  if (project.hasDeleteProtection) {
    throw forbidden(`Project '${project.name}' has delete protection enabled; turn it off before deleting the project`);
  }
  deleteProjectCascade(core.state, project.id);
  return { project: projectBaseView(project) };
}

export const projectRoutes: Route[] = [
  { method: "POST", path: "/api/v2/workspace", operation: "createProject", limit: "projectCreate", handle: createProject },
  { method: "GET", path: "/api/v1/projects", operation: "listProjects", limit: "read", handle: listProjects },
  { method: "GET", path: "/api/v1/projects/slug/:slug", operation: "getProjectBySlug", limit: "read", handle: getProjectBySlug },
  { method: "GET", path: "/api/v1/projects/:projectId", operation: "getProject", limit: "read", handle: getProject },
  { method: "PATCH", path: "/api/v1/projects/:projectId", operation: "updateProject", limit: "write", handle: updateProject },
  { method: "DELETE", path: "/api/v1/projects/:projectId", operation: "deleteProject", limit: "write", handle: deleteProject },
];
