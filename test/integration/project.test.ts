// Project end to end: a real kube-apiserver, the emulator over HTTP, keyward in-process.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Emulator } from "../emulator/server.ts";
import { kubectl, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import {
  condition,
  projectObject as project,
  createCustom,
  deleteCustom,
  exposedTexts,
  getCustom,
  isReady,
  mergePatchCustom,
  startTestEnv,
  waitForObject,
  type KeywardTestEnv,
  type RunningKeyward,
} from "./support/keyward.ts";
import type { KubeObject } from "../../src/engine/types.ts";

const TOKEN = "kw-test-operator-token-7f3a9c";
let env: KeywardTestEnv | undefined;
let kc: KubeConfig;
let emulator: Emulator;
let ns: TestNamespace;
let keyward: RunningKeyward;

const waitForProject = (name: string, description: string, until: (obj: KubeObject) => boolean): Promise<KubeObject> =>
  waitForObject(kc, ns.name, "projects", name, { until, timeoutMs: 30_000, description });

const readyProject = (name: string): Promise<KubeObject> => waitForProject(name, `Project ${name} Ready`, isReady);

const calls = (op: string, pathPart?: string): number =>
  emulator.requests().filter((r) => r.operation === op && (pathPart === undefined || r.path.includes(pathPart))).length;

beforeAll(async () => {
  env = await startTestEnv({
    prefix: "project",
    token: TOKEN,
    emulator: { seed: { projects: [{ name: "Existing", slug: "existing-project" }] } },
    keyward: { resyncIntervalMs: 2_000 },
  });
  ({ kc, emulator, ns, keyward } = env);
});

afterAll(() => env?.stop());

describe("Project", () => {
  it("creates the project and reports its id, slug and environments", async () => {
    await createCustom(
      kc,
      ns.name,
      "projects",
      project("payments", { name: "Payments", slug: "payments-prod", description: "the payments team" }),
    );
    const obj = await readyProject("payments");
    const status = obj.status as Record<string, unknown>;
    expect(status["projectId"]).toMatch(/^[0-9a-f-]{36}$/);
    expect(status["slug"]).toBe("payments-prod");
    expect((status["environments"] as unknown[]).length).toBeGreaterThan(0);
    expect(condition(obj, "Synced")?.status).toBe("True");
    expect(calls("createProject")).toBe(1);
    const created = emulator.requests().find((r) => r.operation === "createProject");
    expect(created?.body).toMatchObject({ projectName: "Payments", slug: "payments-prod", projectDescription: "the payments team" });
  });

  it("applies a spec change with exactly one update call, then none", async () => {
    const before = calls("updateProject");
    await mergePatchCustom(kc, ns.name, "projects", "payments", { spec: { description: "renamed team", pitVersionLimit: 42 } });
    await waitForProject(
      "payments",
      "Project synced at the new generation",
      (obj) => isReady(obj) && condition(obj, "Synced")?.observedGeneration === obj.metadata.generation,
    );
    await waitFor(() => Promise.resolve(calls("updateProject") > before ? true : undefined), {
      timeoutMs: 30_000,
      description: "update call",
    });
    const updates = emulator
      .requests()
      .filter((r) => r.operation === "updateProject")
      .slice(before);
    expect(updates).toHaveLength(1);
    expect(updates[0]?.body).toEqual({ description: "renamed team", pitVersionLimit: 42 });
    // Two more resyncs pass: steady state makes no write calls.
    const writesBefore = emulator.requests().filter((r) => r.method !== "GET").length;
    await new Promise((r) => setTimeout(r, 5_000));
    expect(emulator.requests().filter((r) => r.method !== "GET").length).toBe(writesBefore);
  });

  it("corrects a change made at the service on the next resync", async () => {
    const obj = await readyProject("payments");
    const id = (obj.status as Record<string, string>)["projectId"]!;
    const res = await fetch(`${emulator.url}/api/v1/projects/${id}`, {
      method: "PATCH",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ description: "changed behind keyward's back" }),
    });
    expect(res.status).toBe(200);
    await waitFor(
      async () => {
        const r = await fetch(`${emulator.url}/api/v1/projects/${id}`, { headers: { authorization: `Bearer ${TOKEN}` } });
        const body = (await r.json()) as { project: { description: string } };
        return body.project.description === "renamed team" ? true : undefined;
      },
      { timeoutMs: 30_000, description: "drift corrected" },
    );
  });

  it("renames the project when the slug changes", async () => {
    await mergePatchCustom(kc, ns.name, "projects", "payments", { spec: { slug: "payments-main" } });
    await waitForProject(
      "payments",
      "slug renamed",
      (obj) => (obj.status as Record<string, string> | undefined)?.["slug"] === "payments-main",
    );
    expect(calls("createProject")).toBe(1);
  });

  it("adopts an existing project by slug", async () => {
    await createCustom(kc, ns.name, "projects", project("existing", { slug: "existing-project", creationPolicy: "Adopt" }));
    const obj = await readyProject("existing");
    expect((obj.status as Record<string, string>)["slug"]).toBe("existing-project");
    expect(calls("createProject")).toBe(1);
  });

  it("refuses to take over a taken slug with creationPolicy Create", async () => {
    await createCustom(kc, ns.name, "projects", project("squatter", { slug: "existing-project" }));
    const obj = await waitForProject("squatter", "AlreadyExists condition", (o) => condition(o, "Synced")?.reason === "AlreadyExists");
    expect(condition(obj, "Synced")?.status).toBe("False");
    expect(calls("createProject")).toBe(1);
  });

  it("with deletionPolicy Retain, deleting the resource leaves the project", async () => {
    await createCustom(kc, ns.name, "projects", project("keepme", { slug: "keep-me-please" }));
    const obj = await readyProject("keepme");
    const id = (obj.status as Record<string, string>)["projectId"]!;
    expect(obj.metadata.finalizers ?? []).toEqual([]);
    await deleteCustom(kc, ns.name, "projects", "keepme");
    await waitFor(async () => ((await getCustom(kc, ns.name, "projects", "keepme")) ? undefined : true), {
      timeoutMs: 30_000,
      description: "resource gone",
    });
    const r = await fetch(`${emulator.url}/api/v1/projects/${id}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(r.status).toBe(200);
  });

  it("with deletionPolicy Delete, deletes the project; delete protection blocks it with a reason", async () => {
    await createCustom(
      kc,
      ns.name,
      "projects",
      project("doomed", { slug: "doomed-project", deletionPolicy: "Delete", hasDeleteProtection: true }),
    );
    const obj = await readyProject("doomed");
    const id = (obj.status as Record<string, string>)["projectId"]!;
    expect(obj.metadata.finalizers).toContain("keyward.dev/finalizer");
    await deleteCustom(kc, ns.name, "projects", "doomed");
    const blocked = await waitForProject("doomed", "DeleteProtected condition", (o) => condition(o, "Ready")?.reason === "DeleteProtected");
    expect(condition(blocked, "Ready")?.message).toContain("delete protection");
    expect(calls("deleteProject")).toBe(0);
    // Lifting the protection at the service lets the deletion finish.
    await fetch(`${emulator.url}/api/v1/projects/${id}`, {
      method: "PATCH",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ hasDeleteProtection: false }),
    });
    await waitFor(async () => ((await getCustom(kc, ns.name, "projects", "doomed")) ? undefined : true), {
      timeoutMs: 60_000,
      description: "resource gone after protection lifted",
    });
    const r = await fetch(`${emulator.url}/api/v1/projects/${id}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(r.status).toBe(404);
  });

  it("rejects a 4-character slug and pitVersionLimit 101 at apply time", async () => {
    const bad = (name: string, spec: Record<string, unknown>): string => JSON.stringify(project(name, spec));
    const slug = await kubectl(["apply", "-n", ns.name, "-f", "-"], { input: bad("shortslug", { slug: "abcd" }) });
    expect(slug.code).not.toBe(0);
    expect(slug.stderr).toMatch(/slug/);
    const pit = await kubectl(["apply", "-n", ns.name, "-f", "-"], { input: bad("bigpit", { pitVersionLimit: 101 }) });
    expect(pit.code).not.toBe(0);
    expect(pit.stderr).toMatch(/pitVersionLimit/);
  });

  it("leaves a paused project alone and never writes with managementPolicy ObserveOnly", async () => {
    await createCustom(
      kc,
      ns.name,
      "projects",
      project("observer", {
        slug: "existing-project",
        creationPolicy: "Adopt",
        managementPolicy: "ObserveOnly",
        description: "not what the service has",
      }),
    );
    const observed = await waitForProject("observer", "ObserveOnly condition", (o) => condition(o, "Synced")?.reason === "ObserveOnly");
    expect(condition(observed, "Synced")?.status).toBe("False");
    expect(condition(observed, "Synced")?.message).toContain("description");
    expect(condition(observed, "Ready")?.status).toBe("True");
    await mergePatchCustom(kc, ns.name, "projects", "payments", {
      metadata: { annotations: { "keyward.dev/paused": "true" } },
      spec: { description: "while paused" },
    });
    await waitFor(
      async () =>
        condition(await getCustom(kc, ns.name, "projects", "payments"), "Synced")?.reason === "ReconcilePaused" ? true : undefined,
      { timeoutMs: 30_000, description: "paused" },
    );
    const writes = emulator.requests().filter((r) => r.method !== "GET" && r.operation !== "getMembershipByUsername").length;
    await new Promise((r) => setTimeout(r, 4_500));
    expect(emulator.requests().filter((r) => r.method !== "GET" && r.operation !== "getMembershipByUsername").length).toBe(writes);
    await mergePatchCustom(kc, ns.name, "projects", "payments", { metadata: { annotations: { "keyward.dev/paused": null } } });
    await waitFor(
      () =>
        Promise.resolve(
          emulator
            .requests()
            .some((r) => r.operation === "updateProject" && (r.body as { description?: string }).description === "while paused")
            ? true
            : undefined,
        ),
      { timeoutMs: 30_000, description: "update after unpause" },
    );
  });

  it("never writes the token into logs, events or status", async () => {
    for (const text of (await exposedTexts(ns.name, keyward.logs, "projects,providerconfigs")).all) expect(text).not.toContain(TOKEN);
  });
});
