// Projects: create (v2/workspace), list, get, get by slug, update, delete — shapes, defaults,
// wrapping, errors and the project rows of the Limits section.

import type { HttpResponse } from "./http.ts";
import type { ProbeContext } from "./context.ts";
import {
  compare,
  expectError,
  expectNotValidationFailure,
  expectOk,
  field,
  fieldString,
  randomSuffix,
  repeat,
  UNKNOWN_UUID,
} from "./context.ts";
import {
  absentProblems,
  arrayOf,
  isRecord,
  object,
  PROJECT_DEFAULTS,
  projectCoreSpec,
  projectRoleSpec,
  projectWithEnvSpec,
  shapeProblems,
  str,
} from "./shapes.ts";

export interface ProbeProject {
  id: string;
  slug: string;
  envSlug: string | undefined; // first environment, for secret syncs
}

const CREATE = "/api/v2/workspace";
const projectPath = (id: string): string => `/api/v1/projects/${id}`;

export async function createProject(ctx: ProbeContext, body: Record<string, unknown>): Promise<HttpResponse> {
  const res = await ctx.call("POST", CREATE, { body });
  const id = fieldString(field(res.body, "project"), "id");
  if (res.status === 200 && id !== undefined) ctx.cleanup.add(id);
  return res;
}

// Create the probe's main project and check everything the create response promises.
export async function probeCreate(ctx: ProbeContext): Promise<ProbeProject | undefined> {
  const slug = `probe-${ctx.runId}`;
  const res = await createProject(ctx, { projectName: `Probe ${ctx.runId}`, slug, projectDescription: "probe" });
  const project = field(res.body, "project");
  ctx.record("project.create.wrapped", "create project answers 200 with {project}", [
    ...expectOk(res),
    ...(isRecord(project) ? [] : ["body has no project object"]),
  ]);
  if (!isRecord(project)) return undefined;
  ctx.record("project.create.shape", "create response: every required field with its type, and kmsSecretManagerKeyId", [
    ...shapeProblems(project, { ...projectWithEnvSpec, kmsSecretManagerKeyId: str }),
    ...absentProblems(project, ["roles"]),
  ]);
  ctx.record(
    "project.create.defaults",
    "create response carries the documented defaults (version 1, pitVersionLimit 10, hasDeleteProtection false, secretSharing true, showSnapshotsLegacy false, autoCapitalization false, type secret-manager)",
    [
      ...Object.entries(PROJECT_DEFAULTS).flatMap(([k, v]) => compare(k, project[k], v)),
      ...compare("type", project.type, "secret-manager"),
    ],
  );
  const envs = project.environments;
  ctx.record("project.create.request-fields", "create response reflects projectName and slug; default environments are created", [
    ...compare("name", project.name, `Probe ${ctx.runId}`),
    ...compare("slug", project.slug, slug),
    ...(Array.isArray(envs) && envs.length > 0
      ? []
      : ["environments: expected the default environments (shouldCreateDefaultEnvs defaults to true)"]),
  ]);
  const id = typeof project.id === "string" ? project.id : undefined;
  if (id === undefined) return undefined;
  const first: unknown = Array.isArray(envs) ? envs[0] : undefined;
  return { id, slug, envSlug: fieldString(first, "slug") };
}

export async function probeReads(ctx: ProbeContext, main: ProbeProject): Promise<void> {
  const get = await ctx.call("GET", projectPath(main.id));
  const project = field(get.body, "project");
  ctx.record("project.get.shape", "get project answers {project} with every required field, environments and _id", [
    ...expectOk(get),
    ...shapeProblems(project, projectWithEnvSpec),
    ...compare("project.id", field(project, "id"), main.id),
  ]);
  ctx.record(
    "project.get.create-only-fields-absent",
    "get project carries neither kmsSecretManagerKeyId nor roles",
    absentProblems(project, ["kmsSecretManagerKeyId", "roles"]),
  );

  const bySlug = await ctx.call("GET", `/api/v1/projects/slug/${main.slug}`);
  ctx.record("project.get-by-slug.unwrapped", "get project by slug answers the project object directly, not wrapped", [
    ...expectOk(bySlug),
    ...absentProblems(bySlug.body, ["project"]),
    ...compare("id", field(bySlug.body, "id"), main.id),
  ]);
  ctx.record(
    "project.get-by-slug.shape",
    "get-by-slug project: every required field, environments and _id; no kmsSecretManagerKeyId or roles",
    [...shapeProblems(bySlug.body, projectWithEnvSpec), ...absentProblems(bySlug.body, ["kmsSecretManagerKeyId", "roles"])],
  );
  await probeList(ctx, main);
}

async function probeList(ctx: ProbeContext, main: ProbeProject): Promise<void> {
  const list = await ctx.call("GET", "/api/v1/projects");
  const projects = field(list.body, "projects");
  const items: unknown[] = Array.isArray(projects) ? projects : [];
  ctx.record("project.list.shape", "list projects answers {projects: [...]} with every required field per project", [
    ...expectOk(list),
    ...(Array.isArray(projects)
      ? arrayOf(object(projectWithEnvSpec))(projects).map((p) => `projects${p}`)
      : ["projects: missing or not an array"]),
    ...(items.some((p) => field(p, "id") === main.id) ? [] : ["the probe's project is not listed"]),
  ]);
  ctx.record(
    "project.list.no-roles-without-flag",
    "list projects without includeRoles carries no roles and no kmsSecretManagerKeyId",
    items.flatMap((p, i) => absentProblems(p, ["roles", "kmsSecretManagerKeyId"]).map((x) => `projects[${i}].${x}`)),
  );
  // includeRoles is the real service's name for the boolean that adds roles (README.md).
  const withRoles = await ctx.call("GET", "/api/v1/projects", { query: { includeRoles: "true" } });
  const withRolesItems = field(withRoles.body, "projects");
  ctx.record("project.list.roles-with-flag", "list projects with includeRoles=true carries roles: array of project role per project", [
    ...expectOk(withRoles),
    ...(Array.isArray(withRolesItems)
      ? arrayOf(object({ roles: arrayOf(object(projectRoleSpec)) }))(withRolesItems).map((p) => `projects${p}`)
      : ["projects: missing or not an array"]),
  ]);
}

export async function probeTypeFilter(ctx: ProbeContext, main: ProbeProject): Promise<void> {
  const created = await createProject(ctx, {
    projectName: `Probe cert ${ctx.runId}`,
    slug: `probe-cert-${ctx.runId}`,
    type: "cert-manager",
  });
  const certId = fieldString(field(created.body, "project"), "id");
  ctx.record("project.create.type", "create with type cert-manager answers a project of type cert-manager", [
    ...expectOk(created),
    ...compare("project.type", field(field(created.body, "project"), "type"), "cert-manager"),
  ]);
  // type is the real service's name for the project-type filter (README.md).
  const list = await ctx.call("GET", "/api/v1/projects", { query: { type: "cert-manager" } });
  const raw = field(list.body, "projects");
  const items: unknown[] = Array.isArray(raw) ? raw : [];
  ctx.record("project.list.type-filter", "list projects with type=cert-manager lists only cert-manager projects", [
    ...expectOk(list),
    ...items.flatMap((p, i) => compare(`projects[${i}].type`, field(p, "type"), "cert-manager")),
    ...(certId !== undefined && !items.some((p) => field(p, "id") === certId) ? ["the cert-manager project is not listed"] : []),
    ...(items.some((p) => field(p, "id") === main.id) ? ["the secret-manager project is listed"] : []),
  ]);
}

export async function probeUpdate(ctx: ProbeContext, main: ProbeProject): Promise<void> {
  const changes = {
    name: `Probe renamed ${ctx.runId}`,
    description: "updated by the probe",
    autoCapitalization: true,
    secretSharing: false,
    showSnapshotsLegacy: true,
    secretDetectionIgnoreValues: ["probe-ignored"],
    pitVersionLimit: 20,
  };
  const res = await ctx.call("PATCH", projectPath(main.id), { body: changes });
  const project = field(res.body, "project");
  ctx.record("project.update.shape", "update project answers {project} with every required field and without kmsSecretManagerKeyId", [
    ...expectOk(res),
    ...shapeProblems(project, projectCoreSpec),
    ...absentProblems(project, ["kmsSecretManagerKeyId", "roles"]),
  ]);
  ctx.record("project.update.applied", "update project returns the updated fields", sameFields(project, changes));
  const get = await ctx.call("GET", projectPath(main.id));
  ctx.record("project.update.stored", "a later get returns the updated fields", [
    ...expectOk(get),
    ...sameFields(field(get.body, "project"), changes),
  ]);

  const protect = await ctx.call("PATCH", projectPath(main.id), { body: { hasDeleteProtection: true } });
  const after = await ctx.call("GET", projectPath(main.id));
  ctx.record("project.update.delete-protection-stored", "update with hasDeleteProtection true: the field is stored on the project", [
    ...expectOk(protect),
    ...compare("update response hasDeleteProtection", field(field(protect.body, "project"), "hasDeleteProtection"), true),
    ...compare("get hasDeleteProtection", field(field(after.body, "project"), "hasDeleteProtection"), true),
  ]);
  const unprotect = await ctx.call("PATCH", projectPath(main.id), { body: { hasDeleteProtection: false } });
  ctx.record("project.update.delete-protection-cleared", "update with hasDeleteProtection false clears it", [
    ...expectOk(unprotect),
    ...compare("hasDeleteProtection", field(field(unprotect.body, "project"), "hasDeleteProtection"), false),
  ]);
}

function sameFields(project: unknown, expected: Record<string, unknown>): string[] {
  return Object.entries(expected).flatMap(([k, v]) =>
    JSON.stringify(field(project, k)) === JSON.stringify(v) ? [] : compare(k, field(project, k), v),
  );
}

export async function probeProjectErrors(ctx: ProbeContext, main: ProbeProject): Promise<void> {
  const cases: [string, string, Promise<HttpResponse>][] = [
    ["project.get.unknown-id", "get project with an unknown id answers 404", ctx.call("GET", projectPath(UNKNOWN_UUID))],
    [
      "project.update.unknown-id",
      "update project with an unknown id answers 404",
      ctx.call("PATCH", projectPath(UNKNOWN_UUID), { body: { description: "x" } }),
    ],
    ["project.delete.unknown-id", "delete project with an unknown id answers 404", ctx.call("DELETE", projectPath(UNKNOWN_UUID))],
    [
      "project.get-by-slug.unknown",
      "get project by an unknown slug answers 404",
      ctx.call("GET", `/api/v1/projects/slug/no-such-project-${ctx.runId}`),
    ],
  ];
  for (const [id, description, pending] of cases) ctx.record(id, description, expectError(await pending, 404));
  const dup = await createProject(ctx, { projectName: `Probe dup ${ctx.runId}`, slug: main.slug });
  ctx.record("project.create.duplicate-slug", "create project with a slug already in use answers 400", expectError(dup, 400));
}

export async function probeDeleteProtection(ctx: ProbeContext): Promise<void> {
  const created = await createProject(ctx, {
    projectName: `Probe protected ${ctx.runId}`,
    slug: `probe-prot-${ctx.runId}`,
    hasDeleteProtection: true,
  });
  const id = fieldString(field(created.body, "project"), "id");
  ctx.record("project.create.delete-protection", "create with hasDeleteProtection true answers a project with hasDeleteProtection true", [
    ...expectOk(created),
    ...compare("hasDeleteProtection", field(field(created.body, "project"), "hasDeleteProtection"), true),
  ]);
  if (id === undefined) return;
  const refused = await ctx.call("DELETE", projectPath(id));
  const still = await ctx.call("GET", projectPath(id));
  ctx.record("project.delete.protected", "delete a delete-protected project answers 403 and the project remains", [
    ...expectError(refused, 403),
    ...(still.status === 200 ? [] : [`project gone after the refused delete (get answered HTTP ${still.status})`]),
  ]);
  await ctx.call("PATCH", projectPath(id), { body: { hasDeleteProtection: false } });
  await probeDelete(ctx, id);
}

// Delete a project, checking the delete response and that it is gone afterwards.
export async function probeDelete(ctx: ProbeContext, id: string): Promise<void> {
  const res = await ctx.call("DELETE", projectPath(id));
  const project = field(res.body, "project");
  ctx.record("project.delete.shape", "delete project answers {project} with the core fields, without _id and environments", [
    ...expectOk(res),
    ...shapeProblems(project, projectCoreSpec),
    ...absentProblems(project, ["_id", "environments", "kmsSecretManagerKeyId", "roles"]),
    ...compare("project.id", field(project, "id"), id),
  ]);
  if (res.status === 200) ctx.cleanup.delete(id);
  const gone = await ctx.call("GET", projectPath(id));
  ctx.record("project.delete.gone", "after delete, get project answers 404", expectError(gone, 404));
}

export async function probeProjectLimits(ctx: ProbeContext, main: ProbeProject): Promise<void> {
  await slugLimits(ctx);
  await templateLimits(ctx);
  await createValidation(ctx);
  await updateLimits(ctx, main);
  const at = await ctx.call("GET", `/api/v1/projects/slug/${repeat(`absent-${ctx.runId}-`, 64)}`);
  ctx.record(
    "limit.slug-lookup.max-accepted",
    "get by slug with a 64-char slug passes validation (404: no such project)",
    expectError(at, 404),
  );
  const past = await ctx.call("GET", `/api/v1/projects/slug/${repeat(`absent-${ctx.runId}-`, 65)}`);
  ctx.record("limit.slug-lookup.max-rejected", "get by slug with a 65-char slug answers 422", expectError(past, 422));
}

async function slugLimits(ctx: ProbeContext): Promise<void> {
  const cases: [string, string, number, boolean][] = [
    ["limit.project-slug.min-accepted", "create project with a 5-char slug is accepted", 5, true],
    ["limit.project-slug.min-rejected", "create project with a 4-char slug answers 422", 4, false],
    ["limit.project-slug.max-accepted", "create project with a 36-char slug is accepted", 36, true],
    ["limit.project-slug.max-rejected", "create project with a 37-char slug answers 422", 37, false],
  ];
  for (const [id, description, length, accepted] of cases) {
    const slug = length <= 5 ? `p${randomSuffix(length - 1)}` : repeat(`probe-${ctx.runId}-s${length}-`, length);
    const res = await createProject(ctx, { projectName: `Probe slug ${length} ${ctx.runId}`, slug });
    ctx.record(
      id,
      description,
      accepted ? [...expectOk(res), ...compare("project.slug", field(field(res.body, "project"), "slug"), slug)] : expectError(res, 422),
    );
  }
}

async function templateLimits(ctx: ProbeContext): Promise<void> {
  const cases: [string, string, string, boolean][] = [
    ["limit.template.min-rejected", "create project with an empty template answers 422", "", false],
    [
      "limit.template.max-accepted",
      "create project with a 64-char template passes validation",
      repeat(`probe-template-${ctx.runId}-`, 64),
      true,
    ],
    [
      "limit.template.max-rejected",
      "create project with a 65-char template answers 422",
      repeat(`probe-template-${ctx.runId}-`, 65),
      false,
    ],
  ];
  for (const [id, description, template, accepted] of cases) {
    const res = await createProject(ctx, { projectName: `Probe template ${ctx.runId}`, template });
    ctx.record(id, description, accepted ? expectNotValidationFailure(res) : expectError(res, 422));
  }
  const one = await createProject(ctx, { projectName: `Probe template1 ${ctx.runId}`, template: "d" });
  ctx.record("limit.template.min-accepted", "create project with a 1-char template passes validation", expectNotValidationFailure(one));
}

async function createValidation(ctx: ProbeContext): Promise<void> {
  const noName = await createProject(ctx, { slug: `probe-noname-${ctx.runId}` });
  ctx.record("project.create.requires-name", "create project without projectName answers 422", expectError(noName, 422));
  const badType = await createProject(ctx, { projectName: `Probe badtype ${ctx.runId}`, type: "not-a-project-type" });
  ctx.record("project.create.type-enum", "create project with a type outside the enum answers 422", expectError(badType, 422));
  ctx.record(
    "errors.validation.error-name",
    "a validation failure names its error ValidationFailure (DESIGN.md)",
    compare("error", field(badType.body, "error"), "ValidationFailure"),
  );
}

async function updateLimits(ctx: ProbeContext, main: ProbeProject): Promise<void> {
  const cases: [string, string, Record<string, unknown>, boolean][] = [
    ["limit.update-name.max-accepted", "update project name with 64 chars is accepted", { name: repeat("Probe name ", 64) }, true],
    ["limit.update-name.max-rejected", "update project name with 65 chars answers 422", { name: repeat("Probe name ", 65) }, false],
    [
      "limit.update-description.max-accepted",
      "update project description with 256 chars is accepted",
      { description: repeat("probe description ", 256) },
      true,
    ],
    [
      "limit.update-description.max-rejected",
      "update project description with 257 chars answers 422",
      { description: repeat("probe description ", 257) },
      false,
    ],
    ["limit.pit-version-limit.min-accepted", "update pitVersionLimit 1 is accepted", { pitVersionLimit: 1 }, true],
    ["limit.pit-version-limit.min-rejected", "update pitVersionLimit 0 answers 422", { pitVersionLimit: 0 }, false],
    ["limit.pit-version-limit.max-accepted", "update pitVersionLimit 100 is accepted", { pitVersionLimit: 100 }, true],
    ["limit.pit-version-limit.max-rejected", "update pitVersionLimit 101 answers 422", { pitVersionLimit: 101 }, false],
  ];
  for (const [id, description, body, accepted] of cases) {
    const res = await ctx.call("PATCH", projectPath(main.id), { body });
    const project = field(res.body, "project");
    ctx.record(id, description, accepted ? [...expectOk(res), ...sameFields(project, body)] : expectError(res, 422));
  }
}
