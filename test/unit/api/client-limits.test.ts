// Every limit of interface.md, over real HTTP: the client refuses it before sending (nothing
// reaches the emulator), and with request validation off the service answers 422.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { closeConnections, isApiError, isRequestValidationError, type ApiClient, type OperationName } from "../../../src/api/index.ts";
import { connectionIds, destinationConfigs, rejectionOf, seedIds, startHarness, unique, type Harness } from "./emulator-fixture.ts";

let h: Harness;
let checked: ApiClient;
let unchecked: ApiClient;
let membershipId: string;
let syncId: string;

const s = (n: number) => "x".repeat(n);
/** A fresh slug of exactly n characters (n >= 5). */
const slugOf = (n: number) => randomBytes(8).toString("hex").slice(0, 5).padEnd(n, "z");
const syncBody = (over: Record<string, unknown>) => ({
  name: unique("lim"),
  projectId: seedIds.demoProject,
  connectionId: connectionIds["data-platform"],
  environment: "dev",
  secretPath: "/",
  syncOptions: { initialSyncBehavior: "overwrite-destination" as const },
  destinationConfig: destinationConfigs["data-platform"],
  isAutoSyncEnabled: false,
  ...over,
});

beforeAll(async () => {
  h = await startHarness();
  checked = h.client();
  unchecked = h.unchecked();
  membershipId = (await checked.getMembershipByUsername(seedIds.demoProject, seedIds.bob)).id;
  syncId = (await checked.createSecretSync("data-platform", syncBody({}))).id;
});
afterAll(async () => {
  await h.em.close();
  await closeConnections();
});
beforeEach(() => h.em.clearRequests());

interface Row {
  limit: string;
  op: OperationName;
  /** Calls that break the limit. */
  past: ((c: ApiClient) => Promise<unknown>)[];
  /** Calls at the boundary, which the service accepts. */
  at: ((c: ApiClient) => Promise<unknown>)[];
}

const createSync = (over: Record<string, unknown>) => (c: ApiClient) => c.createSecretSync("data-platform", syncBody(over));
const updateSync = (body: Record<string, unknown>) => (c: ApiClient) => c.updateSecretSync("data-platform", syncId, body);
const createProject = (over: Record<string, unknown>) => (c: ApiClient) => c.createProject({ projectName: "limits", ...over });
const updateProject = (body: Record<string, unknown>) => (c: ApiClient) => c.updateProject(seedIds.demoProject, body);
const listProfiles = (over: Record<string, unknown>) => (c: ApiClient) =>
  c.listCertificateProfiles({ projectId: seedIds.pkiProject, ...over });

const rows: Row[] = [
  {
    limit: "sync name 1..64",
    op: "createSecretSync",
    past: [createSync({ name: "" }), createSync({ name: s(65) })],
    at: [createSync({ name: `a${unique("n").slice(0, 60)}`.padEnd(64, "z") })],
  },
  {
    limit: "sync environment 1..64",
    op: "createSecretSync",
    past: [createSync({ environment: "" }), createSync({ environment: s(65) })],
    at: [],
  },
  {
    limit: "sync description max 256",
    op: "createSecretSync",
    past: [createSync({ description: s(257) })],
    at: [createSync({ description: s(256) }), createSync({ description: null })],
  },
  { limit: "sync projectId min 1", op: "createSecretSync", past: [createSync({ projectId: "" })], at: [] },
  { limit: "sync secretPath min 1", op: "createSecretSync", past: [createSync({ secretPath: "" })], at: [] },
  {
    limit: "sync update name, environment, description",
    op: "updateSecretSync",
    past: [updateSync({ name: "" }), updateSync({ name: s(65) }), updateSync({ environment: s(65) }), updateSync({ description: s(257) })],
    at: [updateSync({ description: s(256) })],
  },
  {
    limit: "project slug at creation 5..36",
    op: "createProject",
    past: [createProject({ slug: s(4) }), createProject({ slug: s(37) })],
    at: [createProject({ slug: slugOf(5) }), createProject({ slug: slugOf(36) })],
  },
  {
    limit: "template name 1..64",
    op: "createProject",
    past: [createProject({ template: "" }), createProject({ template: s(65) })],
    at: [],
  },
  {
    limit: "project update name max 64",
    op: "updateProject",
    past: [updateProject({ name: s(65) })],
    at: [updateProject({ name: "Demo Project".padEnd(64, ".") })],
  },
  {
    limit: "project update description max 256",
    op: "updateProject",
    past: [updateProject({ description: s(257) })],
    at: [updateProject({ description: s(256) })],
  },
  {
    limit: "pitVersionLimit 1..100",
    op: "updateProject",
    past: [updateProject({ pitVersionLimit: 0 }), updateProject({ pitVersionLimit: 101 })],
    at: [updateProject({ pitVersionLimit: 1 }), updateProject({ pitVersionLimit: 100 })],
  },
  {
    limit: "profile page size 1..100",
    op: "listCertificateProfiles",
    past: [listProfiles({ limit: 0 }), listProfiles({ limit: 101 })],
    at: [listProfiles({ limit: 1 }), listProfiles({ limit: 100 })],
  },
  { limit: "profile offset >= 0", op: "listCertificateProfiles", past: [listProfiles({ offset: -1 })], at: [listProfiles({ offset: 0 })] },
  {
    limit: "user role list at least 1 entry",
    op: "updateMembershipRoles",
    past: [(c) => c.updateMembershipRoles(seedIds.demoProject, membershipId, [])],
    at: [(c) => c.updateMembershipRoles(seedIds.demoProject, membershipId, [{ role: "viewer" }])],
  },
  {
    limit: "group role list at least 1 entry",
    op: "updateGroupRoles",
    past: [(c) => c.updateGroupRoles(seedIds.demoProject, seedIds.platformGroup, [])],
    at: [(c) => c.updateGroupRoles(seedIds.demoProject, seedIds.platformGroup, [{ role: "member" }])],
  },
  {
    limit: "slug in project-by-slug lookup max 64",
    op: "getProjectBySlug",
    past: [(c) => c.getProjectBySlug(s(65))],
    at: [(c) => c.getProjectBySlug("demo-project")],
  },
];

describe("limits of interface.md over HTTP", () => {
  for (const row of rows) {
    it(`${row.limit}: the client refuses before sending`, async () => {
      for (const call of row.past) {
        const err = await rejectionOf(call(checked));
        expect(isRequestValidationError(err), String(err)).toBe(true);
      }
      expect(h.requestsOf(row.op)).toEqual([]);
    });

    it(`${row.limit}: unchecked, the service answers 422; at the boundary it accepts`, async () => {
      for (const call of row.past) {
        const err = await rejectionOf(call(unchecked));
        expect(isApiError(err) && err.status, String(err)).toBe(422);
        if (isApiError(err)) {
          expect(err.error).toBe("ValidationFailure");
          expect(err.serviceMessage).not.toContain("[object Object]");
          expect(err.retryable).toBe(false);
        }
      }
      expect(h.requestsOf(row.op)).toHaveLength(row.past.length);
      for (const call of row.at) await call(checked);
    });
  }

  it("the client also refuses the empty slug lookup, the empty username and a bad sync id", async () => {
    for (const call of [
      checked.getProjectBySlug(""),
      checked.getMembershipByUsername(seedIds.demoProject, ""),
      checked.getSecretSync("git-host", "not-a-uuid"),
      checked.getCertificateProfileBySlug("", seedIds.pkiProject),
    ]) {
      expect(isRequestValidationError(await rejectionOf(call))).toBe(true);
    }
    expect(h.em.requests()).toEqual([]);
  });

  it("unchecked, the service refuses the empty username and a bad sync id with 422", async () => {
    for (const call of [unchecked.getMembershipByUsername(seedIds.demoProject, ""), unchecked.getSecretSync("git-host", "not-a-uuid")]) {
      const err = await rejectionOf(call);
      expect(isApiError(err) && err.status, String(err)).toBe(422);
    }
  });
});
