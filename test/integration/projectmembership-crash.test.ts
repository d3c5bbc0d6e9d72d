// keyward killed (SIGKILL) after the service applied a ProjectMembership's role change and before
// the pass's status write, then the membership (deletionPolicy Revoke) deleted together with its
// Project (deletionPolicy Retain: gone from Kubernetes at once, the project stays at the service).
// The restarted keyward cannot resolve the Project any more; the deletion still owes the revoke.
// (The sharded soak: a replica exiting on a lost shard Lease mid-pass, then a namespace's
// projects deleted with their dependents.)
import { afterAll, beforeAll, expect, it } from "vitest";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Emulator, Seed } from "../emulator/server.ts";
import { testKubeconfigPath, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import { createCustom, deleteCustom, getCustom, isReady, startTestEnv, waitForObject, type TestEnv } from "./support/keyward.ts";
import { keywardProcesses } from "./support/keyward-process.ts";

const TOKEN = "kw-membership-crash-token-7a31";
const PROJECT_ID = "c0000000-0000-4000-8000-0000000000c1";
const ALICE = "c0000000-0001-4000-8000-0000000000c1";

const seed: Seed = {
  users: [{ id: ALICE, username: "alice@example.com" }],
  projects: [{ id: PROJECT_ID, name: "Team", slug: "crash-team" }],
  memberships: [{ projectId: PROJECT_ID, username: "alice@example.com", roles: [{ role: "member" }] }],
};

let env: TestEnv | undefined;
let kc: KubeConfig;
let emulator: Emulator;
let ns: TestNamespace;
const processes = keywardProcesses(testKubeconfigPath, () => ns.name, { resyncIntervalMs: 60_000 });

beforeAll(async () => {
  env = await startTestEnv({ prefix: "membership-crash", token: TOKEN, emulator: { seed }, keyward: false });
  ({ kc, emulator, ns } = env);
});

afterAll(async () => {
  await processes.stopAll();
  await env?.stop();
});

async function aliceRoles(): Promise<string[]> {
  const res = await fetch(`${emulator.url}/api/v1/projects/${PROJECT_ID}/memberships`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const body = (await res.json()) as { memberships: Array<{ user: { username: string }; roles: Array<{ role: string }> }> };
  return (body.memberships.find((m) => m.user.username === "alice@example.com")?.roles ?? []).map((r) => r.role);
}

it("revokes on deletion when the pass that changed the roles died before its status write and the Project is gone", async () => {
  const first = await processes.start();
  await createCustom(kc, ns.name, "projects", {
    apiVersion: "keyward.dev/v1alpha1",
    kind: "Project",
    metadata: { name: "team" },
    spec: { slug: "crash-team", creationPolicy: "Adopt" },
  });
  await waitForObject(kc, ns.name, "projects", "team", { until: isReady, timeoutMs: 30_000, description: "Project Ready" });

  // The service applies the role change, then holds its answer past the kill.
  emulator.setFaults({ match: { method: "PATCH", pathPattern: "/memberships/" }, latencyMs: 60_000, latencyWhen: "after-handling" });
  await createCustom(kc, ns.name, "projectmemberships", {
    apiVersion: "keyward.dev/v1alpha1",
    kind: "ProjectMembership",
    metadata: { name: "alice" },
    spec: { projectRef: { name: "team" }, username: "alice@example.com", roles: [{ role: "admin" }], deletionPolicy: "Revoke" },
  });
  await waitFor(async () => ((await aliceRoles()).includes("admin") ? true : undefined), {
    timeoutMs: 30_000,
    description: "the role change landed at the service",
  });
  expect(await first.kill()).toBe("SIGKILL");
  emulator.setFaults({});
  const crashed = await getCustom(kc, ns.name, "projectmemberships", "alice");
  expect(crashed?.metadata.finalizers).toContain("keyward.dev/finalizer");

  // Deleted together; the Project (Retain, no finalizer) is gone at once.
  await deleteCustom(kc, ns.name, "projects", "team");
  await deleteCustom(kc, ns.name, "projectmemberships", "alice");
  await waitFor(async () => ((await getCustom(kc, ns.name, "projects", "team")) === undefined ? true : undefined), {
    timeoutMs: 30_000,
    description: "Project gone",
  });

  const updatesBefore = emulator.requests().filter((r) => r.operation === "updateMembership").length;
  await processes.start();
  await waitFor(async () => ((await getCustom(kc, ns.name, "projectmemberships", "alice")) === undefined ? true : undefined), {
    timeoutMs: 60_000,
    description: "ProjectMembership released",
  });
  const revokes = emulator
    .requests()
    .filter((r) => r.operation === "updateMembership")
    .slice(updatesBefore);
  expect(revokes.map((r) => r.body)).toEqual([{ roles: [{ role: "no-access", isTemporary: false }] }]);
  expect(await aliceRoles()).toEqual(["no-access"]);
});
