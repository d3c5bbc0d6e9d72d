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
  destinations,
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
import type { VersionChange } from "../lib/conversion.ts";
import {
  ageColumn,
  bounds,
  commonStatus,
  conditionEdits,
  initialism,
  initialismEdits,
  kindRef,
  managementPolicy,
  projectId,
  projectRef,
  providerConfigRef,
  providerUserEdits,
  timeEdits,
  V1BETA1,
} from "./common.ts";

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
      .array(
        z
          .object({
            key: z.string().max(bounds.TAG_KEY).describe("The tag's key, at most 128 characters."),
            value: z.string().max(bounds.TAG_VALUE).describe("The tag's value, at most 256 characters."),
          })
          .strict(),
      )
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
// A field several destinations share (scope) is one node in the CRD, which keeps the first
// variant's description: each says what the field is for every destination that has it.
const scope = <T extends z.ZodType>(schema: T): T =>
  schema.describe(
    "workflow-engine and data-platform: the scope at the destination the secrets are written into. code-host: organization (the only value the service takes), with org naming it.",
  );
const workflowEngineSpecConfig = workflowEngineConfigSchema.extend({
  scope: scope(destinationName),
  clusterUUID: destinationId.describe("workflow-engine: the id of the cluster at the destination the secrets are written to."),
});
const dataPlatformSpecConfig = dataPlatformConfigSchema.extend({ scope: scope(destinationName) });
const monitoringSpecConfig = monitoringConfigSchema.extend({
  accountId: destinationId.describe("monitoring: the id of the account at the destination."),
  accountName: destinationName.describe("monitoring: the name of that account."),
  groupId: destinationId.describe("monitoring: the id of the group in that account the secrets are written to."),
  groupName: destinationName.describe("monitoring: the name of that group."),
});
const codeHostSpecConfig = codeHostConfigSchema.extend({
  scope: scope(codeHostConfigSchema.shape.scope),
  org: destinationName.describe("code-host: the organization the secrets are written to."),
  visibility: codeHostConfigSchema.shape.visibility.describe(
    "code-host: which of the organization's repositories may read the secrets: all (the only value the service takes).",
  ),
  selectedRepositoryIds: z
    .array(z.number())
    .max(bounds.SELECTED_REPOSITORIES)
    .optional()
    .describe("code-host: ids of the repositories selected, at most 10,000 (optional)."),
});
const cloudSecretsManagerSpecConfig = cloudSecretsManagerConfigSchema.extend({
  mappingBehavior: cloudSecretsManagerConfigSchema.shape.mappingBehavior.describe(
    "cloud-secrets-manager: how secrets map to cloud secrets: one-to-one (one cloud secret per secret; the only value the service takes).",
  ),
  region: destinationName.describe("cloud-secrets-manager: the region of the cloud secrets manager, e.g. eu-west-1."),
});
const appPlatformSpecConfig = appPlatformConfigSchema.extend({
  appId: destinationId.describe("app-platform: the id of the app the secrets are written to."),
  appName: destinationName.describe("app-platform: the name of that app."),
});
const gitHostSpecConfig = gitHostConfigSchema.extend({
  repositorySlug: destinationName.describe("git-host: the slug of the repository the secrets are written to."),
  environmentId: destinationId.describe("git-host: the id of the deployment environment of that repository."),
  workspaceSlug: destinationName.describe("git-host: the slug of the workspace that holds the repository."),
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
/** How many handled values per action status.recentRequests remembers. */
export const RECENT_REQUESTS_KEPT = 8;
export type RequestAction = (typeof requestActions)[number];

// Status fields the service may clear are nullable: keyward returns null to remove them.
const mirrored = (max: number) => z.string().max(max).nullable().optional();

export const statusSchema = z.object({
  ...commonStatus,
  syncId: z.string().max(bounds.ID).optional().describe("The sync's id at the service."),
  name: z.string().max(bounds.NAME).optional().describe("The sync's name at the service, as last read."),
  destination: z.string().max(bounds.WORD).optional().describe("The sync's destination at the service, as last read."),
  projectId: z.string().max(bounds.ID).optional().describe("The id of the project the sync belongs to."),
  connectionId: z.string().max(bounds.ID).optional().describe("The id of the app connection the sync writes through, as last read."),
  description: mirrored(bounds.DESCRIPTION).describe("The sync's description at the service, as last read."),
  isAutoSyncEnabled: z
    .boolean()
    .optional()
    .describe(
      "Whether the service syncs on every change of the secrets, as last read (deletionPolicy RemoveSecrets turns it off before removing).",
    ),
  version: z.number().nullable().optional().describe("The sync's version number at the service, as last read."),
  syncStatus: mirrored(bounds.WORD).describe("Status of the last sync job: pending, running, succeeded or failed."),
  importStatus: mirrored(bounds.WORD).describe(
    "Status of the last import job (an initialSyncBehavior that imports from the destination): pending, running, succeeded or failed.",
  ),
  removeStatus: mirrored(bounds.WORD).describe(
    "Status of the last remove-secrets job (the keyward.dev/remove-secrets-requested-at annotation, or deletionPolicy RemoveSecrets): pending, running, succeeded or failed.",
  ),
  lastSyncJobId: mirrored(bounds.ID).describe("The id of the last sync job at the service."),
  lastImportJobId: mirrored(bounds.ID).describe("The id of the last import job at the service."),
  lastRemoveJobId: mirrored(bounds.ID).describe("The id of the last remove-secrets job at the service."),
  lastSyncMessage: mirrored(bounds.MESSAGE).describe("The service's message about the last sync job (set when it failed)."),
  lastImportMessage: mirrored(bounds.MESSAGE).describe("The service's message about the last import job (set when it failed)."),
  lastRemoveMessage: mirrored(bounds.MESSAGE).describe("The service's message about the last remove-secrets job (set when it failed)."),
  lastSyncedAt: mirrored(bounds.TIME).describe("When the last sync job ran (RFC 3339; the Last-Synced column)."),
  lastImportedAt: mirrored(bounds.TIME).describe("When the last import job ran (RFC 3339)."),
  lastRemovedAt: mirrored(bounds.TIME).describe("When the last remove-secrets job ran (RFC 3339)."),
  connection: z
    .object({
      app: z.string().max(bounds.WORD).describe("The connection's kind, which fits the destination."),
      name: z.string().max(bounds.NAME).describe("The connection's name."),
      id: z.string().max(bounds.ID).describe("The connection's id (spec.connectionId)."),
    })
    .nullable()
    .optional()
    .describe("The app connection the sync writes through, as the service reports it."),
  environment: z
    .object({
      slug: z.string().max(bounds.NAME).describe("The environment's slug (spec.environment)."),
      name: z.string().max(bounds.NAME).describe("The environment's display name."),
      id: z.string().max(bounds.ID).describe("The environment's id at the service."),
    })
    .nullable()
    .optional()
    .describe("The project environment the sync reads from, as the service reports it."),
  folder: z
    .object({
      id: z.string().max(bounds.ID).describe("The folder's id at the service."),
      path: z.string().max(bounds.PATH).describe("The folder's path in the environment (spec.secretPath)."),
    })
    .nullable()
    .optional()
    .describe("The folder the sync reads from, as the service reports it."),
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
  recentRequests: z
    .object({
      sync: z
        .array(z.string().max(bounds.WORD))
        .max(RECENT_REQUESTS_KEPT)
        .optional()
        .describe("Digests of the last keyward.dev/sync-requested-at values handled, newest first."),
      remove: z
        .array(z.string().max(bounds.WORD))
        .max(RECENT_REQUESTS_KEPT)
        .optional()
        .describe("Digests of the last keyward.dev/remove-secrets-requested-at values handled, newest first."),
    })
    .nullable()
    .optional()
    .describe(
      "Digests (sha256, 16 hex) of the last values handled per action, newest first: a value put back after another was handled (Argo CD's self-heal, an old manifest applied again) is not run again.",
    ),
  pendingRequest: z
    .object({
      action: z.enum(requestActions).describe("sync (keyward.dev/sync-requested-at) or remove (keyward.dev/remove-secrets-requested-at)."),
      value: z.string().max(bounds.ANNOTATION_VALUE).describe("The annotation's value being handled."),
      markedAt: z.string().max(bounds.TIME).describe("When keyward wrote the mark, just before the call (RFC 3339)."),
      lastJobId: z
        .string()
        .max(bounds.ID)
        .optional()
        .describe("The id of the action's last job before the call: a new one means the call landed."),
      lastJobAt: z
        .string()
        .max(bounds.TIME)
        .optional()
        .describe("The time of the action's last job before the call: a later one means the call landed."),
      lastJobStatus: z.string().max(bounds.WORD).optional().describe("The status of the action's last job before the call."),
    })
    .nullable()
    .optional()
    .describe(
      "An annotation request being sent: written before the call, cleared with its result. After a crash the service's record tells whether the call landed.",
    ),
  deletionRemoval: z
    .object({
      attempts: z.number().int().describe("How many remove-secrets calls keyward has made for this deletion."),
      markedAt: z.string().max(bounds.TIME).describe("When keyward made the latest call (RFC 3339)."),
      lastJobId: z.string().max(bounds.ID).optional().describe("The id of the last remove-secrets job before that call."),
      lastJobAt: z.string().max(bounds.TIME).optional().describe("The time of the last remove-secrets job before that call."),
      lastJobStatus: z.string().max(bounds.WORD).optional().describe("The status of the last remove-secrets job before that call."),
      retryAt: z
        .string()
        .max(bounds.TIME)
        .optional()
        .describe("After a failed removal: when keyward calls again (RFC 3339; backoff from 5 s up to 5 minutes)."),
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

const specConfigs = {
  "workflow-engine": workflowEngineSpecConfig,
  "code-host": codeHostSpecConfig,
  "data-platform": dataPlatformSpecConfig,
  "cloud-secrets-manager": cloudSecretsManagerSpecConfig,
  "app-platform": appPlatformSpecConfig,
  "git-host": gitHostSpecConfig,
  monitoring: monitoringSpecConfig,
} satisfies Record<Destination, z.ZodObject>;

/** CamelCase, as a Kubernetes enum is spelled: `code-host` → `CodeHost`. */
const camel = (value: string): string => value.replace(/(^|-)([a-z])/g, (_, _dash: string, c: string) => c.toUpperCase());
const lowerFirst = (value: string): string => value.charAt(0).toLowerCase() + value.slice(1);

/**
 * How v1alpha1 becomes v1beta1 (docs/api-review.md): `destination` and `destinationConfig`
 * become the union `destination {type, <member>}`, one member per destination, and the sync
 * options only cloud-secrets-manager takes move into its member.
 */
export const v1beta1: VersionChange = {
  from: ref.version,
  to: V1BETA1,
  edits: [
    ...conditionEdits,
    ...providerUserEdits,
    ...initialismEdits(
      "spec.projectId",
      "spec.syncId",
      "spec.connectionId",
      "spec.syncOptions.keyId",
      "spec.destinationConfig.selectedRepositoryIds",
      "spec.destinationConfig.appId",
      "spec.destinationConfig.environmentId",
      "spec.destinationConfig.accountId",
      "spec.destinationConfig.groupId",
      "status.syncId",
      "status.projectId",
      "status.connectionId",
      "status.lastSyncJobId",
      "status.lastImportJobId",
      "status.lastRemoveJobId",
      "status.pendingRequest.lastJobId",
      "status.deletionRemoval.lastJobId",
    ),
    { op: "rename", from: "spec.isAutoSyncEnabled", to: "spec.autoSync" },
    { op: "rename", from: "status.isAutoSyncEnabled", to: "status.autoSync" },
    {
      op: "enum",
      path: "spec.syncOptions.initialSyncBehavior",
      values: Object.fromEntries(initialSyncBehaviors.map((b) => [b, camel(b)])),
    },
    { op: "enum", path: "spec.destinationConfig.mappingBehavior", values: { "one-to-one": "OneToOne" } },
    { op: "enum", path: "spec.destinationConfig.visibility", values: { all: "All" } },
    {
      op: "union",
      discriminator: "spec.destination",
      config: "spec.destinationConfig",
      union: "spec.destination",
      members: Object.fromEntries(
        destinations.map((d) => [
          d,
          {
            type: camel(d),
            member: lowerFirst(camel(d)),
            fields: Object.keys(specConfigs[d].shape).map(initialism),
            ...(d === "cloud-secrets-manager"
              ? {
                  moves: {
                    "spec.syncOptions.keyID": "keyID",
                    "spec.syncOptions.tags": "tags",
                    "spec.syncOptions.syncSecretMetadataAsTags": "syncSecretMetadataAsTags",
                  },
                }
              : {}),
          },
        ]),
      ),
    },
    { op: "default", path: "spec.deletionPolicy", value: "Retain" },
    ...timeEdits(
      "status.lastSyncedAt",
      "status.lastImportedAt",
      "status.lastRemovedAt",
      "status.pendingRequest.markedAt",
      "status.pendingRequest.lastJobAt",
      "status.deletionRemoval.markedAt",
      "status.deletionRemoval.lastJobAt",
      "status.deletionRemoval.retryAt",
    ),
  ],
};
