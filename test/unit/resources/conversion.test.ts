// Each kind's conversion between v1alpha1 and v1beta1 on hand-written objects (docs/api-review.md):
// every SecretSync destination, temporary roles, enums, what rides in the conversion annotation and
// what is refused. The round trips over generated objects are conversion.property.test.ts.
import { describe, expect, it } from "vitest";
import { convert, ConversionError, type ConvertibleObject } from "../../../src/resources/conversion.ts";

const ANN = "conversion.keyward.dev/v1alpha1";
const ANN_BETA = "conversion.keyward.dev/v1beta1";

function alpha(kind: string, spec: Record<string, unknown>, status?: Record<string, unknown>): ConvertibleObject {
  return {
    apiVersion: "keyward.dev/v1alpha1",
    kind,
    metadata: {
      name: "x",
      namespace: "team-a",
      uid: "0b6c3e0e-1111-4222-8333-944445555666",
      annotations: { "keyward.dev/external-id": "ext-1", "handled.keyward.dev/sync": "2026-01-01T00:00:00Z" },
      labels: { app: "payments" },
      finalizers: ["keyward.dev/finalizer"],
    },
    spec,
    ...(status ? { status } : {}),
  } as ConvertibleObject;
}

/** Converts to v1beta1, checks the way back is the input, and returns the v1beta1 object. */
function beta(obj: ConvertibleObject): ConvertibleObject {
  const out = convert(obj, "v1beta1");
  expect(out.apiVersion).toBe("keyward.dev/v1beta1");
  expect(convert(out, "v1alpha1")).toEqual(obj);
  return out;
}

const common = {
  projectRef: { name: "payments" },
  connectionId: "3f1c2d4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
  environment: "prod",
  secretPath: "/app",
  isAutoSyncEnabled: true,
};
const commonBeta = { ...common, connectionId: undefined, isAutoSyncEnabled: undefined, connectionID: common.connectionId, autoSync: true };
const withoutUndefined = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

// Every destination, its v1alpha1 destinationConfig and its v1beta1 member.
const destinations: [string, Record<string, unknown>, string, string, Record<string, unknown>][] = [
  [
    "workflow-engine",
    { scope: "cluster", clusterUUID: "c-1" },
    "WorkflowEngine",
    "workflowEngine",
    { scope: "cluster", clusterUUID: "c-1" },
  ],
  [
    "code-host",
    { scope: "organization", org: "acme", visibility: "all", selectedRepositoryIds: [1, 2] },
    "CodeHost",
    "codeHost",
    { scope: "organization", org: "acme", visibility: "All", selectedRepositoryIDs: [1, 2] },
  ],
  ["data-platform", { scope: "analytics" }, "DataPlatform", "dataPlatform", { scope: "analytics" }],
  [
    "cloud-secrets-manager",
    { mappingBehavior: "one-to-one", region: "eu-west-1" },
    "CloudSecretsManager",
    "cloudSecretsManager",
    { mappingBehavior: "OneToOne", region: "eu-west-1" },
  ],
  ["app-platform", { appId: "a-1", appName: "shop" }, "AppPlatform", "appPlatform", { appID: "a-1", appName: "shop" }],
  [
    "git-host",
    { repositorySlug: "shop", environmentId: "e-1", workspaceSlug: "acme" },
    "GitHost",
    "gitHost",
    { repositorySlug: "shop", environmentID: "e-1", workspaceSlug: "acme" },
  ],
  [
    "monitoring",
    { accountId: "1", accountName: "acme", groupId: "2", groupName: "ops" },
    "Monitoring",
    "monitoring",
    { accountID: "1", accountName: "acme", groupID: "2", groupName: "ops" },
  ],
];

describe("SecretSync", () => {
  it.each(destinations)(
    "%s: destination and destinationConfig become destination.type and its member",
    (d, config, type, member, fields) => {
      const obj = alpha("SecretSync", {
        ...common,
        destination: d,
        destinationConfig: config,
        syncOptions: { initialSyncBehavior: "overwrite-destination", keySchema: "APP_{{secretKey}}" },
      });
      const out = beta(obj);
      expect(out["spec"]).toEqual({
        ...withoutUndefined(commonBeta),
        destination: { type, [member]: fields },
        syncOptions: { initialSyncBehavior: "OverwriteDestination", keySchema: "APP_{{secretKey}}" },
      });
      // a valid object has a place for every value: nothing rides in an annotation
      expect(out.metadata).toEqual(obj.metadata);
    },
  );

  it("cloud-secrets-manager: keyId, tags and syncSecretMetadataAsTags move into its member; an emptied syncOptions goes", () => {
    const tags = [{ key: "team", value: "payments" }];
    const obj = alpha("SecretSync", {
      ...common,
      destination: "cloud-secrets-manager",
      destinationConfig: { mappingBehavior: "one-to-one", region: "eu-west-1" },
      syncOptions: { keyId: "arn:kms:1", tags, syncSecretMetadataAsTags: false },
    });
    const out = beta(obj);
    expect((out["spec"] as Record<string, unknown>)["destination"]).toEqual({
      type: "CloudSecretsManager",
      cloudSecretsManager: { mappingBehavior: "OneToOne", region: "eu-west-1", keyID: "arn:kms:1", tags, syncSecretMetadataAsTags: false },
    });
    expect((out["spec"] as Record<string, unknown>)["syncOptions"]).toBeUndefined();
    expect(out.metadata?.["annotations"]).not.toHaveProperty(ANN);
  });

  it("import behaviours, status ids and times: respelled", () => {
    const obj = alpha(
      "SecretSync",
      {
        ...common,
        destination: "app-platform",
        destinationConfig: { appId: "a", appName: "b" },
        syncOptions: { initialSyncBehavior: "import-prioritize-destination" },
      },
      {
        syncId: "s-1",
        projectId: "p-1",
        isAutoSyncEnabled: false,
        lastSyncJobId: null,
        pendingRequest: { action: "sync", value: "v", markedAt: "2026-01-01T00:00:00Z", lastJobId: "j-1" },
        destination: "app-platform",
      },
    );
    const out = beta(obj);
    expect((out["spec"] as { syncOptions: unknown }).syncOptions).toEqual({ initialSyncBehavior: "ImportPrioritizeDestination" });
    expect(out["status"]).toEqual({
      syncID: "s-1",
      projectID: "p-1",
      autoSync: false,
      lastSyncJobID: null,
      pendingRequest: { action: "sync", value: "v", markedAt: "2026-01-01T00:00:00Z", lastJobID: "j-1" },
      // an observation of the service, as it spells it
      destination: "app-platform",
    });
  });

  it("a v1alpha1 field v1beta1 has no place for (keyId on code-host) rides in the annotation and comes back", () => {
    const obj = alpha("SecretSync", {
      ...common,
      destination: "code-host",
      destinationConfig: { scope: "organization", org: "acme", visibility: "all" },
      syncOptions: { keyId: "k", disableSecretDeletion: true },
    });
    const out = beta(obj);
    expect((out["spec"] as { syncOptions: unknown }).syncOptions).toEqual({ disableSecretDeletion: true });
    expect(JSON.parse(String(out.metadata?.["annotations"]?.[ANN as never]))).toEqual([
      { path: ["spec", "syncOptions", "keyId"], value: "k" },
    ]);
    // the durable annotations are untouched beside it
    expect(out.metadata?.["annotations"]).toMatchObject({ "keyward.dev/external-id": "ext-1" });
  });

  it("a v1beta1 object with two members keeps the other member in the v1beta1 annotation of its v1alpha1 form", () => {
    const obj: ConvertibleObject = {
      apiVersion: "keyward.dev/v1beta1",
      kind: "SecretSync",
      metadata: { name: "x" },
      spec: { destination: { type: "DataPlatform", dataPlatform: { scope: "a" }, monitoring: { groupID: "g" } } },
    };
    const down = convert(obj, "v1alpha1");
    expect(down["spec"]).toEqual({ destination: "data-platform", destinationConfig: { scope: "a" } });
    expect(down.metadata?.["annotations"]).toHaveProperty(ANN_BETA);
    expect(convert(down, "v1beta1")).toEqual(obj);
  });

  it("refuses what has no form, naming the field, and converts nothing half-way", () => {
    const obj: ConvertibleObject = {
      apiVersion: "keyward.dev/v1beta1",
      kind: "SecretSync",
      metadata: { name: "x" },
      spec: { destination: { type: "Carrier", carrier: {} } },
    };
    expect(() => convert(obj, "v1alpha1")).toThrow(ConversionError);
    expect(() => convert(obj, "v1alpha1")).toThrow(/^spec\.destination\.type: "Carrier" is not one of WorkflowEngine, CodeHost/);
    const bad = alpha("SecretSync", { ...common, destination: "code-host", destinationConfig: "acme" });
    expect(() => convert(bad, "v1beta1")).toThrow(/^spec\.destinationConfig: must be an object, not a string/);
    const badEnum = alpha("SecretSync", {
      ...common,
      destination: "code-host",
      destinationConfig: {},
      syncOptions: { initialSyncBehavior: "merge" },
    });
    expect(() => convert(badEnum, "v1beta1")).toThrow(/^spec\.syncOptions\.initialSyncBehavior: "merge" is not one of/);
  });
});

describe("ProjectMembership", () => {
  const roles = [
    { role: "viewer" },
    { role: "admin", isTemporary: true, temporaryMode: "relative", temporaryRange: "8h", temporaryAccessStartTime: "2026-01-01T09:00:00Z" },
  ];

  it("a temporary role's flag and fields become the optional struct temporary", () => {
    const out = beta(
      alpha("ProjectMembership", { projectId: "p-1", username: "ana@example.com", roles }, { projectId: "p-1", userId: "u-1" }),
    );
    expect(out["spec"]).toEqual({
      projectID: "p-1",
      username: "ana@example.com",
      roles: [{ role: "viewer" }, { role: "admin", temporary: { mode: "Relative", range: "8h", startTime: "2026-01-01T09:00:00Z" } }],
    });
    expect(out["status"]).toEqual({ projectID: "p-1", userID: "u-1" });
    expect(out.metadata?.["annotations"]).not.toHaveProperty(ANN);
  });

  it("an explicit isTemporary: false has no v1beta1 form: it rides in the annotation, and only there", () => {
    const obj = alpha("ProjectMembership", { username: "ana", roles: [{ role: "viewer", isTemporary: false }] });
    const out = beta(obj);
    expect((out["spec"] as { roles: unknown }).roles).toEqual([{ role: "viewer" }]);
    expect(JSON.parse(String(out.metadata?.["annotations"]?.[ANN as never]))).toEqual([
      { path: ["spec", "roles", 0, "isTemporary"], value: false },
    ]);
  });

  it("a remembered value does not override a change made in the other version", () => {
    const out = convert(alpha("ProjectMembership", { username: "ana", roles: [{ role: "viewer", isTemporary: false }] }), "v1beta1");
    // made temporary while read as v1beta1: the remembered `false` no longer fits its place
    (out["spec"] as { roles: Record<string, unknown>[] }).roles[0]!["temporary"] = { range: "1h", startTime: "2026-01-01T00:00:00Z" };
    const back = convert(out, "v1alpha1");
    expect((back["spec"] as { roles: unknown }).roles).toEqual([
      { role: "viewer", isTemporary: true, temporaryRange: "1h", temporaryAccessStartTime: "2026-01-01T00:00:00Z" },
    ]);
    expect(back.metadata?.["annotations"]).not.toHaveProperty(ANN);
    expect(back.metadata?.["annotations"]).not.toHaveProperty(ANN_BETA);
  });

  it("refuses an unknown temporary mode, naming the role", () => {
    const obj = alpha("ProjectMembership", {
      username: "ana",
      roles: [{ role: "viewer" }, { role: "a", isTemporary: true, temporaryMode: "absolute" }],
    });
    expect(() => convert(obj, "v1beta1")).toThrow(/^spec\.roles\[1\]\.temporaryMode: "absolute" is not one of relative/);
  });
});

describe("the other kinds", () => {
  it("Project: enum values CamelCase (initialisms in capitals), booleans named as properties, ids as initialisms", () => {
    const out = beta(
      alpha(
        "Project",
        { type: "kms", shouldCreateDefaultEnvs: false, hasDeleteProtection: true, kmsKeyId: "k", pitVersionLimit: 10 },
        { projectId: "p", orgId: "o", hasDeleteProtection: true, type: "kms" },
      ),
    );
    expect(out["spec"]).toEqual({
      type: "KMS",
      createDefaultEnvironments: false,
      deleteProtection: true,
      kmsKeyID: "k",
      pointInTimeVersionLimit: 10,
    });
    expect(out["status"]).toEqual({ projectID: "p", orgID: "o", deleteProtection: true, type: "kms" });
  });

  it("ProviderConfig, ClusterProviderConfig, AccessToken, CertificateProfile: initialisms", () => {
    for (const kind of ["ProviderConfig", "ClusterProviderConfig"]) {
      const out = beta(
        alpha(kind, { baseUrl: "https://s", tokenAuth: { identityId: "i", bootstrapSecretRef: { name: "b" } } }, { baseUrl: "https://s" }),
      );
      expect(out["spec"]).toEqual({ baseURL: "https://s", tokenAuth: { identityID: "i", bootstrapSecretRef: { name: "b" } } });
      expect(out["status"]).toEqual({ baseURL: "https://s" });
    }
    expect(beta(alpha("AccessToken", { identityId: "i", secretName: "s" }, { tokenId: "t", identityId: "i" }))).toMatchObject({
      spec: { identityID: "i", secretName: "s" },
      status: { tokenID: "t", identityID: "i" },
    });
    expect(
      beta(alpha("CertificateProfile", { projectId: "p", slug: "s" }, { caId: "c", acmeConfig: { directoryUrl: "u" } })),
    ).toMatchObject({
      spec: { projectID: "p", slug: "s" },
      status: { caID: "c", acmeConfig: { directoryURL: "u" } },
    });
  });

  it("metadata passes through untouched, an empty annotations map included", () => {
    const obj = alpha("AccessToken", { identityId: "i", secretName: "s" });
    obj.metadata = { name: "x", annotations: {}, resourceVersion: "42", generation: 3 };
    expect(convert(obj, "v1beta1").metadata).toEqual(obj.metadata);
  });

  it("refuses a kind or version keyward does not serve", () => {
    expect(() => convert({ apiVersion: "keyward.dev/v1alpha1", kind: "Widget" }, "v1beta1")).toThrow(/^kind: Widget/);
    expect(() => convert({ apiVersion: "keyward.dev/v1alpha1", kind: "Project" }, "v2")).toThrow(/^apiVersion: /);
  });
});
