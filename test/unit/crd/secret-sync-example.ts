// A spec shaped like SecretSync's: a discriminated union on `destination` whose variants each
// carry their own destinationConfig and syncOptions (three of the seven destinations). Shared by
// the converter's unit tests and the apply test against a real apiserver.
import { z } from "zod";
import { conditionColumn, ageColumn, exactlyOneOf, immutable } from "../../../src/crd/crd.ts";
import type { CrdSource } from "../../../src/crd/crd.ts";

const base = {
  providerConfigRef: z
    .object({ name: z.string().min(1).max(253) })
    .optional()
    .describe("The ProviderConfig to use."),
  projectRef: z
    .object({ name: z.string().min(1).max(253) })
    .optional()
    .describe("A Project in the same namespace."),
  projectId: z.string().min(1).max(128).optional().describe("The id of a project keyward does not manage."),
  name: z.string().min(1).max(64).describe("Name of the sync at the service."),
  description: z.string().max(256).nullable().optional(),
  priority: z.enum(["low", "high"]).nullable().optional(),
  connectionId: z.guid().describe("The app connection to sync through."),
  environment: z.string().min(1).max(64).describe("Environment slug to sync from."),
  secretPath: z.string().min(1).max(1024).default("/").describe("Folder path to sync from."),
  isAutoSyncEnabled: z.boolean().default(true),
};

const syncOptions = {
  initialSyncBehavior: z
    .enum(["overwrite-destination", "import-prioritize-source", "import-prioritize-destination"])
    .default("overwrite-destination"),
  keySchema: z
    .string()
    .max(256)
    .regex(/\{\{secretKey\}\}/)
    .optional()
    .describe("Key template containing {{secretKey}}."),
  disableSecretDeletion: z.boolean().optional(),
};

const destination = <V extends string>(value: V) => z.literal(value).meta(immutable("destination is immutable"));

export const codeHost = z.object({
  ...base,
  destination: destination("code-host"),
  destinationConfig: z
    .object({
      scope: z.literal("organization"),
      org: z.string().min(1).max(256),
      visibility: z.literal("all").optional(),
      selectedRepositoryIds: z.array(z.number().int()).max(100).optional(),
    })
    .describe("Where to sync: one object per destination."),
  syncOptions: z.object(syncOptions),
});

export const workflowEngine = z.object({
  ...base,
  destination: destination("workflow-engine"),
  destinationConfig: z.object({
    scope: z.string().min(1).max(64),
    clusterUUID: z.guid(),
  }),
  syncOptions: z.object(syncOptions),
});

export const cloudSecretsManager = z.object({
  ...base,
  destination: destination("cloud-secrets-manager"),
  destinationConfig: z.object({
    mappingBehavior: z.literal("one-to-one"),
    region: z.string().min(1).max(64),
  }),
  syncOptions: z.object({
    ...syncOptions,
    keyId: z.string().max(256).optional(),
    tags: z
      .array(z.object({ key: z.string().min(1).max(128), value: z.string().max(256) }))
      .max(50)
      .optional(),
    syncSecretMetadataAsTags: z.boolean().default(false),
  }),
});

export const exampleSpec = z
  .discriminatedUnion("destination", [codeHost, workflowEngine, cloudSecretsManager])
  .describe("A sync of one project environment to one destination.");

export const exampleStatus = z.object({
  observedGeneration: z.number().int().optional(),
  syncId: z.string().optional(),
});

export function exampleSource(group = "crdtest.keyward.dev"): CrdSource {
  return {
    group,
    version: "v1alpha1",
    kind: "ExampleSync",
    plural: "examplesyncs",
    shortNames: ["exsync"],
    categories: ["keyward-test"],
    description: "A SecretSync-shaped resource for testing generated CRDs.",
    spec: exampleSpec,
    status: exampleStatus,
    printerColumns: [{ name: "Destination", type: "string", jsonPath: ".spec.destination" }, conditionColumn("Ready"), ageColumn],
    specValidations: [exactlyOneOf(["projectRef", "projectId"])],
  };
}
