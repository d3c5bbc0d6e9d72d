// Members seeded by the slug of a project that does not exist yet join it when it is created.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadDefaultSeed } from "./default-seed.ts";
import { call, start } from "./helpers.ts";
import type { Emulator, Seed } from "./server.ts";

type Membership = { user: { username: string }; roles: { role: string; customRoleSlug: string | null; isTemporary: boolean }[] };
type GroupMembership = { group: { slug: string }; roles: { role: string }[] };

const seed: Seed = {
  groups: [{ name: "Ops", slug: "ops" }],
  memberships: [
    { projectSlug: "later-project", username: "dana@example.com", roles: [{ role: "member" }, { role: "releaser" }] },
    { projectSlug: "later-project", groupSlug: "ops", roles: [{ role: "viewer" }] },
  ],
};

async function createProject(emu: Emulator, slug: string): Promise<string> {
  const res = await call<{ project: { id: string } }>(emu, "POST", "/api/v2/workspace", { body: { projectName: slug, slug } });
  expect(res.status).toBe(200);
  return res.body.project.id;
}

async function members(emu: Emulator, projectId: string): Promise<{ users: Membership[]; groups: GroupMembership[] }> {
  const users = await call<{ memberships: Membership[] }>(emu, "GET", `/api/v1/projects/${projectId}/memberships`);
  const groups = await call<{ groupMemberships: GroupMembership[] }>(emu, "GET", `/api/v1/projects/${projectId}/groups`);
  return { users: users.body.memberships, groups: groups.body.groupMemberships };
}

let emu: Emulator;
beforeAll(async () => {
  emu = await start({ seed });
});
afterAll(() => emu.close());

describe("members seeded for a project slug created later", () => {
  it("are added when a project with that slug is created, custom roles included", async () => {
    const id = await createProject(emu, "later-project");
    const { users, groups } = await members(emu, id);
    expect(users).toHaveLength(1);
    expect(users[0]?.user.username).toBe("dana@example.com");
    expect(users[0]?.roles.map((r) => (r.role === "custom" ? r.customRoleSlug : r.role))).toEqual(["member", "releaser"]);
    expect(groups.map((g) => [g.group.slug, g.roles.map((r) => r.role)])).toEqual([["ops", ["viewer"]]]);
  });

  it("are not added to projects with another slug", async () => {
    const id = await createProject(emu, "other-project");
    const { users, groups } = await members(emu, id);
    expect(users).toEqual([]);
    expect(groups).toEqual([]);
  });

  it("join again when the project is deleted and created anew", async () => {
    const before = await call<{ project: { id: string } }>(emu, "GET", "/api/v1/projects/slug/later-project");
    const oldId = (before.body as unknown as { id: string }).id;
    expect((await call(emu, "DELETE", `/api/v1/projects/${oldId}`)).status).toBe(200);
    const id = await createProject(emu, "later-project");
    expect(id).not.toBe(oldId);
    expect((await members(emu, id)).users.map((m) => m.user.username)).toEqual(["dana@example.com"]);
  });

  it("fail at seeding, not at project creation, when the group or a role is unknown", async () => {
    const other = await start();
    try {
      expect(() => other.seed({ memberships: [{ projectSlug: "not-yet", groupSlug: "nope", roles: [{ role: "viewer" }] }] })).toThrow(
        /not found/,
      );
      expect(() =>
        other.seed({ memberships: [{ projectSlug: "not-yet", username: "eve@example.com", roles: [{ role: "Not A Role" }] }] }),
      ).toThrow(/not found/);
      const id = await createProject(other, "not-yet");
      expect((await members(other, id)).users).toEqual([]);
    } finally {
      await other.close();
    }
  });

  it("survive a restart from the persisted state", async () => {
    const dir = mkdtempSync(join(tmpdir(), "emu-deferred-"));
    const persistPath = join(dir, "state.json");
    try {
      const first = await start({ persistPath });
      first.seed(seed); // an admin change: persisted at once
      await first.close();
      const second = await start({ persistPath });
      try {
        const id = await createProject(second, "later-project");
        expect((await members(second, id)).users.map((m) => m.user.username)).toEqual(["dana@example.com"]);
      } finally {
        await second.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("include the default seed's members of payments-team, the slug of keyward's sample Project", async () => {
    const dflt = await start({ seed: loadDefaultSeed() });
    try {
      const id = await createProject(dflt, "payments-team");
      const { users, groups } = await members(dflt, id);
      expect(users.map((m) => m.user.username).sort()).toEqual(["alice@example.com", "bob@example.com"]);
      expect(groups.map((g) => g.group.slug).sort()).toEqual(["platform-team", "security-team"]);
    } finally {
      await dflt.close();
    }
  });
});
