import { z } from "zod";
import { limits, optionalBoolean, optionalNumber, optionalString } from "./common.ts";

export const projectTypes = ["secret-manager", "cert-manager", "kms", "ssh", "secret-scanning", "pam"] as const;
export type ProjectType = (typeof projectTypes)[number];

// ---- responses -------------------------------------------------------------------------

export const projectEnvironmentSchema = z.looseObject({
  name: z.string(),
  slug: z.string(),
  id: z.string(),
});
export type ProjectEnvironment = z.infer<typeof projectEnvironmentSchema>;

export const projectRoleSchema = z.looseObject({
  id: z.string(),
  name: z.string(),
  description: optionalString(),
  slug: z.string(),
  permissions: z.unknown().optional(),
  createdAt: z.string().optional(),
  updatedAt: z.string().optional(),
  projectId: z.string().optional(),
  version: optionalNumber(),
});
export type ProjectRole = z.infer<typeof projectRoleSchema>;

/** A project as every response carries it; `environments` is absent in the delete response. */
export const projectSchema = z.looseObject({
  id: z.string(),
  _id: z.string().optional(),
  name: z.string(),
  slug: z.string(),
  type: z.string(),
  orgId: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
  environments: z.array(projectEnvironmentSchema).optional(),
  description: optionalString(),
  defaultProduct: optionalString(),
  autoCapitalization: optionalBoolean(),
  version: optionalNumber(),
  upgradeStatus: optionalString(),
  pitVersionLimit: optionalNumber(),
  kmsCertificateKeyId: optionalString(),
  auditLogsRetentionDays: optionalNumber(),
  hasDeleteProtection: optionalBoolean(),
  secretSharing: optionalBoolean(),
  showSnapshotsLegacy: optionalBoolean(),
  secretDetectionIgnoreValues: z.array(z.string()).nullish(),
  kmsSecretManagerKeyId: optionalString(),
  roles: z.array(projectRoleSchema).optional(),
});
export type Project = z.infer<typeof projectSchema>;

/** Get-by-id, get-by-slug, list and create responses always carry the environments. */
export const projectWithEnvironmentsSchema = projectSchema.extend({
  environments: z.array(projectEnvironmentSchema),
});
export type ProjectWithEnvironments = z.infer<typeof projectWithEnvironmentsSchema>;

export const createProjectResponseSchema = z.looseObject({ project: projectWithEnvironmentsSchema });
export const listProjectsResponseSchema = z.looseObject({ projects: z.array(projectWithEnvironmentsSchema) });
export const getProjectResponseSchema = z.looseObject({ project: projectWithEnvironmentsSchema });
/** Get by slug answers the project itself, not wrapped. */
export const getProjectBySlugResponseSchema = projectWithEnvironmentsSchema;
export const updateProjectResponseSchema = z.looseObject({ project: projectSchema });
export const deleteProjectResponseSchema = z.looseObject({ project: projectSchema });

// ---- requests --------------------------------------------------------------------------

export const createProjectBodySchema = z.object({
  projectName: z.string(),
  projectDescription: z.string().optional(),
  slug: z.string().min(limits.projectSlug.min).max(limits.projectSlug.max).optional(),
  kmsKeyId: z.string().optional(),
  template: z.string().min(limits.templateName.min).max(limits.templateName.max).optional(),
  type: z.enum(projectTypes).optional(),
  shouldCreateDefaultEnvs: z.boolean().optional(),
  hasDeleteProtection: z.boolean().optional(),
});
export type CreateProjectBody = z.input<typeof createProjectBodySchema>;

export const updateProjectBodySchema = z.object({
  name: z.string().max(limits.projectUpdateNameMax).optional(),
  description: z.string().max(limits.projectUpdateDescriptionMax).optional(),
  autoCapitalization: z.boolean().optional(),
  hasDeleteProtection: z.boolean().optional(),
  slug: z.string().optional(),
  secretSharing: z.boolean().optional(),
  showSnapshotsLegacy: z.boolean().optional(),
  secretDetectionIgnoreValues: z.array(z.string()).optional(),
  pitVersionLimit: z.number().min(limits.pitVersionLimit.min).max(limits.pitVersionLimit.max).optional(),
});
export type UpdateProjectBody = z.input<typeof updateProjectBodySchema>;

/**
 * List-projects query. interface.md names none of its parameters and speaks of two booleans
 * and a project type; the real service's route takes `includeRoles` (boolean, default false)
 * and `type` only; it has no second boolean, so none is sent (the emulator agrees).
 */
export const listProjectsQuerySchema = z.object({
  includeRoles: z.boolean().optional(),
  type: z.enum(projectTypes).optional(),
});
export type ListProjectsQuery = z.input<typeof listProjectsQuerySchema>;

export const projectSlugSchema = z.string().min(limits.slugLookup.min).max(limits.slugLookup.max);
