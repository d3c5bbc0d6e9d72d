// Request schemas of the secret-sync operations: the create/update tables of interface.md,
// destinationConfig by destination, syncOptions (common + cloud-secrets-manager extras).
import { z } from "zod";
import { uuid } from "./parse.ts";

/** Destination segment → the connection kind (`connection.app`) it needs. */
export const destinationApps: Record<string, string> = {
  "workflow-engine": "workflow-engine",
  "code-host": "code-host",
  "data-platform": "data-platform",
  "cloud-secrets-manager": "cloud",
  "app-platform": "app-platform-host",
  "git-host": "git-host",
  monitoring: "monitoring",
};

export const destinations = Object.keys(destinationApps);

export const initialSyncBehaviors = ["overwrite-destination", "import-prioritize-source", "import-prioritize-destination"] as const;

/** Destinations whose first sync can import what is already there (the real service's canImportSecrets). */
export const importCapableDestinations: ReadonlySet<string> = new Set(["workflow-engine", "cloud-secrets-manager", "app-platform"]);

// The real service's key schema: {{secretKey}} at least once, {{environment}} allowed, no other placeholder.
const keySchemaRule = /^(?:[^{}]|\{\{environment\}\})*\{\{secretKey\}\}(?:[^{}]|\{\{(?:secretKey|environment)\}\})*$/;

function commonSyncOptions(destination: string) {
  return {
    // Required, as the real service's create schema has it (a 422 without it); a destination
    // that cannot import accepts only overwrite-destination.
    initialSyncBehavior: importCapableDestinations.has(destination) ? z.enum(initialSyncBehaviors) : z.enum(["overwrite-destination"]),
    keySchema: z
      .string()
      .refine((value) => keySchemaRule.test(value), {
        message: "keySchema must contain {{secretKey}}; the only other placeholder allowed is {{environment}}",
      })
      .optional(),
    disableSecretDeletion: z.boolean().default(false),
  };
}

export function syncOptionsSchema(destination: string) {
  const common = commonSyncOptions(destination);
  if (destination !== "cloud-secrets-manager") return z.object(common);
  return z.object({
    ...common,
    keyId: z.string().optional(),
    tags: z.array(z.object({ key: z.string(), value: z.string() })).optional(),
    syncSecretMetadataAsTags: z.boolean().optional(),
  });
}

const createConfigs: Record<string, z.ZodType> = {
  "workflow-engine": z.object({ scope: z.string(), clusterUUID: z.string() }),
  "data-platform": z.object({ scope: z.string() }),
  monitoring: z.object({ accountId: z.string(), accountName: z.string(), groupId: z.string(), groupName: z.string() }),
  "code-host": z.object({
    scope: z.literal("organization"),
    org: z.string(),
    visibility: z.literal("all"),
    selectedRepositoryIds: z.array(z.number()).optional(),
  }),
  "cloud-secrets-manager": z.object({ mappingBehavior: z.literal("one-to-one"), region: z.string() }),
  "app-platform": z.object({ appId: z.string(), appName: z.string() }),
  "git-host": z.object({ repositorySlug: z.string(), environmentId: z.string(), workspaceSlug: z.string() }),
};

// The update request allows alternative shapes the document does not describe: code-host
// (three) and cloud-secrets-manager (two). Besides the create shape, the emulator accepts any
// object with a non-empty `scope` (code-host) or a non-empty `mappingBehavior` and a `region`
// (cloud-secrets-manager), and stores it as sent.
const updateConfigs: Record<string, z.ZodType> = {
  ...createConfigs,
  "code-host": z.union([createConfigs["code-host"] as z.ZodType, z.looseObject({ scope: z.string().min(1) })]),
  "cloud-secrets-manager": z.union([
    createConfigs["cloud-secrets-manager"] as z.ZodType,
    z.looseObject({ mappingBehavior: z.string().min(1), region: z.string() }),
  ]),
};

export function createSyncBody(destination: string) {
  return z.object({
    name: z.string().min(1).max(64),
    projectId: z.string().min(1),
    connectionId: uuid(),
    environment: z.string().min(1).max(64),
    secretPath: z.string().min(1),
    syncOptions: syncOptionsSchema(destination),
    destinationConfig: createConfigs[destination] as z.ZodType<Record<string, unknown>>,
    description: z.string().max(256).nullable().optional(),
    isAutoSyncEnabled: z.boolean().default(true),
  });
}

export function updateSyncBody(destination: string) {
  return z.object({
    name: z.string().min(1).max(64).optional(),
    connectionId: uuid().optional(),
    environment: z.string().min(1).max(64).optional(),
    secretPath: z.string().min(1).optional(),
    syncOptions: syncOptionsSchema(destination).optional(),
    destinationConfig: (updateConfigs[destination] as z.ZodType<Record<string, unknown>>).optional(),
    description: z.string().max(256).nullable().optional(),
    isAutoSyncEnabled: z.boolean().optional(),
  });
}

export const syncIdParams = z.object({ syncId: uuid() });
export const syncByNameQuery = z.object({ projectId: z.string().min(1) });
export const deleteSyncQuery = z.object({
  removeSecrets: z
    .enum(["true", "false"])
    .default("false")
    .transform((value) => value === "true"),
});
