// Record-level rules shared by the handlers and the seeding: new projects with their
// environments and roles, slugs, role resolution, folders, cascading deletes.
import { randomBytes, randomUUID } from "node:crypto";
import { notFound } from "./errors.ts";
import { parseDuration } from "./duration.ts";
import type { EnvironmentRec, FolderRec, MemberRoleRec, ProjectRec, ProjectRoleRec, State } from "./state.ts";

export const builtInRoles: Record<string, string> = {
  admin: "Admin",
  member: "Member",
  viewer: "Viewer",
  "no-access": "No Access",
};

const customRoleSlug = /^[a-z0-9]+(?:[-_][a-z0-9]+)*$/;

export function nowIso(): string {
  return new Date().toISOString();
}

export function slugify(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "");
}

function randomSuffix(): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  return [...randomBytes(4)].map((byte) => alphabet[byte % alphabet.length]).join("");
}

/** A slug from the project name, as the real service makes one: slugified name + 4 random chars. */
export function generateProjectSlug(state: State, name: string): string {
  const base = slugify(name).slice(0, 31).replace(/-+$/, "") || "project";
  for (;;) {
    const slug = `${base}-${randomSuffix()}`;
    if (!findProjectBySlug(state, slug)) return slug;
  }
}

// Projects by slug: every create looks its slug up (getProjectBySlug first, then the uniqueness
// check), and a scan per lookup made a create O(all projects) — most of a core at 50,000. Built on
// first use from the record it indexes (a new record after a reset or a reload gets a new index);
// slugs are set through addProject and setProjectSlug; a hit is checked against the record, so a
// removed project or a changed slug is a miss.
const slugIndexes = new WeakMap<State["projects"], Map<string, ProjectRec>>();

function slugIndex(state: State): Map<string, ProjectRec> {
  let index = slugIndexes.get(state.projects);
  if (!index) {
    index = new Map(Object.values(state.projects).map((project) => [project.slug, project]));
    slugIndexes.set(state.projects, index);
  }
  return index;
}

export function findProjectBySlug(state: State, slug: string): ProjectRec | undefined {
  const hit = slugIndex(state).get(slug);
  return hit && hit.slug === slug && state.projects[hit.id] === hit ? hit : undefined;
}

/** Changes a project's slug; callers check that no other project has it. */
export function setProjectSlug(state: State, project: ProjectRec, slug: string): void {
  project.slug = slug;
  slugIndex(state).set(slug, project);
}

export function defaultEnvironments(): EnvironmentRec[] {
  return [
    { id: randomUUID(), name: "Development", slug: "dev" },
    { id: randomUUID(), name: "Staging", slug: "staging" },
    { id: randomUUID(), name: "Production", slug: "prod" },
  ];
}

export interface NewProject {
  id?: string;
  name: string;
  slug: string;
  type: string;
  orgId: string;
  description?: string | null;
  template?: string;
  kmsKeyId?: string | null;
  hasDeleteProtection?: boolean;
  createDefaultEnvs: boolean;
}

export function addProject(state: State, input: NewProject): ProjectRec {
  const at = nowIso();
  const project: ProjectRec = {
    id: input.id ?? randomUUID(),
    name: input.name,
    slug: input.slug,
    type: input.type,
    orgId: input.orgId,
    description: input.description ?? null,
    defaultProduct: null,
    autoCapitalization: false,
    version: 1,
    upgradeStatus: null,
    pitVersionLimit: 10,
    kmsCertificateKeyId: null,
    auditLogsRetentionDays: null,
    hasDeleteProtection: input.hasDeleteProtection ?? false,
    secretSharing: true,
    showSnapshotsLegacy: false,
    secretDetectionIgnoreValues: null,
    kmsSecretManagerKeyId: randomUUID(),
    template: input.template ?? "default",
    kmsKeyId: input.kmsKeyId ?? null,
    createdAt: at,
    updatedAt: at,
    environments: input.createDefaultEnvs ? defaultEnvironments() : [],
  };
  state.projects[project.id] = project;
  slugIndex(state).set(project.slug, project);
  for (const [slug, name] of Object.entries(builtInRoles)) addProjectRole(state, project.id, slug, name, false);
  return project;
}

export function addProjectRole(state: State, projectId: string, slug: string, name: string, custom: boolean, id?: string): ProjectRoleRec {
  const existing = findProjectRole(state, projectId, slug);
  if (existing) {
    existing.name = name;
    return existing;
  }
  const at = nowIso();
  const role: ProjectRoleRec = {
    id: id ?? randomUUID(),
    projectId,
    slug,
    name,
    description: custom ? `Custom role ${slug}` : `${name} role`,
    custom,
    createdAt: at,
    updatedAt: at,
  };
  state.projectRoles[role.id] = role;
  roleIndex(state).set(roleKey(projectId, slug), role);
  return role;
}

// Roles by project and slug: every project create adds its built-in roles, and a scan of every
// role per addition made a create O(all roles) — 60 ms each at 4000 projects. Built on first use
// from the record it indexes (a new record after a reset or a reload gets a new index); additions
// go through addProjectRole; a hit is checked against the record, so a removed role is a miss.
const roleIndexes = new WeakMap<State["projectRoles"], Map<string, ProjectRoleRec>>();
const roleKey = (projectId: string, slug: string): string => `${projectId}\u0000${slug}`;

function roleIndex(state: State): Map<string, ProjectRoleRec> {
  let index = roleIndexes.get(state.projectRoles);
  if (!index) {
    index = new Map(Object.values(state.projectRoles).map((role) => [roleKey(role.projectId, role.slug), role]));
    roleIndexes.set(state.projectRoles, index);
  }
  return index;
}

export function findProjectRole(state: State, projectId: string, slug: string): ProjectRoleRec | undefined {
  const hit = roleIndex(state).get(roleKey(projectId, slug));
  return hit && state.projectRoles[hit.id] === hit ? hit : undefined;
}

export function projectRoles(state: State, projectId: string): ProjectRoleRec[] {
  return Object.values(state.projectRoles).filter((role) => role.projectId === projectId);
}

export interface RoleRequest {
  role: string;
  isTemporary?: boolean;
  temporaryMode?: string;
  temporaryRange?: string;
  temporaryAccessStartTime?: string;
}

/**
 * Resolves requested roles into stored role entries. A built-in slug maps to itself; any other
 * slug-shaped value is a custom role of the project (registered on first use when not seeded).
 */
export function buildMemberRoles(state: State, projectId: string, requested: RoleRequest[]): MemberRoleRec[] {
  const at = nowIso();
  return requested.map((item) => {
    const custom = item.role in builtInRoles ? undefined : resolveCustomRole(state, projectId, item.role);
    const entry: MemberRoleRec = {
      id: randomUUID(),
      role: item.role,
      isTemporary: item.isTemporary ?? false,
      createdAt: at,
      updatedAt: at,
    };
    if (custom) entry.customRoleId = custom.id;
    if (entry.isTemporary) Object.assign(entry, temporaryFields(item, at));
    return entry;
  });
}

/** A role a request may name: a built-in role or a slug-shaped custom role. */
export function isRoleName(role: string): boolean {
  return role in builtInRoles || (role.length <= 64 && customRoleSlug.test(role));
}

function resolveCustomRole(state: State, projectId: string, slug: string): ProjectRoleRec {
  const known = findProjectRole(state, projectId, slug);
  if (known) return known;
  if (slug.length > 64 || !customRoleSlug.test(slug)) throw notFound("One or more custom roles not found");
  return addProjectRole(state, projectId, slug, slug, true);
}

function temporaryFields(item: RoleRequest, at: string): Partial<MemberRoleRec> {
  const start = item.temporaryAccessStartTime ?? at;
  const range = item.temporaryRange ?? "1h";
  const end = new Date(Date.parse(start) + (parseDuration(range) ?? 3_600_000)).toISOString();
  return {
    temporaryMode: item.temporaryMode ?? "relative",
    temporaryRange: range,
    temporaryAccessStartTime: new Date(start).toISOString(),
    temporaryAccessEndTime: end,
  };
}

/** The folder record of a path in an environment, created on first use. */
export function folderFor(state: State, projectId: string, environmentId: string, path: string): FolderRec {
  const existing = Object.values(state.folders).find(
    (folder) => folder.projectId === projectId && folder.environmentId === environmentId && folder.path === path,
  );
  if (existing) return existing;
  const folder: FolderRec = { id: randomUUID(), projectId, environmentId, path };
  state.folders[folder.id] = folder;
  return folder;
}

/** Removes a project and everything that lives in it. */
export function deleteProjectCascade(state: State, projectId: string): void {
  Reflect.deleteProperty(state.projects, projectId);
  const owned = <T extends { projectId: string }>(records: Record<string, T>): void => {
    for (const [id, record] of Object.entries(records)) if (record.projectId === projectId) Reflect.deleteProperty(records, id);
  };
  owned(state.projectRoles);
  owned(state.memberships);
  owned(state.folders);
  const syncIds = new Set(
    Object.values(state.syncs)
      .filter((sync) => sync.projectId === projectId)
      .map((sync) => sync.id),
  );
  owned(state.syncs);
  for (const [id, job] of Object.entries(state.jobs)) if (syncIds.has(job.syncId)) Reflect.deleteProperty(state.jobs, id);
}
