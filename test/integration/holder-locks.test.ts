// The claim rule's locks (src/engine/holder.ts) live no longer than the resources holding them.
// A lock is a Lease in keyward's namespace, taken by a resource that adopts an external object (a
// Project found by its slug, a ProjectMembership's member). Before, it went only with keyward's
// finalizer, so every ProjectMembership and adopted Project with deletionPolicy Retain (no
// finalizer) left its Lease behind for good, and so did a resource deleted while keyward was
// away. Here, on the real apiserver: the delete event releases a Retain holder's lock, the start
// sweep deletes the lock of a holder deleted while keyward was stopped, and a live holder's lock,
// or one naming a namespace keyward does not serve, stays.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CoordinationV1Api, type KubeConfig, type V1Lease } from "@kubernetes/client-node";
import { GROUP, VERSION } from "../../src/engine/types.ts";
import { HOLDER_UID_LABEL, HOLDS_LABEL } from "../../src/engine/holder.ts";
import { createTestNamespace, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import {
  condition,
  createCustom,
  deleteCustom,
  getCustom,
  memberRoles,
  startKeyward,
  startTestEnv,
  waitForObject,
  type RunningKeyward,
  type TestEnv,
} from "./support/keyward.ts";

const TOKEN = "kw-holder-locks-token-5c2e91";
const PROJECT_ID = "d2000000-0000-4000-8000-000000000001";
const MEMBERS = ["ana@example.com", "ben@example.com", "cy@example.com"];

let env: TestEnv | undefined;
let leases: TestNamespace | undefined;
let keyward: RunningKeyward | undefined;
let kc: KubeConfig;

const start = async (): Promise<RunningKeyward> =>
  startKeyward(kc, { namespaces: [(env as TestEnv).ns.name], holderNamespace: (leases as TestNamespace).name, resyncIntervalMs: 2_000 });

beforeAll(async () => {
  env = await startTestEnv({
    prefix: "holder-locks",
    token: TOKEN,
    keyward: false,
    emulator: {
      seed: {
        users: MEMBERS.map((username) => ({ username })),
        projects: [
          { id: PROJECT_ID, name: "Locks", slug: "locks-project" },
          { id: "d2000000-0000-4000-8000-000000000002", name: "Found", slug: "found-project" },
        ],
        memberships: MEMBERS.map((username) => ({ projectId: PROJECT_ID, username, roles: [{ role: "viewer" }] })),
      },
    },
  });
  kc = env.kc;
  leases = await createTestNamespace("holder-locks-leases");
  keyward = await start();
});

afterAll(async () => {
  await keyward?.stop();
  await leases?.cleanup();
  await env?.stop();
});

async function locks(): Promise<V1Lease[]> {
  const api = kc.makeApiClient(CoordinationV1Api);
  return (await api.listNamespacedLease({ namespace: (leases as TestNamespace).name, labelSelector: HOLDS_LABEL })).items;
}

const naming = (uid: string | undefined) => async (): Promise<V1Lease[]> =>
  (await locks()).filter((l) => l.spec?.holderIdentity?.endsWith(`/${String(uid)}`));

const membership = (name: string, username: string): object => ({
  apiVersion: `${GROUP}/${VERSION}`,
  kind: "ProjectMembership",
  metadata: { name },
  spec: { projectId: PROJECT_ID, username, roles: [{ role: "member" }], deletionPolicy: "Retain" },
});

/** Creates `body`, waits until it is Ready and holds a lock; returns its UID. */
async function readyHolder(plural: string, name: string, body: object): Promise<string> {
  const ns = (env as TestEnv).ns.name;
  const uid = (await createCustom(kc, ns, plural, body)).metadata.uid as string;
  await waitForObject(kc, ns, plural, name, {
    until: (o) => condition(o, "Ready")?.status === "True",
    timeoutMs: 60_000,
    description: `${name} Ready`,
  });
  // The lock is taken before the pass records the member or project: it is there once Ready.
  expect(await naming(uid)()).toHaveLength(1);
  expect((await getCustom(kc, ns, plural, name))?.metadata.finalizers ?? []).toEqual([]);
  return uid;
}

async function lockGone(uid: string, what: string): Promise<void> {
  await waitFor(async () => ((await naming(uid)()).length === 0 ? true : undefined), {
    timeoutMs: 30_000,
    description: `${what}'s lock deleted`,
  });
}

describe("a lock goes with its holder", () => {
  it("a ProjectMembership with deletionPolicy Retain: on its delete event, and the member keeps its roles", async () => {
    const uid = await readyHolder("projectmemberships", "ana", membership("ana", MEMBERS[0] as string));
    await deleteCustom(kc, (env as TestEnv).ns.name, "projectmemberships", "ana");
    await lockGone(uid, "ana");
    expect(await memberRoles((env as TestEnv).emulator, TOKEN, PROJECT_ID, MEMBERS[0] as string)).toEqual(["member"]);
  });

  it("an adopted Project with deletionPolicy Retain: on its delete event, and the project stays", async () => {
    const body = {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: "Project",
      metadata: { name: "found" },
      spec: { slug: "found-project", creationPolicy: "Adopt", deletionPolicy: "Retain" },
    };
    const uid = await readyHolder("projects", "found", body);
    await deleteCustom(kc, (env as TestEnv).ns.name, "projects", "found");
    await lockGone(uid, "found");
    const res = await fetch(`${(env as TestEnv).emulator.url}/api/v1/projects/slug/found-project`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(res.status).toBe(200);
  });

  it("a holder deleted while keyward was stopped: swept as keyward starts; a live holder's lock and one of an unserved namespace stay", async () => {
    const ns = (env as TestEnv).ns.name;
    const kept = await readyHolder("projectmemberships", "ben", membership("ben", MEMBERS[1] as string));
    const goneUid = await readyHolder("projectmemberships", "cy", membership("cy", MEMBERS[2] as string));
    const api = kc.makeApiClient(CoordinationV1Api);
    const elsewhere = "keyward-holds-projectmembership-elsewhere";
    await api.createNamespacedLease({
      namespace: (leases as TestNamespace).name,
      body: {
        metadata: { name: elsewhere, labels: { [HOLDS_LABEL]: "projectmembership", [HOLDER_UID_LABEL]: "uid-elsewhere" } },
        spec: { holderIdentity: "a-namespace-keyward-does-not-serve/m/uid-elsewhere" },
      },
    });
    await (keyward as RunningKeyward).stop();
    keyward = undefined;
    await deleteCustom(kc, ns, "projectmemberships", "cy");
    await waitFor(async () => ((await getCustom(kc, ns, "projectmemberships", "cy")) ? undefined : true), {
      timeoutMs: 30_000,
      description: "cy gone from the apiserver",
    });
    // No keyward saw the deletion: the lock is still there.
    expect(await naming(goneUid)()).toHaveLength(1);
    keyward = await start();
    await lockGone(goneUid, "cy");
    expect(await naming(kept)()).toHaveLength(1);
    expect((await locks()).map((l) => l.metadata?.name)).toContain(elsewhere);
    expect(keyward.logs.some((l) => l.includes("deleted holder locks whose resources are gone") && l.includes('"swept":1'))).toBe(true);
  });
});
