// Two teams' ProjectMemberships naming the same member of the same project: the older one
// manages the member, the other reports SubjectClaimed and changes nothing; when the older one
// goes, the other takes over.
import { afterAll, beforeAll, expect, it } from "vitest";
import { createTestNamespace, type TestNamespace } from "../controlplane/testenv.ts";
import {
  condition,
  createCustom,
  deleteCustom,
  installProvider,
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

const TWINS = ["ann@example.com", "cid@example.com", "dee@example.com", "eve@example.com"];

const membership = (name: string, role: string, username = "bob@example.com"): object => ({
  apiVersion: "keyward.dev/v1alpha1",
  kind: "ProjectMembership",
  metadata: { name },
  spec: { projectId: PROJECT_ID, username, roles: [{ role }] },
});

beforeAll(async () => {
  env = await startTestEnv({
    prefix: "claim-a",
    token: TOKEN,
    keyward: false,
    emulator: {
      seed: {
        users: [{ username: "bob@example.com" }, ...TWINS.map((username) => ({ username }))],
        projects: [{ id: PROJECT_ID, name: "Shared", slug: "shared-project" }],
        memberships: [
          { projectId: PROJECT_ID, username: "bob@example.com", roles: [{ role: "viewer" }] },
          ...TWINS.map((username) => ({ projectId: PROJECT_ID, username, roles: [{ role: "viewer" }] })),
        ],
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

it("lets exactly one of two memberships created at once manage the member: the other sends nothing", async () => {
  if (!env || !teamB) throw new Error("no environment");
  const { kc, emulator } = env;
  const namespaces = [env.ns.name, teamB.name];
  for (const [round, username] of TWINS.entries()) {
    const since = emulator.requests().length;
    const name = `twin-${String(round)}`;
    // Both in one moment, as `kubectl apply -f dir/` or an ApplicationSet would create them.
    await Promise.all(
      namespaces.map((ns, i) => createCustom(kc, ns, "projectmemberships", membership(name, i === 0 ? "admin" : "member", username))),
    );
    const settled = await Promise.all(
      namespaces.map((ns) =>
        waitForObject(kc, ns, "projectmemberships", name, {
          until: (o) => condition(o, "Ready")?.status === "True" || condition(o, "Ready")?.reason === "SubjectClaimed",
          timeoutMs: 30_000,
          description: `${ns}/${name} settled`,
        }),
      ),
    );
    expect(
      settled.filter((o) => condition(o, "Ready")?.status === "True"),
      `round ${String(round)}`,
    ).toHaveLength(1);
    const holder = settled.findIndex((o) => condition(o, "Ready")?.status === "True");
    const roles = emulator
      .requests()
      .slice(since)
      .filter((r) => r.operation === "updateMembership")
      .map((r) => (r.body as { roles: Array<{ role: string }> }).roles[0]?.role);
    expect(roles, `round ${String(round)}: roles sent`).toEqual([holder === 0 ? "admin" : "member"]);
  }
});
