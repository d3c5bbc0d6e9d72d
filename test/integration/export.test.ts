// kubectl keyward export end to end, run through kubectl's plugin lookup against a real
// kube-apiserver. First what it keeps and drops of every kind, its formats and kind selection, on
// objects as an older keyward left them (ids only in status, written through the status
// subresource, in a namespace no keyward watches). Then the rebuild it is for: resources Ready in
// namespace A with a handled sync and remove-secrets, exported, then a sync and a remove-secrets
// requested and handled after the export (in Git, a later commit); A's keyward gone and its
// objects deleted; Git applied to namespace B with a fresh keyward: nothing is created again at
// the service, no request runs again, every resource Ready with the same ids. And a drill: the
// export with --observe-only applied to namespace C writes nothing at the service, and deleting
// C deletes nothing there.
import { chmodSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { loadAll } from "js-yaml";
import type { Emulator } from "../emulator/server.ts";
import { loadDefaultSeed } from "../emulator/default-seed.ts";
import { createTestNamespace, kubectl, testKubectlPath, type TestNamespace } from "../controlplane/testenv.ts";
import { credentialsLabels, getCustom, isReady, startKeyward, startTestEnv, waitForObject, type TestEnv } from "./support/keyward.ts";
import { installPlugin, type InstalledPlugin } from "./support/plugin.ts";
import type { KubeObject } from "../../src/engine/types.ts";

const TOKEN = "kw-export-token-4e7b1c9a";
// The version the cluster prefers, which export writes: the suite's control plane serves v1beta1
// through keyward's webhook, as a release does.
const API_VERSION = "keyward.dev/v1beta1";
const EXTERNAL_ID = "keyward.dev/external-id";
const HANDLED_SYNC = "handled.keyward.dev/sync-requested-at";
const HANDLED_REMOVE = "handled.keyward.dev/remove-secrets-requested-at";
const SYNC_REQUESTED = "keyward.dev/sync-requested-at";
/** The namespaced kinds, by plural (the registry's order). */
const PLURALS = ["providerconfigs", "projects", "projectmemberships", "accesstokens", "certificateprofiles", "secretsyncs"].map(
  (p) => `${p}.keyward.dev`,
);
const samplesDir = new URL("../../config/samples/", import.meta.url);

let env: TestEnv;
let kc: KubeConfig;
let emulator: Emulator;
let installed: InstalledPlugin;

type Metadata = { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> } & Record<
  string,
  unknown
>;
type Manifest = { apiVersion: string; kind: string; metadata: Metadata; spec?: unknown } & Record<string, unknown>;

const plugin = (args: string[], extraEnv: Record<string, string> = {}) => installed.run(args, extraEnv);

/** The first manifest of `kind` in a file of config/samples. */
function sample(file: string, kind: string): Manifest {
  const doc = (loadAll(readFileSync(new URL(file, samplesDir), "utf8")) as Manifest[]).find((d) => d.kind === kind);
  if (!doc) throw new Error(`config/samples/${file} has no ${kind}`);
  return doc;
}

async function mustKubectl(args: string[], input?: string): Promise<string> {
  const r = await kubectl(args, input === undefined ? {} : { input });
  if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")}: ${r.stderr.trim()}`);
  return r.stdout;
}

/** A merge patch of an object, or of its status through the status subresource. */
const patch = (ns: string, what: string, body: object, subresource?: "status"): Promise<string> =>
  mustKubectl(["patch", what, "-n", ns, "--type=merge", "-p", JSON.stringify(body), ...(subresource ? ["--subresource=status"] : [])]);

/** Takes every finalizer off the keyward objects and Secrets of a namespace: deleting them then deletes them. */
async function releaseAll(ns: string): Promise<void> {
  for (const plural of [...PLURALS, "secrets"]) {
    const list = JSON.parse(await mustKubectl(["get", plural, "-n", ns, "-o", "json"])) as { items: KubeObject[] };
    for (const obj of list.items) {
      if ((obj.metadata.finalizers ?? []).length > 0) await patch(ns, `${plural}/${obj.metadata.name}`, { metadata: { finalizers: null } });
    }
  }
}

const ref = (d: Manifest): string => `${d.kind}/${d.metadata.name}`;
const byRef = (docs: Manifest[], kind: string, name: string): Manifest => {
  const d = docs.find((x) => x.kind === kind && x.metadata.name === name);
  if (!d) throw new Error(`no ${kind}/${name} in ${docs.map(ref).join(", ")}`);
  return d;
};

beforeAll(async () => {
  env = await startTestEnv({ prefix: "export", token: TOKEN, emulator: { seed: loadDefaultSeed() }, keyward: false });
  ({ kc, emulator } = env);
  installed = installPlugin();
  env.onStop(() => Promise.resolve(installed.remove()));
});

afterAll(() => env?.stop());

describe("kubectl keyward export, of objects an older keyward left", () => {
  let legacy: TestNamespace;
  let empty: TestNamespace;
  const cpcName = `export-${Math.random().toString(16).slice(2, 10)}`;
  /** Annotation values YAML readers are known to take for something else. */
  const tricky: Record<string, string> = {
    "example.com/yes": "yes",
    "example.com/off": "Off",
    "example.com/octal": "0123",
    "example.com/float": "1e3",
    "example.com/date": "2026-01-01",
    "example.com/null": "~",
    "example.com/empty": "",
    "example.com/lines": "first\n  second\n\n",
    "example.com/comment": "a: b #c",
    "example.com/padded": " padded ",
    "example.com/quotes": `"'`,
    "example.com/breaks": "a\u2028b\u0085c\r\nd",
    "example.com/tab": "a\tb",
    "example.com/unicode": "日本 😀 é",
    "example.com/json": '{"a":[1,2]}',
  };
  /** What was applied, by Kind/name: the specs an export must give back. */
  const applied = new Map<string, Manifest>();
  let ownerUid: string;

  /** A manifest with everything a cluster adds that an export must drop: shard labels, create marks, finalizers, an owner. */
  function withClusterState(m: Manifest, extra: { labels?: Record<string, string>; annotations?: Record<string, string> } = {}): Manifest {
    return {
      ...m,
      metadata: {
        name: m.metadata.name,
        labels: { team: "payments", "shard.keyward.dev/owner": "keyward-0", "shard.keyward.dev/drain": "keyward-1", ...extra.labels },
        annotations: { "keyward.dev/create-pending": "2026-01-01T00:00:00Z", ...extra.annotations },
        finalizers: ["keyward.dev/finalizer"],
        ownerReferences: [{ apiVersion: "v1", kind: "ConfigMap", name: "owner", uid: ownerUid }],
      },
    };
  }

  const sync = sample("secretsync-app-platform.yaml", "SecretSync");
  const syncNamed = (name: string, annotations: Record<string, string> = {}): Manifest =>
    withClusterState({ ...sync, metadata: { name } }, { annotations });

  beforeAll(async () => {
    legacy = await createTestNamespace("export-legacy");
    empty = await createTestNamespace("export-empty");
    env.onStop(() => empty.cleanup());
    env.onStop(async () => {
      await releaseAll(legacy.name);
      await legacy.cleanup();
      await kubectl(["patch", "clusterproviderconfigs.keyward.dev", cpcName, "--type=merge", "-p", '{"metadata":{"finalizers":null}}']);
      await kubectl(["delete", "clusterproviderconfigs.keyward.dev", cpcName, "--ignore-not-found"]);
    });
    const owner = await kc
      .makeApiClient(CoreV1Api)
      .createNamespacedConfigMap({ namespace: legacy.name, body: { metadata: { name: "owner" } } });
    ownerUid = owner.metadata?.uid ?? "";

    const manifests = [
      withClusterState(sample("providerconfig.yaml", "ProviderConfig")),
      withClusterState(sample("project.yaml", "Project"), {
        annotations: { ...tricky, "keyward.dev/create-started": "2026-01-01T00:00:00Z/x" },
      }),
      withClusterState(sample("projectmembership-user.yaml", "ProjectMembership")),
      withClusterState(sample("accesstoken.yaml", "AccessToken")),
      withClusterState(sample("certificateprofile.yaml", "CertificateProfile")),
      syncNamed("old", {
        [SYNC_REQUESTED]: "2026-03-01T00:00:00Z",
        "keyward.dev/pending-action": JSON.stringify({ action: "remove", value: "2026-02-01T00:00:00Z", markedAt: "2026-02-01T00:00:01Z" }),
      }),
      syncNamed("pinned", { [EXTERNAL_ID]: "sync-annotated", [HANDLED_SYNC]: "2026-03-02T00:00:00Z" }),
      syncNamed("fresh", { "keyward.dev/create-started": "2026-01-01T00:00:00Z/x" }),
      syncNamed("leaving", { "keyward.dev/remove-secrets-requested-at": "r1" }),
    ];
    for (const m of manifests) applied.set(ref(m), m);
    // kubectl apply, so each carries kubectl's last-applied-configuration too.
    await mustKubectl(["apply", "-n", legacy.name, "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "List", items: manifests }));
    const cpc = sample("clusterproviderconfig.yaml", "ClusterProviderConfig");
    await mustKubectl(
      ["apply", "-f", "-"],
      JSON.stringify({ ...cpc, metadata: { name: cpcName, labels: { team: "platform", "shard.keyward.dev/owner": "keyward-0" } } }),
    );

    // Status as an older keyward wrote it: the ids and handled values there only.
    const ns = legacy.name;
    await patch(ns, "projects.v1alpha1.keyward.dev/payments", { status: { projectId: "project-from-status" } }, "status");
    await patch(ns, "projectmemberships.v1alpha1.keyward.dev/payments-bob", { status: { membershipId: "membership-1" } }, "status");
    await patch(ns, "accesstokens.v1alpha1.keyward.dev/ci-pipeline", { status: { tokenId: "token-1" } }, "status");
    await patch(ns, "certificateprofiles.v1alpha1.keyward.dev/web-servers", { status: { profileId: "profile-1" } }, "status");
    const oldStatus = {
      syncId: "sync-old",
      lastHandledSyncRequest: "2026-03-01T00:00:00Z",
      lastHandledRemoveSecretsRequest: "2026-02-01T00:00:00Z",
    };
    await patch(ns, "secretsyncs.v1alpha1.keyward.dev/old", { status: oldStatus }, "status");
    await patch(
      ns,
      "secretsyncs.v1alpha1.keyward.dev/pinned",
      { status: { syncId: "sync-from-status", lastHandledSyncRequest: "2026-01-01T00:00:00Z" } },
      "status",
    );
    await patch(ns, "secretsyncs.v1alpha1.keyward.dev/leaving", { status: { syncId: "sync-leaving" } }, "status");
    // Being deleted: its finalizer holds it.
    await mustKubectl(["delete", "secretsyncs.keyward.dev/leaving", "-n", ns, "--wait=false"]);
  });

  it("-n: every namespaced kind in the registry's order, the ids pinned, keyward's record and the cluster's own fields gone", async () => {
    const r = await plugin(["export", "-n", legacy.name]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^# keyward resources exported by `kubectl keyward export`/);
    expect(r.stdout).toContain(
      `# to a cluster rebuilt from it. ${EXTERNAL_ID} pins each object to its object at the service\n# (Project, SecretSync)`,
    );
    const docs = loadAll(r.stdout) as Manifest[];
    const served = new Map(
      (
        JSON.parse(
          await mustKubectl([
            "get",
            PLURALS.map((p) => p.replace(".keyward.dev", ".v1beta1.keyward.dev")).join(","),
            "-n",
            legacy.name,
            "-o",
            "json",
          ]),
        ) as {
          items: Manifest[];
        }
      ).items.map((o) => [ref(o), o]),
    );
    expect(docs.map(ref)).toEqual([
      "ProviderConfig/default",
      "Project/payments",
      "ProjectMembership/payments-bob",
      "AccessToken/ci-pipeline",
      "CertificateProfile/web-servers",
      "SecretSync/fresh",
      "SecretSync/leaving",
      "SecretSync/old",
      "SecretSync/pinned",
    ]);
    for (const d of docs) {
      expect(Object.keys(d), ref(d)).toEqual(["apiVersion", "kind", "metadata", "spec"]);
      expect(d.apiVersion).toBe(API_VERSION);
      // What was applied, with the defaults the apiserver wrote in: the object as served.
      expect(d.spec, ref(d)).toMatchObject(applied.get(ref(d))?.spec ?? {});
      expect(d.spec, ref(d)).toEqual(served.get(ref(d))?.spec);
      expect(
        Object.keys(d.metadata).filter((k) => !["name", "namespace", "labels", "annotations"].includes(k)),
        ref(d),
      ).toEqual([]);
      expect(d.metadata.namespace).toBe(legacy.name);
      expect(d.metadata.labels, ref(d)).toEqual({ team: "payments" });
      for (const dropped of [
        "kubectl.kubernetes.io/last-applied-configuration",
        "keyward.dev/create-started",
        "keyward.dev/create-pending",
        "keyward.dev/create-succeeded",
        "keyward.dev/pending-action",
        HANDLED_SYNC,
        HANDLED_REMOVE,
      ]) {
        expect(d.metadata.annotations?.[dropped], `${ref(d)} ${dropped}`).toBeUndefined();
      }
    }
    // A kind whose id the service assigns gets it as keyward.dev/external-id, from status when the
    // annotation is missing; status wins over an annotation, as in keyward. The handled values,
    // keyward's record, are not Git's: neither from status nor from an annotation.
    expect(byRef(docs, "Project", "payments").metadata.annotations).toEqual({ ...tricky, [EXTERNAL_ID]: "project-from-status" });
    expect(byRef(docs, "SecretSync", "old").metadata.annotations).toEqual({
      [SYNC_REQUESTED]: "2026-03-01T00:00:00Z",
      [EXTERNAL_ID]: "sync-old",
    });
    expect(byRef(docs, "SecretSync", "pinned").metadata.annotations).toEqual({ [EXTERNAL_ID]: "sync-from-status" });
    expect(byRef(docs, "SecretSync", "leaving").metadata.annotations).toEqual({
      [EXTERNAL_ID]: "sync-leaving",
      "keyward.dev/remove-secrets-requested-at": "r1",
    });
    // Kinds the service finds by name get no pin; nothing to pin on an object without an id.
    for (const [kind, name] of [
      ["ProviderConfig", "default"],
      ["ProjectMembership", "payments-bob"],
      ["AccessToken", "ci-pipeline"],
      ["CertificateProfile", "web-servers"],
      ["SecretSync", "fresh"],
    ] as const) {
      expect(byRef(docs, kind, name).metadata.annotations, `${kind}/${name}`).toBeUndefined();
    }
    expect(r.stderr).toContain(`warning: SecretSync ${legacy.name}/leaving is being deleted; exported as it is`);
    expect(r.stderr).toContain(
      `warning: SecretSync ${legacy.name}/old has an action call in flight, left out: export it again once the action is handled`,
    );
    // A request value the service's record cannot answer for where the export is applied.
    expect(r.stderr).toContain(
      `warning: SecretSync ${legacy.name}/leaving: keyward.dev/remove-secrets-requested-at="r1" is not a time, so where this is applied the service's record cannot tell it was done: it runs once more`,
    );
    expect(r.stderr).not.toContain(`${legacy.name}/old: keyward.dev/sync-requested-at`);
    expect(r.stderr).toContain(
      `warning: SecretSync ${legacy.name}/fresh has no id at the service yet, but a create was started: export it again once it is Ready`,
    );
    expect(r.stderr).toContain(
      `warning: SecretSync ${legacy.name}/pinned: ${EXTERNAL_ID} sync-annotated differs from status.syncID sync-from-status; status is exported`,
    );
    expect(r.stdout).not.toContain(cpcName);
  });

  it("prints YAML kubectl reads back as the very objects (Go's YAML reader)", async () => {
    const r = await plugin(["export", "-n", legacy.name, "project"]);
    expect(r.code, r.stderr).toBe(0);
    const read = JSON.parse(await mustKubectl(["create", "--dry-run=client", "-o", "json", "-f", "-"], r.stdout)) as Manifest;
    const [doc] = loadAll(r.stdout) as Manifest[];
    expect(read).toEqual(doc);
    expect(read.metadata.annotations).toEqual({ ...tricky, [EXTERNAL_ID]: "project-from-status" });
  });

  it("-o json prints the same manifests as a v1 List; --dir writes one file per object", async () => {
    const yaml = loadAll((await plugin(["export", "-n", legacy.name])).stdout) as Manifest[];
    const json = await plugin(["export", "-n", legacy.name, "-o", "json"]);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ apiVersion: "v1", kind: "List", items: yaml });

    const dir = mkdtempSync(join(tmpdir(), "keyward-export-"));
    try {
      const written = await plugin(["export", "-n", legacy.name, "--dir", dir]);
      expect(written.code, written.stderr).toBe(0);
      const files = yaml.map((d) => join(dir, legacy.name, `${d.kind.toLowerCase()}-${d.metadata.name}.yaml`));
      expect(written.stdout.trimEnd().split("\n")).toEqual(files);
      expect(readdirSync(join(dir, legacy.name)).length).toBe(yaml.length);
      for (const [i, file] of files.entries()) {
        const text = readFileSync(file, "utf8");
        expect(text).toMatch(/^# Exported by `kubectl keyward export`/);
        expect(loadAll(text)).toEqual([yaml[i]]);
      }
      const asJson = await plugin(["export", "-n", legacy.name, "secretsync", "-o", "json", "--dir", dir]);
      expect(asJson.code, asJson.stderr).toBe(0);
      const old = JSON.parse(readFileSync(join(dir, legacy.name, "secretsync-old.json"), "utf8")) as Manifest;
      expect(old).toEqual(byRef(yaml, "SecretSync", "old"));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("KIND arguments pick kinds by kind, plural or short name; -A adds the cluster-scoped ones", async () => {
    const picked = await plugin(["export", "-n", legacy.name, "kwmember,Project", "secretsyncs.keyward.dev"]);
    expect(picked.code, picked.stderr).toBe(0);
    expect((loadAll(picked.stdout) as Manifest[]).map(ref)).toEqual([
      "Project/payments",
      "ProjectMembership/payments-bob",
      "SecretSync/fresh",
      "SecretSync/leaving",
      "SecretSync/old",
      "SecretSync/pinned",
    ]);

    const cluster = await plugin(["export", "-A", "ClusterProviderConfig"]);
    expect(cluster.code, cluster.stderr).toBe(0);
    const cpc = byRef(loadAll(cluster.stdout) as Manifest[], "ClusterProviderConfig", cpcName);
    expect(cpc.metadata).toEqual({ name: cpcName, labels: { team: "platform" } });
    expect(cpc.spec).toEqual(sample("clusterproviderconfig.yaml", "ClusterProviderConfig").spec);
  });

  it("says when there is nothing to export; -o json then prints an empty List", async () => {
    const none = await plugin(["export", "-n", empty.name]);
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toBe("");
    expect(none.stderr).toContain(`No keyward resources found in namespace "${empty.name}".`);
    const json = await plugin(["export", "-n", empty.name, "-o", "json"]);
    expect(JSON.parse(json.stdout)).toEqual({ apiVersion: "v1", kind: "List", items: [] });
  });

  it("exports nothing when a type cannot be listed, exit 1", async () => {
    // A kubectl that is refused the SecretSyncs (read by their stored version), as RBAC would.
    const refusing = join(installed.binDir, "kubectl-refusing");
    writeFileSync(
      refusing,
      `#!/bin/sh\ncase "$*" in *secretsyncs.*keyward.dev*) echo 'Error from server (Forbidden): secretsyncs.keyward.dev is forbidden' >&2; exit 1;; esac\nexec ${testKubectlPath()} "$@"\n`,
    );
    chmodSync(refusing, 0o755);
    const r = await plugin(["export", "-n", legacy.name], { KUBECTL: refusing });
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("error: could not list secretsyncs.keyward.dev: Error from server (Forbidden)");
    expect(r.stderr).toContain("error: nothing exported");
    const others = await plugin(["export", "-n", legacy.name, "projects"], { KUBECTL: refusing });
    expect(others.code, others.stderr).toBe(0);
  });

  it("exits 2 on usage errors", async () => {
    for (const args of [
      ["export", "-n", "a", "-A"],
      ["export", "no-such-kind"],
      ["export", "-o", "table"],
      ["export", "--wait"],
      ["export", "--dir", ""],
      ["status", "-o", "json"],
      ["sync", "x", "--dir", "/tmp/x"],
      ["status", "--observe-only"],
    ]) {
      const r = await plugin(args);
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(/^error: .+\nSee 'kubectl keyward --help'\.\n$/);
    }
    const help = await plugin(["--help"]);
    expect(help.stdout).toContain("kubectl keyward export [KIND...] [-n NAMESPACE | -A] [-o yaml|json] [--dir DIR] [--observe-only]");
  });
});

describe("kubectl keyward export, for a rebuild", () => {
  const samples = [
    { file: "project.yaml", kind: "Project", plural: "projects", id: "projectId" },
    { file: "projectmembership-user.yaml", kind: "ProjectMembership", plural: "projectmemberships", id: "membershipId" },
    { file: "accesstoken.yaml", kind: "AccessToken", plural: "accesstokens", id: undefined },
    { file: "certificateprofile.yaml", kind: "CertificateProfile", plural: "certificateprofiles", id: "profileId" },
    { file: "secretsync-app-platform.yaml", kind: "SecretSync", plural: "secretsyncs", id: "syncId" },
  ] as const;
  const SYNC = "payments-app-platform";
  const REMOVE_REQUESTED = "keyward.dev/remove-secrets-requested-at";
  let a: string;
  let exported: string;
  let exportedObserveOnly: string;
  /** The SecretSync's action annotations as Git holds them after a later commit: the values handled after the export. */
  let later: Record<string, string>;
  let stopRebuilt: (() => Promise<void>) | undefined;
  /** A's objects as they were when exported, by kind. */
  const inA = new Map<string, KubeObject>();

  const readyAll = (ns: string): Promise<KubeObject[]> =>
    Promise.all(
      samples.map(({ file, kind, plural }) =>
        waitForObject(kc, ns, plural, sample(file, kind).metadata.name, {
          until: isReady,
          timeoutMs: 90_000,
          description: `${kind} ${ns}/${sample(file, kind).metadata.name} Ready`,
        }),
      ),
    );

  beforeAll(async () => {
    a = env.ns.name;
    const keyward = await startKeyward(kc, { namespaces: [a], resyncIntervalMs: 2_000 });
    let stopped = false;
    env.onStop(async () => {
      if (!stopped) await keyward.stop();
    });
    for (const { file } of samples) await mustKubectl(["apply", "-n", a, "-f", new URL(file, samplesDir).pathname]);
    await readyAll(a);
    for (const action of ["sync", "remove-secrets"]) {
      const r = await plugin([action, SYNC, "--wait", "-n", a]);
      if (r.code !== 0) throw new Error(`kubectl keyward ${action}: exit ${r.code}: ${r.stderr}`);
    }
    const r = await plugin(["export", "-n", a]);
    if (r.code !== 0) throw new Error(`kubectl keyward export: exit ${r.code}: ${r.stderr}`);
    exported = r.stdout;
    // As docs/backups.md says to run it: every namespace (A's objects are taken below).
    const drill = await plugin(["export", "-A", "--observe-only"]);
    if (drill.code !== 0) throw new Error(`kubectl keyward export --observe-only: exit ${drill.code}: ${drill.stderr}`);
    exportedObserveOnly = drill.stdout;
    for (const { file, kind, plural } of samples) {
      const obj = await getCustom(kc, a, plural, sample(file, kind).metadata.name);
      if (obj) inA.set(kind, obj);
    }
    // Requested after the export, as a later commit to Git that Argo CD applies: handled in A.
    for (const action of ["sync", "remove-secrets"]) {
      const again = await plugin([action, SYNC, "--wait", "-n", a]);
      if (again.code !== 0) throw new Error(`kubectl keyward ${action}: exit ${again.code}: ${again.stderr}`);
    }
    const handledInA = await getCustom(kc, a, "secretsyncs", SYNC);
    const annotations = handledInA?.metadata.annotations ?? {};
    later = { [SYNC_REQUESTED]: annotations[SYNC_REQUESTED] ?? "", [REMOVE_REQUESTED]: annotations[REMOVE_REQUESTED] ?? "" };
    if (later[SYNC_REQUESTED] === inA.get("SecretSync")?.metadata.annotations?.[SYNC_REQUESTED]) throw new Error("no later sync request");
    if (handledInA?.status?.["lastHandledSyncRequest"] !== later[SYNC_REQUESTED]) throw new Error("the later sync was not handled in A");

    // The cluster is lost: its keyward gone, and its objects with it (finalizers taken off first,
    // so nothing reaches the service).
    await keyward.stop();
    stopped = true;
    await releaseAll(a);
    await mustKubectl(["delete", PLURALS.join(","), "--all", "-n", a, "--wait=true"]);
  });

  it("exports the ids and the requests as the user set them, not keyward's record of what it handled", () => {
    const docs = loadAll(exported) as Manifest[];
    const obj = inA.get("SecretSync");
    const s = obj?.status ?? {};
    // keyward's record was there to leave out: on the object, in metadata and status.
    expect(obj?.metadata.annotations?.[HANDLED_SYNC]).toBe(obj?.metadata.annotations?.[SYNC_REQUESTED]);
    expect(s["lastHandledRemoveSecretsRequest"]).toEqual(expect.any(String));
    expect(byRef(docs, "SecretSync", SYNC).metadata.annotations).toEqual({
      [EXTERNAL_ID]: s["syncId"],
      [SYNC_REQUESTED]: s["lastHandledSyncRequest"],
      [REMOVE_REQUESTED]: s["lastHandledRemoveSecretsRequest"],
    });
    expect(docs.flatMap((d) => Object.keys(d.metadata.annotations ?? {})).filter((k) => k.startsWith("handled.keyward.dev/"))).toEqual([]);
    expect(byRef(docs, "Project", "payments").metadata.annotations?.[EXTERNAL_ID]).toBe(inA.get("Project")?.status?.["projectId"]);
  });

  it("applied to a new namespace with its own keyward, creates nothing at the service and runs no handled request again", async () => {
    const b = await createTestNamespace("export-rebuild");
    env.onStop(async () => {
      await releaseAll(b.name);
      await b.cleanup();
    });
    // What the rebuilt cluster has besides Git: the credentials Secret (sealed, or from a vault).
    await kc.makeApiClient(CoreV1Api).createNamespacedSecret({
      namespace: b.name,
      body: { metadata: { name: "default-token", labels: credentialsLabels }, stringData: { token: TOKEN } },
    });
    const keyward = await startKeyward(kc, { namespaces: [b.name], resyncIntervalMs: 2_000 });
    let stopped = false;
    stopRebuilt = async () => {
      if (stopped) return;
      stopped = true;
      await keyward.stop();
    };
    env.onStop(stopRebuilt);
    const mark = Math.max(0, ...emulator.requests().map((r) => r.seq));

    // Git: the export, and the later commit's request values; in namespace B.
    const docs = (loadAll(exported) as Manifest[]).map((d) => {
      const metadata = { ...d.metadata, namespace: b.name };
      if (ref(d) === `SecretSync/${SYNC}`) metadata.annotations = { ...metadata.annotations, ...later };
      return { ...d, metadata };
    });
    await mustKubectl(["apply", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "List", items: docs }));

    /** The calls since the apply that a rebuild must not make. */
    const calls = (): string[] =>
      emulator
        .requests()
        .filter((r) => r.seq > mark)
        .filter((r) => ["createProject", "createSecretSync", "triggerSecretSync", "removeSecretSyncSecrets"].includes(r.operation))
        .map((r) => `${r.method} ${r.path} → ${r.status} (${r.operation})`);
    await readyAll(b.name).catch((err: unknown) => {
      throw new Error(`${err instanceof Error ? err.message : String(err)}; creates and triggers since the apply: ${calls().join("; ")}`);
    });
    // Two resync intervals more: a late create or trigger would show.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    const ready = await readyAll(b.name);
    expect(calls()).toEqual([]);

    for (const [i, { kind, id }] of samples.entries()) {
      const obj = ready[i];
      expect(isReady(obj), kind).toBe(true);
      if (id !== undefined) expect(obj?.status?.[id], `${kind} ${id}`).toBe(inA.get(kind)?.status?.[id]);
    }
    // The later values are known as done, from the service's record: keyward's ledger starts there.
    const rebuilt = ready[samples.findIndex((x) => x.kind === "SecretSync")];
    expect(rebuilt?.status?.["lastHandledSyncRequest"]).toBe(later[SYNC_REQUESTED]);
    expect(rebuilt?.status?.["lastHandledRemoveSecretsRequest"]).toBe(later[REMOVE_REQUESTED]);
    await stopRebuilt();
  }, 240_000);

  it("--observe-only: a drill in another namespace reads the service, writes nothing, and deleting it deletes nothing", async () => {
    const c = await createTestNamespace("export-drill");
    env.onStop(async () => {
      await releaseAll(c.name);
      await c.cleanup();
    });
    await kc.makeApiClient(CoreV1Api).createNamespacedSecret({
      namespace: c.name,
      body: { metadata: { name: "default-token", labels: credentialsLabels }, stringData: { token: TOKEN } },
    });
    const keyward = await startKeyward(kc, { namespaces: [c.name], resyncIntervalMs: 2_000 });
    env.onStop(() => keyward.stop());
    const mark = Math.max(0, ...emulator.requests().map((r) => r.seq));
    const docs = (loadAll(exportedObserveOnly) as Manifest[])
      .filter((d) => d.metadata.namespace === a)
      .map((d) => ({ ...d, metadata: { ...d.metadata, namespace: c.name } }));
    expect(docs.map(ref)).toEqual(expect.arrayContaining(["Project/payments", `SecretSync/${SYNC}`]));
    for (const d of docs) {
      if (d.kind !== "ProviderConfig" && d.kind !== "CertificateProfile") {
        expect((d.spec as Record<string, unknown>)["managementPolicy"], ref(d)).toBe("ObserveOnly");
      }
    }
    await mustKubectl(["apply", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "List", items: docs }));
    const writes = (): string[] =>
      emulator
        .requests()
        .filter((r) => r.seq > mark && !["GET", "HEAD"].includes(r.method) && r.operation !== "getMembershipDetails")
        .map((r) => `${r.method} ${r.path} → ${r.status} (${r.operation})`);

    // The drill sees production's objects: the Project and the SecretSync found by their ids.
    for (const [plural, name, id] of [
      ["projects", "payments", "projectId"],
      ["secretsyncs", SYNC, "syncId"],
    ] as const) {
      const obj = await waitForObject(kc, c.name, plural, name, {
        until: isReady,
        timeoutMs: 90_000,
        description: `${plural} ${c.name}/${name} Ready`,
      });
      expect(obj.status?.[id]).toBe(inA.get(plural === "projects" ? "Project" : "SecretSync")?.status?.[id]);
      expect(obj.metadata.finalizers ?? [], `${plural}/${name}`).toEqual([]);
    }
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    expect(writes()).toEqual([]);

    // The drill ends: its namespace's resources go, production's objects stay.
    await mustKubectl(["delete", PLURALS.join(","), "--all", "-n", c.name, "--wait=true", "--timeout=60s"]);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(writes()).toEqual([]);
  }, 240_000);
});
