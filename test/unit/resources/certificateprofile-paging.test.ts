// CertificateProfile's list paging and status mapping against the emulator over HTTP: more
// than 200 profiles matching the slug search, so the entry sought is on the third page.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiClient, type ApiClient } from "../../../src/api/index.ts";
import { findListEntry, statusFrom } from "../../../src/resources/certificateprofile.ts";
import { startEmulator, type Emulator, type Seed } from "../../emulator/server.ts";

const TOKEN = "kw-unit-profile-token";
const PROJECT = "c0ffee00-0005-4a00-8000-00000000abcd";
const PASSPHRASE = "unit-est-passphrase-5d1e";
const CA_CHAIN = "-----BEGIN CERTIFICATE-----unit-chain";
const TARGET_ID = "c0ffee00-0007-4a00-8000-0000000000ff";

// 240 api profiles named fleet-NNN, created one second apart, then the target fleet-est (est)
// and fleet-api-target last, so the list (ordered by creation) puts it on page three.
const base = Date.parse("2030-01-01T00:00:00Z");
const bulk = Array.from({ length: 240 }, (_, i) => ({
  projectId: PROJECT,
  slug: `fleet-${String(i).padStart(3, "0")}`,
  enrollmentType: "api" as const,
  createdAt: new Date(base + i * 1000).toISOString(),
}));
const seed: Seed = {
  projects: [{ id: PROJECT, name: "Fleet", slug: "fleet-project", type: "cert-manager" }],
  certificateProfiles: [
    ...bulk,
    {
      projectId: PROJECT,
      slug: "fleet-est",
      enrollmentType: "est",
      createdAt: new Date(base + 500_000).toISOString(),
      estConfig: { disableBootstrapCaValidation: true, passphrase: PASSPHRASE, caChain: CA_CHAIN },
      metrics: { totalCertificates: 3, activeCertificates: 3, expiredCertificates: 0, expiringCertificates: 0, revokedCertificates: 0 },
    },
    {
      id: TARGET_ID,
      projectId: PROJECT,
      slug: "fleet-api-target",
      enrollmentType: "api",
      description: "the one on page three",
      createdAt: new Date(base + 600_000).toISOString(),
      apiConfig: { autoRenew: true, renewBeforeDays: 7 },
      metrics: { totalCertificates: 50, activeCertificates: 40, expiredCertificates: 4, expiringCertificates: 5, revokedCertificates: 1 },
    },
  ],
};

let emulator: Emulator;
let api: ApiClient;

beforeAll(async () => {
  emulator = await startEmulator({ tokens: [TOKEN], seed });
  api = createApiClient({ baseUrl: emulator.url, token: TOKEN });
});

afterAll(async () => {
  await emulator.close();
});

const listCalls = () => emulator.requests().filter((r) => r.operation === "listCertificateProfiles");

describe("findListEntry", () => {
  it("pages with limit 100 and offset += 100, narrowed by search and enrollment type, until it finds the entry", async () => {
    emulator.clearRequests();
    const entry = await findListEntry(api, { projectId: PROJECT, id: TARGET_ID, slug: "fleet", enrollmentType: "api" });
    expect(entry?.id).toBe(TARGET_ID);
    expect(entry?.metrics?.expiringCertificates).toBe(5);
    const calls = listCalls();
    expect(calls.map((c) => c.query["offset"])).toEqual(["0", "100", "200"]);
    for (const c of calls) expect(c.query).toMatchObject({ projectId: PROJECT, limit: "100", search: "fleet", enrollmentType: "api" });
  });

  it("stops at totalCount when the entry is not listed", async () => {
    emulator.clearRequests();
    const entry = await findListEntry(api, {
      projectId: PROJECT,
      id: "c0ffee00-0007-4a00-8000-000000000000",
      slug: "fleet",
      enrollmentType: "api",
    });
    expect(entry).toBeUndefined();
    // 241 api profiles match: three pages, no fourth.
    expect(listCalls().map((c) => c.query["offset"])).toEqual(["0", "100", "200"]);
  });

  it("reads one page when the search narrows the list", async () => {
    emulator.clearRequests();
    const entry = await findListEntry(api, { projectId: PROJECT, id: TARGET_ID, slug: "fleet-api-target", enrollmentType: "api" });
    expect(entry?.slug).toBe("fleet-api-target");
    expect(listCalls()).toHaveLength(1);
  });

  it("leaves out an enrollment type the list filter does not know", async () => {
    emulator.clearRequests();
    await findListEntry(api, { projectId: PROJECT, id: TARGET_ID, slug: "fleet-api-target", enrollmentType: "scep" });
    expect(listCalls()[0]?.query["enrollmentType"]).toBeUndefined();
  });
});

describe("statusFrom", () => {
  it("mirrors ids, counts and the api config", async () => {
    const profile = await api.getCertificateProfileBySlug("fleet-api-target", PROJECT);
    const entry = await findListEntry(api, {
      projectId: PROJECT,
      id: profile.id,
      slug: profile.slug,
      enrollmentType: profile.enrollmentType,
    });
    const status = statusFrom(profile, entry!);
    expect(status).toMatchObject({
      profileId: TARGET_ID,
      projectId: PROJECT,
      slug: "fleet-api-target",
      description: "the one on page three",
      enrollmentType: "api",
      apiConfigId: entry?.apiConfig?.id,
      certificates: { total: 50, active: 40, expired: 4, expiring: 5, revoked: 1 },
      apiConfig: { autoRenew: true, renewBeforeDays: 7 },
    });
    expect(status.caId).toMatch(/^[0-9a-f-]{36}$/);
    expect(status.estConfigId).toBeNull(); // null: removed from status
  });

  it("never copies the EST passphrase or CA chain", async () => {
    const profile = await api.getCertificateProfileBySlug("fleet-est", PROJECT);
    const entry = await findListEntry(api, {
      projectId: PROJECT,
      id: profile.id,
      slug: profile.slug,
      enrollmentType: profile.enrollmentType,
    });
    expect(entry?.estConfig?.passphrase).toBe(PASSPHRASE);
    const status = statusFrom(profile, entry!);
    expect(status.estConfig).toEqual({ disableBootstrapCaValidation: true });
    const text = JSON.stringify(status);
    expect(text).not.toContain(PASSPHRASE);
    expect(text).not.toContain(CA_CHAIN);
    expect(text).not.toMatch(/passphrase|caChain/);
  });
});
