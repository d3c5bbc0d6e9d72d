import { expect, it } from "vitest";
import { z } from "zod";
import { crdFromSources, crdToYaml } from "../../../src/kube/crd.ts";
import { applyYaml, kubectl } from "../../controlplane/testenv.ts";
const base = { name: z.string().min(1).max(64), projectId: z.string().optional(), connectionId: z.guid(), environment: z.string().min(1).max(64), secretPath: z.string().default("/") };
const so = { initialSyncBehavior: z.enum(["overwrite-destination", "import-prioritize-source", "import-prioritize-destination"]).default("overwrite-destination"), keySchema: z.string().max(256).optional(), disableSecretDeletion: z.boolean().optional() };
const v = (d: string, cfg: z.ZodRawShape, extra: z.ZodRawShape = {}) => z.object({ ...base, destination: z.literal(d), destinationConfig: z.object(cfg), syncOptions: z.object({ ...so, ...extra }) });
const s = z.string().min(1).max(256);
const spec = z.discriminatedUnion("destination", [
  v("workflow-engine", { scope: s, clusterUUID: z.guid() }),
  v("data-platform", { scope: s }),
  v("monitoring", { accountId: s, accountName: s, groupId: s, groupName: s }),
  v("code-host", { scope: z.literal("organization"), org: s, visibility: z.literal("all"), selectedRepositoryIds: z.array(z.number().int()).max(1000).optional() }),
  v("cloud-secrets-manager", { mappingBehavior: z.literal("one-to-one"), region: s }, { keyId: s.optional(), tags: z.array(z.object({ key: s, value: z.string().max(256) })).max(50).optional(), syncSecretMetadataAsTags: z.boolean().optional() }),
  v("app-platform", { appId: s, appName: s }),
  v("git-host", { repositorySlug: s, environmentId: s, workspaceSlug: s }),
]);
it("seven", async () => {
  const crd = crdFromSources({ group: "seven.keyward.dev", version: "v1alpha1", kind: "Seven", plural: "sevens", description: "x", spec, status: z.object({}), printerColumns: [] });
  console.log("rules", crd.spec.versions[0]?.schema.openAPIV3Schema.properties?.spec?.["x-kubernetes-validations"]?.length, "bytes", crdToYaml(crd).length);
  const t0 = Date.now();
  const r = await applyYaml(crdToYaml(crd), "default", { allowFailure: true });
  console.log("apply ms", Date.now() - t0, r.stderr);
  expect(r.code).toBe(0);
  await kubectl(["delete", "crd", crd.metadata.name, "--wait=false"]);
});
