// The generated v1beta1 schemas on a real apiserver, before v1beta1 is served beside v1alpha1 (that
// needs the conversion webhook): every kind's v1beta1 version is applied as the lone version of a
// CRD in a test group. The apiserver accepts each (structural, every CEL rule compiles within its
// cost budget, every default valid); every sample of config/samples (every kind, every
// destination), converted to v1beta1, is created and read back with the schema's defaults; `kubectl
// explain` of a destination member shows only that destination's fields; and an object that breaks
// the union's rules is refused with the field named.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keywardSamples } from "../../support/samples.ts";
import { crdToYaml, type CustomResourceDefinition } from "../../../src/crd/crd.ts";
import { v1beta1Version } from "../../../src/crd/conversion-schema.ts";
import { toYaml } from "../../../src/crd/yaml.ts";
import { convert, type ConvertibleObject } from "../../../src/resources/conversion.ts";
import { kinds } from "../../../src/resources/registry.ts";
import { waitForCrdsEstablished } from "../../controlplane/crds-established.ts";
import { applyYaml, createTestNamespace, kubectl, kubectlStdout, waitFor, type TestNamespace } from "../../controlplane/testenv.ts";

const GROUP = "beta.test.keyward.dev";

function testCrd(kind: (typeof kinds)[number]): CustomResourceDefinition {
  const src = kind.crd;
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${src.plural}.${GROUP}` },
    spec: {
      group: GROUP,
      names: { kind: src.kind, listKind: `${src.kind}List`, plural: src.plural, singular: src.singular ?? src.kind.toLowerCase() },
      scope: src.scope ?? "Namespaced",
      // the lone version of its group stores itself
      versions: [{ ...v1beta1Version(kind), storage: true }],
    },
  };
}

const crds = kinds.map(testCrd);

const samples = (): ConvertibleObject[] => keywardSamples("v1beta1");

/** A v1alpha1 object as a v1beta1 one of the test group. */
function inTestGroup(obj: ConvertibleObject): ConvertibleObject {
  const beta = convert(obj, "v1beta1");
  return { ...beta, apiVersion: `${GROUP}/v1beta1` };
}

const plural = (kind: string): string => `${kinds.find((k) => k.ref.kind === kind)?.crd.plural ?? "?"}.${GROUP}`;

describe("the v1beta1 schemas on a real apiserver", () => {
  let ns: TestNamespace;

  beforeAll(async () => {
    await applyYaml(crds.map(crdToYaml).join("---\n"), "default", { extraArgs: ["--server-side", "--force-conflicts"] });
    await waitForCrdsEstablished(
      kubectlStdout,
      crds.map((c) => `crd/${c.metadata.name}`),
      120_000,
    );
    for (const c of crds) {
      await waitFor(async () => ((await kubectl(["get", c.metadata.name, "-A"])).code === 0 ? true : undefined), {
        timeoutMs: 60_000,
        description: `${c.metadata.name} to be served`,
      });
    }
    ns = await createTestNamespace("v1beta1");
  }, 240_000);

  afterAll(async () => {
    await ns.cleanup();
    await kubectl(["delete", "crd", ...crds.map((c) => c.metadata.name), "--wait=false"]);
  });

  it("accepts every kind's schema as structural and stores it as generated", async () => {
    for (const c of crds) {
      const stored = JSON.parse(await kubectlStdout(["get", "crd", c.metadata.name, "-o", "json"])) as {
        spec: { versions: { schema: unknown }[] };
        status: { conditions: { type: string; status: string }[] };
      };
      expect(
        stored.status.conditions.find((x) => x.type === "NonStructuralSchema"),
        c.metadata.name,
      ).toBeUndefined();
      expect(stored.spec.versions[0]?.schema, c.metadata.name).toEqual(c.spec.versions[0]?.schema);
    }
  });

  it("creates every sample (every kind, every destination) converted to v1beta1, and fills the schema's defaults", async () => {
    const all = samples();
    expect(new Set(all.map((o) => o.kind))).toEqual(new Set(kinds.map((k) => k.ref.kind)));
    for (const obj of all) {
      const beta = inTestGroup(obj);
      const result = await kubectl(["create", "-n", ns.name, "-f", "-"], { input: toYaml(beta) });
      expect(result.code, `${obj.kind} ${JSON.stringify(obj.metadata?.["name"])}: ${result.stderr}`).toBe(0);
    }
    const project = JSON.parse(await kubectlStdout(["get", plural("Project"), "-n", ns.name, "-o", "json"])) as {
      items: { spec: Record<string, unknown> }[];
    };
    expect(project.items[0]?.spec).toMatchObject({ createDefaultEnvironments: true, managementPolicy: "Default" });
    const member = JSON.parse(await kubectlStdout(["get", plural("ProjectMembership"), "payments-bob", "-n", ns.name, "-o", "json"])) as {
      spec: { roles: unknown[] };
    };
    expect(member.spec.roles).toEqual([
      { role: "member" },
      { role: "admin", temporary: { mode: "Relative", range: "8h", startTime: "2030-01-01T09:00:00Z" } },
    ]);
  });

  it("kubectl explain of each destination member shows that destination's fields only", async () => {
    const codeHost = await kubectlStdout(["explain", "secretsyncs.spec.destination.codeHost", "--api-version", `${GROUP}/v1beta1`]);
    for (const field of ["org", "scope", "visibility", "selectedRepositoryIDs"]) expect(codeHost).toContain(field);
    for (const field of ["clusterUUID", "region", "appID", "keyID"]) expect(codeHost).not.toContain(field);
    const cloud = await kubectlStdout(["explain", "secretsyncs.spec.destination.cloudSecretsManager", "--api-version", `${GROUP}/v1beta1`]);
    for (const field of ["region", "mappingBehavior", "keyID", "tags", "syncSecretMetadataAsTags"]) expect(cloud).toContain(field);
    expect(cloud).not.toContain("org\t");
  });

  const sync = (name: string, destination: Record<string, unknown>, syncOptions?: Record<string, unknown>): string =>
    toYaml({
      apiVersion: `${GROUP}/v1beta1`,
      kind: "SecretSync",
      metadata: { name },
      spec: {
        projectID: "p-1",
        connectionID: "a1b2c3d4-0004-4a00-8000-000000000004",
        environment: "prod",
        secretPath: "/",
        destination,
        ...(syncOptions ? { syncOptions } : {}),
      },
    });

  it.each([
    [
      "a member other than the one type names",
      sync("two-members", {
        type: "CodeHost",
        codeHost: { scope: "organization", org: "a", visibility: "All" },
        dataPlatform: { scope: "x" },
      }),
      "exactly the member type names must be set",
    ],
    ["no member", sync("no-member", { type: "DataPlatform" }), "exactly the member type names must be set"],
    [
      "an import on a destination that cannot be read back",
      sync(
        "import",
        { type: "GitHost", gitHost: { repositorySlug: "r", workspaceSlug: "w", environmentID: "e" } },
        {
          initialSyncBehavior: "ImportPrioritizeSource",
        },
      ),
      "syncOptions.initialSyncBehavior must be OverwriteDestination for destination.type GitHost",
    ],
    [
      "a v1alpha1 spelling",
      sync("alpha-spelling", { type: "code-host", codeHost: { scope: "organization", org: "a", visibility: "All" } }),
      "spec.destination.type: Unsupported value",
    ],
  ])("refuses %s, naming it", async (_what, yaml, message) => {
    const result = await kubectl(["create", "-n", ns.name, "-f", "-"], { input: yaml });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(message);
  });
});
