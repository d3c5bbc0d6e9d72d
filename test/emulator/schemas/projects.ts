// Request schemas of the project operations, from interface.md's tables and Limits.
import { z } from "zod";
import { queryBoolean } from "./parse.ts";

export const projectTypes = ["secret-manager", "cert-manager", "kms", "ssh", "secret-scanning", "pam"] as const;

export const createProjectBody = z.object({
  projectName: z.string(),
  projectDescription: z.string().optional(),
  slug: z.string().min(5).max(36).optional(),
  kmsKeyId: z.string().optional(),
  template: z.string().min(1).max(64).default("default"),
  type: z.enum(projectTypes).default("secret-manager"),
  shouldCreateDefaultEnvs: z.boolean().default(true),
  hasDeleteProtection: z.boolean().default(false),
});

export const updateProjectBody = z.object({
  name: z.string().max(64).optional(),
  description: z.string().max(256).optional(),
  autoCapitalization: z.boolean().optional(),
  hasDeleteProtection: z.boolean().optional(),
  slug: z.string().optional(),
  secretSharing: z.boolean().optional(),
  showSnapshotsLegacy: z.boolean().optional(),
  secretDetectionIgnoreValues: z.array(z.string()).optional(),
  pitVersionLimit: z.number().min(1).max(100).optional(),
});

// The real service's names: includeRoles and type. Its list route has no second boolean
// (README "Choices"); other query parameters are ignored, as the real zod object strips them.
export const listProjectsQuery = z.object({
  includeRoles: queryBoolean("false"),
  type: z.enum(projectTypes).optional(),
});

export const projectSlugParam = z.object({ slug: z.string().min(1).max(64) });
