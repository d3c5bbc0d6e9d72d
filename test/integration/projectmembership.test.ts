// ProjectMembership end to end: a real kube-apiserver, the emulator over HTTP, keyward in-process.
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Emulator, RecordedRequest, Seed } from "../emulator/server.ts";
import { kubectl, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import {
  condition,
  createCustom,
  deleteCustom,
  exposedTexts,
  getCustom,
  isReady,
  startTestEnv,
  waitForObject,
  type KeywardTestEnv,
  type RunningKeyward,
} from "./support/keyward.ts";
import type { KubeObject } from "../../src/engine/types.ts";

const TOKEN = "kw-membership-token-5c81e2d9";
const PROJECT_ID = "c0000000-0000-4000-8000-000000000001";
const ids = {
  alice: "c0000000-0001-4000-8000-000000000001",
  platformTeam: "c0000000-0002-4000-8000-000000000001",
  securityTeam: "c0000000-0002-4000-8000-000000000002",
};

let env: KeywardTestEnv | undefined;
let kc: KubeConfig;
let emulator: Emulator;
let ns: TestNamespace;
let keyward: RunningKeyward;

type Status = Record<string, unknown> & { roles?: Array<Record<string, unknown>> };

const membership = (name: string, spec: Record<string, unknown>): object => ({
  apiVersion: "keyward.dev/v1alpha1",
  kind: "ProjectMembership",
  metadata: { name },
  spec: { projectId: PROJECT_ID, ...spec },
});

const statusOf = (obj: KubeObject | undefined): Status => obj?.status ?? {};

const waitForMembership = (name: string, description: string, until: (obj: KubeObject) => boolean): Promise<KubeObject> =>
  waitForObject(kc, ns.name, "projectmemberships", name, { until, timeoutMs: 30_000, description });

const readyMembership = (name: string): Promise<KubeObject> =>
  waitForMembership(name, `ProjectMembership ${name} Ready`, (obj) => isReady(obj) && condition(obj, "Synced")?.status === "True");

const requests = (op: string, pathPart?: string): RecordedRequest[] =>
  emulator.requests().filter((r) => r.operation === op && (pathPart === undefined || r.path.includes(pathPart)));

const detailsCalls = (username: string): number =>
  requests("getMembershipDetails").filter((r) => (r.body as { username?: string } | undefined)?.username === username).length;

/** Looks at a user's membership: its own details lookup, or (a steady resync pass) the project's shared user listing. */
const userLooks = (username: string): number => detailsCalls(username) + requests("listMemberships").length;

/** Waits until keyward has looked at the member `passes` more times (resyncs), without timing anything. */
async function moreLooks(count: () => number, passes: number, description: string): Promise<void> {
  const start = count();
  await waitFor(() => Promise.resolve(count() >= start + passes ? true : undefined), { timeoutMs: 30_000, description });
}

async function serviceRoles(path: string, pick: (body: Record<string, unknown>) => unknown): Promise<unknown> {
  const res = await fetch(`${emulator.url}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  return pick((await res.json()) as Record<string, unknown>);
}

const seed: Seed = {
  users: [
    { id: ids.alice, username: "alice@example.com" },
    { username: "bob@example.com" },
    { username: "carol@example.com" },
    { username: "dave@example.com" },
  ],
  groups: [
    { id: ids.platformTeam, name: "Platform Team", slug: "platform-team" },
    { id: ids.securityTeam, name: "Security Team", slug: "security-team" },
  ],
  projects: [{ id: PROJECT_ID, name: "Team", slug: "team-project" }],
  customRoles: [{ projectId: PROJECT_ID, slug: "deployer", name: "Deployer" }],
  memberships: [
    { projectId: PROJECT_ID, username: "alice@example.com", roles: [{ role: "viewer" }] },
    { projectId: PROJECT_ID, username: "bob@example.com", roles: [{ role: "viewer" }] },
    { projectId: PROJECT_ID, username: "dave@example.com", roles: [{ role: "viewer" }] },
    { projectId: PROJECT_ID, groupId: ids.platformTeam, roles: [{ role: "viewer" }] },
    { projectId: PROJECT_ID, groupId: ids.securityTeam, roles: [{ role: "viewer" }] },
  ],
};

beforeAll(async () => {
  env = await startTestEnv({ prefix: "membership", token: TOKEN, emulator: { seed }, keyward: { resyncIntervalMs: 2_000 } });
  ({ kc, emulator, ns, keyward } = env);
});

afterAll(() => env?.stop());

describe("ProjectMembership", () => {
  it("changes a user's roles to the spec with one update call, then none", async () => {
    // Through a Project resource that adopts the seeded project.
    await createCustom(kc, ns.name, "projects", {
      apiVersion: "keyward.dev/v1alpha1",
      kind: "Project",
      metadata: { name: "team" },
      spec: { slug: "team-project", creationPolicy: "Adopt" },
    });
    await createCustom(kc, ns.name, "projectmemberships", {
      apiVersion: "keyward.dev/v1alpha1",
      kind: "ProjectMembership",
      metadata: { name: "alice" },
      spec: { projectRef: { name: "team" }, username: "alice@example.com", roles: [{ role: "deployer" }, { role: "admin" }] },
    });
    const obj = await readyMembership("alice");
    const updates = requests("updateMembership");
    expect(updates).toHaveLength(1);
    expect(updates[0]?.body).toEqual({
      roles: [
        { role: "deployer", isTemporary: false },
        { role: "admin", isTemporary: false },
      ],
    });
    const status = statusOf(obj);
    expect(status).toMatchObject({ projectId: PROJECT_ID, userId: ids.alice });
    expect(status["membershipId"]).toMatch(/^[0-9a-f-]{36}$/);
    expect(updates[0]?.path).toBe(`/api/v1/projects/${PROJECT_ID}/memberships/${String(status["membershipId"])}`);
    // Custom roles come back as "custom" with their slug; status shows them as the service does.
    expect(status.roles).toEqual(
      expect.arrayContaining([
        { role: "custom", customRoleSlug: "deployer", customRoleName: "Deployer", isTemporary: false },
        { role: "admin", isTemporary: false },
      ]),
    );
    expect(status.roles).toHaveLength(2);
    await moreLooks(() => userLooks("alice@example.com"), 3, "two more resyncs of alice");
    expect(requests("updateMembership")).toHaveLength(1);
  });

  it("sets a temporary role, compares it by value and reports its end", async () => {
    const start = new Date(Math.floor(Date.now() / 1000) * 1000 + 60_000).toISOString().replace(".000Z", "Z");
    const temporary = {
      role: "admin",
      isTemporary: true,
      temporaryMode: "relative",
      temporaryRange: "8h",
      temporaryAccessStartTime: start,
    };
    await createCustom(
      kc,
      ns.name,
      "projectmemberships",
      membership("bob", { username: "bob@example.com", roles: [{ role: "member" }, temporary] }),
    );
    const obj = await readyMembership("bob");
    const updates = requests("updateMembership").filter((r) => JSON.stringify(r.body).includes("8h"));
    expect(updates).toHaveLength(1);
    expect(updates[0]?.body).toEqual({ roles: [{ role: "member", isTemporary: false }, temporary] });
    const end = new Date(Date.parse(start) + 8 * 3_600_000).toISOString();
    const status = statusOf(obj);
    expect(status.roles).toEqual(
      expect.arrayContaining([
        { role: "member", isTemporary: false },
        // The service writes the start with milliseconds: still the same grant, so no update follows.
        {
          role: "admin",
          isTemporary: true,
          temporaryMode: "relative",
          temporaryRange: "8h",
          temporaryAccessStartTime: new Date(start).toISOString(),
          temporaryAccessEndTime: end,
          expired: false,
        },
      ]),
    );
    expect(status["nextTemporaryAccessEndTime"]).toBe(end);
    await moreLooks(() => userLooks("bob@example.com"), 3, "two more resyncs of bob");
    expect(requests("updateMembership").filter((r) => JSON.stringify(r.body).includes("8h"))).toHaveLength(1);
  });

  it("follows a temporary role's end in status without writing", async () => {
    const start = new Date().toISOString();
    const shortRole = {
      role: "admin",
      isTemporary: true,
      temporaryMode: "relative",
      temporaryRange: "3s",
      temporaryAccessStartTime: start,
    };
    await createCustom(
      kc,
      ns.name,
      "projectmemberships",
      membership("dave", { username: "dave@example.com", roles: [{ role: "viewer" }, shortRole] }),
    );
    await readyMembership("dave");
    const ended = await waitForMembership(
      "dave",
      "the temporary role reported as ended",
      (obj) => statusOf(obj).roles?.some((r) => r["expired"] === true) ?? false,
    );
    expect(statusOf(ended)["nextTemporaryAccessEndTime"]).toBeUndefined();
    expect(isReady(ended)).toBe(true);
    expect(requests("updateMembership").filter((r) => JSON.stringify(r.body).includes("3s"))).toHaveLength(1);
  });

  it("sets a group's roles, by slug and by id", async () => {
    await createCustom(
      kc,
      ns.name,
      "projectmemberships",
      membership("platform", { group: { slug: "platform-team" }, roles: [{ role: "admin" }] }),
    );
    await createCustom(
      kc,
      ns.name,
      "projectmemberships",
      membership("security", {
        group: { id: ids.securityTeam },
        roles: [{ role: "member" }, { role: "deployer" }],
        deletionPolicy: "Revoke",
      }),
    );
    const platform = await readyMembership("platform");
    const security = await readyMembership("security");
    expect(statusOf(platform)).toMatchObject({
      groupId: ids.platformTeam,
      groupSlug: "platform-team",
      groupName: "Platform Team",
      roles: [{ role: "admin", isTemporary: false }],
    });
    expect(statusOf(platform)["groupMembershipId"]).toMatch(/^[0-9a-f-]{36}$/);
    expect(statusOf(platform)["membershipId"]).toBeUndefined();
    expect(statusOf(security)).toMatchObject({ groupId: ids.securityTeam, groupSlug: "security-team" });
    const platformUpdates = requests("updateGroupMembership", `/groups/${ids.platformTeam}`);
    const securityUpdates = requests("updateGroupMembership", `/groups/${ids.securityTeam}`);
    expect(platformUpdates.map((r) => r.body)).toEqual([{ roles: [{ role: "admin", isTemporary: false }] }]);
    expect(securityUpdates.map((r) => r.body)).toEqual([
      {
        roles: [
          { role: "member", isTemporary: false },
          { role: "deployer", isTemporary: false },
        ],
      },
    ]);
    expect(security.metadata.finalizers).toContain("keyward.dev/finalizer");
    expect(platform.metadata.finalizers ?? []).toEqual([]);
    await moreLooks(() => requests("listGroupMemberships").length, 4, "more resyncs of the groups");
    expect(requests("updateGroupMembership")).toHaveLength(2);
  });

  it("reports a user who is not a member as MemberNotFound, then manages them once they join", async () => {
    const writesBefore = requests("updateMembership").length;
    await createCustom(
      kc,
      ns.name,
      "projectmemberships",
      membership("carol", { username: "carol@example.com", roles: [{ role: "member" }] }),
    );
    const missing = await waitForMembership("carol", "MemberNotFound", (obj) => condition(obj, "Ready")?.reason === "MemberNotFound");
    expect(condition(missing, "Ready")?.status).toBe("False");
    expect(condition(missing, "Synced")).toMatchObject({ status: "False", reason: "MemberNotFound" });
    expect(condition(missing, "Ready")?.message).toContain("carol@example.com is not a member");
    // Looked for again on resync, without writing anything.
    await moreLooks(() => detailsCalls("carol@example.com"), 2, "carol looked up again");
    expect(requests("updateMembership")).toHaveLength(writesBefore);

    emulator.addMember({ projectId: PROJECT_ID, username: "carol@example.com", roles: [{ role: "viewer" }] });
    const found = await readyMembership("carol");
    expect(statusOf(found).roles).toEqual([{ role: "member", isTemporary: false }]);
    const updates = requests("updateMembership", String(statusOf(found)["membershipId"]));
    expect(updates.map((r) => r.body)).toEqual([{ roles: [{ role: "member", isTemporary: false }] }]);
  });

  it("with deletionPolicy Revoke, sets the roles to no-access once on delete; Retain writes nothing", async () => {
    const groupsPath = `/api/v1/projects/${PROJECT_ID}/groups`;
    const writesBefore = requests("updateGroupMembership").length;
    await deleteCustom(kc, ns.name, "projectmemberships", "platform");
    await deleteCustom(kc, ns.name, "projectmemberships", "security");
    await waitFor(
      async () => {
        const left = await Promise.all(["platform", "security"].map((n) => getCustom(kc, ns.name, "projectmemberships", n)));
        return left.every((o) => o === undefined) ? true : undefined;
      },
      { timeoutMs: 30_000, description: "both resources gone" },
    );
    const revokes = requests("updateGroupMembership").slice(writesBefore);
    expect(revokes).toHaveLength(1);
    expect(revokes[0]?.path).toBe(`${groupsPath}/${ids.securityTeam}`);
    expect(revokes[0]?.body).toEqual({ roles: [{ role: "no-access", isTemporary: false }] });
    const roles = await serviceRoles(groupsPath, (b) =>
      Object.fromEntries(
        (b["groupMemberships"] as Array<{ group: { slug: string }; roles: Array<{ role: string }> }>).map((m) => [
          m.group.slug,
          m.roles.map((r) => r.role),
        ]),
      ),
    );
    expect(roles).toEqual({ "platform-team": ["admin"], "security-team": ["no-access"] });
  });

  it("rejects at apply time an empty role list, a temporary role without its fields, and a change of subject", async () => {
    const apply = (name: string, spec: Record<string, unknown>) =>
      kubectl(["apply", "-n", ns.name, "-f", "-"], { input: JSON.stringify(membership(name, spec)) });
    const empty = await apply("empty", { username: "alice@example.com", roles: [] });
    expect(empty.code).not.toBe(0);
    expect(empty.stderr).toMatch(/spec\.roles/);
    const bare = await apply("bare", { username: "alice@example.com", roles: [{ role: "viewer" }, { role: "admin", isTemporary: true }] });
    expect(bare.code).not.toBe(0);
    expect(bare.stderr).toContain("a temporary role (isTemporary: true) needs temporaryMode, temporaryRange and temporaryAccessStartTime");
    const onlyTemporary = await apply("onlytemp", {
      username: "alice@example.com",
      roles: [
        {
          role: "admin",
          isTemporary: true,
          temporaryMode: "relative",
          temporaryRange: "1h",
          temporaryAccessStartTime: "2030-01-01T00:00:00Z",
        },
      ],
    });
    expect(onlyTemporary.code).not.toBe(0);
    expect(onlyTemporary.stderr).toContain("at least one permanent role");
    const moved = await kubectl([
      "patch",
      "projectmemberships.keyward.dev",
      "alice",
      "-n",
      ns.name,
      "--type",
      "merge",
      "-p",
      JSON.stringify({ spec: { username: "bob@example.com" } }),
    ]);
    expect(moved.code).not.toBe(0);
    expect(moved.stderr).toContain("username is immutable");
    for (const name of ["empty", "bare", "onlytemp"]) expect(await getCustom(kc, ns.name, "projectmemberships", name)).toBeUndefined();
  });

  it("accepts the samples", async () => {
    for (const sample of ["projectmembership-user.yaml", "projectmembership-group.yaml"]) {
      const file = fileURLToPath(new URL(`../../config/samples/${sample}`, import.meta.url));
      const result = await kubectl(["apply", "--dry-run=server", "-n", ns.name, "-f", file]);
      expect(result.stderr).toBe("");
      expect(result.stdout).toContain("created (server dry run)");
    }
  });

  it("never writes the token into logs, events or status", async () => {
    const exposed = await exposedTexts(ns.name, keyward.logs, "projectmemberships,projects,providerconfigs");
    expect(exposed.objects).toContain("ProjectMembership");
    for (const text of exposed.all) expect(text).not.toContain(TOKEN);
  });
});
