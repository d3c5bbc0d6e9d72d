import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadDefaultSeed } from "./default-seed.ts";
import { call, eventually, ids, start, TOKEN } from "./helpers.ts";

const dir = mkdtempSync(join(tmpdir(), "keyward-emulator-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("persistence", () => {
  it("reloads everything after a restart and settles jobs that were pending at shutdown", async () => {
    const persistPath = join(dir, "state.json");
    const first = await start({ seed: loadDefaultSeed(), persistPath, jobDelayMs: 60_000 });
    const project = await call<{ project: { id: string } }>(first, "POST", "/api/v2/workspace", {
      body: { projectName: "Durable", slug: "durable" },
    });
    const token = await call<{ accessToken: string }>(first, "POST", `/api/v1/auth/token-auth/identities/${ids.identity}/tokens`, {
      body: {},
    });
    const sync = await call<{ secretSync: { id: string; syncStatus: string } }>(first, "POST", "/api/v1/secret-syncs/monitoring", {
      body: {
        name: "durable-sync",
        projectId: project.body.project.id,
        connectionId: ids.connections["monitoring"],
        environment: "prod",
        secretPath: "/",
        syncOptions: { initialSyncBehavior: "overwrite-destination" },
        destinationConfig: { accountId: "a", accountName: "b", groupId: "c", groupName: "d" },
      },
    });
    expect(sync.body.secretSync.syncStatus).toBe("pending");
    const details = `/api/v1/projects/${ids.project}/memberships/details`;
    const alice = await call<{ membership: { id: string } }>(first, "POST", details, { body: { username: "alice@example.com" } });
    await call(first, "PATCH", `/api/v1/projects/${ids.project}/memberships/${alice.body.membership.id}`, {
      body: { roles: [{ role: "viewer" }] },
    });
    await first.close();
    expect(readFileSync(persistPath, "utf8")).not.toContain(token.body.accessToken);

    const second = await start({ seed: loadDefaultSeed(), persistPath, jobDelayMs: 0 });
    try {
      const bySlug = await call<{ id: string }>(second, "GET", "/api/v1/projects/slug/durable");
      expect(bySlug.body.id).toBe(project.body.project.id);
      expect((await call(second, "GET", "/api/v1/projects", { token: token.body.accessToken })).status).toBe(200);
      const done = await eventually(async () => {
        const res = await call<{ secretSync: { syncStatus: string } }>(
          second,
          "GET",
          `/api/v1/secret-syncs/monitoring/${sync.body.secretSync.id}`,
          { token: TOKEN },
        );
        return res.body.secretSync.syncStatus === "succeeded" ? res.body.secretSync : undefined;
      });
      expect(done.syncStatus).toBe("succeeded");
      const aliceAfter = await call<{ membership: { roles: { role: string }[] } }>(second, "POST", details, {
        body: { username: "alice@example.com" },
      });
      expect(aliceAfter.body.membership.roles.map((r) => r.role)).toEqual(["viewer"]);
      const projects = await call<{ projects: { slug: string }[] }>(second, "GET", "/api/v1/projects");
      expect(projects.body.projects.filter((p) => p.slug === "demo-project")).toHaveLength(1);
    } finally {
      await second.close();
    }
  });
});
