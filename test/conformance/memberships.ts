// Memberships and groups: list (both paths), details by username, update user roles, list
// groups, update group roles — shapes, stored effects, 404s and the role-list limit.

import type { ProbeContext } from "./context.ts";
import { compare, expectError, expectOk, field, fieldString, UNKNOWN_UUID } from "./context.ts";
import {
  absentProblems,
  arrayOf,
  dateTime,
  groupMembershipSpec,
  literal,
  object,
  shapeProblems,
  updateRoleSpec,
  userMembershipDetailsSpec,
  userMembershipListSpec,
} from "./shapes.ts";

// Find or prepare a project in which the fixture user and group are members.
export async function memberProject(ctx: ProbeContext, ownProjectId: string | undefined): Promise<string | undefined> {
  const addMember = ctx.helpers.addMember;
  if (addMember !== undefined && ownProjectId !== undefined) {
    await addMember({ projectId: ownProjectId, username: ctx.fixtures.user.username, roles: [{ role: "member" }] });
    await addMember({ projectId: ownProjectId, groupId: ctx.fixtures.group.id, roles: [{ role: "viewer" }] });
    return ownProjectId;
  }
  return ctx.fixtures.memberProjectId;
}

// Returns the fixture user's membership id, for the auth checks of the update operation.
export async function probeMemberships(ctx: ProbeContext, projectId: string | undefined): Promise<string | undefined> {
  if (projectId === undefined) {
    ctx.record("membership.prerequisite", "a project with the fixture user and group as members", [
      "no project: the probe project was not created and no memberProjectId fixture was given",
    ]);
    return undefined;
  }
  const membershipId = await probeUserMemberships(ctx, projectId);
  await probeDetails(ctx, projectId);
  await probeUpdateUserRoles(ctx, projectId, membershipId);
  await probeGroups(ctx, projectId);
  return membershipId;
}

function findMembership(body: unknown, username: string): unknown {
  const list = field(body, "memberships");
  if (!Array.isArray(list)) return undefined;
  return list.find((m: unknown) => field(field(m, "user"), "username") === username);
}

async function probeUserMemberships(ctx: ProbeContext, projectId: string): Promise<string | undefined> {
  const username = ctx.fixtures.user.username;
  for (const [id, path] of [
    ["membership.list.shape", `/api/v1/projects/${projectId}/memberships`],
    ["membership.list-workspace.shape", `/api/v1/workspace/${projectId}/memberships`],
  ] as const) {
    const res = await ctx.call("GET", path);
    const list = field(res.body, "memberships");
    ctx.record(id, `GET ${path.replace(projectId, "{id}")} answers {memberships: [...]} with createdAt and user.username`, [
      ...expectOk(res),
      ...(Array.isArray(list)
        ? arrayOf(object(userMembershipListSpec))(list).map((p) => `memberships${p}`)
        : ["memberships: missing or not an array"]),
      ...(findMembership(res.body, username) === undefined ? [`no membership for the fixture user`] : []),
    ]);
  }
  const res = await ctx.call("GET", `/api/v1/projects/${projectId}/memberships`);
  return fieldString(findMembership(res.body, username), "id");
}

async function probeDetails(ctx: ProbeContext, projectId: string): Promise<void> {
  const path = `/api/v1/projects/${projectId}/memberships/details`;
  const res = await ctx.call("POST", path, { body: { username: ctx.fixtures.user.username } });
  const membership = field(res.body, "membership");
  ctx.record("membership.details.shape", "details by username answers {membership} without createdAt, user without username", [
    ...expectOk(res),
    ...shapeProblems(membership, userMembershipDetailsSpec),
    ...absentProblems(membership, ["createdAt"]),
    ...absentProblems(field(membership, "user"), ["username"]).map((p) => `user.${p}`),
  ]);
  const unknown = await ctx.call("POST", path, { body: { username: `nobody-${ctx.runId}@probe.invalid` } });
  ctx.record("membership.details.unknown-user", "details for a username that is not a member answers 404", expectError(unknown, 404));
  const empty = await ctx.call("POST", path, { body: { username: "" } });
  ctx.record("limit.details-username.min-rejected", "details with an empty username answers 422", expectError(empty, 422));
}

async function probeUpdateUserRoles(ctx: ProbeContext, projectId: string, membershipId: string | undefined): Promise<void> {
  const base = `/api/v1/projects/${projectId}/memberships`;
  const unknown = await ctx.call("PATCH", `${base}/${UNKNOWN_UUID}`, { body: { roles: [{ role: "viewer", isTemporary: false }] } });
  ctx.record("membership.update.unknown-id", "update roles of an unknown membership id answers 404", expectError(unknown, 404));
  if (membershipId === undefined) {
    ctx.record("membership.update.shape", "update user membership roles", [
      "no membership id for the fixture user (see membership.list.shape)",
    ]);
    return;
  }
  const empty = await ctx.call("PATCH", `${base}/${membershipId}`, { body: { roles: [] } });
  ctx.record("limit.membership-roles.min-rejected", "update user roles with an empty list answers 422", expectError(empty, 422));

  // Temporary form per DESIGN.md: relative mode, ms-style range, ISO start time.
  const start = new Date().toISOString();
  const roles = [
    { role: "admin", isTemporary: false },
    { role: "viewer", isTemporary: true, temporaryMode: "relative", temporaryRange: "1h", temporaryAccessStartTime: start },
  ];
  const res = await ctx.call("PATCH", `${base}/${membershipId}`, { body: { roles } });
  const returned = field(res.body, "roles");
  ctx.record("membership.update.shape", "update user roles answers {roles: [...]} of update role entries", [
    ...expectOk(res),
    ...(Array.isArray(returned) ? arrayOf(object(updateRoleSpec))(returned).map((p) => `roles${p}`) : ["roles: missing or not an array"]),
    ...(Array.isArray(returned)
      ? returned.flatMap((r: unknown, i) => compare(`roles[${i}].projectMembershipId`, field(r, "projectMembershipId"), membershipId))
      : []),
  ]);
  ctx.record(
    "membership.update.temporary-role",
    "the temporary role comes back with its mode, range and access window",
    temporaryProblems(returned),
  );
  ctx.record(
    "limit.membership-roles.min-accepted",
    "update user roles with one entry is accepted",
    expectOk(await ctx.call("PATCH", `${base}/${membershipId}`, { body: { roles: [{ role: "member", isTemporary: false }] } })),
  );
  const again = await ctx.call("PATCH", `${base}/${membershipId}`, { body: { roles } });
  const list = await ctx.call("GET", base);
  const stored = field(findMembership(list.body, ctx.fixtures.user.username), "roles");
  ctx.record("membership.update.stored", "listing memberships afterwards shows the updated roles", [
    ...expectOk(again),
    ...roleNamesProblems(stored, ["admin", "viewer"]),
    ...temporaryProblems(stored),
  ]);
}

function temporaryProblems(roles: unknown): string[] {
  const temp: unknown = Array.isArray(roles) ? roles.find((r: unknown) => field(r, "role") === "viewer") : undefined;
  if (temp === undefined) return ["no viewer role entry"];
  return shapeProblems(temp, {
    isTemporary: literal(true),
    temporaryMode: literal("relative"),
    temporaryRange: literal("1h"),
    temporaryAccessStartTime: dateTime,
    temporaryAccessEndTime: dateTime,
  }).map((p) => `viewer.${p}`);
}

function roleNamesProblems(roles: unknown, expected: string[]): string[] {
  if (!Array.isArray(roles)) return ["roles: missing or not an array"];
  const names = roles
    .map((r: unknown) => field(r, "role"))
    .filter((n): n is string => typeof n === "string")
    .sort();
  return compare("role names", names.join(","), [...expected].sort().join(","));
}

async function probeGroups(ctx: ProbeContext, projectId: string): Promise<void> {
  const base = `/api/v1/projects/${projectId}/groups`;
  const groupId = ctx.fixtures.group.id;
  const res = await ctx.call("GET", base);
  const list = field(res.body, "groupMemberships");
  const mine = (body: unknown): unknown => {
    const l = field(body, "groupMemberships");
    return Array.isArray(l) ? l.find((g: unknown) => field(g, "groupId") === groupId) : undefined;
  };
  ctx.record("group.list.shape", "list project groups answers {groupMemberships: [...]} of group memberships", [
    ...expectOk(res),
    ...(Array.isArray(list)
      ? arrayOf(object(groupMembershipSpec))(list).map((p) => `groupMemberships${p}`)
      : ["groupMemberships: missing or not an array"]),
    ...(mine(res.body) === undefined ? ["no membership for the fixture group"] : []),
  ]);
  const empty = await ctx.call("PATCH", `${base}/${groupId}`, { body: { roles: [] } });
  ctx.record("limit.group-roles.min-rejected", "update group roles with an empty list answers 422", expectError(empty, 422));
  const missing = await ctx.call("PATCH", `${base}/${groupId}`, { body: {} });
  ctx.record("group.update.roles-required", "update group roles without roles answers 422", expectError(missing, 422));
  const unknown = await ctx.call("PATCH", `${base}/${UNKNOWN_UUID}`, { body: { roles: [{ role: "member", isTemporary: false }] } });
  ctx.record("group.update.unknown-id", "update roles of an unknown group answers 404", expectError(unknown, 404));

  const update = await ctx.call("PATCH", `${base}/${groupId}`, { body: { roles: [{ role: "member", isTemporary: false }] } });
  const returned = field(update.body, "roles");
  ctx.record("group.update.shape", "update group roles (one entry) answers {roles: [...]} of update role entries", [
    ...expectOk(update),
    ...(Array.isArray(returned) ? arrayOf(object(updateRoleSpec))(returned).map((p) => `roles${p}`) : ["roles: missing or not an array"]),
  ]);
  const after = await ctx.call("GET", base);
  ctx.record("group.update.stored", "listing groups afterwards shows the updated role", [
    ...expectOk(after),
    ...roleNamesProblems(field(mine(after.body), "roles"), ["member"]),
  ]);
}
