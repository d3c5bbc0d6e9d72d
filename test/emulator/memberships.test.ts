import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadDefaultSeed } from "./default-seed.ts";
import { call, ids, start } from "./helpers.ts";
import type { Emulator } from "./server.ts";

type RoleEntry = Record<string, unknown> & { role: string; isTemporary: boolean };
type Membership = { id: string; createdAt?: string; user: Record<string, unknown>; roles: RoleEntry[] };

let emu: Emulator;
beforeAll(async () => {
  emu = await start({ seed: loadDefaultSeed() });
});
afterAll(() => emu.close());

const membershipsPath = `/api/v1/projects/${ids.project}/memberships`;

async function aliceMembership(): Promise<Membership> {
  const res = await call<{ membership: Membership }>(emu, "POST", `${membershipsPath}/details`, {
    body: { username: "alice@example.com" },
  });
  return res.body.membership;
}

describe("user memberships", () => {
  it("lists the same memberships on the projects and the workspace paths", async () => {
    const a = await call<{ memberships: Membership[] }>(emu, "GET", membershipsPath);
    const b = await call<{ memberships: Membership[] }>(emu, "GET", `/api/v1/workspace/${ids.project}/memberships`);
    expect(a.status).toBe(200);
    expect(b.body).toEqual(a.body);
    const alice = a.body.memberships.find((m) => m.user["username"] === "alice@example.com");
    expect(alice).toMatchObject({ userId: ids.alice, projectId: ids.project, roles: [{ role: "admin", isTemporary: false }] });
    // A permanent built-in role still carries every listed field, null where it has no value.
    expect(alice?.roles[0]).toMatchObject({
      customRoleId: null,
      customRoleName: null,
      customRoleSlug: null,
      temporaryMode: null,
      temporaryRange: null,
      temporaryAccessStartTime: null,
      temporaryAccessEndTime: null,
    });
    expect(typeof alice?.createdAt).toBe("string");
    expect(Object.keys(alice?.user ?? {}).sort()).toEqual(["email", "firstName", "id", "lastName", "publicKey", "username"]);
  });

  it("details: without createdAt and without user.username; 404 for a non-member; 422 for an empty username", async () => {
    const membership = await aliceMembership();
    expect("createdAt" in membership).toBe(false);
    expect("username" in membership.user).toBe(false);
    const missing = await call(emu, "POST", `${membershipsPath}/details`, { body: { username: "nobody@example.com" } });
    expect(missing.status).toBe(404);
    expect((await call(emu, "POST", `${membershipsPath}/details`, { body: { username: "" } })).status).toBe(422);
  });

  it("updates roles and computes temporaryAccessEndTime", async () => {
    const { id } = await aliceMembership();
    const start = "2030-01-01T00:00:00.000Z";
    const res = await call<{ roles: RoleEntry[] }>(emu, "PATCH", `${membershipsPath}/${id}`, {
      body: {
        roles: [
          { role: "admin" },
          { role: "viewer", isTemporary: true, temporaryMode: "relative", temporaryRange: "1h", temporaryAccessStartTime: start },
        ],
      },
    });
    expect(res.status).toBe(200);
    expect(res.body.roles[0]).toMatchObject({
      role: "admin",
      projectMembershipId: id,
      isTemporary: false,
      customRoleId: null,
      temporaryMode: null,
      temporaryRange: null,
      temporaryAccessStartTime: null,
      temporaryAccessEndTime: null,
    });
    expect(res.body.roles[1]).toMatchObject({
      role: "viewer",
      customRoleId: null,
      isTemporary: true,
      temporaryMode: "relative",
      temporaryRange: "1h",
      temporaryAccessStartTime: start,
      temporaryAccessEndTime: "2030-01-01T01:00:00.000Z",
    });
    expect(Object.keys(res.body.roles[0] ?? {})).toEqual(expect.arrayContaining(["id", "createdAt", "updatedAt"]));
    const after = await aliceMembership();
    expect(after.roles.map((r) => r.role)).toEqual(["admin", "viewer"]);
  });

  it("needs one permanent role (400) and a complete temporary form (422)", async () => {
    const { id } = await aliceMembership();
    const temporary = {
      role: "viewer",
      isTemporary: true,
      temporaryMode: "relative",
      temporaryRange: "30m",
      temporaryAccessStartTime: new Date().toISOString(),
    };
    expect((await call(emu, "PATCH", `${membershipsPath}/${id}`, { body: { roles: [temporary] } })).status).toBe(400);
    expect((await call(emu, "PATCH", `${membershipsPath}/${id}`, { body: { roles: [] } })).status).toBe(422);
    for (const broken of [{ temporaryMode: "absolute" }, { temporaryRange: "soon" }, { temporaryAccessStartTime: "yesterday" }]) {
      const res = await call(emu, "PATCH", `${membershipsPath}/${id}`, {
        body: { roles: [{ role: "admin" }, { ...temporary, ...broken }] },
      });
      expect(res.status).toBe(422);
    }
  });

  it("reads custom roles back as role custom with the custom role's slug; a malformed role is 404", async () => {
    const { id } = await aliceMembership();
    const res = await call<{ roles: RoleEntry[] }>(emu, "PATCH", `${membershipsPath}/${id}`, {
      body: { roles: [{ role: "deployer" }, { role: "release-manager" }] },
    });
    expect(res.status).toBe(200);
    expect(res.body.roles.every((r) => r.role === "custom" && typeof r["customRoleId"] === "string")).toBe(true);
    const after = await aliceMembership();
    expect(after.roles.map((r) => [r.role, r["customRoleSlug"], r["customRoleName"]])).toEqual([
      ["custom", "deployer", "Deployer"],
      ["custom", "release-manager", "release-manager"],
    ]);
    expect((await call(emu, "PATCH", `${membershipsPath}/${id}`, { body: { roles: [{ role: "Not A Role!" }] } })).status).toBe(404);
  });

  it("answers 404 for an unknown membership or project", async () => {
    expect(
      (await call(emu, "PATCH", `${membershipsPath}/00000000-0000-4000-8000-000000000000`, { body: { roles: [{ role: "admin" }] } }))
        .status,
    ).toBe(404);
    expect((await call(emu, "GET", "/api/v1/projects/unknown-project/memberships")).status).toBe(404);
  });
});

describe("group memberships", () => {
  it("lists groups and updates a group's roles", async () => {
    const list = await call<{ groupMemberships: { groupId: string; group: Record<string, unknown>; roles: RoleEntry[] }[] }>(
      emu,
      "GET",
      `/api/v1/projects/${ids.project}/groups`,
    );
    expect(list.body.groupMemberships).toHaveLength(1);
    expect(list.body.groupMemberships[0]).toMatchObject({
      groupId: ids.platformTeam,
      group: { name: "Platform Team", slug: "platform-team", id: ids.platformTeam },
    });
    const res = await call<{ roles: RoleEntry[] }>(emu, "PATCH", `/api/v1/projects/${ids.project}/groups/${ids.platformTeam}`, {
      body: { roles: [{ role: "viewer" }] },
    });
    expect(res.status).toBe(200);
    expect(res.body.roles[0]).toMatchObject({ role: "viewer", isTemporary: false });
    expect((await call(emu, "PATCH", `/api/v1/projects/${ids.project}/groups/${ids.platformTeam}`, { body: {} })).status).toBe(422);
  });

  it("answers 404 for a group that is not a member; tests add and remove members", async () => {
    const path = `/api/v1/projects/${ids.project}/groups/${ids.securityTeam}`;
    expect((await call(emu, "PATCH", path, { body: { roles: [{ role: "member" }] } })).status).toBe(404);
    emu.addMember({ projectId: ids.project, groupSlug: "security-team", roles: [{ role: "no-access" }] });
    expect((await call(emu, "PATCH", path, { body: { roles: [{ role: "member" }] } })).status).toBe(200);
    emu.removeMember({ projectId: ids.project, groupId: ids.securityTeam });
    expect((await call(emu, "PATCH", path, { body: { roles: [{ role: "member" }] } })).status).toBe(404);
  });
});
