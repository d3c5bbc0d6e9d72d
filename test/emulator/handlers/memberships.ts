// Project memberships of users and groups: list, details by username, role updates.
import { badRequest, notFound } from "../errors.ts";
import { buildMemberRoles, nowIso } from "../model.ts";
import type { HandlerContext, Route } from "../router.ts";
import type { MemberRoleRec, MembershipRec, State, UserRec } from "../state.ts";
import { membershipDetailsBody, membershipDetailsParams, updateRolesBody } from "../schemas/memberships.ts";
import { parse } from "../schemas/parse.ts";
import { requireProject } from "./projects.ts";

/**
 * A membership role entry. Custom roles read back as role "custom" with customRole* fields, as in
 * the real service; every listed field is sent, null where it has no value (a built-in role has
 * no customRole*, a permanent role no temporary*).
 */
function roleEntryView(state: State, entry: MemberRoleRec): Record<string, unknown> {
  const custom = entry.customRoleId === undefined ? undefined : state.projectRoles[entry.customRoleId];
  const isCustom = entry.customRoleId !== undefined;
  return {
    id: entry.id,
    role: isCustom ? "custom" : entry.role,
    customRoleId: entry.customRoleId ?? null,
    customRoleName: isCustom ? (custom?.name ?? entry.role) : null,
    customRoleSlug: isCustom ? (custom?.slug ?? entry.role) : null,
    isTemporary: entry.isTemporary,
    ...temporaryView(entry),
  };
}

function temporaryView(entry: MemberRoleRec): Record<string, unknown> {
  const temporary = entry.isTemporary;
  return {
    temporaryMode: temporary ? (entry.temporaryMode ?? null) : null,
    temporaryRange: temporary ? (entry.temporaryRange ?? null) : null,
    temporaryAccessStartTime: temporary ? (entry.temporaryAccessStartTime ?? null) : null,
    temporaryAccessEndTime: temporary ? (entry.temporaryAccessEndTime ?? null) : null,
  };
}

/** A role entry as the update operations return it; null where a field has no value, as above. */
function updatedRoleView(membershipId: string, entry: MemberRoleRec): Record<string, unknown> {
  return {
    id: entry.id,
    role: entry.customRoleId === undefined ? entry.role : "custom",
    projectMembershipId: membershipId,
    customRoleId: entry.customRoleId ?? null,
    isTemporary: entry.isTemporary,
    ...temporaryView(entry),
    createdAt: entry.createdAt,
    updatedAt: entry.updatedAt,
  };
}

function userView(user: UserRec, withUsername: boolean): Record<string, unknown> {
  const view: Record<string, unknown> = {
    email: user.email,
    firstName: user.firstName,
    lastName: user.lastName,
    id: user.id,
    publicKey: user.publicKey,
  };
  if (withUsername) view["username"] = user.username;
  return view;
}

function userMemberships(state: State, projectId: string): { membership: MembershipRec; user: UserRec }[] {
  return Object.values(state.memberships).flatMap((membership) => {
    const user = membership.projectId === projectId && membership.userId !== undefined ? state.users[membership.userId] : undefined;
    return user ? [{ membership, user }] : [];
  });
}

function listMemberships({ core, params }: HandlerContext): unknown {
  const projectId = params["projectId"] ?? params["workspaceId"] ?? "";
  requireProject(core.state, projectId);
  const memberships = userMemberships(core.state, projectId).map(({ membership, user }) => ({
    id: membership.id,
    createdAt: membership.createdAt,
    userId: user.id,
    projectId,
    user: userView(user, true),
    roles: membership.roles.map((entry) => roleEntryView(core.state, entry)),
  }));
  return { memberships };
}

function membershipDetails({ core, params, body }: HandlerContext): unknown {
  const { projectId } = parse(membershipDetailsParams, params);
  const { username } = parse(membershipDetailsBody, body);
  requireProject(core.state, projectId);
  const found = userMemberships(core.state, projectId).find(({ user }) => user.username === username);
  if (!found) throw notFound(`Project membership for user with username '${username}' not found`);
  const { membership, user } = found;
  return {
    membership: {
      id: membership.id,
      userId: user.id,
      projectId,
      user: userView(user, false),
      roles: membership.roles.map((entry) => roleEntryView(core.state, entry)),
    },
  };
}

function updateMembership({ core, params, body }: HandlerContext): unknown {
  const { roles } = parse(updateRolesBody, body);
  const projectId = params["projectId"] ?? "";
  requireProject(core.state, projectId);
  const membership = core.state.memberships[params["membershipId"] ?? ""];
  if (membership?.projectId !== projectId || membership.userId === undefined) {
    throw notFound(`Project membership with ID '${params["membershipId"] ?? ""}' not found`);
  }
  if (roles.every((role) => role.isTemporary)) throw badRequest("At least one permanent role is required");
  return { roles: replaceRoles(core.state, membership, roles) };
}

function replaceRoles(state: State, membership: MembershipRec, roles: Parameters<typeof buildMemberRoles>[2]): unknown[] {
  membership.roles = buildMemberRoles(state, membership.projectId, roles);
  membership.updatedAt = nowIso();
  return membership.roles.map((entry) => updatedRoleView(membership.id, entry));
}

function listGroupMemberships({ core, params }: HandlerContext): unknown {
  const projectId = params["projectId"] ?? "";
  requireProject(core.state, projectId);
  const groupMemberships = Object.values(core.state.memberships).flatMap((membership) => {
    const group =
      membership.projectId === projectId && membership.groupId !== undefined ? core.state.groups[membership.groupId] : undefined;
    if (!group) return [];
    return [
      {
        id: membership.id,
        groupId: group.id,
        createdAt: membership.createdAt,
        updatedAt: membership.updatedAt,
        roles: membership.roles.map((entry) => roleEntryView(core.state, entry)),
        group: { name: group.name, id: group.id, slug: group.slug },
      },
    ];
  });
  return { groupMemberships };
}

function updateGroupMembership({ core, params, body }: HandlerContext): unknown {
  const { roles } = parse(updateRolesBody, body);
  const projectId = params["projectId"] ?? "";
  const groupId = params["groupId"] ?? "";
  requireProject(core.state, projectId);
  const membership = Object.values(core.state.memberships).find((m) => m.projectId === projectId && m.groupId === groupId);
  if (!membership) throw notFound(`Group with ID '${groupId}' is not a member of the project`);
  return { roles: replaceRoles(core.state, membership, roles) };
}

export const membershipRoutes: Route[] = [
  { method: "GET", path: "/api/v1/projects/:projectId/memberships", operation: "listMemberships", limit: "read", handle: listMemberships },
  {
    method: "GET",
    path: "/api/v1/workspace/:workspaceId/memberships",
    operation: "listWorkspaceMemberships",
    limit: "read",
    handle: listMemberships,
  },
  {
    method: "POST",
    path: "/api/v1/projects/:projectId/memberships/details",
    operation: "getMembershipDetails",
    limit: "read",
    handle: membershipDetails,
  },
  {
    method: "PATCH",
    path: "/api/v1/projects/:projectId/memberships/:membershipId",
    operation: "updateMembership",
    limit: "write",
    handle: updateMembership,
  },
  {
    method: "GET",
    path: "/api/v1/projects/:projectId/groups",
    operation: "listGroupMemberships",
    limit: "read",
    handle: listGroupMemberships,
  },
  {
    method: "PATCH",
    path: "/api/v1/projects/:projectId/groups/:groupId",
    operation: "updateGroupMembership",
    limit: "write",
    handle: updateGroupMembership,
  },
];
