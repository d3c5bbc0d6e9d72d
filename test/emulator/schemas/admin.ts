// Bodies of the admin API (/_emulator/*): the contract's Faults, Seed, MemberSeed, job outcome.
import { z } from "zod";

export const faultsBody = z.object({
  match: z.object({ method: z.string().optional(), pathPattern: z.string().optional() }).optional(),
  latencyMs: z.number().min(0).optional(),
  latencyWhen: z.enum(["before-handling", "after-handling"]).optional(),
  landsWithoutClient: z.boolean().optional(),
  errorRate: z.number().min(0).max(1).optional(),
  errorStatus: z.number().int().min(100).max(599).optional(),
  rateLimit: z.object({ count: z.number().int().min(0), retryAfterSeconds: z.number().min(0) }).optional(),
  drop: z.object({ count: z.number().int().min(0), when: z.enum(["before-handling", "after-handling"]) }).optional(),
});

const memberRole = z.object({
  role: z.string(),
  isTemporary: z.boolean().optional(),
  temporaryMode: z.string().optional(),
  temporaryRange: z.string().optional(),
  temporaryAccessStartTime: z.string().optional(),
});

export const memberSeedBody = z.object({
  projectId: z.string().optional(),
  projectSlug: z.string().optional(),
  username: z.string().optional(),
  groupId: z.string().optional(),
  groupSlug: z.string().optional(),
  roles: z.array(memberRole),
});

export const memberSelectorBody = z.object({
  projectId: z.string(),
  username: z.string().optional(),
  groupId: z.string().optional(),
});

export const jobOutcomeBody = z.object({
  syncId: z.string(),
  action: z.enum(["sync", "import", "remove"]),
  outcome: z.enum(["succeeded", "failed"]),
  message: z.string().optional(),
  times: z.number().int().min(1).optional(),
});

export const seedBody = z.object({
  users: z
    .array(
      z.object({
        id: z.string().optional(),
        username: z.string(),
        email: z.string().optional(),
        firstName: z.string().optional(),
        lastName: z.string().optional(),
      }),
    )
    .optional(),
  groups: z.array(z.object({ id: z.string().optional(), name: z.string(), slug: z.string() })).optional(),
  identities: z
    .array(
      z.object({
        id: z.string(),
        name: z.string().optional(),
        accessTokenTTL: z.number().min(0).optional(),
        accessTokenMaxTTL: z.number().min(0).optional(),
        answeredExpiresIn: z.number().optional(),
      }),
    )
    .optional(),
  connections: z.array(z.object({ id: z.string(), name: z.string(), app: z.string() })).optional(),
  projects: z
    .array(
      z.object({
        id: z.string().optional(),
        name: z.string(),
        slug: z.string(),
        type: z.string().optional(),
        hasDeleteProtection: z.boolean().optional(),
      }),
    )
    .optional(),
  certificateProfiles: z
    .array(z.looseObject({ projectId: z.string(), slug: z.string(), enrollmentType: z.enum(["api", "est", "acme"]) }))
    .optional(),
  memberships: z.array(memberSeedBody).optional(),
  customRoles: z
    .array(
      z.object({
        id: z.string().optional(),
        projectId: z.string().optional(),
        projectSlug: z.string().optional(),
        slug: z.string(),
        name: z.string().optional(),
      }),
    )
    .optional(),
});
