import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, start } from "./helpers.ts";
import type { Emulator } from "./server.ts";

let emu: Emulator;
beforeAll(async () => {
  emu = await start();
});
afterAll(() => emu.close());

async function admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${emu.url}/_emulator${path}`, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe("admin API", () => {
  it("serves healthz, seed, members, state, requests, faults and reset without auth", async () => {
    expect((await admin("GET", "/healthz")).body).toEqual({ ok: true });
    const seeded = await admin("POST", "/seed", {
      projects: [{ id: "b0000000-0000-4000-8000-000000000001", name: "Seeded", slug: "seeded" }],
      groups: [{ name: "Ops", slug: "ops" }],
    });
    expect(seeded.status).toBe(200);
    const member = await admin("POST", "/members", { projectSlug: "seeded", username: "carol@example.com", roles: [{ role: "member" }] });
    expect(member.status).toBe(200);
    const listed = await call<{ memberships: { user: { username: string } }[] }>(
      emu,
      "GET",
      "/api/v1/projects/b0000000-0000-4000-8000-000000000001/memberships",
    );
    expect(listed.body.memberships.map((m) => m.user.username)).toEqual(["carol@example.com"]);
    expect(
      (await admin("DELETE", "/members", { projectId: "b0000000-0000-4000-8000-000000000001", username: "carol@example.com" })).status,
    ).toBe(200);
    expect(
      (await admin("DELETE", "/members", { projectId: "b0000000-0000-4000-8000-000000000001", username: "carol@example.com" })).status,
    ).toBe(404);
    expect((await admin("POST", "/members", { projectSlug: "seeded", groupSlug: "nope", roles: [] })).status).toBe(404);

    const state = await admin("GET", "/state");
    expect(Object.keys(state.body["projects"] as object)).toContain("b0000000-0000-4000-8000-000000000001");
    expect((await admin("GET", "/requests")).body["requests"]).toHaveLength(1);
    // The DELETE hands back what it cleared: the one request the GET listed.
    const cleared = await admin("DELETE", "/requests");
    expect(cleared.status).toBe(200);
    expect(cleared.body["requests"]).toHaveLength(1);
    expect((await admin("GET", "/requests")).body["requests"]).toHaveLength(0);

    expect((await admin("PUT", "/faults", { errorRate: 1, errorStatus: 502 })).status).toBe(200);
    expect((await call(emu, "GET", "/api/v1/projects")).status).toBe(502);
    expect((await admin("PUT", "/faults", { errorRate: 2 })).status).toBe(422);
    expect((await admin("PUT", "/faults", {})).status).toBe(200);
    expect((await admin("POST", "/job-outcomes", { syncId: "x", action: "sync", outcome: "failed" })).status).toBe(200);
    expect((await admin("POST", "/job-outcomes", { syncId: "x", action: "deploy", outcome: "failed" })).status).toBe(422);

    expect((await admin("POST", "/reset")).status).toBe(200);
    expect((await call(emu, "GET", "/api/v1/projects/slug/seeded")).status).toBe(404);
    expect((await admin("GET", "/nothing")).status).toBe(404);
  });
});

describe("CLI", () => {
  it("prints its URL, serves the default seed and exits cleanly on SIGTERM", async () => {
    const main = fileURLToPath(new URL("./main.ts", import.meta.url));
    const child = spawn(process.execPath, [main, "--port", "0", "--token", "cli-token", "--job-delay-ms", "5"], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    const lines = createInterface({ input: child.stdout });
    const first = await new Promise<string>((resolve) => lines.once("line", resolve));
    const url = /^emulator listening on (http:\/\/127\.0\.0\.1:\d+)$/.exec(first)?.[1];
    expect(url).toBeDefined();
    const res = await fetch(`${url ?? ""}/api/v1/projects/slug/demo-project`, { headers: { authorization: "Bearer cli-token" } });
    expect(res.status).toBe(200);
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
  });
});
