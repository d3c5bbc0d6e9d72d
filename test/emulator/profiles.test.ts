import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, start } from "./helpers.ts";
import type { Emulator } from "./server.ts";

type Profile = Record<string, unknown> & { slug: string; enrollmentType: string };

const projectId = "f0000000-0000-4000-8000-000000000001";
let emu: Emulator;

beforeAll(async () => {
  const types = ["api", "est", "acme"] as const;
  const certificateProfiles = Array.from({ length: 25 }, (_, i) => ({
    projectId,
    slug: `profile-${String(i).padStart(2, "0")}`,
    enrollmentType: types[i % 3] ?? "api",
    metrics: { totalCertificates: i },
  }));
  emu = await start({
    seed: { certificateProfiles: [...certificateProfiles, { projectId: "other", slug: "elsewhere", enrollmentType: "api" }] },
  });
});
afterAll(() => emu.close());

const list = (query: Record<string, string>, token: string | null = null) =>
  call<{ certificateProfiles: Profile[]; totalCount: number }>(emu, "GET", "/api/v1/pki/certificate-profiles", { query, token });

describe("certificate profiles", () => {
  it("pages with offset and limit (default 20) and reports the total", async () => {
    const first = await list({ projectId });
    expect(first.status).toBe(200);
    expect(first.body.totalCount).toBe(25);
    expect(first.body.certificateProfiles).toHaveLength(20);
    const rest = await list({ projectId, offset: "20", limit: "100" });
    expect(rest.body.certificateProfiles.map((p) => p.slug)).toEqual([
      "profile-20",
      "profile-21",
      "profile-22",
      "profile-23",
      "profile-24",
    ]);
  });

  it("filters by enrollmentType and search; list entries carry metrics and their config", async () => {
    const est = await list({ projectId, enrollmentType: "est" });
    expect(est.body.totalCount).toBe(8);
    const entry = est.body.certificateProfiles[0];
    expect(entry?.["metrics"]).toMatchObject({ profileId: entry?.["id"], totalCertificates: 1 });
    expect(entry?.["estConfig"]).toMatchObject({ disableBootstrapCaValidation: false });
    expect("apiConfig" in (entry ?? {})).toBe(false);
    const searched = await list({ projectId, search: "PROFILE-1" });
    expect(searched.body.totalCount).toBe(10);
  });

  it("rejects bad query values with 422", async () => {
    const bad: Record<string, string>[] = [
      {},
      { projectId: "" },
      { projectId, limit: "0" },
      { projectId, limit: "101" },
      { projectId, offset: "-1" },
      { projectId, offset: "1.5" },
      { projectId, enrollmentType: "scep" },
    ];
    for (const query of bad) {
      expect((await list(query)).status).toBe(422);
    }
  });

  it("is served anonymously, but a bad token is still 403", async () => {
    expect((await list({ projectId }, "bogus")).status).toBe(403);
    expect((await list({ projectId }, "test-static-token")).status).toBe(200);
  });

  it("gets one by slug with scalar fields only; 404 when absent", async () => {
    const res = await call<{ certificateProfile: Profile }>(emu, "GET", "/api/v1/pki/certificate-profiles/slug/profile-01", {
      query: { projectId },
      token: null,
    });
    expect(res.status).toBe(200);
    expect(res.body.certificateProfile).toMatchObject({ slug: "profile-01", enrollmentType: "est", projectId });
    for (const key of ["metrics", "estConfig", "apiConfig", "acmeConfig"]) expect(key in res.body.certificateProfile).toBe(false);
    expect(typeof res.body.certificateProfile["estConfigId"]).toBe("string");
    // The config ids of the other enrollment types, and a description never given, are null.
    expect(res.body.certificateProfile).toMatchObject({ apiConfigId: null, acmeConfigId: null, description: null });
    expect((await call(emu, "GET", "/api/v1/pki/certificate-profiles/slug/elsewhere", { query: { projectId }, token: null })).status).toBe(
      404,
    );
    expect((await call(emu, "GET", "/api/v1/pki/certificate-profiles/slug/profile-01", { token: null })).status).toBe(422);
    expect((await list({ projectId: "no-such-project" })).status).toBe(404);
  });
});
