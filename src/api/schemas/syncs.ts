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

// ---- sync options ----------------------------------------------------------------------

export const initialSyncBehaviors = ["overwrite-destination", "import-prioritize-source", "import-prioritize-destination"] as const;
export type InitialSyncBehavior = (typeof initialSyncBehaviors)[number];

/**
 * What keyward sends when the spec names no initialSyncBehavior: the real service requires the
 * field on create (a 422 without it) and this is the one value every destination accepts.
 */
export const DEFAULT_INITIAL_SYNC_BEHAVIOR = "overwrite-destination" satisfies InitialSyncBehavior;

export const SECRET_KEY_PLACEHOLDER = "{{secretKey}}";
/** The placeholders a key schema may hold; {{secretKey}} is required. */
export const KEY_SCHEMA_PLACEHOLDERS = ["{{secretKey}}", "{{environment}}"] as const;
/** One pattern for the rule (also the CRD's): only known placeholders, and {{secretKey}} at least once. */
export const KEY_SCHEMA_PATTERN = /^(?:[^{}]|\{\{environment\}\})*\{\{secretKey\}\}(?:[^{}]|\{\{(?:secretKey|environment)\}\})*$/;
export const KEY_SCHEMA_RULE = "keySchema must contain {{secretKey}} and no placeholder but {{secretKey}} and {{environment}}";

export const keySchemaSchema = z.string().regex(KEY_SCHEMA_PATTERN, KEY_SCHEMA_RULE);

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

const cloudOptionExtras = {
  keyId: z.string().optional(),
  tags: z.array(z.object({ key: z.string(), value: z.string() })).optional(),
  syncSecretMetadataAsTags: z.boolean().optional(),
};

/**
 * The options of a destination whose first sync can import the destination's secrets (all three
 * behaviours) or cannot (overwrite-destination only), as the real service's per-destination
 * schemas have them. initialSyncBehavior is required whenever syncOptions is sent.
 */
function syncOptionsFor<E extends z.ZodRawShape>(canImport: boolean, extras: E) {
  return z.object({
    initialSyncBehavior: canImport ? z.enum(initialSyncBehaviors) : z.enum(["overwrite-destination"]),
    keySchema: keySchemaSchema.optional(),
    disableSecretDeletion: z.boolean().optional(),
    ...extras,
  });
}

// ---- the destination table: one row per destination, every per-destination fact once -----

/** One row of the destination table. */
interface DestinationRow {
  /** The connection kind (`connection.app`) it syncs through (interface.md's naming note). */
  app: string;
  /** Whether its first sync can import secrets already at the destination. */
  canImport: boolean;
  config: z.ZodType;
  updateConfig: z.ZodType;
  syncOptions: z.ZodType;
}

export const destinationTable = {
  "workflow-engine": {
    app: "workflow-engine",
    canImport: true,
    config: workflowEngineConfigSchema,
    updateConfig: workflowEngineConfigSchema,
    syncOptions: syncOptionsFor(true, {}),
  },
  "code-host": {
    app: "code-host",
    canImport: false,
    config: codeHostConfigSchema,
    updateConfig: codeHostUpdateConfigSchema,
    syncOptions: syncOptionsFor(false, {}),
  },
  "data-platform": {
    app: "data-platform",
    canImport: false,
    config: dataPlatformConfigSchema,
    updateConfig: dataPlatformConfigSchema,
    syncOptions: syncOptionsFor(false, {}),
  },
  "cloud-secrets-manager": {
    app: "cloud",
    canImport: true,
    config: cloudSecretsManagerConfigSchema,
    updateConfig: cloudSecretsManagerUpdateConfigSchema,
    syncOptions: syncOptionsFor(true, cloudOptionExtras),
  },
  "app-platform": {
    app: "app-platform-host",
    canImport: true,
    config: appPlatformConfigSchema,
    updateConfig: appPlatformConfigSchema,
    syncOptions: syncOptionsFor(true, {}),
  },
  "git-host": {
    app: "git-host",
    canImport: false,
    config: gitHostConfigSchema,
    updateConfig: gitHostConfigSchema,
    syncOptions: syncOptionsFor(false, {}),
  },
  monitoring: {
    app: "monitoring",
    canImport: false,
    config: monitoringConfigSchema,
    updateConfig: monitoringConfigSchema,
    syncOptions: syncOptionsFor(false, {}),
  },
} as const satisfies Record<Destination, DestinationRow>;
type Table = typeof destinationTable;

function perDestination<T>(f: (d: Destination) => T): Record<Destination, T> {
  return Object.fromEntries(destinations.map((d) => [d, f(d)])) as Record<Destination, T>;
}

/** The connection kind (`connection.app`) each destination syncs through. */
export const connectionAppByDestination = perDestination((d) => destinationTable[d].app) as { [D in Destination]: Table[D]["app"] };
export type ConnectionApp = Table[Destination]["app"];

/** Destinations whose first sync can import secrets from the destination. */
export const importCapable: Record<Destination, boolean> = perDestination((d) => destinationTable[d].canImport);

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

export const createSecretSyncBodySchemas: Record<Destination, z.ZodType> = perDestination((d) =>
  createBody(destinationTable[d].config, destinationTable[d].syncOptions),
);
export const updateSecretSyncBodySchemas: Record<Destination, z.ZodType> = perDestination((d) =>
  updateBody(destinationTable[d].updateConfig, destinationTable[d].syncOptions),
);

type CreateCommon = Omit<z.input<ReturnType<typeof createBody>>, "syncOptions" | "destinationConfig">;
type UpdateCommon = Omit<z.input<ReturnType<typeof updateBody>>, "syncOptions" | "destinationConfig">;

/** A create body; with D a union, a union of the per-destination bodies. */
export type CreateSecretSyncBody<D extends Destination = Destination> = D extends Destination
  ? CreateCommon & { syncOptions: z.input<Table[D]["syncOptions"]>; destinationConfig: z.input<Table[D]["config"]> }
  : never;
export type UpdateSecretSyncBody<D extends Destination = Destination> = D extends Destination
  ? UpdateCommon & { syncOptions?: z.input<Table[D]["syncOptions"]>; destinationConfig?: z.input<Table[D]["updateConfig"]> }
  : never;
export type DestinationConfig<D extends Destination = Destination> = CreateSecretSyncBody<D>["destinationConfig"];
export type DestinationSyncOptions<D extends Destination = Destination> = CreateSecretSyncBody<D>["syncOptions"];

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
