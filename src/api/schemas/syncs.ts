import { z } from "zod";
import { limits, optionalString, uuid } from "./common.ts";

export const destinations = [
  "workflow-engine",
  "code-host",
  "data-platform",
  "cloud-secrets-manager",
  "app-platform",
  "git-host",
  "monitoring",
] as const;
export type Destination = (typeof destinations)[number];

/** The connection kind (`connection.app`) each destination syncs through (interface.md's naming note). */
export const connectionAppByDestination = {
  "workflow-engine": "workflow-engine",
  "code-host": "code-host",
  "data-platform": "data-platform",
  "cloud-secrets-manager": "cloud",
  "app-platform": "app-platform-host",
  "git-host": "git-host",
  monitoring: "monitoring",
} as const satisfies Record<Destination, string>;
export type ConnectionApp = (typeof connectionAppByDestination)[Destination];

// ---- sync options ----------------------------------------------------------------------

export const initialSyncBehaviors = [
  "overwrite-destination",
  "import-prioritize-source",
  "import-prioritize-destination",
] as const;
export type InitialSyncBehavior = (typeof initialSyncBehaviors)[number];

export const SECRET_KEY_PLACEHOLDER = "{{secretKey}}";

export const keySchemaSchema = z
  .string()
  .refine((value) => value.includes(SECRET_KEY_PLACEHOLDER), { message: "keySchema must contain {{secretKey}}" });

/** interface.md does not mark initialSyncBehavior required; the service defaults it to overwrite-destination. */
export const syncOptionsSchema = z.object({
  initialSyncBehavior: z.enum(initialSyncBehaviors).optional(),
  keySchema: keySchemaSchema.optional(),
  disableSecretDeletion: z.boolean().optional(),
});
export type SyncOptions = z.input<typeof syncOptionsSchema>;

export const cloudSyncOptionsSchema = syncOptionsSchema.extend({
  keyId: z.string().optional(),
  tags: z.array(z.object({ key: z.string(), value: z.string() })).optional(),
  syncSecretMetadataAsTags: z.boolean().optional(),
});
export type CloudSyncOptions = z.input<typeof cloudSyncOptionsSchema>;

// ---- destination configs ---------------------------------------------------------------
// interface.md lists each destination's fields without marking any optional: all are required
// here (as in the emulator), except code-host's selectedRepositoryIds, which only makes sense
// for a selection.

export const workflowEngineConfigSchema = z.object({ scope: z.string(), clusterUUID: z.string() });
export const dataPlatformConfigSchema = z.object({ scope: z.string() });
export const monitoringConfigSchema = z.object({
  accountId: z.string(),
  accountName: z.string(),
  groupId: z.string(),
  groupName: z.string(),
});
export const codeHostConfigSchema = z.object({
  scope: z.literal("organization"),
  org: z.string(),
  visibility: z.literal("all"),
  selectedRepositoryIds: z.array(z.number()).optional(),
});
export const cloudSecretsManagerConfigSchema = z.object({
  mappingBehavior: z.literal("one-to-one"),
  region: z.string(),
});
export const appPlatformConfigSchema = z.object({ appId: z.string(), appName: z.string() });
export const gitHostConfigSchema = z.object({
  repositorySlug: z.string(),
  environmentId: z.string(),
  workspaceSlug: z.string(),
});

/**
 * The alternative update shapes interface.md counts but does not describe. Documented choice,
 * after the real service (whose code-host config is a union over three scopes, and whose
 * cloud-secrets-manager config a union over two mapping behaviours), and as the emulator accepts:
 * - code-host (three): the organization shape for all repositories (no ids); the organization
 *   shape with `selectedRepositoryIds`; or a config of another scope the document does not
 *   name (`{scope, ...that scope's fields}`, e.g. the real service's repository scopes).
 * - cloud-secrets-manager (two): the one-to-one shape; or another mapping behaviour
 *   (`{mappingBehavior, region, ...its fields}`, e.g. the real service's many-to-one + secretName).
 * The undescribed alternatives are checked only for their discriminator; their other fields
 * are the service's to judge.
 */
export const codeHostUpdateConfigSchema = z.union([
  codeHostConfigSchema.omit({ selectedRepositoryIds: true }),
  codeHostConfigSchema.extend({ selectedRepositoryIds: z.array(z.number()) }),
  z.looseObject({ scope: z.string().min(1) }),
]);
export const cloudSecretsManagerUpdateConfigSchema = z.union([
  cloudSecretsManagerConfigSchema,
  z.looseObject({ mappingBehavior: z.string().min(1), region: z.string() }),
]);

// ---- create / update bodies ------------------------------------------------------------

const syncName = () => z.string().min(limits.syncName.min).max(limits.syncName.max);
const syncEnvironment = () => z.string().min(limits.syncEnvironment.min).max(limits.syncEnvironment.max);
const syncDescription = () => z.string().max(limits.syncDescriptionMax).nullable();

function createBody<C extends z.ZodType, O extends z.ZodType>(destinationConfig: C, syncOptions: O) {
  return z.object({
    name: syncName(),
    projectId: z.string().min(limits.syncProjectIdMin),
    connectionId: uuid(),
    environment: syncEnvironment(),
    secretPath: z.string().min(limits.syncSecretPathMin),
    syncOptions,
    destinationConfig,
    description: syncDescription().optional(),
    isAutoSyncEnabled: z.boolean().optional(),
  });
}

function updateBody<C extends z.ZodType, O extends z.ZodType>(destinationConfig: C, syncOptions: O) {
  return z.object({
    name: syncName().optional(),
    connectionId: uuid().optional(),
    environment: syncEnvironment().optional(),
    secretPath: z.string().min(limits.syncSecretPathMin).optional(),
    syncOptions: syncOptions.optional(),
    destinationConfig: destinationConfig.optional(),
    description: syncDescription().optional(),
    isAutoSyncEnabled: z.boolean().optional(),
  });
}

export const createSecretSyncBodySchemas = {
  "workflow-engine": createBody(workflowEngineConfigSchema, syncOptionsSchema),
  "code-host": createBody(codeHostConfigSchema, syncOptionsSchema),
  "data-platform": createBody(dataPlatformConfigSchema, syncOptionsSchema),
  "cloud-secrets-manager": createBody(cloudSecretsManagerConfigSchema, cloudSyncOptionsSchema),
  "app-platform": createBody(appPlatformConfigSchema, syncOptionsSchema),
  "git-host": createBody(gitHostConfigSchema, syncOptionsSchema),
  monitoring: createBody(monitoringConfigSchema, syncOptionsSchema),
} as const satisfies Record<Destination, z.ZodType>;

export const updateSecretSyncBodySchemas = {
  "workflow-engine": updateBody(workflowEngineConfigSchema, syncOptionsSchema),
  "code-host": updateBody(codeHostUpdateConfigSchema, syncOptionsSchema),
  "data-platform": updateBody(dataPlatformConfigSchema, syncOptionsSchema),
  "cloud-secrets-manager": updateBody(cloudSecretsManagerUpdateConfigSchema, cloudSyncOptionsSchema),
  "app-platform": updateBody(appPlatformConfigSchema, syncOptionsSchema),
  "git-host": updateBody(gitHostConfigSchema, syncOptionsSchema),
  monitoring: updateBody(monitoringConfigSchema, syncOptionsSchema),
} as const satisfies Record<Destination, z.ZodType>;

export type CreateSecretSyncBody<D extends Destination = Destination> = z.input<(typeof createSecretSyncBodySchemas)[D]>;
export type UpdateSecretSyncBody<D extends Destination = Destination> = z.input<(typeof updateSecretSyncBodySchemas)[D]>;
export type DestinationConfig<D extends Destination = Destination> = CreateSecretSyncBody<D>["destinationConfig"];
export type DestinationSyncOptions<D extends Destination = Destination> = CreateSecretSyncBody<D>["syncOptions"];

/** `{destination, destinationConfig, syncOptions}` as one discriminated union (for specs and CRDs). */
export const destinationShapeSchema = z.discriminatedUnion("destination", [
  z.object({ destination: z.literal("workflow-engine"), destinationConfig: workflowEngineConfigSchema, syncOptions: syncOptionsSchema }),
  z.object({ destination: z.literal("code-host"), destinationConfig: codeHostConfigSchema, syncOptions: syncOptionsSchema }),
  z.object({ destination: z.literal("data-platform"), destinationConfig: dataPlatformConfigSchema, syncOptions: syncOptionsSchema }),
  z.object({
    destination: z.literal("cloud-secrets-manager"),
    destinationConfig: cloudSecretsManagerConfigSchema,
    syncOptions: cloudSyncOptionsSchema,
  }),
  z.object({ destination: z.literal("app-platform"), destinationConfig: appPlatformConfigSchema, syncOptions: syncOptionsSchema }),
  z.object({ destination: z.literal("git-host"), destinationConfig: gitHostConfigSchema, syncOptions: syncOptionsSchema }),
  z.object({ destination: z.literal("monitoring"), destinationConfig: monitoringConfigSchema, syncOptions: syncOptionsSchema }),
]);
export type DestinationShape = z.input<typeof destinationShapeSchema>;

export const syncIdSchema = uuid();
export const syncNameLookupSchema = z.string().min(1);

// ---- responses -------------------------------------------------------------------------

export const secretSyncSchema = z.looseObject({
  id: z.string(),
  name: z.string(),
  description: optionalString(),
  isAutoSyncEnabled: z.boolean(),
  version: z.number().nullish(),
  projectId: z.string(),
  folderId: optionalString(),
  connectionId: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
  syncStatus: optionalString(),
  importStatus: optionalString(),
  removeStatus: optionalString(),
  lastSyncJobId: optionalString(),
  lastImportJobId: optionalString(),
  lastRemoveJobId: optionalString(),
  lastSyncMessage: optionalString(),
  lastImportMessage: optionalString(),
  lastRemoveMessage: optionalString(),
  lastSyncedAt: optionalString(),
  lastImportedAt: optionalString(),
  lastRemovedAt: optionalString(),
  syncOptions: z.looseObject({
    initialSyncBehavior: optionalString(),
    keySchema: optionalString(),
    disableSecretDeletion: z.boolean().nullish(),
  }),
  connection: z.looseObject({ app: z.string(), name: z.string(), id: z.string() }).nullish(),
  environment: z.looseObject({ slug: z.string(), name: z.string(), id: z.string() }).nullish(),
  folder: z.looseObject({ id: z.string(), path: z.string() }).nullish(),
  destination: z.enum(destinations),
  destinationConfig: z.looseObject({}),
});
export type SecretSync = z.infer<typeof secretSyncSchema>;

export const secretSyncResponseSchema = z.looseObject({ secretSync: secretSyncSchema });
