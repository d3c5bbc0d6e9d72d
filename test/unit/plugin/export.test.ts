// kubectl keyward export's pieces that need no cluster: the YAML it writes (read back by js-yaml
// under YAML 1.2 and 1.1 rules, as kubectl's Go reader and other tools read it) and the manifest it
// makes of an object (its pins kept, the cluster's own fields dropped). The command itself, against
// a real apiserver and keyward: test/integration/export.test.ts.
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { CORE_SCHEMA, YAML11_SCHEMA, load, loadAll } from "js-yaml";

interface ApiResource {
  resource: string;
  kind: string;
  namespaced: boolean;
  names: string[];
}
const plugin = createRequire(import.meta.url)("../../../bin/kubectl-keyward.cjs") as {
  toYaml(value: unknown): string;
  manifestOf(
    obj: object,
    res: ApiResource,
    opts?: { observeOnly?: boolean },
  ): Record<string, unknown> & { metadata: Record<string, unknown> };
};

/** Strings YAML readers are known to take for something else, or to trip over. */
const tricky = [
  ...["y", "Y", "n", "N", "yes", "No", "ON", "off", "true", "True", "FALSE", "null", "Null", "NULL", "~", ""],
  ...["0", "-1", "+1", "1_000", "0x1F", "0o17", "0b101", "017", "1e3", "1.", ".5", ".inf", "-.Inf", ".NaN", "12:30:00", "190:20:30"],
  ...["2024-01-01", "2001-12-14t21:59:43.10-05:00", "<<", "=", "- a", "-", "--- a", "---", "...", "? a", "?", ":", "a: b", "a:b"],
  ...["#a", "a #b", "a#b", "'a'", '"a"', "@a", "`a", "!a", "!!str", "&a", "*a", "|", ">", "%YAML", "[a]", "{a: 1}", "a,b", "a, b"],
  ...[" a", "a ", "a  b", "\ta", "a\tb", "\n", "a\n", "a\n\n", "\na", "a\n b", "a\n\n\nb\n", "a\r\nb", "a\rb", " \n a", "a\n  "],
  ...["\u0085", "a\u0085b", "\u2028", "a\u2029b", "\ufeffa", "\u007f", "\u009f", "\u00a0a", "\u0000", "\u001b[0m", "é", "日本", "😀"],
  ...[
    "keyward.dev/external-id",
    "handled.keyward.dev/sync-requested-at",
    "a1b2c3d4-0005-4a00-8000-000000000001",
    "https://x.test:8080/a?b=c#d",
  ],
];

const text = fc.oneof(
  fc.constantFrom(...tricky),
  fc.string({ unit: "binary" }).filter((s) => s.isWellFormed()),
  fc.array(fc.oneof(fc.constantFrom(...tricky), fc.string()), { maxLength: 5 }).map((lines) => lines.join("\n")),
);

const { value: jsonValue } = fc.letrec<{ value: unknown; array: unknown[]; object: Record<string, unknown> }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    text,
    tie("array"),
    tie("object"),
  ),
  array: fc.array(tie("value"), { maxLength: 4 }),
  object: fc.dictionary(text, tie("value"), { maxKeys: 4 }),
}));

/** What JSON carries of a value (kubectl's output is JSON): -0 is 0. */
const asJson = (v: unknown): unknown => JSON.parse(JSON.stringify(v)) as unknown;

describe("the export's YAML", () => {
  it.each([
    ["YAML 1.2 (core schema)", CORE_SCHEMA],
    ["YAML 1.1", YAML11_SCHEMA],
  ])("reads back as the JSON data it was made of, under %s", (_name, schema) => {
    fc.assert(
      fc.property(jsonValue, (v) => {
        expect(load(plugin.toYaml(v), { schema })).toEqual(asJson(v));
      }),
      { numRuns: 2_000 },
    );
  });

  it("reads back every tricky string as a value, as a key and inside a sequence", () => {
    for (const s of tricky) {
      for (const schema of [CORE_SCHEMA, YAML11_SCHEMA]) {
        const doc = { [s]: s, list: [s, { [s]: [s] }], nested: { deeper: s } };
        const yaml = plugin.toYaml(doc);
        expect(load(yaml, { schema }), `${JSON.stringify(s)}:\n${yaml}`).toEqual(doc);
      }
    }
  });

  it("reads like a hand-written manifest: plain words, block collections, literal blocks for text of several lines", () => {
    const manifest = {
      apiVersion: "keyward.dev/v1alpha1",
      kind: "SecretSync",
      metadata: { name: "shop", namespace: "payments", annotations: { "keyward.dev/external-id": "0f3c9a1e-1" } },
      spec: {
        projectRef: { name: "payments" },
        secretPath: "/",
        isAutoSyncEnabled: false,
        pitVersionLimit: 20,
        roles: [{ role: "member" }, { role: "admin", isTemporary: true }],
        tags: [],
        destinationConfig: {},
        description: "first line\nsecond line\n",
        on: "yes",
      },
    };
    expect(plugin.toYaml(manifest)).toBe(
      [
        "apiVersion: keyward.dev/v1alpha1",
        "kind: SecretSync",
        "metadata:",
        "  name: shop",
        "  namespace: payments",
        "  annotations:",
        '    keyward.dev/external-id: "0f3c9a1e-1"',
        "spec:",
        "  projectRef:",
        "    name: payments",
        "  secretPath: /",
        "  isAutoSyncEnabled: false",
        "  pitVersionLimit: 20",
        "  roles:",
        "    - role: member",
        "    - role: admin",
        "      isTemporary: true",
        "  tags: []",
        "  destinationConfig: {}",
        "  description: |",
        "    first line",
        "    second line",
        '  "on": "yes"',
        "",
      ].join("\n"),
    );
  });

  it("is a stream of documents js-yaml's loadAll reads one by one", () => {
    const docs = [{ a: 1 }, { b: ["x", "y\nz"] }];
    expect(loadAll(docs.map((d) => `---\n${plugin.toYaml(d)}`).join(""))).toEqual(docs);
  });
});

const secretSyncs: ApiResource = { resource: "secretsyncs.keyward.dev", kind: "SecretSync", namespaced: true, names: ["secretsync"] };
const projects: ApiResource = { resource: "projects.keyward.dev", kind: "Project", namespaced: true, names: ["project"] };
const memberships: ApiResource = { resource: "projectmemberships.keyward.dev", kind: "ProjectMembership", namespaced: true, names: [] };
const clusterConfigs: ApiResource = {
  resource: "clusterproviderconfigs.keyward.dev",
  kind: "ClusterProviderConfig",
  namespaced: false,
  names: [],
};

/** An object as the apiserver returns it, with everything a cluster adds. */
function served(kind: string, metadata: Record<string, unknown>, status: Record<string, unknown>): object {
  return {
    apiVersion: "keyward.dev/v1alpha1",
    kind,
    metadata: {
      name: "shop",
      namespace: "payments",
      uid: "7d1c0c5e-1111-4a00-8000-000000000001",
      resourceVersion: "4242",
      generation: 3,
      creationTimestamp: "2026-01-01T00:00:00Z",
      managedFields: [{ manager: "keyward", operation: "Update" }],
      ownerReferences: [{ apiVersion: "v1", kind: "ConfigMap", name: "owner", uid: "u" }],
      finalizers: ["keyward.dev/finalizer"],
      ...metadata,
    },
    spec: { projectRef: { name: "payments" } },
    status,
  };
}

describe("the export's manifest of an object", () => {
  it("keeps the user's metadata and spec, pins the id from status when the annotation is absent, and drops the rest", () => {
    const obj = served(
      "SecretSync",
      {
        labels: {
          app: "shop",
          "shard.keyward.dev/owner": "keyward-0",
          "shard.keyward.dev/drain": "keyward-1",
          "x.keyward.dev/y": "z",
          "keyward.dev/external-id-digest": "0f1e",
          "keyward.dev/natural-key-digest": "2a3b",
        },
        annotations: {
          "kubectl.kubernetes.io/last-applied-configuration": "{}",
          "keyward.dev/create-started": "2026-01-01T00:00:00Z/7d1c",
          "keyward.dev/create-pending": "x",
          "keyward.dev/create-succeeded": "x",
          "keyward.dev/pending-action": '{"action":"sync","value":"2026-02-02T00:00:00Z"}',
          "handled.keyward.dev/sync-requested-at": "2026-02-02T00:00:00Z",
          "handled.keyward.dev/recent": '{"sync":["0123456789abcdef"]}',
          "keyward.dev/sync-requested-at": "2026-02-02T00:00:00Z",
          "team.example.com/owner": "payments",
        },
      },
      {
        syncId: "sync-1",
        lastHandledSyncRequest: "2026-02-02T00:00:00Z",
        lastHandledRemoveSecretsRequest: "2026-01-15T00:00:00Z",
        conditions: [],
      },
    );
    expect(plugin.manifestOf(obj, secretSyncs)).toEqual({
      apiVersion: "keyward.dev/v1alpha1",
      kind: "SecretSync",
      metadata: {
        name: "shop",
        namespace: "payments",
        labels: { app: "shop" },
        // keyward's ledger of handled values is not Git's: it changes with every action.
        annotations: {
          "keyward.dev/external-id": "sync-1",
          "keyward.dev/sync-requested-at": "2026-02-02T00:00:00Z",
          "team.example.com/owner": "payments",
        },
      },
      spec: { projectRef: { name: "payments" } },
    });
  });

  it("takes the id from status over its annotation, as keyward does; never a handled value", () => {
    const obj = served(
      "SecretSync",
      { annotations: { "keyward.dev/external-id": "from-annotation", "handled.keyward.dev/sync-requested-at": "a" } },
      { syncId: "from-status", lastHandledSyncRequest: "b" },
    );
    expect(plugin.manifestOf(obj, secretSyncs).metadata["annotations"]).toEqual({ "keyward.dev/external-id": "from-status" });
  });

  it("observeOnly: spec.managementPolicy ObserveOnly on the kinds that have it, the spec otherwise kept", () => {
    const sync = plugin.manifestOf(served("SecretSync", {}, { syncId: "s-1" }), secretSyncs, { observeOnly: true });
    expect(sync["spec"]).toEqual({ projectRef: { name: "payments" }, managementPolicy: "ObserveOnly" });
    const owned = {
      ...served("Project", {}, { projectId: "p-1" }),
      spec: { slug: "shop", managementPolicy: "Default", deletionPolicy: "Delete" },
    };
    expect(plugin.manifestOf(owned, projects, { observeOnly: true })["spec"]).toEqual({
      slug: "shop",
      managementPolicy: "ObserveOnly",
      deletionPolicy: "Delete",
    });
    // A ProviderConfig has no managementPolicy (it writes nothing at the service): left as it is.
    const cpc = served("ClusterProviderConfig", { namespace: undefined }, {});
    expect(plugin.manifestOf(cpc, clusterConfigs, { observeOnly: true })["spec"]).toEqual({ projectRef: { name: "payments" } });
    expect(plugin.manifestOf(served("SecretSync", {}, {}), secretSyncs)["spec"]).toEqual({ projectRef: { name: "payments" } });
  });

  it("takes a pin from its annotation where status has none", () => {
    const obj = served("SecretSync", { annotations: { "keyward.dev/external-id": "from-annotation" } }, {});
    expect(plugin.manifestOf(obj, secretSyncs).metadata["annotations"]).toEqual({ "keyward.dev/external-id": "from-annotation" });
  });

  it("pins only what a kind declares: a Project's projectId, nothing of a membership's ids", () => {
    expect(plugin.manifestOf(served("Project", {}, { projectId: "p-1", lastHandledSyncRequest: "x" }), projects).metadata).toEqual({
      name: "shop",
      namespace: "payments",
      annotations: { "keyward.dev/external-id": "p-1" },
    });
    expect(plugin.manifestOf(served("ProjectMembership", {}, { membershipId: "m-1" }), memberships).metadata).toEqual({
      name: "shop",
      namespace: "payments",
    });
  });

  it("keeps the project a membership or a sync recorded, which their deletion reads once the Project is gone", () => {
    const annotations = { "keyward.dev/project-id": "p-1" };
    expect(plugin.manifestOf(served("ProjectMembership", { annotations }, { projectId: "p-1" }), memberships).metadata).toEqual({
      name: "shop",
      namespace: "payments",
      annotations,
    });
    expect(plugin.manifestOf(served("SecretSync", { annotations }, { syncId: "s-1" }), secretSyncs).metadata["annotations"]).toEqual({
      "keyward.dev/external-id": "s-1",
      ...annotations,
    });
  });

  it("writes no namespace for a cluster-scoped kind, and no pin for an object without an id yet", () => {
    const m = plugin.manifestOf(served("ClusterProviderConfig", { namespace: undefined }, {}), clusterConfigs);
    expect(m.metadata).toEqual({ name: "shop" });
    expect(plugin.manifestOf(served("Project", {}, {}), projects).metadata).toEqual({ name: "shop", namespace: "payments" });
  });
});
