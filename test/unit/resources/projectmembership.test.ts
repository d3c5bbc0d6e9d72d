// ProjectMembership's pure parts: the normalised role comparison, the update body, status
// shaping, group matching and the spec's own checks.
import { describe, expect, it } from "vitest";
import type { GroupMembership, MembershipRole } from "../../../src/api/index.ts";
import type { KubeObject } from "../../../src/engine/types.ts";
import {
  claimant,
  matchGroups,
  nextEnd,
  roleKey,
  roleRequest,
  sameRoles,
  specSchema,
  statusRole,
  subjectKey,
} from "../../../src/resources/projectmembership.ts";

/** A role entry as the service returns it (nulls for what does not apply). */
function served(role: Partial<MembershipRole> & { role: string }): MembershipRole {
  return {
    id: "r1",
    customRoleId: null,
    customRoleName: null,
    customRoleSlug: null,
    isTemporary: false,
    temporaryMode: null,
    temporaryRange: null,
    temporaryAccessStartTime: null,
    temporaryAccessEndTime: null,
    ...role,
  };
}

const temporary = {
  role: "admin",
  isTemporary: true,
  temporaryMode: "relative",
  temporaryRange: "1h",
  temporaryAccessStartTime: "2030-01-01T00:00:00Z",
} as const;

describe("sameRoles", () => {
  it("ignores order", () => {
    expect(sameRoles([{ role: "admin" }, { role: "viewer" }], [served({ role: "viewer" }), served({ role: "admin" })])).toBe(true);
  });

  it('reads a custom role back by its slug, not as "custom"', () => {
    const custom = served({ role: "custom", customRoleSlug: "deployer", customRoleName: "Deployer", customRoleId: "c1" });
    expect(sameRoles([{ role: "deployer" }], [custom])).toBe(true);
    expect(sameRoles([{ role: "releaser" }], [custom])).toBe(false);
  });

  it("treats isTemporary absent as false and ignores the temporary fields of a permanent role", () => {
    expect(sameRoles([{ role: "member", isTemporary: false }], [served({ role: "member" })])).toBe(true);
    expect(sameRoles([{ role: "member" }], [served({ role: "member", temporaryRange: "1h" })])).toBe(true);
  });

  it("compares a temporary role's range and start by value, not by spelling", () => {
    const actual = served({
      ...temporary,
      temporaryRange: "60m",
      temporaryAccessStartTime: "2030-01-01T00:00:00.000Z",
      temporaryAccessEndTime: "2030-01-01T01:00:00.000Z",
    });
    expect(sameRoles([temporary], [actual])).toBe(true);
    expect(sameRoles([{ ...temporary, temporaryAccessStartTime: "2030-01-01T01:00:00+01:00" }], [actual])).toBe(true);
  });

  it("sees a change of range, start, mode or temporariness", () => {
    const actual = served({ ...temporary });
    expect(sameRoles([{ ...temporary, temporaryRange: "2h" }], [actual])).toBe(false);
    expect(sameRoles([{ ...temporary, temporaryAccessStartTime: "2030-01-02T00:00:00Z" }], [actual])).toBe(false);
    expect(sameRoles([{ ...temporary, temporaryMode: "absolute" }], [actual])).toBe(false);
    expect(sameRoles([{ role: "admin" }], [actual])).toBe(false);
  });

  it("counts duplicates and lengths", () => {
    expect(sameRoles([{ role: "admin" }], [served({ role: "admin" }), served({ role: "admin" })])).toBe(false);
    expect(sameRoles([{ role: "admin" }, { role: "viewer" }], [served({ role: "admin" }), served({ role: "admin" })])).toBe(false);
    expect(sameRoles([], [])).toBe(true);
  });

  it("keeps unreadable ranges and times comparable as text", () => {
    expect(roleKey({ ...temporary, temporaryRange: "a while" })).toBe(roleKey({ ...temporary, temporaryRange: "a while" }));
    expect(roleKey({ ...temporary, temporaryRange: "a while" })).not.toBe(roleKey({ ...temporary, temporaryRange: "another while" }));
    expect(roleKey({ ...temporary, temporaryAccessStartTime: "not a time" })).not.toBe(roleKey(temporary));
  });
});

describe("roleRequest", () => {
  it("sends a permanent role with isTemporary false and a temporary role with its fields as written", () => {
    expect(roleRequest({ role: "viewer" })).toEqual({ role: "viewer", isTemporary: false });
    expect(roleRequest({ ...temporary, temporaryRange: "8h" })).toEqual({ ...temporary, temporaryRange: "8h" });
  });
});

describe("status", () => {
  const now = Date.parse("2030-01-01T00:30:00Z");
  const running = served({ ...temporary, temporaryAccessEndTime: "2030-01-01T01:00:00.000Z" });
  const ended = served({
    ...temporary,
    role: "viewer",
    temporaryAccessStartTime: "2029-12-31T00:00:00Z",
    temporaryAccessEndTime: "2029-12-31T01:00:00.000Z",
  });

  it("shows a role without nulls, and whether a temporary one has ended", () => {
    expect(statusRole(served({ role: "member" }), now)).toEqual({ role: "member", isTemporary: false });
    expect(statusRole(served({ role: "custom", customRoleSlug: "deployer", customRoleName: "Deployer" }), now)).toEqual({
      role: "custom",
      customRoleSlug: "deployer",
      customRoleName: "Deployer",
      isTemporary: false,
    });
    expect(statusRole(running, now)).toMatchObject({
      isTemporary: true,
      temporaryRange: "1h",
      temporaryAccessEndTime: "2030-01-01T01:00:00.000Z",
      expired: false,
    });
    expect(statusRole(ended, now).expired).toBe(true);
  });

  it("finds the soonest end still ahead", () => {
    const later = served({ ...temporary, temporaryAccessEndTime: "2030-01-02T00:00:00.000Z" });
    expect(nextEnd([served({ role: "admin" }), later, running, ended], now)).toBe(Date.parse("2030-01-01T01:00:00.000Z"));
    expect(nextEnd([served({ role: "admin" }), ended], now)).toBeUndefined();
  });
});

describe("matchGroups", () => {
  const group = (id: string, slug: string, name: string): GroupMembership => ({
    id: `m-${id}`,
    groupId: id,
    roles: [],
    group: { id, slug, name },
  });
  const groups = [
    group("g1", "platform-team", "Platform"),
    group("g2", "security-team", "Security"),
    group("g3", "security-ops", "Security"),
  ];

  it("matches by id, slug or name", () => {
    expect(matchGroups(groups, { id: "g2" }).map((g) => g.groupId)).toEqual(["g2"]);
    expect(matchGroups(groups, { slug: "platform-team" }).map((g) => g.groupId)).toEqual(["g1"]);
    expect(matchGroups(groups, { name: "Security" }).map((g) => g.groupId)).toEqual(["g2", "g3"]);
    expect(matchGroups(groups, { slug: "nobody" })).toEqual([]);
  });
});

describe("spec", () => {
  const base = { projectRef: { name: "payments" }, username: "alice@example.com", roles: [{ role: "admin" }] };
  const problems = (spec: unknown): string[] => {
    const r = specSchema.safeParse(spec);
    return r.success ? [] : r.error.issues.map((i) => i.message);
  };

  it("accepts a user or a group with permanent and temporary roles", () => {
    expect(problems(base)).toEqual([]);
    expect(problems({ ...base, roles: [{ role: "viewer" }, temporary] })).toEqual([]);
    expect(
      problems({ projectId: "p1", group: { slug: "platform-team" }, roles: [temporary], deletionPolicy: "Revoke", revokeRole: "viewer" }),
    ).toEqual([]);
  });

  it("rejects what the CRD rejects", () => {
    expect(problems({ ...base, roles: [] }).length).toBeGreaterThan(0);
    expect(problems({ ...base, roles: [{ role: "admin" }, { role: "viewer", isTemporary: true }] })).toContain(
      "a temporary role (isTemporary: true) needs temporaryMode, temporaryRange and temporaryAccessStartTime",
    );
    expect(problems({ ...base, roles: [{ role: "admin", temporaryRange: "1h" }] })).toContain(
      "temporaryMode, temporaryRange and temporaryAccessStartTime apply only to a temporary role (isTemporary: true)",
    );
    expect(problems({ ...base, roles: [temporary] })).toContain(
      "a user membership needs at least one permanent role (the service requires it)",
    );
    expect(problems({ ...base, roles: [{ role: "custom" }] })).toContain('name a custom role by its slug, not "custom"');
    expect(problems({ ...base, roles: [{ role: "Admin" }] }).length).toBeGreaterThan(0);
    expect(problems({ ...base, roles: [{ ...temporary, temporaryRange: "0h" }, { role: "viewer" }] }).length).toBeGreaterThan(0);
    expect(problems({ ...base, projectId: "p1" })).toContain("exactly one of projectRef or projectId must be set");
    expect(problems({ ...base, group: { slug: "platform-team" } })).toContain("exactly one of username or group must be set");
    expect(problems({ projectId: "p1", group: { slug: "a", name: "b" }, roles: [{ role: "admin" }] })).toContain(
      "exactly one of id, slug or name must be set",
    );
  });
});

describe("claimant", () => {
  const obj = (
    ns: string,
    name: string,
    created: string,
    status: Record<string, unknown>,
    spec: Record<string, unknown>,
    deleting = false,
  ): KubeObject => ({
    apiVersion: "keyward.dev/v1alpha1",
    kind: "ProjectMembership",
    metadata: {
      namespace: ns,
      name,
      uid: `${ns}/${name}`,
      creationTimestamp: created,
      ...(deleting ? { deletionTimestamp: created } : {}),
    },
    spec,
    status,
  });
  const me = obj("b", "bob", "2026-01-02T00:00:00Z", {}, { username: "Bob@example.com" });

  it("names the older resource managing the same user of the same project", () => {
    const older = obj("a", "bob", "2026-01-01T00:00:00Z", { projectId: "p1", membershipId: "m-1" }, { username: "bob@example.com" });
    expect(claimant(me, [older], "p1", subjectKey(me.spec as { username: string }, {})!)?.metadata.namespace).toBe("a");
  });

  it("ignores other projects, other subjects, younger and deleting resources", () => {
    const held = { projectId: "p1", membershipId: "m-1" };
    const otherProject = obj("a", "x", "2026-01-01T00:00:00Z", { ...held, projectId: "p2" }, { username: "bob@example.com" });
    const otherUser = obj("a", "y", "2026-01-01T00:00:00Z", held, { username: "carol@example.com" });
    const younger = obj("c", "z", "2026-01-03T00:00:00Z", held, { username: "bob@example.com" });
    const deleting = obj("d", "w", "2026-01-01T00:00:00Z", held, { username: "bob@example.com" }, true);
    expect(claimant(me, [otherProject, otherUser, younger, deleting], "p1", "user:bob@example.com")).toBeUndefined();
  });

  it("compares groups by their resolved id", () => {
    const group = obj(
      "a",
      "g",
      "2026-01-01T00:00:00Z",
      { projectId: "p1", groupId: "g-1", groupMembershipId: "gm-1" },
      { group: { slug: "platform" } },
    );
    expect(subjectKey({}, { groupId: "g-1" })).toBe("group:g-1");
    expect(claimant(me, [group], "p1", "group:g-1")?.metadata.name).toBe("g");
    expect(subjectKey({}, {})).toBeUndefined();
  });

  it("ignores an older resource that records the project but not the member: it is waiting (SubjectClaimed), not managing", () => {
    // Two created at once: the younger took the member's lock first, so the older waits and
    // records only the project. Counted, it would make the younger yield too, and neither manages.
    const waiting = obj("a", "bob", "2026-01-01T00:00:00Z", { projectId: "p1" }, { username: "bob@example.com" });
    expect(claimant(me, [waiting], "p1", "user:bob@example.com")).toBeUndefined();
  });
});
