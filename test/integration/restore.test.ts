// A cluster restored from a backup, the way Velero restores one: keyward's objects come back with
// their name, namespace, labels, annotations, finalizers and spec, and without status or UID. The
// service kept everything. keyward must find each external object again (no create, no
// AlreadyExists), never run a handled action again, run a new one exactly once, and still clean
// up at the service when a restored resource is deleted.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { GROUP, VERSION, type KubeObject } from "../../src/engine/types.ts";
import { ANNOTATION_EXTERNAL_ID } from "../../src/engine/holder.ts";
import type { Emulator } from "../emulator/server.ts";
import { loadDefaultSeed, seedIds, connectionIds } from "../emulator/default-seed.ts";
import { waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import {
  condition,
  createCustom,
  deleteCustom,
  getCustom,
  isReady,
  mergePatchCustom,
  startKeyward,
  startTestEnv,
  waitForObject,
  type RunningKeyward,
  type TestEnv,
} from "./support/keyward.ts";

const TOKEN = "kw-restore-token-5c1e0a";
const api = `${GROUP}/${VERSION}`;

let env: TestEnv;
let kc: KubeConfig;
let emulator: Emulator;
let ns: TestNamespace;
let keyward: RunningKeyward | undefined;

const plurals: Record<string, string> = {
  Project: "projects",
  ProjectMembership: "projectmemberships",
  SecretSync: "secretsyncs",
  AccessToken: "accesstokens",
  CertificateProfile: "certificateprofiles",
};

const manifests = (): Array<{ kind: string; name: string; body: object }> => [
  {
    kind: "Project",
    name: "payments",
    body: { spec: { slug: "payments-team", description: "restored", deletionPolicy: "Delete" } },
  },
  {
    kind: "ProjectMembership",
    name: "payments-bob",
    body: { spec: { projectRef: { name: "payments" }, username: seedIds.bob, roles: [{ role: "member" }] } },
  },
  ...["orders", "billing"].map((name) => ({
    kind: "SecretSync",
    name,
    body: {
      metadata: { annotations: { "keyward.dev/sync-requested-at": `${name}-s1`, "keyward.dev/remove-secrets-requested-at": `${name}-r1` } },
      spec: {
        projectRef: { name: "payments" },
        destination: "data-platform",
        connectionId: connectionIds["data-platform"],
        environment: "prod",
        secretPath: "/",
        destinationConfig: { scope: "workspace" },
        deletionPolicy: "Delete",
      },
    },
  })),
  { kind: "AccessToken", name: "ci", body: { spec: { identityId: seedIds.identity, secretName: "ci-token" } } },
  { kind: "CertificateProfile", name: "web-servers", body: { spec: { projectId: seedIds.pkiProject, slug: "web-servers" } } },
];

function syncManifest(name: string, annotations: Record<string, string>): object {
  return {
    apiVersion: api,
    kind: "SecretSync",
    metadata: { name, annotations },
    spec: {
      projectRef: { name: "owner" },
      destination: "data-platform",
      connectionId: connectionIds["data-platform"],
      environment: "prod",
      secretPath: "/",
      destinationConfig: { scope: "workspace" },
      deletionPolicy: name === "loose-sync" ? "Retain" : "RemoveSecrets",
    },
  };
}

const calls = (operation: string, since = 0): number =>
  emulator
    .requests()
    .slice(since)
    .filter((r) => r.operation === operation).length;

async function waitReady(kind: string, name: string, extra: (o: KubeObject) => boolean = () => true): Promise<KubeObject> {
  return waitForObject(kc, ns.name, plurals[kind] ?? "", name, {
    until: (o) => isReady(o) && extra(o),
    timeoutMs: 90_000,
    description: `${kind} ${name} Ready`,
  });
}

const status = (o: KubeObject | undefined): Record<string, unknown> => o?.status ?? {};
const handled = (o: KubeObject): boolean =>
  status(o)["lastHandledSyncRequest"] === o.metadata.annotations?.["keyward.dev/sync-requested-at"] &&
  status(o)["lastHandledRemoveSecretsRequest"] === o.metadata.annotations?.["keyward.dev/remove-secrets-requested-at"];

/** What Velero keeps of an object: no status, UID, resourceVersion, creation time or managedFields. */
function backupOf(o: { apiVersion?: string; kind?: string; metadata: KubeObject["metadata"]; spec?: unknown }): KubeObject {
  const { name, namespace, labels, annotations, finalizers } = o.metadata;
  return {
    apiVersion: o.apiVersion ?? api,
    kind: o.kind ?? "",
    metadata: { name, namespace, labels, annotations, finalizers },
    spec: o.spec,
  } as KubeObject;
}

/** The cluster is lost: keyward's objects go without their finalizers running (keyward is stopped). */
async function loseObjects(kind: string, names: readonly string[]): Promise<void> {
  const plural = plurals[kind] ?? "";
  for (const name of names) {
    await mergePatchCustom(kc, ns.name, plural, name, { metadata: { finalizers: null } });
    await deleteCustom(kc, ns.name, plural, name);
  }
  await waitFor(
    async () => ((await Promise.all(names.map((n) => getCustom(kc, ns.name, plural, n)))).every((o) => !o) ? true : undefined),
    {
      timeoutMs: 30_000,
      description: `${kind} gone`,
    },
  );
}

beforeAll(async () => {
  env = await startTestEnv({ prefix: "restore", token: TOKEN, emulator: { seed: loadDefaultSeed(), jobDelayMs: 100 }, keyward: false });
  ({ kc, emulator, ns } = env);
  keyward = await startKeyward(kc, { namespaces: [ns.name] });
  env.onStop(async () => keyward?.stop());
});

afterAll(() => env.stop());

describe("restore from a backup", () => {
  it("adopts every restored object, runs no handled action again, and still cleans up on delete", async () => {
    for (const m of manifests()) {
      const { metadata = {}, spec } = m.body as { metadata?: object; spec: object };
      await createCustom(kc, ns.name, plurals[m.kind] ?? "", {
        apiVersion: api,
        kind: m.kind,
        metadata: { name: m.name, ...metadata },
        spec,
      });
    }
    const before: Record<string, KubeObject> = {};
    for (const m of manifests())
      before[`${m.kind}/${m.name}`] = await waitReady(m.kind, m.name, m.kind === "SecretSync" ? handled : () => true);
    // What names each external object and the handled values are in metadata, where the backup
    // finds them: a Project keyward created, by its slug and its create-started mark (no id written
    // there: holder.ts); a sync, by its id.
    const project = before["Project/payments"];
    expect(project?.metadata.annotations?.[ANNOTATION_EXTERNAL_ID]).toBeUndefined();
    expect(project?.metadata.annotations?.["keyward.dev/create-started"]).toContain(project?.metadata.uid ?? "?");
    const orders = before["SecretSync/orders"];
    expect(orders?.metadata.annotations?.[ANNOTATION_EXTERNAL_ID]).toBe(status(orders)["syncId"]);
    expect(orders?.metadata.annotations?.["handled.keyward.dev/sync-requested-at"]).toBe("orders-s1");
    expect(orders?.metadata.annotations?.["handled.keyward.dev/remove-secrets-requested-at"]).toBe("orders-r1");
    expect(calls("triggerSecretSync")).toBe(2);
    expect(calls("removeSecretSyncSecrets")).toBe(2);

    // keyward stops; a sync is requested that no keyward has handled when the backup is taken.
    await keyward?.stop();
    keyward = undefined;
    await mergePatchCustom(kc, ns.name, "secretsyncs", "billing", {
      metadata: { annotations: { "keyward.dev/sync-requested-at": "billing-s2" } },
    });
    // The backup, then the loss: every object and the token Secret gone.
    const core = kc.makeApiClient(CoreV1Api);
    const tokenSecret = await core.readNamespacedSecret({ namespace: ns.name, name: "ci-token" });
    const backups: KubeObject[] = [];
    for (const m of manifests()) {
      const o = await getCustom(kc, ns.name, plurals[m.kind] ?? "", m.name);
      if (o) backups.push(backupOf(o));
    }
    for (const m of manifests()) await loseObjects(m.kind, [m.name]);
    // The garbage collector may have deleted the Secret already, with its owner.
    await core.deleteNamespacedSecret({ namespace: ns.name, name: "ci-token" }).catch((err: unknown) => {
      if ((err as { code?: number }).code !== 404) throw err;
    });
    await waitFor(
      () =>
        core.readNamespacedSecret({ namespace: ns.name, name: "ci-token" }).then(
          () => undefined,
          () => true,
        ),
      { timeoutMs: 30_000, description: "the token Secret gone" },
    );

    // The restore, as Velero makes it: the Secret with its labels and annotations but no
    // ownerReferences (Velero drops them), the objects without status.
    expect(tokenSecret.metadata?.ownerReferences?.length).toBe(1);
    await core.createNamespacedSecret({
      namespace: ns.name,
      body: {
        metadata: {
          name: "ci-token",
          labels: tokenSecret.metadata?.labels ?? {},
          annotations: tokenSecret.metadata?.annotations ?? {},
        },
        type: tokenSecret.type ?? "Opaque",
        data: tokenSecret.data ?? {},
      },
    });
    for (const b of backups) await createCustom(kc, ns.name, plurals[b.kind ?? ""] ?? "", b);
    const mark = emulator.requests().length;
    keyward = await startKeyward(kc, { namespaces: [ns.name] });

    for (const m of manifests()) {
      const after = await waitReady(m.kind, m.name, m.kind === "SecretSync" ? handled : () => true);
      const id = (o: KubeObject | undefined): unknown => status(o)["projectId"] ?? status(o)["syncId"] ?? status(o)["profileId"];
      if (m.kind !== "AccessToken" && m.kind !== "ProjectMembership")
        expect(id(after), `${m.kind}/${m.name}`).toBe(id(before[`${m.kind}/${m.name}`]));
    }
    expect(calls("createProject", mark)).toBe(0);
    expect(calls("createSecretSync", mark)).toBe(0);
    // The request pending at the backup runs once; the handled ones not again.
    expect(calls("triggerSecretSync", mark)).toBe(1);
    expect(
      emulator
        .requests()
        .slice(mark)
        .find((r) => r.operation === "triggerSecretSync")?.path,
    ).toContain(String(status(await getCustom(kc, ns.name, "secretsyncs", "billing"))["syncId"]));
    expect(calls("removeSecretSyncSecrets", mark)).toBe(0);
    // The token is issued again (its record was in status) into the restored Secret, which
    // keyward takes back though no owner is named; the old token lives out its TTL.
    expect(calls("createIdentityToken", mark)).toBe(1);
    const restoredToken = await getCustom(kc, ns.name, "accesstokens", "ci");
    const secret = await core.readNamespacedSecret({ namespace: ns.name, name: "ci-token" });
    expect(secret.metadata?.ownerReferences?.map((r) => r.uid)).toEqual([restoredToken?.metadata.uid]);
    expect(secret.data?.["token"]).not.toBe(tokenSecret.data?.["token"]);

    // A new value still runs, exactly once.
    await mergePatchCustom(kc, ns.name, "secretsyncs", "orders", {
      metadata: { annotations: { "keyward.dev/sync-requested-at": "orders-s2" } },
    });
    await waitReady("SecretSync", "orders", handled);
    expect(calls("triggerSecretSync", mark)).toBe(2);

    // Deleting the restored Project (deletionPolicy Delete) deletes it at the service, after its
    // SecretSyncs (deletionPolicy Delete) deleted theirs.
    const projectId = status(project)["projectId"];
    const deletes = calls("deleteProject");
    for (const name of ["orders", "billing"]) await deleteCustom(kc, ns.name, "secretsyncs", name);
    await deleteCustom(kc, ns.name, "projects", "payments");
    await waitFor(async () => ((await getCustom(kc, ns.name, "projects", "payments")) ? undefined : true), {
      timeoutMs: 90_000,
      description: "restored Project deleted",
    });
    expect(calls("deleteSecretSync", mark)).toBe(2);
    expect(calls("deleteProject") - deletes).toBe(1);
    expect(
      emulator
        .requests()
        .filter((r) => r.operation === "deleteProject")
        .at(-1)?.path,
    ).toContain(String(projectId));
  });
});

describe("an external id written by hand", () => {
  it("is checked against the service and never takes another resource's object", async () => {
    await createCustom(kc, ns.name, "projects", {
      apiVersion: api,
      kind: "Project",
      metadata: { name: "owner" },
      spec: { slug: "owner-project", deletionPolicy: "Retain" },
    });
    const owner = await waitReady("Project", "owner");
    const ownerId = String(status(owner)["projectId"]);
    await createCustom(kc, ns.name, "secretsyncs", syncManifest("owner-sync", {}));
    const ownerSync = await waitReady("SecretSync", "owner-sync");
    const ownerSyncId = String(status(ownerSync)["syncId"]);
    // A sync no resource manages any more (its resource was deleted with deletionPolicy Retain).
    await createCustom(kc, ns.name, "secretsyncs", syncManifest("loose-sync", {}));
    const looseSyncId = String(status(await waitReady("SecretSync", "loose-sync"))["syncId"]);
    await deleteCustom(kc, ns.name, "secretsyncs", "loose-sync");
    const mark = emulator.requests().length;

    // A project no resource manages, with another slug: refused; deleting the resource
    // (deletionPolicy Delete) leaves the project.
    await createCustom(kc, ns.name, "projects", {
      apiVersion: api,
      kind: "Project",
      metadata: { name: "forged", annotations: { [ANNOTATION_EXTERNAL_ID]: seedIds.demoProject } },
      spec: { slug: "forged-project", deletionPolicy: "Delete" },
    });
    const forged = await waitForObject(kc, ns.name, "projects", "forged", {
      until: (o) => condition(o, "Synced")?.reason === "ExternalIdMismatch",
      timeoutMs: 60_000,
      description: "forged Project ExternalIdMismatch",
    });
    expect(status(forged)["projectId"]).toBeUndefined();
    // The same slug, but another resource manages the project: claimed, nothing changes.
    await createCustom(kc, ns.name, "projects", {
      apiVersion: api,
      kind: "Project",
      metadata: { name: "copy", annotations: { [ANNOTATION_EXTERNAL_ID]: ownerId } },
      spec: { slug: "owner-project", description: "taken over", deletionPolicy: "Delete" },
    });
    const copy = await waitForObject(kc, ns.name, "projects", "copy", {
      until: (o) => condition(o, "Synced")?.reason === "ExternalIdClaimed",
      timeoutMs: 60_000,
      description: "copied Project ExternalIdClaimed",
    });
    expect(condition(copy, "Synced")?.message).toContain(`${ns.name}/owner`);
    expect(status(copy)["projectId"]).toBeUndefined();
    // A SecretSync naming a sync of another name: refused; deleting it with RemoveSecrets removes
    // nothing. One naming a sync another resource manages: claimed.
    await createCustom(kc, ns.name, "secretsyncs", syncManifest("forged-sync", { [ANNOTATION_EXTERNAL_ID]: looseSyncId }));
    await createCustom(kc, ns.name, "secretsyncs", syncManifest("copy-sync", { [ANNOTATION_EXTERNAL_ID]: ownerSyncId }));
    for (const [name, reason] of [
      ["forged-sync", "ExternalIdMismatch"],
      ["copy-sync", "ExternalIdClaimed"],
    ] as const) {
      const o = await waitForObject(kc, ns.name, "secretsyncs", name, {
        until: (x) => condition(x, "Synced")?.reason === reason,
        timeoutMs: 60_000,
        description: `SecretSync ${name} ${reason}`,
      });
      expect(status(o)["syncId"]).toBeUndefined();
    }
    for (const [plural, name] of [
      ["projects", "forged"],
      ["projects", "copy"],
      ["secretsyncs", "forged-sync"],
      ["secretsyncs", "copy-sync"],
    ] as const) {
      await deleteCustom(kc, ns.name, plural, name);
      await waitFor(async () => ((await getCustom(kc, ns.name, plural, name)) ? undefined : true), {
        timeoutMs: 60_000,
        description: `${name} released`,
      });
    }
    for (const op of [
      "updateProject",
      "deleteProject",
      "createProject",
      "updateSecretSync",
      "removeSecretSyncSecrets",
      "deleteSecretSync",
      "createSecretSync",
    ]) {
      expect(calls(op, mark), op).toBe(0);
    }
    // The owner still manages its objects.
    expect(isReady(await getCustom(kc, ns.name, "projects", "owner"))).toBe(true);
    expect(isReady(await getCustom(kc, ns.name, "secretsyncs", "owner-sync"))).toBe(true);
  });
});

describe("a restored resource deleted before its Project's first pass", () => {
  it("waits while the Project may still get its id, then still removes its secrets and revokes its member", async () => {
    keyward ??= await startKeyward(kc, { namespaces: [ns.name] });
    // The Project reaches the service through a ProviderConfig of its own, restored last.
    const laterConfig: KubeObject = {
      apiVersion: api,
      kind: "ProviderConfig",
      metadata: { name: "later", namespace: ns.name },
      spec: { baseUrl: emulator.url, credentialsSecretRef: { name: "default-token" } },
    };
    await createCustom(kc, ns.name, "providerconfigs", laterConfig);
    const sync = syncManifest("vault-sync", {}) as KubeObject;
    const bodies: KubeObject[] = [
      {
        apiVersion: api,
        kind: "Project",
        metadata: { name: "vault", namespace: ns.name },
        spec: { slug: "payments-team", deletionPolicy: "Retain", providerConfigRef: { name: "later" } },
      },
      { ...sync, metadata: { ...sync.metadata, namespace: ns.name }, spec: { ...sync.spec, projectRef: { name: "vault" } } },
      {
        apiVersion: api,
        kind: "ProjectMembership",
        metadata: { name: "vault-bob", namespace: ns.name },
        spec: { projectRef: { name: "vault" }, username: seedIds.bob, roles: [{ role: "member" }], deletionPolicy: "Revoke" },
      },
    ];
    for (const b of bodies) await createCustom(kc, ns.name, plurals[b.kind ?? ""] ?? "", b);
    const backups: KubeObject[] = [];
    for (const b of bodies) backups.push(backupOf(await waitReady(b.kind ?? "", b.metadata.name)));
    await keyward.stop();
    keyward = undefined;
    await loseObjects("SecretSync", ["vault-sync"]);
    await loseObjects("ProjectMembership", ["vault-bob"]);
    await loseObjects("Project", ["vault"]);
    await mergePatchCustom(kc, ns.name, "providerconfigs", "later", { metadata: { finalizers: null } });
    await deleteCustom(kc, ns.name, "providerconfigs", "later");

    // The restore without the Project's ProviderConfig yet, then the dependents' deletion before
    // keyward's pass over the Project can get its id.
    for (const b of backups) await createCustom(kc, ns.name, plurals[b.kind ?? ""] ?? "", b);
    await deleteCustom(kc, ns.name, "secretsyncs", "vault-sync");
    await deleteCustom(kc, ns.name, "projectmemberships", "vault-bob");
    const mark = emulator.requests().length;
    keyward = await startKeyward(kc, { namespaces: [ns.name] });
    await waitForObject(kc, ns.name, "projects", "vault", {
      until: (o) => condition(o, "Synced")?.reason === "ProviderConfigNotFound",
      timeoutMs: 60_000,
      description: "the Project waiting for its ProviderConfig",
    });
    for (const [plural, name] of [
      ["secretsyncs", "vault-sync"],
      ["projectmemberships", "vault-bob"],
    ] as const) {
      await waitForObject(kc, ns.name, plural, name, {
        until: (o) =>
          condition(o, "Synced")?.message?.includes("has no project id yet (its Synced condition: ProviderConfigNotFound)") === true,
        timeoutMs: 60_000,
        description: `${name} waiting for its Project`,
      });
    }
    expect(calls("removeSecretSyncSecrets", mark)).toBe(0);
    expect(calls("updateMembership", mark)).toBe(0);

    await createCustom(kc, ns.name, "providerconfigs", { ...laterConfig, metadata: { name: "later", namespace: ns.name } });
    for (const [plural, name] of [
      ["secretsyncs", "vault-sync"],
      ["projectmemberships", "vault-bob"],
    ] as const) {
      await waitFor(async () => ((await getCustom(kc, ns.name, plural, name)) ? undefined : true), {
        timeoutMs: 90_000,
        description: `${name} released after its cleanup`,
      });
    }
    expect(calls("removeSecretSyncSecrets", mark)).toBe(1);
    expect(calls("updateMembership", mark)).toBe(1);
    expect(calls("createProject", mark) + calls("createSecretSync", mark)).toBe(0);
  });

  it("lets the resource go without a call when its Project cannot get an id without a person (paused)", async () => {
    keyward ??= await startKeyward(kc, { namespaces: [ns.name] });
    // A sync at the service for the restored resource's id to name.
    await createCustom(kc, ns.name, "projects", {
      apiVersion: api,
      kind: "Project",
      metadata: { name: "thaw" },
      spec: { slug: "thaw-team" },
    });
    const thawSync = syncManifest("thaw-sync", {}) as KubeObject;
    await createCustom(kc, ns.name, "secretsyncs", {
      ...thawSync,
      spec: { ...thawSync.spec, projectRef: { name: "thaw" }, deletionPolicy: "Retain" },
    });
    const syncId = String(status(await waitReady("SecretSync", "thaw-sync"))["syncId"]);
    // No resource holds it any more: a restored resource's id may name it.
    await deleteCustom(kc, ns.name, "secretsyncs", "thaw-sync");
    await waitFor(async () => ((await getCustom(kc, ns.name, "secretsyncs", "thaw-sync")) ? undefined : true), {
      timeoutMs: 60_000,
      description: "thaw-sync released",
    });

    await createCustom(kc, ns.name, "projects", {
      apiVersion: api,
      kind: "Project",
      metadata: { name: "frozen", annotations: { "keyward.dev/paused": "true" } },
      spec: { slug: "frozen-team" },
    });
    await waitForObject(kc, ns.name, "projects", "frozen", {
      until: (o) => condition(o, "Synced")?.reason === "ReconcilePaused",
      timeoutMs: 60_000,
      description: "the Project paused",
    });
    // Restored with its finalizer and an id, and deleted while its Project is paused.
    const sync = syncManifest("frozen-sync", { [ANNOTATION_EXTERNAL_ID]: syncId }) as KubeObject;
    await createCustom(kc, ns.name, "secretsyncs", {
      ...sync,
      metadata: { ...sync.metadata, finalizers: ["keyward.dev/finalizer"] },
      spec: { ...sync.spec, projectRef: { name: "frozen" } },
    });
    const mark = emulator.requests().length;
    await deleteCustom(kc, ns.name, "secretsyncs", "frozen-sync");
    await waitFor(async () => ((await getCustom(kc, ns.name, "secretsyncs", "frozen-sync")) ? undefined : true), {
      timeoutMs: 60_000,
      description: "frozen-sync released",
    });
    expect(calls("removeSecretSyncSecrets", mark)).toBe(0);
    expect(calls("deleteSecretSync", mark)).toBe(0);
    expect(calls("getSecretSync", mark)).toBeGreaterThan(0);
    for (const name of ["thaw", "frozen"]) await deleteCustom(kc, ns.name, "projects", name);
  });
});
