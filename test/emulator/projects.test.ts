import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadDefaultSeed } from "./default-seed.ts";
import { call, ids } from "./helpers.ts";
import { start } from "./helpers.ts";
import type { Emulator } from "./server.ts";

type Project = Record<string, unknown> & { id: string; slug: string; environments?: { slug: string; name: string; id: string }[] };

let emu: Emulator;
beforeAll(async () => {
  emu = await start({ seed: loadDefaultSeed() });
});
afterAll(() => emu.close());

describe("create project", () => {
  it("applies the documented defaults and answers {project} with kmsSecretManagerKeyId", async () => {
    const res = await call<{ project: Project }>(emu, "POST", "/api/v2/workspace", { body: { projectName: "Billing Service" } });
    expect(res.status).toBe(200);
    const p = res.body.project;
    expect(p._id).toBe(p.id);
    expect(p.slug).toMatch(/^billing-service-[a-z0-9]{4}$/);
    expect(p).toMatchObject({
      name: "Billing Service",
      type: "secret-manager",
      version: 1,
      pitVersionLimit: 10,
      hasDeleteProtection: false,
      secretSharing: true,
      showSnapshotsLegacy: false,
      autoCapitalization: false,
      description: null,
    });
    expect(typeof p.kmsSecretManagerKeyId).toBe("string");
    expect(p.environments?.map((e) => [e.slug, e.name])).toEqual([
      ["dev", "Development"],
      ["staging", "Staging"],
      ["prod", "Production"],
    ]);
  });

  it("takes slug, type, description and no default environments", async () => {
    const res = await call<{ project: Project }>(emu, "POST", "/api/v2/workspace", {
      body: { projectName: "Certs", slug: "certs-one", type: "cert-manager", projectDescription: "pki", shouldCreateDefaultEnvs: false },
    });
    expect(res.body.project).toMatchObject({ slug: "certs-one", type: "cert-manager", description: "pki", environments: [] });
  });

  it("answers 400 for a duplicate slug", async () => {
    const res = await call(emu, "POST", "/api/v2/workspace", { body: { projectName: "Again", slug: "demo-project" } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ statusCode: 400, error: "BadRequest" });
    expect(typeof res.body["reqId"]).toBe("string");
  });

  it.each([
    [{ projectName: "x", slug: "abcd" }, "slug"],
    [{ projectName: "x", slug: "a".repeat(37) }, "slug"],
    [{ projectName: "x", template: "" }, "template"],
    [{ projectName: "x", template: "t".repeat(65) }, "template"],
    [{ projectName: "x", type: "vault" }, "type"],
    [{ slug: "valid-slug" }, "projectName"],
  ])("answers 422 ValidationFailure with the zod issues for %j", async (body, field) => {
    const res = await call<{ error: string; message: { path: string[] }[] }>(emu, "POST", "/api/v2/workspace", { body });
    expect(res.status).toBe(422);
    expect(res.body.error).toBe("ValidationFailure");
    expect(res.body.message.map((issue) => issue.path[0])).toContain(field);
  });
});

describe("read projects", () => {
  it("lists with roles only when includeRoles=true and filters by type", async () => {
    const plain = await call<{ projects: Project[] }>(emu, "GET", "/api/v1/projects");
    expect(plain.body.projects.length).toBeGreaterThanOrEqual(2);
    expect(plain.body.projects.every((p) => !("roles" in p) && Array.isArray(p.environments))).toBe(true);
    const withRoles = await call<{ projects: (Project & { roles: { slug: string }[] })[] }>(emu, "GET", "/api/v1/projects", {
      query: { includeRoles: "true", type: "cert-manager" },
    });
    expect(withRoles.body.projects.every((p) => p.type === "cert-manager")).toBe(true);
    expect(withRoles.body.projects[0]?.roles.map((r) => r.slug)).toEqual(
      expect.arrayContaining(["admin", "member", "viewer", "no-access"]),
    );
  });

  it("rejects a query boolean other than true/false and an unknown type", async () => {
    expect((await call(emu, "GET", "/api/v1/projects", { query: { includeRoles: "yes" } })).status).toBe(422);
    expect((await call(emu, "GET", "/api/v1/projects", { query: { type: "nope" } })).status).toBe(422);
  });

  it("gets by id wrapped and by slug bare", async () => {
    const byId = await call<{ project: Project }>(emu, "GET", `/api/v1/projects/${ids.project}`);
    expect(byId.body.project.slug).toBe("demo-project");
    const bySlug = await call<Project>(emu, "GET", "/api/v1/projects/slug/demo-project");
    expect(bySlug.body.id).toBe(ids.project);
    expect(bySlug.body._id).toBe(ids.project);
    expect(bySlug.body.environments).toHaveLength(3);
  });

  it("answers 404 for unknown ids and slugs, 422 for a slug over 64 chars", async () => {
    expect((await call(emu, "GET", "/api/v1/projects/00000000-0000-4000-8000-000000000000")).body).toMatchObject({
      statusCode: 404,
      error: "NotFound",
    });
    expect((await call(emu, "GET", "/api/v1/projects/slug/no-such-project")).status).toBe(404);
    expect((await call(emu, "GET", `/api/v1/projects/slug/${"s".repeat(65)}`)).status).toBe(422);
  });
});

describe("update and delete", () => {
  it("changes only the given fields", async () => {
    const created = await call<{ project: Project }>(emu, "POST", "/api/v2/workspace", {
      body: { projectName: "Patch Me", slug: "patch-me" },
    });
    const id = created.body.project.id;
    const res = await call<{ project: Project }>(emu, "PATCH", `/api/v1/projects/${id}`, {
      body: { description: "now described", pitVersionLimit: 50 },
    });
    expect(res.status).toBe(200);
    expect(res.body.project).toMatchObject({ name: "Patch Me", slug: "patch-me", description: "now described", pitVersionLimit: 50 });
    const renamed = await call<{ project: Project }>(emu, "PATCH", `/api/v1/projects/${id}`, { body: { slug: "patched" } });
    expect(renamed.body.project.slug).toBe("patched");
    expect((await call(emu, "GET", "/api/v1/projects/slug/patched")).status).toBe(200);
  });

  it("frees a slug when its project is renamed or deleted, and keeps the new one taken", async () => {
    const first = await call<{ project: Project }>(emu, "POST", "/api/v2/workspace", { body: { projectName: "One", slug: "slug-one" } });
    await call(emu, "PATCH", `/api/v1/projects/${first.body.project.id}`, { body: { slug: "slug-two" } });
    expect((await call(emu, "GET", "/api/v1/projects/slug/slug-one")).status).toBe(404);
    expect((await call<Project>(emu, "GET", "/api/v1/projects/slug/slug-two")).body.id).toBe(first.body.project.id);
    expect((await call(emu, "POST", "/api/v2/workspace", { body: { projectName: "Two", slug: "slug-two" } })).status).toBe(400);
    const reused = await call<{ project: Project }>(emu, "POST", "/api/v2/workspace", { body: { projectName: "Three", slug: "slug-one" } });
    expect(reused.status).toBe(200);
    await call(emu, "DELETE", `/api/v1/projects/${reused.body.project.id}`);
    expect((await call(emu, "GET", "/api/v1/projects/slug/slug-one")).status).toBe(404);
    expect((await call(emu, "POST", "/api/v2/workspace", { body: { projectName: "Four", slug: "slug-one" } })).status).toBe(200);
  });

  it("enforces the update limits and slug uniqueness", async () => {
    const path = `/api/v1/projects/${ids.project}`;
    expect((await call(emu, "PATCH", path, { body: { name: "n".repeat(65) } })).status).toBe(422);
    expect((await call(emu, "PATCH", path, { body: { description: "d".repeat(257) } })).status).toBe(422);
    expect((await call(emu, "PATCH", path, { body: { pitVersionLimit: 0 } })).status).toBe(422);
    expect((await call(emu, "PATCH", path, { body: { pitVersionLimit: 101 } })).status).toBe(422);
    expect((await call(emu, "PATCH", path, { body: { slug: "pki-project" } })).status).toBe(400);
  });

  it("refuses to delete a protected project with 403, then deletes once unprotected", async () => {
    const created = await call<{ project: Project }>(emu, "POST", "/api/v2/workspace", {
      body: { projectName: "Keep", hasDeleteProtection: true },
    });
    const id = created.body.project.id;
    const refused = await call(emu, "DELETE", `/api/v1/projects/${id}`);
    expect(refused.status).toBe(403);
    await call(emu, "PATCH", `/api/v1/projects/${id}`, { body: { hasDeleteProtection: false } });
    const deleted = await call<{ project: Project }>(emu, "DELETE", `/api/v1/projects/${id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body.project.id).toBe(id);
    expect("_id" in deleted.body.project).toBe(false);
    expect("environments" in deleted.body.project).toBe(false);
    expect((await call(emu, "GET", `/api/v1/projects/${id}`)).status).toBe(404);
  });
});
