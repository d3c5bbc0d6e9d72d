// The generated CRDs of every kind, with a size bound on every string, list and map, on the real
// apiserver: accepted as generated (structural, every CEL rule within the cost budget; the
// control plane's global setup applied crds/), a server-side dry run of each file accepted again,
// and objects at a bound accepted while one past it is refused with the field's path.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { crdFromSources } from "../../../src/crd/crd.ts";
import { toYaml } from "../../../src/crd/yaml.ts";
import { bounds } from "../../../src/resources/common.ts";
import { kinds } from "../../../src/resources/registry.ts";
import { applyYaml, createTestNamespace, kubectl, type TestNamespace } from "../../controlplane/testenv.ts";

const repoRoot = fileURLToPath(new URL("../../..", import.meta.url));
const crdFiles = readdirSync(join(repoRoot, "crds")).filter((f) => f.endsWith(".yaml"));

const sync = (name: string, spec: Record<string, unknown>): string =>
  toYaml({ apiVersion: "keyward.dev/v1alpha1", kind: "SecretSync", metadata: { name }, spec });

const cloudSpec = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  projectId: "p",
  connectionId: "3f1c2d4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
  environment: "prod",
  secretPath: "/",
  destination: "cloud-secrets-manager",
  destinationConfig: { mappingBehavior: "one-to-one", region: "eu-west-1" },
  ...over,
});

describe("every kind's bounded CRD on a real apiserver", () => {
  let ns: TestNamespace;

  beforeAll(async () => {
    ns = await createTestNamespace("crd-bounds");
  });

  afterAll(async () => {
    await ns.cleanup();
  });

  it.each(kinds.map((k) => [k.crd.kind, k.crd] as const))("%s is stored exactly as generated, bounds included", async (_kind, src) => {
    const crd = crdFromSources(src);
    const got = await kubectl(["get", "crd", crd.metadata.name, "-o", "json"]);
    expect(got.code, got.stderr).toBe(0);
    const stored = JSON.parse(got.stdout) as { spec: { versions: { schema: unknown }[] } };
    expect(stored.spec.versions[0]?.schema).toEqual(crd.spec.versions[0]?.schema);
  });

  it.each(crdFiles)("a server-side dry run of crds/%s is accepted (CEL within the cost budget)", async (file) => {
    const result = await kubectl(["apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", join(repoRoot, "crds", file)]);
    expect(result.code, result.stderr).toBe(0);
  });

  it("a SecretSync with every bounded field at its bound is accepted", async () => {
    const spec = cloudSpec({
      name: "n".repeat(64),
      environment: "e".repeat(64),
      description: "d".repeat(256),
      secretPath: `/${"a".repeat(bounds.PATH - 1)}`,
      destinationConfig: { mappingBehavior: "one-to-one", region: "r".repeat(bounds.NAME) },
      syncOptions: {
        keySchema: `${"K".repeat(bounds.KEY_SCHEMA - "{{secretKey}}".length)}{{secretKey}}`,
        keyId: "k".repeat(bounds.KMS_KEY_ID),
        tags: Array.from({ length: bounds.TAGS }, (_, i) => ({
          key: `${i}`.padEnd(bounds.TAG_KEY, "k"),
          value: "v".repeat(bounds.TAG_VALUE),
        })),
      },
    });
    const result = await applyYaml(sync("at-bound", spec), ns.name, { extraArgs: ["--dry-run=server"], allowFailure: true });
    expect(result.code, result.stderr).toBe(0);
  });

  it.each([
    ["spec.secretPath", { secretPath: `/${"a".repeat(bounds.PATH)}` }],
    ["spec.destinationConfig.region", { destinationConfig: { mappingBehavior: "one-to-one", region: "r".repeat(bounds.NAME + 1) } }],
    ["spec.syncOptions.keyId", { syncOptions: { keyId: "k".repeat(bounds.KMS_KEY_ID + 1) } }],
    ["spec.syncOptions.tags", { syncOptions: { tags: Array.from({ length: bounds.TAGS + 1 }, () => ({ key: "k", value: "v" })) } }],
    ["spec.syncOptions.tags[0].value", { syncOptions: { tags: [{ key: "k", value: "v".repeat(bounds.TAG_VALUE + 1) }] } }],
  ])("a SecretSync past the bound of %s is refused, naming it", async (path, over) => {
    const result = await applyYaml(sync("past-bound", cloudSpec(over)), ns.name, { extraArgs: ["--dry-run=server"], allowFailure: true });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(path);
    expect(result.stderr).toMatch(/Too long|Too many/);
  });

  it("a code-host SecretSync with more selectedRepositoryIds than the bound is refused", async () => {
    const spec = {
      ...cloudSpec(),
      destination: "code-host",
      destinationConfig: {
        scope: "organization",
        org: "acme",
        visibility: "all",
        selectedRepositoryIds: Array.from({ length: bounds.SELECTED_REPOSITORIES + 1 }, (_, i) => i),
      },
    };
    const result = await applyYaml(sync("many-repos", spec), ns.name, { extraArgs: ["--dry-run=server"], allowFailure: true });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("spec.destinationConfig.selectedRepositoryIds");
  });

  it("a ClusterProviderConfig's matchLabels: more labels than the bound, or a longer key, is refused", async () => {
    const cpc = (labels: Record<string, string>): string =>
      toYaml({
        apiVersion: "keyward.dev/v1alpha1",
        kind: "ClusterProviderConfig",
        metadata: { name: "bounds-test" },
        spec: {
          baseUrl: "https://secrets.example.com",
          credentialsSecretRef: { name: "token" },
          namespaceSelector: { matchLabels: labels },
        },
      });
    const labels = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`example.com/l${i}`, "v"]));
    const dryRun = { extraArgs: ["--dry-run=server"], allowFailure: true };
    const atBound = await applyYaml(cpc(labels(bounds.MATCH_LABELS)), ns.name, dryRun);
    expect(atBound.code, atBound.stderr).toBe(0);
    const tooMany = await applyYaml(cpc(labels(bounds.MATCH_LABELS + 1)), ns.name, dryRun);
    expect(tooMany.code).not.toBe(0);
    expect(tooMany.stderr).toContain("spec.namespaceSelector.matchLabels");
    const longKey = await applyYaml(cpc({ ["k".repeat(bounds.LABEL_KEY + 1)]: "v" }), ns.name, dryRun);
    expect(longKey.code).not.toBe(0);
    expect(longKey.stderr).toContain(`each key at most ${bounds.LABEL_KEY} characters`);
  });
});
