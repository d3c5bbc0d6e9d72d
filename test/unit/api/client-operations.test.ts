// Every operation against the emulator over real HTTP: the happy path, what went over the wire
// (method, path, query, body — from the emulator's request log) and what came back.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  closeConnections,
  connectionAppByDestination,
  destinations,
  isApiError,
  operations,
  type ApiClient,
  type Destination,
  type SecretSync,
} from "../../../src/api/index.ts";
import {
  connectionIds,
  destinationConfigs,
  eventually,
  rejectionOf,
  seedIds,
  startHarness,
  unique,
  type Harness,
} from "./emulator-fixture.ts";

let h: Harness;
let api: ApiClient;

beforeAll(async () => {
  h = await startHarness();
  api = h.client();
});
afterAll(async () => {
  await h.em.close();
  await closeConnections();
});
beforeEach(() => {
  h.em.setFaults({});
  h.em.clearRequests();
});

describe("operations table", () => {
  it("lists the 19 operations of interface.md and the three beyond it", () => {
    expect(operations.filter((o) => !o.beyondInterface)).toHaveLength(19);
    expect(operations.filter((o) => o.beyondInterface).map((o) => o.name)).toEqual([
      "getSecretSync",
      "findSecretSyncByName",
      "deleteSecretSync",
    ]);
    for (const op of operations) expect(typeof (api as unknown as Record<string, unknown>)[op.name], op.name).toBe("function");
  });
});

describe("projects", () => {
  it("createProject sends the body as given and returns the project with environments", async () => {
    const slug = unique("proj");
    const body = {
      projectName: "Created",
      projectDescription: "d",
      slug,
      template: "default",
      type: "kms" as const,
      shouldCreateDefaultEnvs: true,
      hasDeleteProtection: false,
    };
    const project = await api.createProject(body);
    expect(project).toMatchObject({ name: "Created", slug, type: "kms" });
    expect(project.environments.length).toBeGreaterThan(0);
    const [sent] = h.requestsOf("createProject");
    expect(sent).toMatchObject({ method: "POST", path: "/api/v2/workspace", body, status: 200, auth: "valid" });
  });

  it("listProjects passes includeRoles and type", async () => {
    const all = await api.listProjects();
    expect(all.map((p) => p.id)).toEqual(expect.arrayContaining([seedIds.demoProject, seedIds.pkiProject]));
    const pki = await api.listProjects({ includeRoles: true, type: "cert-manager" });
    expect(pki.map((p) => p.id)).toContain(seedIds.pkiProject);
    expect(pki.every((p) => p.type === "cert-manager")).toBe(true);
    expect(pki[0]?.roles?.length).toBeGreaterThan(0);
    expect(h.requestsOf("listProjects").map((r) => r.query)).toEqual([{}, { includeRoles: "true", type: "cert-manager" }]);
  });

  it("getProject and getProjectBySlug (a bare object) find the same project", async () => {
    const byId = await api.getProject(seedIds.demoProject);
    const bySlug = await api.getProjectBySlug("demo-project");
    expect(bySlug.id).toBe(byId.id);
    expect(bySlug.environments).toEqual(byId.environments);
    expect(h.requestsOf("getProjectBySlug")[0]?.path).toBe("/api/v1/projects/slug/demo-project");
  });

  it("updateProject stores the fields, deleteProject returns the project without environments", async () => {
    const created = await api.createProject({ projectName: "To update", slug: unique("upd") });
    const updated = await api.updateProject(created.id, {
      name: "Renamed",
      description: "x",
      pitVersionLimit: 50,
      hasDeleteProtection: true,
      secretDetectionIgnoreValues: ["a"],
    });
    expect(updated).toMatchObject({ name: "Renamed", description: "x", pitVersionLimit: 50, hasDeleteProtection: true });
    expect((await api.getProject(created.id)).hasDeleteProtection).toBe(true);
    await api.updateProject(created.id, { hasDeleteProtection: false });
    const deleted = await api.deleteProject(created.id);
    expect(deleted.id).toBe(created.id);
    expect(deleted.environments).toBeUndefined();
    expect(isApiError(await rejectionOf(api.getProject(created.id)))).toBe(true);
  });
});

describe("memberships and groups", () => {
  it("list by the projects path and the workspace path give the same memberships", async () => {
    const a = await api.listProjectMemberships(seedIds.demoProject);
    const b = await api.listWorkspaceMemberships(seedIds.demoProject);
    expect(a.map((m) => m.user.username).sort()).toEqual([seedIds.alice, seedIds.bob]);
    expect(b.map((m) => m.id).sort()).toEqual(a.map((m) => m.id).sort());
    expect(h.requestsOf("listWorkspaceMemberships")[0]?.path).toBe(`/api/v1/workspace/${seedIds.demoProject}/memberships`);
  });

  it("getMembershipByUsername posts the username and returns one membership", async () => {
    const m = await api.getMembershipByUsername(seedIds.demoProject, seedIds.bob);
    expect(m.roles.map((r) => r.role)).toEqual(["viewer"]);
    expect(h.requestsOf("getMembershipByUsername")[0]).toMatchObject({ method: "POST", body: { username: seedIds.bob } });
  });

  it("updateMembershipRoles sets permanent and temporary roles", async () => {
    const m = await api.getMembershipByUsername(seedIds.demoProject, seedIds.bob);
    const start = new Date().toISOString();
    const roles = await api.updateMembershipRoles(seedIds.demoProject, m.id, [
      { role: "member" },
      { role: "admin", isTemporary: true, temporaryMode: "relative", temporaryRange: "1h", temporaryAccessStartTime: start },
    ]);
    expect(roles.map((r) => [r.role, r.isTemporary])).toEqual([
      ["member", false],
      ["admin", true],
    ]);
    const after = await api.getMembershipByUsername(seedIds.demoProject, seedIds.bob);
    expect(after.roles.find((r) => r.isTemporary)).toMatchObject({ role: "admin", temporaryMode: "relative", temporaryRange: "1h" });
    await api.updateMembershipRoles(seedIds.demoProject, m.id, [{ role: "viewer" }]);
  });

  it("listProjectGroups and updateGroupRoles", async () => {
    const groups = await api.listProjectGroups(seedIds.demoProject);
    expect(groups.map((g) => g.group.slug)).toEqual(["platform-team"]);
    const roles = await api.updateGroupRoles(seedIds.demoProject, seedIds.platformGroup, [{ role: "viewer" }, { role: "deployer" }]);
    expect(roles).toHaveLength(2);
    const stored = (await api.listProjectGroups(seedIds.demoProject))[0]?.roles.map((r) => r.customRoleSlug ?? r.role);
    expect(stored?.sort()).toEqual(["deployer", "viewer"]);
    expect(h.requestsOf("updateGroupRoles")[0]?.path).toBe(`/api/v1/projects/${seedIds.demoProject}/groups/${seedIds.platformGroup}`);
  });
});

describe("access tokens", () => {
  it("createIdentityToken returns a bearer token the service accepts (per-call token option)", async () => {
    const issued = await api.createIdentityToken(seedIds.identity, { name: "ci" });
    expect(issued).toMatchObject({ tokenType: "Bearer", tokenData: { name: "ci" } });
    expect(issued.expiresIn).toBeGreaterThan(0);
    const anonymous = h.client({ token: undefined });
    const projects = await anonymous.listProjects({}, { token: issued.accessToken });
    expect(Array.isArray(projects)).toBe(true);
    expect(h.requestsOf("listProjects").at(-1)?.auth).toBe("valid");
  });
});

describe("certificate profiles", () => {
  it("listCertificateProfiles passes projectId, offset, limit and enrollmentType", async () => {
    const all = await api.listCertificateProfiles({ projectId: seedIds.pkiProject });
    expect(all.totalCount).toBe(4);
    expect(all.certificateProfiles.find((p) => p.slug === "web-servers")?.metrics?.totalCertificates).toBe(12);
    const page = await api.listCertificateProfiles({ projectId: seedIds.pkiProject, offset: 1, limit: 1, enrollmentType: "api" });
    expect(page.totalCount).toBe(2);
    expect(page.certificateProfiles).toHaveLength(1);
    expect(h.requestsOf("listCertificateProfiles")[1]?.query).toEqual({
      projectId: seedIds.pkiProject,
      offset: "1",
      limit: "1",
      enrollmentType: "api",
    });
  });

  it("getCertificateProfileBySlug returns the scalar fields", async () => {
    const p = await api.getCertificateProfileBySlug("network-devices", seedIds.pkiProject);
    expect(p).toMatchObject({ slug: "network-devices", enrollmentType: "est" });
    expect(p["estConfig"]).toBeUndefined();
    expect(h.requestsOf("getCertificateProfileBySlug")[0]?.query).toEqual({ projectId: seedIds.pkiProject });
  });
});

async function settled(destination: Destination, syncId: string): Promise<SecretSync> {
  const busy = (s: SecretSync) => [s.syncStatus, s.importStatus, s.removeStatus].some((x) => x === "pending" || x === "running");
  return eventually(
    () => api.getSecretSync(destination, syncId),
    (s) => !busy(s),
  );
}

const alternativeUpdates: Partial<Record<Destination, Record<string, unknown>[]>> = {
  "code-host": [
    { scope: "organization", org: "acme", visibility: "all", selectedRepositoryIds: [1, 2] },
    { scope: "repository", owner: "acme", repo: "shop" },
  ],
  "cloud-secrets-manager": [{ mappingBehavior: "many-to-one", region: "eu-west-1", secretName: "all" }],
};

describe("secret syncs", () => {
  for (const destination of destinations) {
    it(`${destination}: create, get, find by name, update, trigger, remove, delete`, async () => {
      const name = unique("sync");
      const syncOptions =
        destination === "cloud-secrets-manager"
          ? { initialSyncBehavior: "overwrite-destination" as const, keySchema: "KW_{{secretKey}}", tags: [{ key: "team", value: "a" }] }
          : { initialSyncBehavior: "overwrite-destination" as const, keySchema: "KW_{{secretKey}}" };
      const created = await api.createSecretSync(destination, {
        name,
        projectId: seedIds.demoProject,
        connectionId: connectionIds[destination],
        environment: "dev",
        secretPath: "/",
        syncOptions,
        destinationConfig: destinationConfigs[destination],
        description: "made by a test",
      } as never);
      expect(created).toMatchObject({
        name,
        destination,
        destinationConfig: destinationConfigs[destination],
        connection: { app: connectionAppByDestination[destination] },
      });
      expect(h.requestsOf("createSecretSync")[0]?.path).toBe(`/api/v1/secret-syncs/${destination}`);

      expect((await api.getSecretSync(destination, created.id)).id).toBe(created.id);
      expect((await api.findSecretSyncByName(destination, name, seedIds.demoProject))?.id).toBe(created.id);
      expect(await api.findSecretSyncByName(destination, unique("absent"), seedIds.demoProject)).toBeUndefined();

      await settled(destination, created.id);
      const updated = await api.updateSecretSync(destination, created.id, { description: "changed", isAutoSyncEnabled: false });
      expect(updated).toMatchObject({ description: "changed", isAutoSyncEnabled: false });
      for (const destinationConfig of alternativeUpdates[destination] ?? []) {
        const alt = await api.updateSecretSync(destination, created.id, { destinationConfig } as never);
        expect(alt.destinationConfig).toMatchObject(destinationConfig);
      }

      await settled(destination, created.id);
      expect((await api.syncSecrets(destination, created.id)).syncStatus).toBe("pending");
      await settled(destination, created.id);
      expect((await api.removeSecrets(destination, created.id)).removeStatus).toBe("pending");
      await settled(destination, created.id);
      const trigger = h.requestsOf("syncSecrets")[0];
      expect(trigger).toMatchObject({ method: "POST", path: `/api/v1/secret-syncs/${destination}/${created.id}/sync-secrets` });

      expect((await api.deleteSecretSync(destination, created.id, { removeSecrets: true })).id).toBe(created.id);
      expect(h.requestsOf("deleteSecretSync")[0]?.query).toEqual({ removeSecrets: "true" });
      // With removeSecrets the service deletes the sync once its remove job has finished.
      const lookup = () =>
        api.getSecretSync(destination, created.id).then(
          () => 200,
          (err: unknown) => (isApiError(err) ? err.status : 0),
        );
      expect(await eventually(lookup, (status) => status === 404)).toBe(404);
    });
  }

  it("deleteSecretSync without removeSecrets sends no query", async () => {
    const created = await api.createSecretSync("data-platform", {
      name: unique("plain"),
      projectId: seedIds.demoProject,
      connectionId: connectionIds["data-platform"],
      environment: "dev",
      secretPath: "/",
      syncOptions: { initialSyncBehavior: "overwrite-destination" as const },
      destinationConfig: destinationConfigs["data-platform"],
      isAutoSyncEnabled: false,
    });
    await api.deleteSecretSync("data-platform", created.id);
    expect(h.requestsOf("deleteSecretSync")[0]?.query).toEqual({});
    const gone = await rejectionOf(api.getSecretSync("data-platform", created.id));
    expect(isApiError(gone) && gone.status).toBe(404);
  });
});
