// Authentication: interface.md says requests to projects, memberships, groups and token
// creation carry "Authorization: Bearer <token>". Without one the service answers 401, with a
// bad one 403 (DESIGN.md). Certificate profiles and secret syncs are left out: the document
// shows their list/get samples without the header and calls the sync endpoints' requirement
// "not shown" (README.md).

import type { ProbeContext } from "./context.ts";
import { compare, expectError, field, fieldString, UNKNOWN_UUID } from "./context.ts";
import type { ProbeProject } from "./projects.ts";

interface AuthedOperation {
  name: string;
  method: string;
  path: string;
  body?: unknown;
}

function operations(ctx: ProbeContext, project: ProbeProject | undefined, membershipId: string | undefined): AuthedOperation[] {
  const pid = project?.id ?? UNKNOWN_UUID;
  const roles = { roles: [{ role: "member", isTemporary: false }] };
  return [
    {
      name: "create-project",
      method: "POST",
      path: "/api/v2/workspace",
      body: { projectName: `Probe auth ${ctx.runId}`, slug: `probe-auth-${ctx.runId}` },
    },
    { name: "list-projects", method: "GET", path: "/api/v1/projects" },
    { name: "get-project", method: "GET", path: `/api/v1/projects/${pid}` },
    { name: "get-project-by-slug", method: "GET", path: `/api/v1/projects/slug/${project?.slug ?? "probe-absent"}` },
    { name: "update-project", method: "PATCH", path: `/api/v1/projects/${pid}`, body: { description: "auth probe" } },
    { name: "delete-project", method: "DELETE", path: `/api/v1/projects/${pid}` },
    { name: "list-memberships", method: "GET", path: `/api/v1/projects/${pid}/memberships` },
    { name: "list-memberships-workspace", method: "GET", path: `/api/v1/workspace/${pid}/memberships` },
    {
      name: "membership-details",
      method: "POST",
      path: `/api/v1/projects/${pid}/memberships/details`,
      body: { username: ctx.fixtures.user.username },
    },
    {
      name: "update-membership",
      method: "PATCH",
      path: `/api/v1/projects/${pid}/memberships/${membershipId ?? UNKNOWN_UUID}`,
      body: roles,
    },
    { name: "list-groups", method: "GET", path: `/api/v1/projects/${pid}/groups` },
    { name: "update-group", method: "PATCH", path: `/api/v1/projects/${pid}/groups/${ctx.fixtures.group.id}`, body: roles },
    {
      name: "create-token",
      method: "POST",
      path: `/api/v1/auth/token-auth/identities/${ctx.fixtures.identityId}/tokens`,
      body: { name: "auth-probe" },
    },
  ];
}

export async function probeAuth(ctx: ProbeContext, project: ProbeProject | undefined, membershipId: string | undefined): Promise<void> {
  const badToken = `probe-not-a-token-${ctx.runId}`;
  let missingMessage: unknown;
  for (const op of operations(ctx, project, membershipId)) {
    const none = await ctx.call(op.method, op.path, { token: null, body: op.body });
    ctx.record(`auth.${op.name}.missing-token`, `${op.method} ${op.name} without a token answers 401`, expectError(none, 401));
    missingMessage ??= field(none.body, "message");
    const bad = await ctx.call(op.method, op.path, { token: badToken, body: op.body });
    ctx.record(`auth.${op.name}.bad-token`, `${op.method} ${op.name} with a bad token answers 403`, expectError(bad, 403));
    for (const res of [none, bad]) {
      // Should authentication be skipped, do not leave a project behind.
      const created = fieldString(field(res.body, "project"), "id");
      if (op.name === "create-project" && res.status === 200 && created !== undefined) ctx.cleanup.add(created);
    }
  }
  ctx.record(
    "auth.missing-token.message",
    'the 401 for a missing token says "Token missing" (DESIGN.md)',
    compare("message", missingMessage, "Token missing"),
  );
  if (project !== undefined) {
    const still = await ctx.call("GET", `/api/v1/projects/${project.id}`);
    ctx.record(
      "auth.delete-project.not-deleted",
      "the project is still there after the unauthenticated deletes",
      still.status === 200 ? [] : [`get project answered HTTP ${still.status}`],
    );
  }
}
