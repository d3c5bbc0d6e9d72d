import { z } from "zod";
import { parseMsStyleDuration } from "../../lib/duration.ts";
import { isoDateTime, limits, optionalBoolean, optionalString } from "./common.ts";

// ---- responses -------------------------------------------------------------------------

/** A role entry inside user memberships, group memberships and the details lookup. */
export const membershipRoleSchema = z.looseObject({
  id: z.string(),
  role: z.string(),
  customRoleId: optionalString(),
  customRoleName: optionalString(),
  customRoleSlug: optionalString(),
  isTemporary: z.boolean(),
  temporaryMode: optionalString(),
  temporaryRange: optionalString(),
  temporaryAccessStartTime: optionalString(),
  temporaryAccessEndTime: optionalString(),
});
export type MembershipRole = z.infer<typeof membershipRoleSchema>;

export const membershipUserSchema = z.looseObject({
  id: z.string(),
  email: optionalString(),
  firstName: optionalString(),
  lastName: optionalString(),
  publicKey: optionalString(),
  /** Present in list responses only. */
  username: optionalString(),
});
export type MembershipUser = z.infer<typeof membershipUserSchema>;

export const userMembershipSchema = z.looseObject({
  id: z.string(),
  /** Present in list responses only. */
  createdAt: optionalString(),
  userId: z.string(),
  projectId: z.string(),
  user: membershipUserSchema,
  roles: z.array(membershipRoleSchema),
});
export type UserMembership = z.infer<typeof userMembershipSchema>;

export const groupMembershipSchema = z.looseObject({
  id: z.string(),
  groupId: z.string(),
  createdAt: optionalString(),
  updatedAt: optionalString(),
  roles: z.array(membershipRoleSchema),
  group: z.looseObject({ id: z.string(), name: z.string(), slug: z.string() }),
});
export type GroupMembership = z.infer<typeof groupMembershipSchema>;

/** A role entry returned by the membership and group-membership update operations. */
export const updatedRoleSchema = z.looseObject({
  id: z.string(),
  role: z.string(),
  projectMembershipId: optionalString(),
  customRoleId: optionalString(),
  isTemporary: optionalBoolean(),
  temporaryMode: optionalString(),
  temporaryRange: optionalString(),
  temporaryAccessStartTime: optionalString(),
  temporaryAccessEndTime: optionalString(),
  createdAt: optionalString(),
  updatedAt: optionalString(),
});
export type UpdatedRole = z.infer<typeof updatedRoleSchema>;

export const listMembershipsResponseSchema = z.looseObject({ memberships: z.array(userMembershipSchema) });
export const membershipDetailsResponseSchema = z.looseObject({ membership: userMembershipSchema });
export const listGroupsResponseSchema = z.looseObject({ groupMemberships: z.array(groupMembershipSchema) });
export const updateRolesResponseSchema = z.looseObject({ roles: z.array(updatedRoleSchema) });

// ---- requests --------------------------------------------------------------------------

/**
 * True for an ms-style duration (https://github.com/vercel/ms, what the service parses
 * `temporaryRange` with) such as "1h", "30m", "2 days" or "1500" that is above zero.
 */
export function isMsRange(value: string): boolean {
  return (parseMsStyleDuration(value) ?? 0) > 0;
}

export const permanentRoleSchema = z.object({
  role: z.string().min(1),
  isTemporary: z.literal(false).optional(),
});

export const temporaryRoleSchema = z.object({
  role: z.string().min(1),
  isTemporary: z.literal(true),
  temporaryMode: z.literal("relative"),
  temporaryRange: z.string().refine(isMsRange, { message: 'temporaryRange must be an ms-style duration above zero, e.g. "1h"' }),
  temporaryAccessStartTime: isoDateTime(),
});

/**
 * A role item of an update request: permanent `{role, isTemporary?: false}` (interface.md's
 * Option 1) or temporary (Option 2, shape from DESIGN.md). `role` is admin, member, viewer,
 * no-access or a custom role's slug.
 */
export const roleRequestSchema = z.union([permanentRoleSchema, temporaryRoleSchema]);
export type RoleRequest = z.input<typeof roleRequestSchema>;
export type PermanentRoleRequest = z.input<typeof permanentRoleSchema>;
export type TemporaryRoleRequest = z.input<typeof temporaryRoleSchema>;

const roleListSchema = z.array(roleRequestSchema).min(limits.roleListMin);

/** A user's role list: at least one entry, and (DESIGN.md) at least one of them permanent. */
export const updateMembershipRolesBodySchema = z.object({
  roles: roleListSchema.refine((roles) => roles.some((r) => r.isTemporary !== true), {
    message: "a user membership needs at least one permanent role",
  }),
});
export type UpdateMembershipRolesBody = z.input<typeof updateMembershipRolesBodySchema>;

export const updateGroupRolesBodySchema = z.object({ roles: roleListSchema });
export type UpdateGroupRolesBody = z.input<typeof updateGroupRolesBodySchema>;

export const membershipDetailsBodySchema = z.object({ username: z.string().min(limits.usernameMin) });
export type MembershipDetailsBody = z.input<typeof membershipDetailsBodySchema>;

export const pathProjectIdSchema = z.string().min(limits.pathProjectIdMin);
