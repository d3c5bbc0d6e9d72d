import { describe, expect, it } from "vitest";
import type { z } from "zod";
import {
  connectionAppByDestination,
  createProjectBodySchema,
  createSecretSyncBodySchemas,
  createTokenResponseSchema,
  certificateProfileListEntrySchema,
  importCapable,
  destinations,
  getProjectBySlugResponseSchema,
  isMsRange,
  listCertificateProfilesQuerySchema,
  projectSlugSchema,
  roleRequestSchema,
  secretSyncSchema,
  updateGroupRolesBodySchema,
  updateMembershipRolesBodySchema,
  updateProjectBodySchema,
  updateSecretSyncBodySchemas,
  userMembershipSchema,
} from "../../../src/api/schemas.ts";

const s = (n: number) => "x".repeat(n);
const ok = (schema: z.ZodType, value: unknown) => expect(schema.safeParse(value).success, JSON.stringify(value).slice(0, 80)).toBe(true);
const bad = (schema: z.ZodType, value: unknown) => expect(schema.safeParse(value).success, JSON.stringify(value).slice(0, 80)).toBe(false);

const syncBody = {
  name: "sync-a",
  projectId: "p",
  connectionId: "3c90c3cc-0d44-4b50-8888-8dd25736052a",
  environment: "dev",
  secretPath: "/",
  syncOptions: { initialSyncBehavior: "overwrite-destination" },
  destinationConfig: { scope: "s", clusterUUID: "c" },
};
const createSync = createSecretSyncBodySchemas["workflow-engine"];
const updateSync = updateSecretSyncBodySchemas["workflow-engine"];

/** Each row: a limit of interface.md's Limits section, a value at the boundary, one past it. */
const limitRows: { limit: string; schema: z.ZodType; at: unknown[]; past: unknown[] }[] = [
  {
    limit: "sync name 1..64 (create)",
    schema: createSync,
    at: [
      { ...syncBody, name: s(1) },
      { ...syncBody, name: s(64) },
    ],
    past: [
      { ...syncBody, name: "" },
      { ...syncBody, name: s(65) },
    ],
  },
  {
    limit: "sync environment 1..64 (create)",
    schema: createSync,
    at: [
      { ...syncBody, environment: s(1) },
      { ...syncBody, environment: s(64) },
    ],
    past: [
      { ...syncBody, environment: "" },
      { ...syncBody, environment: s(65) },
    ],
  },
  { limit: "sync name 1..64 (update)", schema: updateSync, at: [{ name: s(1) }, { name: s(64) }], past: [{ name: "" }, { name: s(65) }] },
  {
    limit: "sync environment 1..64 (update)",
    schema: updateSync,
    at: [{ environment: s(1) }, { environment: s(64) }],
    past: [{ environment: "" }, { environment: s(65) }],
  },
  {
    limit: "sync description max 256, may be null",
    schema: createSync,
    at: [
      { ...syncBody, description: s(256) },
      { ...syncBody, description: null },
    ],
    past: [{ ...syncBody, description: s(257) }],
  },
  {
    limit: "sync description max 256 (update)",
    schema: updateSync,
    at: [{ description: s(256) }, { description: null }],
    past: [{ description: s(257) }],
  },
  { limit: "sync projectId min 1", schema: createSync, at: [{ ...syncBody, projectId: s(1) }], past: [{ ...syncBody, projectId: "" }] },
  { limit: "sync secretPath min 1", schema: createSync, at: [{ ...syncBody, secretPath: "/" }], past: [{ ...syncBody, secretPath: "" }] },
  {
    limit: "project slug at creation 5..36",
    schema: createProjectBodySchema,
    at: [
      { projectName: "p", slug: s(5) },
      { projectName: "p", slug: s(36) },
    ],
    past: [
      { projectName: "p", slug: s(4) },
      { projectName: "p", slug: s(37) },
    ],
  },
  {
    limit: "template name 1..64",
    schema: createProjectBodySchema,
    at: [
      { projectName: "p", template: s(1) },
      { projectName: "p", template: s(64) },
    ],
    past: [
      { projectName: "p", template: "" },
      { projectName: "p", template: s(65) },
    ],
  },
  { limit: "project update name max 64", schema: updateProjectBodySchema, at: [{ name: s(64) }], past: [{ name: s(65) }] },
  {
    limit: "project update description max 256",
    schema: updateProjectBodySchema,
    at: [{ description: s(256) }],
    past: [{ description: s(257) }],
  },
  {
    limit: "pitVersionLimit 1..100",
    schema: updateProjectBodySchema,
    at: [{ pitVersionLimit: 1 }, { pitVersionLimit: 100 }],
    past: [{ pitVersionLimit: 0 }, { pitVersionLimit: 101 }],
  },
  {
    limit: "profile page size 1..100",
    schema: listCertificateProfilesQuerySchema,
    at: [
      { projectId: "p", limit: 1 },
      { projectId: "p", limit: 100 },
    ],
    past: [
      { projectId: "p", limit: 0 },
      { projectId: "p", limit: 101 },
    ],
  },
  {
    limit: "profile offset >= 0",
    schema: listCertificateProfilesQuerySchema,
    at: [{ projectId: "p", offset: 0 }],
    past: [{ projectId: "p", offset: -1 }],
  },
  {
    limit: "user role list at least 1 entry",
    schema: updateMembershipRolesBodySchema,
    at: [{ roles: [{ role: "viewer" }] }],
    past: [{ roles: [] }],
  },
  {
    limit: "group role list at least 1 entry",
    schema: updateGroupRolesBodySchema,
    at: [{ roles: [{ role: "viewer" }] }],
    past: [{ roles: [] }],
  },
  { limit: "slug in project-by-slug lookup 1..64", schema: projectSlugSchema, at: [s(1), s(64)], past: ["", s(65)] },
];

describe("limits of interface.md", () => {
  for (const row of limitRows) {
    it(`${row.limit}: accepted at the boundary, rejected past it`, () => {
      for (const v of row.at) ok(row.schema, v);
      for (const v of row.past) bad(row.schema, v);
    });
  }

  it("project type and profile enrollment type are enums", () => {
    ok(createProjectBodySchema, { projectName: "p", type: "kms" });
    bad(createProjectBodySchema, { projectName: "p", type: "vault" });
    ok(listCertificateProfilesQuerySchema, { projectId: "p", enrollmentType: "acme" });
    bad(listCertificateProfilesQuerySchema, { projectId: "p", enrollmentType: "scep" });
    bad(listCertificateProfilesQuerySchema, { projectId: "" });
  });
});

describe("role requests", () => {
  const temporary = {
    role: "admin",
    isTemporary: true,
    temporaryMode: "relative",
    temporaryRange: "1h",
    temporaryAccessStartTime: "2026-01-01T00:00:00.000Z",
  };
  it("accept the permanent and the temporary form", () => {
    ok(roleRequestSchema, { role: "viewer" });
    ok(roleRequestSchema, { role: "custom-role", isTemporary: false });
    ok(roleRequestSchema, temporary);
  });
  it("reject a temporary role without its fields or with a bad range", () => {
    bad(roleRequestSchema, { role: "admin", isTemporary: true });
    bad(roleRequestSchema, { ...temporary, temporaryMode: "absolute" });
    bad(roleRequestSchema, { ...temporary, temporaryRange: "soon" });
    bad(roleRequestSchema, { ...temporary, temporaryRange: "0h" });
    bad(roleRequestSchema, { ...temporary, temporaryAccessStartTime: "yesterday" });
  });
  it("need a permanent role among a user's roles (DESIGN.md), not among a group's", () => {
    bad(updateMembershipRolesBodySchema, { roles: [temporary] });
    ok(updateMembershipRolesBodySchema, { roles: [temporary, { role: "viewer" }] });
    ok(updateGroupRolesBodySchema, { roles: [temporary] });
  });
  it("read ms-style durations", () => {
    for (const v of ["1h", "30m", "2 days", "1.5h", "1500", "1w", "10s", "1y"]) expect(isMsRange(v), v).toBe(true);
    for (const v of ["", "h", "-1h", "0", "1 fortnight", "1h30m"]) expect(isMsRange(v), v).toBe(false);
  });
});

describe("secret sync shapes", () => {
  const configs: Record<(typeof destinations)[number], Record<string, unknown>> = {
    "workflow-engine": { scope: "s", clusterUUID: "c" },
    "code-host": { scope: "organization", org: "o", visibility: "all" },
    "data-platform": { scope: "s" },
    "cloud-secrets-manager": { mappingBehavior: "one-to-one", region: "r" },
    "app-platform": { appId: "a", appName: "n" },
    "git-host": { repositorySlug: "r", environmentId: "e", workspaceSlug: "w" },
    monitoring: { accountId: "a", accountName: "n", groupId: "g", groupName: "gn" },
  };

  it("accept each destination's own config and reject another's", () => {
    for (const d of destinations) {
      ok(createSecretSyncBodySchemas[d], { ...syncBody, destinationConfig: configs[d] });
      const other = d === "data-platform" ? configs["app-platform"] : configs["data-platform"];
      bad(createSecretSyncBodySchemas[d], { ...syncBody, destinationConfig: other });
    }
  });

  it("check the fixed values of scope, visibility and mappingBehavior at create", () => {
    bad(createSecretSyncBodySchemas["code-host"], { ...syncBody, destinationConfig: { ...configs["code-host"], visibility: "private" } });
    bad(createSecretSyncBodySchemas["cloud-secrets-manager"], {
      ...syncBody,
      destinationConfig: { mappingBehavior: "many-to-one", region: "r" },
    });
  });

  it("accept the alternative update shapes of code-host (3) and cloud-secrets-manager (2)", () => {
    const code = updateSecretSyncBodySchemas["code-host"];
    ok(code, { destinationConfig: configs["code-host"] });
    ok(code, { destinationConfig: { ...configs["code-host"], selectedRepositoryIds: [1, 2] } });
    ok(code, { destinationConfig: { scope: "repository", owner: "o", repo: "r" } });
    bad(code, { destinationConfig: { org: "o" } });
    const cloud = updateSecretSyncBodySchemas["cloud-secrets-manager"];
    ok(cloud, { destinationConfig: configs["cloud-secrets-manager"] });
    ok(cloud, { destinationConfig: { mappingBehavior: "many-to-one", region: "r", secretName: "s" } });
    bad(cloud, { destinationConfig: { region: "r" } });
  });

  it("check syncOptions: the initialSyncBehavior enum, keySchema with {{secretKey}}, cloud extras", () => {
    const body = (syncOptions: unknown, d: (typeof destinations)[number] = "workflow-engine") => ({
      ...syncBody,
      destinationConfig: configs[d],
      syncOptions,
    });
    ok(
      createSync,
      body({ initialSyncBehavior: "import-prioritize-destination", keySchema: "APP_{{secretKey}}", disableSecretDeletion: true }),
    );
    bad(createSync, body({ initialSyncBehavior: "merge" }));
    bad(createSync, body({ initialSyncBehavior: "overwrite-destination", keySchema: "APP_KEY" }));
    bad(createSync, body({ initialSyncBehavior: "overwrite-destination", keySchema: "APP_{{secretKey}}_{{project}}" }));
    ok(createSync, body({ initialSyncBehavior: "overwrite-destination", keySchema: "{{environment}}_{{secretKey}}" }));
    const cloud = createSecretSyncBodySchemas["cloud-secrets-manager"];
    ok(
      cloud,
      body(
        { initialSyncBehavior: "overwrite-destination", keyId: "k", tags: [{ key: "a", value: "b" }], syncSecretMetadataAsTags: true },
        "cloud-secrets-manager",
      ),
    );
    bad(cloud, body({ initialSyncBehavior: "overwrite-destination", tags: [{ key: "a" }] }, "cloud-secrets-manager"));
    bad(createSync, { ...syncBody, connectionId: "not-a-uuid" });
  });

  it("require initialSyncBehavior on create and in an update's syncOptions, as the real service does", () => {
    bad(createSync, { ...syncBody, syncOptions: {} });
    bad(createSync, { ...syncBody, syncOptions: { keySchema: "APP_{{secretKey}}" } });
    bad(updateSync, { syncOptions: { keySchema: "APP_{{secretKey}}" } });
    ok(updateSync, { syncOptions: { initialSyncBehavior: "overwrite-destination", keySchema: "APP_{{secretKey}}" } });
    ok(updateSync, { name: "renamed" });
  });

  it("allow import behaviours only where the destination can be read back", () => {
    expect(destinations.filter((d) => importCapable[d])).toEqual(["workflow-engine", "cloud-secrets-manager", "app-platform"]);
    for (const d of destinations) {
      const withBehavior = { ...syncBody, destinationConfig: configs[d], syncOptions: { initialSyncBehavior: "import-prioritize-source" } };
      if (importCapable[d]) ok(createSecretSyncBodySchemas[d], withBehavior);
      else bad(createSecretSyncBodySchemas[d], withBehavior);
      ok(createSecretSyncBodySchemas[d], { ...withBehavior, syncOptions: { initialSyncBehavior: "overwrite-destination" } });
    }
  });

  it("map each destination to its connection kind", () => {
    expect(connectionAppByDestination).toEqual({
      "workflow-engine": "workflow-engine",
      "code-host": "code-host",
      "data-platform": "data-platform",
      "cloud-secrets-manager": "cloud",
      "app-platform": "app-platform-host",
      "git-host": "git-host",
      monitoring: "monitoring",
    });
  });
});

describe("responses keep unknown fields", () => {
  const project = {
    id: "p1",
    name: "P",
    slug: "p-one",
    type: "kms",
    orgId: "o",
    createdAt: "t",
    updatedAt: "t",
    environments: [{ id: "e", name: "Dev", slug: "dev", position: 1 }],
    brandNew: { x: 1 },
  };
  it("at the top and nested", () => {
    const parsed = getProjectBySlugResponseSchema.parse(project);
    expect(parsed["brandNew"]).toEqual({ x: 1 });
    expect(parsed.environments[0]?.["position"]).toBe(1);
  });
  it("in memberships, tokens, profiles and syncs", () => {
    const membership = {
      id: "m",
      userId: "u",
      projectId: "p",
      user: { id: "u", extra: 1 },
      roles: [{ id: "r", role: "admin", isTemporary: false, extra: 2 }],
      extra: 3,
    };
    const m = userMembershipSchema.parse(membership);
    expect([m["extra"], m.user["extra"], m.roles[0]?.["extra"]]).toEqual([3, 1, 2]);
    const token = createTokenResponseSchema.parse({
      accessToken: "t",
      expiresIn: 1,
      accessTokenMaxTTL: 2,
      tokenType: "Bearer",
      tokenData: { id: "x", more: true },
      more: 1,
    });
    expect([token["more"], token.tokenData["more"]]).toEqual([1, true]);
    const profile = certificateProfileListEntrySchema.parse({
      id: "i",
      projectId: "p",
      slug: "s",
      enrollmentType: "api",
      metrics: {
        totalCertificates: 1,
        activeCertificates: 1,
        expiredCertificates: 0,
        expiringCertificates: 0,
        revokedCertificates: 0,
        newMetric: 9,
      },
    });
    expect(profile.metrics?.["newMetric"]).toBe(9);
    const sync = secretSyncSchema.parse({
      id: "s",
      name: "n",
      isAutoSyncEnabled: true,
      projectId: "p",
      connectionId: "c",
      createdAt: "t",
      updatedAt: "t",
      syncOptions: { initialSyncBehavior: "overwrite-destination", x: 1 },
      destination: "git-host",
      destinationConfig: { repositorySlug: "r", y: 2 },
      z: 3,
    });
    expect([sync["z"], sync.syncOptions["x"], sync.destinationConfig["y"]]).toEqual([3, 1, 2]);
  });
  it("but check required fields", () => {
    const { slug: _slug, ...withoutSlug } = project;
    expect(getProjectBySlugResponseSchema.safeParse(withoutSlug).success).toBe(false);
    expect(
      createTokenResponseSchema.safeParse({
        accessToken: "t",
        expiresIn: 1,
        accessTokenMaxTTL: 2,
        tokenType: "Basic",
        tokenData: { id: "x" },
      }).success,
    ).toBe(false);
  });
});
