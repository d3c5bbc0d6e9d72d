// Two teams' ProjectMemberships naming the same member of the same project: the older one
// manages the member, the other reports SubjectClaimed and changes nothing; when the older one
// goes, the other takes over.
import { afterAll, beforeAll, expect, it } from "vitest";
import { createTestNamespace, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import {
  condition,
  createCustom,
  deleteCustom,
  getCustom,
  installProvider,
  mergePatchCustom,
  startKeyward,
  startTestEnv,
  waitForObject,
  type RunningKeyward,
  type TestEnv,
} from "./support/keyward.ts";

const TOKEN = "kw-claim-token-77";
const PROJECT_ID = "c1000000-0000-4000-8000-000000000001";
let env: TestEnv | undefined;
let teamB: TestNamespace | undefined;
let keyward: RunningKeyward | undefined;

const membership = (name: string, role: string): object => ({
  apiVersion: "keyward.dev/v1alpha1",
  kind: "ProjectMembership",
  metadata: { name },
  spec: { projectId: PROJECT_ID, username: "bob@example.com", roles: [{ role }] },
});

beforeAll(async () => {
  env = await startTestEnv({
    prefix: "claim-a",
    token: TOKEN,
    keyward: false,
    emulator: {
      seed: {
        users: [{ username: "bob@example.com" }],
        projects: [{ id: PROJECT_ID, name: "Shared", slug: "shared-project" }],
        memberships: [{ projectId: PROJECT_ID, username: "bob@example.com", roles: [{ role: "viewer" }] }],
      },
    },
  });
  teamB = await createTestNamespace("claim-b");
  await installProvider(env.kc, teamB.name, env.emulator.url, TOKEN);
  keyward = await startKeyward(env.kc, { namespaces: [env.ns.name, teamB.name], resyncIntervalMs: 2_000 });
});

afterAll(async () => {
  await keyward?.stop();
  await teamB?.cleanup();
  await env?.stop();
});

it("lets the older membership manage the member and the younger one wait", async () => {
  if (!env || !teamB) throw new Error("no environment");
  const { kc, emulator } = env;
  await createCustom(kc, env.ns.name, "projectmemberships", membership("bob", "admin"));
  await waitForObject(kc, env.ns.name, "projectmemberships", "bob", {
    until: (o) => condition(o, "Ready")?.status === "True",
    timeoutMs: 30_000,
    description: "team A's membership Ready",
  });
  // Creation timestamps have one-second resolution: make team B's clearly younger.
  await new Promise((r) => setTimeout(r, 1_100));
  await createCustom(kc, teamB.name, "projectmemberships", membership("bob", "member"));
  const claimed = await waitForObject(kc, teamB.name, "projectmemberships", "bob", {
    until: (o) => condition(o, "Ready")?.reason === "SubjectClaimed",
    timeoutMs: 30_000,
    description: "team B's membership SubjectClaimed",
  });
  expect(condition(claimed, "Ready")?.message).toContain(`${env.ns.name}/bob`);
  const updates = (): Array<{ role?: string }> =>
    emulator
      .requests()
      .filter((r) => r.operation === "updateMembership")
      .map((r) => (r.body as { roles: Array<{ role: string }> }).roles[0] ?? {});
  // Over several resyncs only team A's roles are ever sent.
  await new Promise((r) => setTimeout(r, 5_000));
  expect(updates().map((u) => u.role)).toEqual(["admin"]);

  // Team A's resource goes (Retain): team B's takes over.
  await deleteCustom(kc, env.ns.name, "projectmemberships", "bob");
  await waitForObject(kc, teamB.name, "projectmemberships", "bob", {
    until: (o) => condition(o, "Ready")?.status === "True",
    timeoutMs: 30_000,
    description: "team B takes over",
  });
  expect(updates().map((u) => u.role)).toEqual(["admin", "member"]);
});

it("after a restore (new creation times) the member stays with the membership that managed it", async () => {
  if (!env || !teamB) throw new Error("no environment");
  const { kc, emulator } = env;
  // Team B's membership manages bob since the test above; team A names him again, and waits.
  await createCustom(kc, env.ns.name, "projectmemberships", membership("bob-again", "admin"));
  await waitForObject(kc, env.ns.name, "projectmemberships", "bob-again", {
    until: (o) => condition(o, "Ready")?.reason === "SubjectClaimed",
    timeoutMs: 30_000,
    description: "team A's new membership SubjectClaimed",
  });
  const manager = await waitForObject(kc, teamB.name, "projectmemberships", "bob", {
    until: (o) => o.metadata.annotations?.["keyward.dev/manages"] !== undefined,
    timeoutMs: 30_000,
    description: "team B's claim in metadata",
  });
  expect(JSON.parse(manager.metadata.annotations?.["keyward.dev/manages"] ?? "{}")).toEqual({
    projectId: PROJECT_ID,
    subject: "user:bob@example.com",
  });

  // The backup (metadata and spec, no status), the loss, and a restore that creates the waiting
  // one first: by creation time it would now be the older.
  const backups: Array<{ namespace: string; body: object }> = [];
  for (const [namespace, name] of [
    [env.ns.name, "bob-again"],
    [teamB.name, "bob"],
  ] as const) {
    const o = await getCustom(kc, namespace, "projectmemberships", name);
    if (!o) throw new Error(`${namespace}/${name} missing`);
    const { labels, annotations, finalizers } = o.metadata;
    backups.push({
      namespace,
      body: { apiVersion: o.apiVersion, kind: o.kind, metadata: { name, labels, annotations, finalizers }, spec: o.spec },
    });
  }
  await keyward?.stop();
  keyward = undefined;
  for (const b of backups) {
    const name = (b.body as { metadata: { name: string } }).metadata.name;
    await mergePatchCustom(kc, b.namespace, "projectmemberships", name, { metadata: { finalizers: null } });
    await deleteCustom(kc, b.namespace, "projectmemberships", name);
    await waitFor(async () => ((await getCustom(kc, b.namespace, "projectmemberships", name)) ? undefined : true), {
      timeoutMs: 30_000,
      description: `${name} gone`,
    });
  }
  await createCustom(kc, backups[0]?.namespace ?? "", "projectmemberships", backups[0]?.body ?? {});
  await new Promise((r) => setTimeout(r, 1_100));
  await createCustom(kc, backups[1]?.namespace ?? "", "projectmemberships", backups[1]?.body ?? {});
  const mark = emulator.requests().length;
  keyward = await startKeyward(kc, { namespaces: [env.ns.name, teamB.name], resyncIntervalMs: 2_000 });

  await waitForObject(kc, teamB.name, "projectmemberships", "bob", {
    until: (o) => condition(o, "Ready")?.status === "True",
    timeoutMs: 30_000,
    description: "team B's membership still manages bob",
  });
  await waitForObject(kc, env.ns.name, "projectmemberships", "bob-again", {
    until: (o) => condition(o, "Ready")?.reason === "SubjectClaimed",
    timeoutMs: 30_000,
    description: "team A's still waits",
  });
  // Over several resyncs no role is sent: bob keeps team B's roles.
  await new Promise((r) => setTimeout(r, 5_000));
  expect(
    emulator
      .requests()
      .slice(mark)
      .filter((r) => r.operation === "updateMembership"),
  ).toEqual([]);
});
