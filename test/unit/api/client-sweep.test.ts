// Every operation meets 401 (no token), 403 (a bad token) and, where it names an object, 404.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeConnections, isApiError, operations, type ApiClient, type OperationName } from "../../../src/api/index.ts";
import { connectionIds, destinationConfigs, rejectionOf, seedIds, startHarness, type Harness } from "./emulator-fixture.ts";

let h: Harness;
let syncId: string;
const missing = "00000000-0000-4000-8000-00000000beef";

beforeAll(async () => {
  h = await startHarness();
  const sync = await h.client().createSecretSync("monitoring", {
    name: "sweep",
    projectId: seedIds.demoProject,
    connectionId: connectionIds.monitoring,
    environment: "dev",
    secretPath: "/",
    syncOptions: { initialSyncBehavior: "overwrite-destination" as const },
    destinationConfig: destinationConfigs.monitoring,
    isAutoSyncEnabled: false,
  });
  syncId = sync.id;
});
afterAll(async () => {
  await h.em.close();
  await closeConnections();
});

const syncBody = {
  name: "sweep-2",
  projectId: seedIds.demoProject,
  connectionId: connectionIds.monitoring,
  environment: "dev",
  secretPath: "/",
  syncOptions: { initialSyncBehavior: "overwrite-destination" as const },
  destinationConfig: destinationConfigs.monitoring,
};

/** A valid call of each operation; `id` is the object it names (a real one, or a missing one). */
const calls: Record<OperationName, (c: ApiClient, id: "real" | "missing") => Promise<unknown>> = {
  createProject: (c) => c.createProject({ projectName: "sweep" }),
  listProjects: (c) => c.listProjects(),
  getProject: (c, id) => c.getProject(id === "real" ? seedIds.demoProject : missing),
  getProjectBySlug: (c, id) => c.getProjectBySlug(id === "real" ? "demo-project" : "no-such-project"),
  updateProject: (c, id) => c.updateProject(id === "real" ? seedIds.demoProject : missing, { description: "sweep" }),
  deleteProject: (c, id) => c.deleteProject(id === "real" ? seedIds.pkiProject : missing),
  listProjectMemberships: (c, id) => c.listProjectMemberships(id === "real" ? seedIds.demoProject : missing),
  listWorkspaceMemberships: (c, id) => c.listWorkspaceMemberships(id === "real" ? seedIds.demoProject : missing),
  getMembershipByUsername: (c, id) => c.getMembershipByUsername(seedIds.demoProject, id === "real" ? seedIds.alice : "nobody@example.com"),
  updateMembershipRoles: (c) => c.updateMembershipRoles(seedIds.demoProject, missing, [{ role: "viewer" }]),
  listProjectGroups: (c, id) => c.listProjectGroups(id === "real" ? seedIds.demoProject : missing),
  updateGroupRoles: (c, id) =>
    c.updateGroupRoles(seedIds.demoProject, id === "real" ? seedIds.platformGroup : missing, [{ role: "viewer" }]),
  createIdentityToken: (c, id) => c.createIdentityToken(id === "real" ? seedIds.identity : missing),
  listCertificateProfiles: (c, id) => c.listCertificateProfiles({ projectId: id === "real" ? seedIds.pkiProject : missing }),
  getCertificateProfileBySlug: (c, id) =>
    c.getCertificateProfileBySlug(id === "real" ? "web-servers" : "no-such-profile", seedIds.pkiProject),
  createSecretSync: (c, id) => c.createSecretSync("monitoring", { ...syncBody, projectId: id === "real" ? seedIds.demoProject : missing }),
  updateSecretSync: (c, id) => c.updateSecretSync("monitoring", id === "real" ? syncId : missing, { description: "sweep" }),
  syncSecrets: (c, id) => c.syncSecrets("monitoring", id === "real" ? syncId : missing),
  removeSecrets: (c, id) => c.removeSecrets("monitoring", id === "real" ? syncId : missing),
  getSecretSync: (c, id) => c.getSecretSync("monitoring", id === "real" ? syncId : missing),
  findSecretSyncByName: (c) => c.findSecretSyncByName("monitoring", "sweep", missing),
  deleteSecretSync: (c, id) => c.deleteSecretSync("monitoring", id === "real" ? syncId : missing),
};

// The certificate-profile reads take anonymous requests (interface.md's samples carry no token).
const anonymous = new Set<OperationName>(["listCertificateProfiles", "getCertificateProfileBySlug"]);
// Nothing to miss: creating a project and listing all projects name no object.
const no404 = new Set<OperationName>(["createProject", "listProjects"]);

async function statusOf(p: Promise<unknown>): Promise<number | string> {
  const err = await rejectionOf(p);
  return isApiError(err) ? err.status : String(err);
}

describe("every operation", () => {
  it("answers 401 without a token (the profile reads are anonymous)", async () => {
    const c = h.client({ token: undefined });
    for (const op of operations) {
      if (anonymous.has(op.name)) continue;
      expect(await statusOf(calls[op.name](c, "real")), op.name).toBe(401);
    }
  });

  it("answers 403 with a bad token", async () => {
    const c = h.client({ token: "kw-not-a-token" });
    for (const op of operations) expect(await statusOf(calls[op.name](c, "real")), op.name).toBe(403);
  });

  it("answers 404 for what does not exist (findSecretSyncByName: undefined)", async () => {
    const c = h.client();
    expect(await calls.findSecretSyncByName(c, "missing")).toBeUndefined();
    for (const op of operations) {
      if (no404.has(op.name) || op.name === "findSecretSyncByName") continue;
      expect(await statusOf(calls[op.name](c, "missing")), op.name).toBe(404);
    }
  });
});
