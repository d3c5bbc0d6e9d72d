// SecretSync's spec and status schemas and its CRD source. The spec is a discriminated union on
// `destination`: each of the seven variants carries its own destinationConfig and syncOptions,
// and the CRD generator turns the union into one object plus per-destination CEL rules, so
// `kubectl apply` rejects a destinationConfig that does not fit its destination. Shared fields
// are built once (`common`) so every variant describes them identically (the generator keeps
// the first variant's description).
import { z } from "zod";
import {
  appPlatformConfigSchema,
  cloudSecretsManagerConfigSchema,
  codeHostConfigSchema,
  dataPlatformConfigSchema,
  gitHostConfigSchema,
  importCapable,
  initialSyncBehaviors,
  KEY_SCHEMA_PATTERN,
  KEY_SCHEMA_RULE,
  limits,
  monitoringConfigSchema,
  workflowEngineConfigSchema,
  type Destination,
} from "../api/index.ts";
import { exactlyOneOf, immutable } from "../engine/cel.ts";
import type { CrdSource } from "../engine/kind.ts";
import { ageColumn, bounds, commonStatus, kindRef, managementPolicy, projectId, projectRef, providerConfigRef } from "./common.ts";

export const ref = kindRef("SecretSync", "secretsyncs");

export const deletionPolicies = ["Retain", "RemoveSecrets", "Delete"] as const;
export type DeletionPolicy = (typeof deletionPolicies)[number];

const common = {
  providerConfigRef: providerConfigRef.optional(),
  name: z
    .string()
    .min(limits.syncName.min)
    .max(limits.syncName.max)
    .optional()
    .describe(
      "Name of the sync at the service, 1 to 64 characters, unique in its project. Default: metadata.name, which must then be at most 64 characters.",
    ),
  description: z.string().max(limits.syncDescriptionMax).optional().describe("Description of the sync, at most 256 characters."),
  projectRef: projectRef.optional().meta(immutable("projectRef is immutable: create another SecretSync for another project")),
  projectId: projectId.optional().meta(immutable("projectId is immutable: create another SecretSync for another project")),
  syncId: z
    .guid()
    .optional()
    .describe(
      "Adopt the existing sync with this id instead of creating one: for syncs made before keyward, or to settle a CreateOutcomeUnknown. It must be of this destination and project. Default: keyward creates the sync (and records its id in status.syncId).",
    ),
  connectionId: z.guid().describe("The app connection (uuid) the sync writes through; its kind must fit the destination."),
  environment: z
    .string()
    .min(limits.syncEnvironment.min)
    .max(limits.syncEnvironment.max)
    .describe("Slug of the project environment to sync from, 1 to 64 characters."),
  secretPath: z
    .string()
    .min(limits.syncSecretPathMin)
    .max(bounds.PATH)
    .describe("Folder path in the environment to sync from, e.g. / or /app."),
  isAutoSyncEnabled: z.boolean().optional().describe("Sync automatically when the secrets change. Default: true (the service's default)."),
  managementPolicy: managementPolicy.optional(),
  deletionPolicy: z
    .enum(deletionPolicies)
    .optional()
    .describe(
      "Retain (default): deleting the resource leaves the sync and the synced secrets. RemoveSecrets: switch auto-sync off, remove the synced secrets from the destination, wait for that job to succeed, then release the resource (the sync stays). Delete: delete the sync itself.",
    ),
};

const destinationDescription =
  "Where the secrets go: workflow-engine, code-host, data-platform, cloud-secrets-manager, app-platform, git-host or monitoring. Fixes the shape of destinationConfig and syncOptions. Immutable.";
const destination = <D extends Destination>(value: D) =>
  z.literal(value).meta({
    description: destinationDescription,
    ...immutable("destination is immutable: create a new SecretSync for another destination"),
  });

const destinationConfigDescription = "The destination's settings; their shape depends on destination.";

const keySchema = z
  .string()
  .min(1)
  .max(bounds.KEY_SCHEMA)
  .regex(KEY_SCHEMA_PATTERN, KEY_SCHEMA_RULE)
  .describe(
    "Template of the key written at the destination: must contain {{secretKey}} and may contain {{environment}}, e.g. APP_{{environment}}_{{secretKey}}.",
  );

// A destination that cannot read secrets back (code-host, data-platform, git-host, monitoring)
// accepts only overwrite-destination, as the real service does.
const syncOptionFields = (canImport: boolean) => ({
  initialSyncBehavior: (canImport ? z.enum(initialSyncBehaviors) : z.enum(["overwrite-destination"]))
    .optional()
    .describe(
      "What the first sync does with secrets already at the destination: overwrite-destination, or (where the destination can be read back: workflow-engine, cloud-secrets-manager, app-platform) import-prioritize-source or import-prioritize-destination. Default: overwrite-destination, which keyward sends when this is unset (the service requires the field).",
    ),
  keySchema: keySchema.optional(),
  disableSecretDeletion: z.boolean().optional().describe("Never delete secrets at the destination. Default: false."),
});

const syncOptionsDescription =
  "How the sync writes. Only the fields set here are managed; the whole object is sent when any of them differs.";

const syncOptions = (canImport: boolean) => z.object(syncOptionFields(canImport)).strict().describe(syncOptionsDescription);
const cloudSyncOptions = z
  .object({
    ...syncOptionFields(true),
    keyId: z
      .string()
      .max(bounds.KMS_KEY_ID)
      .optional()
      .describe("KMS key id the cloud secrets manager encrypts with (cloud-secrets-manager only)."),
    tags: z
      .array(z.object({ key: z.string().max(bounds.TAG_KEY), value: z.string().max(bounds.TAG_VALUE) }).strict())
      .max(bounds.TAGS)
      .optional()
      .describe("Tags set on the synced secrets (cloud-secrets-manager only)."),
    syncSecretMetadataAsTags: z.boolean().optional().describe("Write secret metadata as tags (cloud-secrets-manager only)."),
  })
  .strict()
  .describe(syncOptionsDescription);

const config = <T extends z.ZodRawShape>(schema: z.ZodObject<T>) => schema.strict().describe(destinationConfigDescription);

// The destination configs of src/api describe what the service takes and answers (unbounded
// there, as interface.md gives no limits); the spec bounds each field: a name, slug, id, scope or
// region at a destination system is at most bounds.NAME / bounds.ID characters.
const destinationName = z.string().max(bounds.NAME);
const destinationId = z.string().max(bounds.ID);
const workflowEngineSpecConfig = workflowEngineConfigSchema.extend({ scope: destinationName, clusterUUID: destinationId });
const dataPlatformSpecConfig = dataPlatformConfigSchema.extend({ scope: destinationName });
const monitoringSpecConfig = monitoringConfigSchema.extend({
  accountId: destinationId,
  accountName: destinationName,
  groupId: destinationId,
  groupName: destinationName,
});
const codeHostSpecConfig = codeHostConfigSchema.extend({
  org: destinationName,
  selectedRepositoryIds: z.array(z.number()).max(bounds.SELECTED_REPOSITORIES).optional(),
});
const cloudSecretsManagerSpecConfig = cloudSecretsManagerConfigSchema.extend({ region: destinationName });
const appPlatformSpecConfig = appPlatformConfigSchema.extend({ appId: destinationId, appName: destinationName });
const gitHostSpecConfig = gitHostConfigSchema.extend({
  repositorySlug: destinationName,
  environmentId: destinationId,
  workspaceSlug: destinationName,
});

export const specSchema = z
  .discriminatedUnion("destination", [
    z
      .object({
        ...common,
        destination: destination("workflow-engine"),
        destinationConfig: config(workflowEngineSpecConfig),
        syncOptions: syncOptions(importCapable["workflow-engine"]).optional(),
      })
      .strict(),
    z
      .object({
        ...common,
        destination: destination("code-host"),
        destinationConfig: config(codeHostSpecConfig),
        syncOptions: syncOptions(importCapable["code-host"]).optional(),
      })
      .strict(),
    z
      .object({
        ...common,
        destination: destination("data-platform"),
        destinationConfig: config(dataPlatformSpecConfig),
        syncOptions: syncOptions(importCapable["data-platform"]).optional(),
      })
      .strict(),
    z
      .object({
        ...common,
        destination: destination("cloud-secrets-manager"),
        destinationConfig: config(cloudSecretsManagerSpecConfig),
        syncOptions: cloudSyncOptions.optional(),
      })
      .strict(),
    z
      .object({
        ...common,
        destination: destination("app-platform"),
        destinationConfig: config(appPlatformSpecConfig),
        syncOptions: syncOptions(importCapable["app-platform"]).optional(),
      })
      .strict(),
    z
      .object({
        ...common,
        destination: destination("git-host"),
        destinationConfig: config(gitHostSpecConfig),
        syncOptions: syncOptions(importCapable["git-host"]).optional(),
      })
      .strict(),
    z
      .object({
        ...common,
        destination: destination("monitoring"),
        destinationConfig: config(monitoringSpecConfig),
        syncOptions: syncOptions(importCapable["monitoring"]).optional(),
      })
      .strict(),
  ])
  .describe("A secret sync: one project environment and folder, synced through a connection to one destination.");
export type SecretSyncSpec = z.infer<typeof specSchema>;

export const requestActions = ["sync", "remove"] as const;
export type RequestAction = (typeof requestActions)[number];

// Status fields the service may clear are nullable: keyward returns null to remove them.
const mirrored = (max: number) => z.string().max(max).nullable().optional();

export const statusSchema = z.object({
  ...commonStatus,
  syncId: z.string().max(bounds.ID).optional().describe("The sync's id at the service."),
  name: z.string().max(bounds.NAME).optional(),
  destination: z.string().max(bounds.WORD).optional(),
  projectId: z.string().max(bounds.ID).optional(),
  connectionId: z.string().max(bounds.ID).optional(),
  description: mirrored(bounds.DESCRIPTION),
  isAutoSyncEnabled: z.boolean().optional(),
  version: z.number().nullable().optional(),
  syncStatus: mirrored(bounds.WORD).describe("Status of the last sync job: pending, running, succeeded or failed."),
  importStatus: mirrored(bounds.WORD),
  removeStatus: mirrored(bounds.WORD),
  lastSyncJobId: mirrored(bounds.ID),
  lastImportJobId: mirrored(bounds.ID),
  lastRemoveJobId: mirrored(bounds.ID),
  lastSyncMessage: mirrored(bounds.MESSAGE).describe("The service's message about the last sync job (set when it failed)."),
  lastImportMessage: mirrored(bounds.MESSAGE),
  lastRemoveMessage: mirrored(bounds.MESSAGE),
  lastSyncedAt: mirrored(bounds.TIME),
  lastImportedAt: mirrored(bounds.TIME),
  lastRemovedAt: mirrored(bounds.TIME),
  connection: z
    .object({ app: z.string().max(bounds.WORD), name: z.string().max(bounds.NAME), id: z.string().max(bounds.ID) })
    .nullable()
    .optional(),
  environment: z
    .object({ slug: z.string().max(bounds.NAME), name: z.string().max(bounds.NAME), id: z.string().max(bounds.ID) })
    .nullable()
    .optional(),
  folder: z
    .object({ id: z.string().max(bounds.ID), path: z.string().max(bounds.PATH) })
    .nullable()
    .optional(),
  lastHandledSyncRequest: z
    .string()
    .max(bounds.ANNOTATION_VALUE)
    .optional()
    .describe("The last value of the keyward.dev/sync-requested-at annotation handled (one sync-secrets call)."),
  lastHandledRemoveSecretsRequest: z
    .string()
    .max(bounds.ANNOTATION_VALUE)
    .optional()
    .describe("The last value of the keyward.dev/remove-secrets-requested-at annotation handled (one remove-secrets call)."),
  pendingRequest: z
    .object({
      action: z.enum(requestActions),
      value: z.string().max(bounds.ANNOTATION_VALUE),
      markedAt: z.string().max(bounds.TIME),
      lastJobId: z.string().max(bounds.ID).optional(),
      lastJobAt: z.string().max(bounds.TIME).optional(),
      lastJobStatus: z.string().max(bounds.WORD).optional(),
    })
    .nullable()
    .optional()
    .describe(
      "An annotation request being sent: written before the call, cleared with its result. After a crash the service's record tells whether the call landed.",
    ),
  deletionRemoval: z
    .object({
      attempts: z.number().int(),
      markedAt: z.string().max(bounds.TIME),
      lastJobId: z.string().max(bounds.ID).optional(),
      lastJobAt: z.string().max(bounds.TIME).optional(),
      lastJobStatus: z.string().max(bounds.WORD).optional(),
      retryAt: z.string().max(bounds.TIME).optional(),
    })
    .nullable()
    .optional()
    .describe("deletionPolicy RemoveSecrets: the remove-secrets call made before releasing the resource."),
});
export type SecretSyncStatus = z.infer<typeof statusSchema>;

export const crdSource: CrdSource = {
  ...ref,
  singular: "secretsync",
  shortNames: ["kwsync"],
  categories: ["keyward"],
  description:
    "A secret sync at the service, to one of seven destinations: created, kept as the spec says, its jobs mirrored into status; annotations request a sync or a removal of the synced secrets.",
  spec: specSchema,
  status: statusSchema,
  specValidations: [
    exactlyOneOf(["projectRef", "projectId"]),
    {
      rule: "has(self.projectRef) == has(oldSelf.projectRef) && has(self.projectId) == has(oldSelf.projectId)",
      message: "the project is immutable: create another SecretSync for another project",
    },
  ],
  // The sync's name defaults to metadata.name, which may be longer than the service allows.
  rootValidations: [
    {
      rule: "size(self.metadata.name) <= 64 || has(self.spec.name)",
      message: "metadata.name is longer than 64 characters: set spec.name (1 to 64 characters)",
      fieldPath: ".spec.name",
    },
  ],
  printerColumns: [
    { name: "Destination", type: "string", jsonPath: ".spec.destination" },
    { name: "Sync-Status", type: "string", jsonPath: ".status.syncStatus" },
    { name: "Last-Synced", type: "date", jsonPath: ".status.lastSyncedAt" },
    { name: "Ready", type: "string", jsonPath: `.status.conditions[?(@.type=="Ready")].status` },
    { name: "Synced", type: "string", jsonPath: `.status.conditions[?(@.type=="Synced")].status`, priority: 1 },
    { name: "Sync-ID", type: "string", jsonPath: ".status.syncId", priority: 1 },
    ageColumn,
  ],
};
