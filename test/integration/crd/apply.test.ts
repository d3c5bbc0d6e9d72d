// A CRD generated from a SecretSync-shaped discriminated union, applied to a real apiserver:
// the apiserver accepts it (structural, every CEL rule compiles within the cost budget), and
// `kubectl apply` rejects objects that do not fit their destination with the generated message.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { crdFromSources, crdToYaml, type CustomResourceDefinition } from "../../../src/crd/crd.ts";
import { toYaml } from "../../../src/crd/yaml.ts";
import { applyYaml, createTestNamespace, kubectl, kubectlStdout, waitFor, type TestNamespace } from "../../controlplane/testenv.ts";
import { kitchenSinkSource } from "../../unit/crd/kitchen-sink-example.ts";
import { exampleSource } from "../../unit/crd/secret-sync-example.ts";
import { waitForCrdsEstablished } from "../../controlplane/crds-established.ts";

const source = exampleSource("crdtest.keyward.dev");
const crd = crdFromSources(source);
const apiVersion = `${source.group}/${source.version}`;

function sync(name: string, spec: Record<string, unknown>): string {
  return toYaml({ apiVersion, kind: source.kind, metadata: { name }, spec });
}

const common = {
  projectId: "proj-1",
  name: "app-secrets",
  connectionId: "3f1c2d4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
  environment: "prod",
};

const good = {
  "code-host": {
    ...common,
    destination: "code-host",
    destinationConfig: { scope: "organization", org: "acme", visibility: "all" },
    syncOptions: { keySchema: "APP_{{secretKey}}" },
  },
  "workflow-engine": {
    ...common,
    destination: "workflow-engine",
    destinationConfig: { scope: "cluster", clusterUUID: "11111111-2222-3333-4444-555555555555" },
    syncOptions: {},
  },
  "cloud-secrets-manager": {
    ...common,
    destination: "cloud-secrets-manager",
    destinationConfig: { mappingBehavior: "one-to-one", region: "eu-west-1" },
    syncOptions: { tags: [{ key: "team", value: "payments" }], syncSecretMetadataAsTags: true },
  },
};

async function install(crd: CustomResourceDefinition, plural: string): Promise<void> {
  // the YAML text, not the object: this also proves the emitter's output is what kubectl reads
  await applyYaml(crdToYaml(crd), "default", { extraArgs: ["--server-side", "--force-conflicts"] });
  await waitForCrdsEstablished(kubectlStdout, [`crd/${crd.metadata.name}`], 60_000);
  // the CRD is served once discovery knows it; an apply straight after Established can race it
  await waitFor(async () => ((await kubectl(["get", plural, "-A"])).code === 0 ? true : undefined), {
    timeoutMs: 60_000,
    description: `${plural} to be served`,
  });
}

interface StoredCrd {
  spec: { versions: { schema: unknown; additionalPrinterColumns: unknown; subresources: unknown }[] };
  status: { conditions: { type: string; status: string }[] };
}

/** The CRD as the apiserver stored it: accepted, structural, nothing pruned or rewritten. */
async function expectStoredAsGenerated(crd: CustomResourceDefinition): Promise<void> {
  const got = await kubectl(["get", "crd", crd.metadata.name, "-o", "json"]);
  expect(got.code, got.stderr).toBe(0);
  const stored = JSON.parse(got.stdout) as StoredCrd;
  const conditions = stored.status.conditions;
  expect(conditions.find((c) => c.type === "Established")?.status).toBe("True");
  expect(conditions.find((c) => c.type === "NamesAccepted")?.status).toBe("True");
  expect(conditions.find((c) => c.type === "NonStructuralSchema")).toBeUndefined();
  // every key the generator writes is one the apiserver knows (unknown ones would be dropped)
  const [version] = stored.spec.versions;
  const [generated] = crd.spec.versions;
  expect(version?.schema).toEqual(generated?.schema);
  expect(version?.additionalPrinterColumns).toEqual(generated?.additionalPrinterColumns);
  expect(version?.subresources).toEqual({ status: {} });
}

describe("a CRD generated from a SecretSync-shaped union, on a real apiserver", () => {
  let ns: TestNamespace;

  beforeAll(async () => {
    await install(crd, `${source.plural}.${source.group}`);
    ns = await createTestNamespace("crd-apply");
  });

  afterAll(async () => {
    await ns.cleanup();
    await kubectl(["delete", "crd", crd.metadata.name, "--wait=false"]);
  });

  it("is accepted as a structural schema, stored exactly as generated", async () => {
    await expectStoredAsGenerated(crd);
  });

  it.each(Object.entries(good))("accepts a valid %s sync and fills the defaults", async (destination, spec) => {
    const name = `good-${destination}`;
    await applyYaml(sync(name, spec), ns.name);
    const got = await kubectl(["get", `${source.plural}.${source.group}`, name, "-n", ns.name, "-o", "json"]);
    const stored = JSON.parse(got.stdout) as {
      spec: { secretPath: string; isAutoSyncEnabled: boolean; syncOptions: Record<string, unknown> };
    };
    expect(stored.spec.secretPath).toBe("/");
    expect(stored.spec.isAutoSyncEnabled).toBe(true);
    expect(stored.spec.syncOptions.initialSyncBehavior).toBe("overwrite-destination");
  });

  it("accepts null for nullable fields, enums included", async () => {
    const result = await kubectl(["create", "-n", ns.name, "-f", "-"], {
      input: sync("nulls", { ...good["workflow-engine"], description: null, priority: null }),
    });
    expect(result.code, result.stderr).toBe(0);
    const got = await kubectl(["get", `${source.plural}.${source.group}`, "nulls", "-n", ns.name, "-o", "json"]);
    const stored = JSON.parse(got.stdout) as { spec: Record<string, unknown> };
    expect(stored.spec.priority).toBeNull();
    expect(stored.spec.description).toBeNull();
  });

  const bad: [string, Record<string, unknown>, string][] = [
    [
      "a code-host sync without org",
      { ...good["code-host"], destinationConfig: { scope: "organization" } },
      "destination code-host requires destinationConfig.org",
    ],
    [
      "a code-host sync with another destination's field",
      {
        ...good["code-host"],
        destinationConfig: { scope: "organization", org: "acme", clusterUUID: "11111111-2222-3333-4444-555555555555" },
      },
      "destinationConfig.clusterUUID is not allowed for destination code-host",
    ],
    [
      "a code-host scope other than organization",
      { ...good["code-host"], destinationConfig: { scope: "repository", org: "acme" } },
      "destinationConfig.scope must be organization for destination code-host",
    ],
    [
      "a workflow-engine scope shorter than its own limit",
      { ...good["workflow-engine"], destinationConfig: { scope: "", clusterUUID: "11111111-2222-3333-4444-555555555555" } },
      "destinationConfig.scope must be at least 1 character for destination workflow-engine",
    ],
    [
      // the merged field keeps the longest any variant allows (64; code-host's "organization" is 12)
      "a scope longer than any destination allows",
      { ...good["workflow-engine"], destinationConfig: { scope: "x".repeat(65), clusterUUID: "11111111-2222-3333-4444-555555555555" } },
      "spec.destinationConfig.scope: Too long: may not be more than 64",
    ],
    [
      "cloud-secrets-manager sync options on a workflow-engine sync",
      { ...good["workflow-engine"], syncOptions: { tags: [{ key: "a", value: "b" }] } },
      "syncOptions.tags is not allowed for destination workflow-engine",
    ],
    [
      "a cloud-secrets-manager sync without region",
      { ...good["cloud-secrets-manager"], destinationConfig: { mappingBehavior: "one-to-one" } },
      "destination cloud-secrets-manager requires destinationConfig.region",
    ],
    ["a value outside a nullable enum", { ...good["code-host"], priority: "medium" }, "must be one of low, high"],
    [
      "both projectRef and projectId",
      { ...good["code-host"], projectRef: { name: "p" } },
      "exactly one of projectRef, projectId must be set",
    ],
  ];

  it.each(bad)("rejects %s with the rule's message", async (_what, spec, message) => {
    const result = await applyYaml(sync("bad", spec), ns.name, { allowFailure: true });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(message);
    const got = await kubectl(["get", `${source.plural}.${source.group}`, "bad", "-n", ns.name]);
    expect(got.code).not.toBe(0);
  });

  it("rejects a bad object only for the rule it breaks, not for the variants it does not claim", async () => {
    const result = await applyYaml(sync("bad-one", { ...good["code-host"], destinationConfig: { scope: "organization" } }), ns.name, {
      allowFailure: true,
    });
    expect(result.stderr).toContain("destination code-host requires destinationConfig.org");
    expect(result.stderr).not.toContain("workflow-engine");
    expect(result.stderr).not.toContain("cloud-secrets-manager");
  });

  it("keeps the destination immutable", async () => {
    await applyYaml(sync("moving", good["code-host"]), ns.name);
    const result = await applyYaml(sync("moving", good["workflow-engine"]), ns.name, { allowFailure: true });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("destination is immutable");
  });
});

const sink = kitchenSinkSource("crdtest.keyward.dev");
const sinkCrd = crdFromSources(sink);
const sinkResource = `${sink.plural}.${sink.group}`;

function sinkObject(name: string, spec: Record<string, unknown>): string {
  return toYaml({ apiVersion: `${sink.group}/${sink.version}`, kind: sink.kind, metadata: { name }, spec });
}

const fullSink = {
  slug: "kitchen-1",
  prefixed: "kw-a-x",
  caseless: "ABC",
  id: "3f1c2d4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
  guid: "00000000-0000-0000-0000-000000000001",
  email: "ops@example.com",
  url: "https://example.com/x",
  at: "2024-01-01T10:00:00+02:00",
  atUtc: "2024-01-01T08:00:00Z",
  day: "2024-01-01",
  ip: "10.0.0.1",
  ip6: "fe80::1",
  cidr: "10.0.0.0/8",
  blob: "aGVsbG8=",
  ratio: 0.5,
  step: 10,
  small: 7,
  flag: true,
  maybe: "x",
  port: "http",
  labels: { team: "payments" },
  limits: { cpu: "1" },
  pair: ["a", "b"],
  free: { anything: [1, "two", { three: true }] },
  extra: { known: "k", unknown: { kept: 1 } },
  items: [{ name: "a", value: "1" }, { name: "b" }],
  tags: ["x", "y"],
  both: { a: "a", b: "b" },
  window: { start: 1, end: 2 },
};

describe("a CRD using every construct the generator maps, on a real apiserver", () => {
  let ns: TestNamespace;

  beforeAll(async () => {
    await install(sinkCrd, sinkResource);
    ns = await createTestNamespace("crd-sink");
  });

  afterAll(async () => {
    await ns.cleanup();
    await kubectl(["delete", "crd", sinkCrd.metadata.name, "--wait=false"]);
  });

  it("is accepted as a structural schema, stored exactly as generated", async () => {
    await expectStoredAsGenerated(sinkCrd);
  });

  it("accepts an object using every field, keeps free-form data and fills defaults", async () => {
    await applyYaml(sinkObject("full", fullSink), ns.name);
    const got = await kubectl(["get", sinkResource, "full", "-n", ns.name, "-o", "json"]);
    const stored = JSON.parse(got.stdout) as { spec: Record<string, unknown> };
    expect(stored.spec).toEqual({ ...fullSink, count: 3, mode: "a", settings: { retries: 1, verbose: false } });
  });

  const bad: [string, Record<string, unknown>, string][] = [
    ["a slug breaking its pattern", { slug: "Not_A_Slug" }, "spec.slug"],
    ["a string missing one of two patterns", { slug: "kitchen-2", prefixed: "kw-a" }, "spec.prefixed"],
    ["a case-insensitive pattern miss", { slug: "kitchen-2", caseless: "abd" }, "spec.caseless"],
    ["an offset on a UTC-only date-time", { slug: "kitchen-2", atUtc: "2024-01-01T08:00:00+02:00" }, "spec.atUtc"],
    ["a malformed uuid", { slug: "kitchen-2", id: "not-a-uuid" }, "spec.id"],
    ["a bound broken", { slug: "kitchen-2", count: 11 }, "spec.count"],
    ["an exclusive bound touched", { slug: "kitchen-2", ratio: 1 }, "spec.ratio"],
    ["a number off its multiple", { slug: "kitchen-2", step: 7 }, "spec.step"],
    ["a value outside a nullable enum", { slug: "kitchen-2", maybe: "z" }, "must be one of x, y"],
    ["a duplicate in a set", { slug: "kitchen-2", tags: ["x", "x"] }, "spec.tags"],
    ["a duplicate map-list key", { slug: "kitchen-2", items: [{ name: "a" }, { name: "a" }] }, "spec.items"],
    ["a tuple of the wrong length", { slug: "kitchen-2", pair: ["a"] }, "spec.pair"],
    ["an object-level rule broken", { slug: "kitchen-2", window: { start: 3, end: 2 } }, "start must not be after end"],
  ];

  it.each(bad)("rejects %s", async (_what, spec, message) => {
    const result = await applyYaml(sinkObject("bad", spec), ns.name, { allowFailure: true });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(message);
  });

  it("keeps an immutable field immutable", async () => {
    await applyYaml(sinkObject("fixed", { slug: "fixed-1" }), ns.name);
    const result = await applyYaml(sinkObject("fixed", { slug: "fixed-2" }), ns.name, { allowFailure: true });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("slug is immutable");
  });
});
