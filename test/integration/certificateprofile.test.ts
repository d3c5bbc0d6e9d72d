// CertificateProfile end to end: a real kube-apiserver, the emulator over HTTP (the default
// seed's four profiles plus 120 more whose slugs match "web-servers", so that profile's list
// entry is on the second page), keyward in-process with its metrics registry.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Emulator } from "../emulator/server.ts";
import { loadDefaultSeed } from "../emulator/default-seed.ts";
import { kubectl, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import {
  condition,
  createCustom,
  deleteCustom,
  exposedTexts,
  getCustom,
  isReady,
  startTestEnv,
  waitForObject,
  type KeywardTestEnv,
  type RunningKeyward,
} from "./support/keyward.ts";
import type { KubeObject } from "../../src/engine/types.ts";
import { GAUGE_NAME } from "../../src/resources/certificateprofile.ts";

const TOKEN = "kw-test-operator-token-cp93be";
const PKI_PROJECT = "a1b2c3d4-0005-4a00-8000-000000000002";
const defaultSeed = loadDefaultSeed();
const seededProfiles = defaultSeed.certificateProfiles ?? [];
const PASSPHRASE = "emulator-est-passphrase";

// Older than the seeded profiles, so the list (ordered by creation) puts web-servers after them.
const fleet = Array.from({ length: 120 }, (_, i) => ({
  projectId: PKI_PROJECT,
  slug: `web-servers-legacy-${String(i).padStart(3, "0")}`,
  enrollmentType: "api" as const,
  createdAt: new Date(Date.parse("2020-01-01T00:00:00Z") + i * 1000).toISOString(),
}));

let env: KeywardTestEnv | undefined;
let kc: KubeConfig;
let emulator: Emulator;
let ns: TestNamespace;
let keyward: RunningKeyward;

const profileResource = (name: string, spec: Record<string, unknown>): object => ({
  apiVersion: "keyward.dev/v1alpha1",
  kind: "CertificateProfile",
  metadata: { name },
  spec,
});

type Counts = { total: number; active: number; expired: number; expiring: number; revoked: number };
type Status = Record<string, unknown> & { certificates?: Counts };
const statusOf = (obj: KubeObject | undefined): Status => obj?.status ?? {};

const readyProfile = (name: string, pass: (s: Status) => boolean = () => true): Promise<KubeObject> =>
  waitForObject(kc, ns.name, "certificateprofiles", name, {
    until: (obj) => isReady(obj) && pass(statusOf(obj)),
    timeoutMs: 60_000,
    description: `CertificateProfile ${name} Ready`,
  });

/** The profile as the emulator lists it, fetched independently of keyward. */
async function listed(slug: string): Promise<Record<string, unknown>> {
  for (let offset = 0; offset < 1000; offset += 100) {
    const url = `${emulator.url}/api/v1/pki/certificate-profiles?projectId=${PKI_PROJECT}&limit=100&offset=${offset}&search=${slug}`;
    const body = (await (await fetch(url)).json()) as { certificateProfiles: Record<string, unknown>[] };
    const hit = body.certificateProfiles.find((p) => p["slug"] === slug);
    if (hit) return hit;
  }
  throw new Error(`${slug} is not listed`);
}

/** keyward's gauge series for one resource: state → value. */
async function gauges(name: string): Promise<Record<string, number>> {
  const text = await keyward.operator.metrics.registry.metrics();
  const out: Record<string, number> = {};
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${GAUGE_NAME}{`)) continue;
    const labels: Record<string, string> = Object.fromEntries(
      [...line.matchAll(/(\w+)="([^"]*)"/g)].map((m): [string, string] => [m[1] ?? "", m[2] ?? ""]),
    );
    if (labels["namespace"] !== ns.name || labels["name"] !== name) continue;
    out[`${labels["slug"] ?? ""}/${labels["state"] ?? ""}`] = Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return out;
}

const expectedCounts = (seedMetrics: Record<string, unknown> | undefined): Counts => {
  const n = (k: string): number => {
    const v = seedMetrics?.[k];
    return typeof v === "number" ? v : 0;
  };
  return {
    total: n("totalCertificates"),
    active: n("activeCertificates"),
    expired: n("expiredCertificates"),
    expiring: n("expiringCertificates"),
    revoked: n("revokedCertificates"),
  };
};

const gaugeOf = (slug: string, c: Counts): Record<string, number> =>
  Object.fromEntries(Object.entries(c).map(([state, v]) => [`${slug}/${state}`, v]));

beforeAll(async () => {
  const seed = { ...defaultSeed, certificateProfiles: [...fleet, ...seededProfiles] };
  env = await startTestEnv({ prefix: "certprofile", token: TOKEN, emulator: { seed }, keyward: { resyncIntervalMs: 2_000 } });
  ({ kc, emulator, ns, keyward } = env);
});

afterAll(() => env?.stop());

describe("CertificateProfile", () => {
  it("mirrors each seeded profile into status and gauges", async () => {
    for (const p of seededProfiles) {
      await createCustom(kc, ns.name, "certificateprofiles", profileResource(p.slug, { projectId: PKI_PROJECT, slug: p.slug }));
    }
    for (const p of seededProfiles) {
      const status = statusOf(await readyProfile(p.slug));
      const entry = await listed(p.slug);
      const counts = expectedCounts(p["metrics"] as Record<string, unknown> | undefined);
      expect(status).toMatchObject({
        profileId: p["id"],
        projectId: PKI_PROJECT,
        slug: p.slug,
        description: p["description"],
        enrollmentType: p.enrollmentType,
        caId: entry["caId"],
        certificateTemplateId: entry["certificateTemplateId"],
        certificates: counts,
      });
      for (const kind of ["api", "est", "acme"] as const) {
        const idField = `${kind}ConfigId`;
        if (kind === p.enrollmentType) expect(status[idField]).toBe(entry[idField]);
        else expect(status[idField]).toBeUndefined();
      }
      expect(await gauges(p.slug)).toEqual(gaugeOf(p.slug, counts));
    }
    const web = statusOf(await getCustom(kc, ns.name, "certificateprofiles", "web-servers"));
    expect(web["apiConfig"]).toEqual({ autoRenew: true, renewBeforeDays: 14 });
    const edge = statusOf(await getCustom(kc, ns.name, "certificateprofiles", "edge-acme"));
    const acme = (await listed("edge-acme"))["acmeConfig"] as { directoryUrl: string };
    expect(edge["acmeConfig"]).toEqual({ directoryUrl: acme.directoryUrl });
    const est = statusOf(await getCustom(kc, ns.name, "certificateprofiles", "network-devices"));
    expect(est["estConfig"]).toEqual({ disableBootstrapCaValidation: false });
  });

  it("pages through the list: web-servers is on the second page of its search", async () => {
    await readyProfile("web-servers");
    const pages = emulator
      .requests()
      .filter((r) => r.operation === "listCertificateProfiles" && r.query["search"] === "web-servers")
      .map((r) => ({ offset: r.query["offset"], limit: r.query["limit"], enrollmentType: r.query["enrollmentType"] }));
    expect(pages).toContainEqual({ offset: "0", limit: "100", enrollmentType: "api" });
    expect(pages).toContainEqual({ offset: "100", limit: "100", enrollmentType: "api" });
    expect(pages.every((p) => p.limit === "100")).toBe(true);
  });

  it("never copies the EST passphrase", async () => {
    expect(((await listed("network-devices"))["estConfig"] as { passphrase?: string }).passphrase).toBe(PASSPHRASE);
    // exposedTexts throws where kubectl fails
    const exposed = await exposedTexts(ns.name, keyward.logs, "certificateprofiles");
    for (const text of exposed.all) {
      expect(text).not.toContain(PASSPHRASE);
      expect(text).not.toContain(TOKEN);
    }
    expect(exposed.objects).not.toMatch(/passphrase|caChain/);
  });

  it("picks up changed counts on resync", async () => {
    const internal = seededProfiles.find((p) => p.slug === "internal-services")!;
    const before = statusOf(await readyProfile("internal-services"));
    const changed = {
      totalCertificates: 44,
      activeCertificates: 36,
      expiredCertificates: 1,
      expiringCertificates: 5,
      revokedCertificates: 2,
    };
    emulator.seed({ certificateProfiles: [{ ...internal, apiConfigId: before["apiConfigId"], metrics: changed }] });
    const counts = expectedCounts(changed);
    const obj = await readyProfile("internal-services", (s) => s.certificates?.expiring === 5);
    expect(statusOf(obj).certificates).toEqual(counts);
    await waitFor(async () => ((await gauges("internal-services"))["internal-services/expiring"] === 5 ? true : undefined), {
      timeoutMs: 30_000,
      description: "gauge updated",
    });
    expect(await gauges("internal-services")).toEqual(gaugeOf("internal-services", counts));
  });

  it("resolves its project through a Project resource (projectRef)", async () => {
    await createCustom(kc, ns.name, "projects", {
      apiVersion: "keyward.dev/v1alpha1",
      kind: "Project",
      metadata: { name: "pki" },
      spec: { slug: "pki-project", creationPolicy: "Adopt" },
    });
    await createCustom(
      kc,
      ns.name,
      "certificateprofiles",
      profileResource("edge-by-ref", { projectRef: { name: "pki" }, slug: "edge-acme" }),
    );
    const obj = await readyProfile("edge-by-ref");
    expect(statusOf(obj)).toMatchObject({ projectId: PKI_PROJECT, slug: "edge-acme", enrollmentType: "acme" });
  });

  it("an unknown slug is Ready=False NotFound, with no gauge series", async () => {
    await createCustom(kc, ns.name, "certificateprofiles", profileResource("ghost", { projectId: PKI_PROJECT, slug: "no-such-profile" }));
    const obj = await waitForObject(kc, ns.name, "certificateprofiles", "ghost", {
      until: (o) => condition(o, "Ready")?.reason === "NotFound",
      timeoutMs: 30_000,
      description: "NotFound condition",
    });
    expect(condition(obj, "Ready")?.status).toBe("False");
    expect(condition(obj, "Ready")?.message).toContain("no-such-profile");
    expect(await gauges("ghost")).toEqual({});
  });

  it("rejects both or neither of projectRef and projectId at apply time", async () => {
    const apply = (name: string, spec: Record<string, unknown>) =>
      kubectl(["apply", "-n", ns.name, "-f", "-"], { input: JSON.stringify(profileResource(name, spec)) });
    const both = await apply("both", { projectId: PKI_PROJECT, projectRef: { name: "pki" }, slug: "edge-acme" });
    expect(both.code).not.toBe(0);
    expect(both.stderr).toContain("exactly one of projectRef, projectId");
    const neither = await apply("neither", { slug: "edge-acme" });
    expect(neither.code).not.toBe(0);
  });

  it("removes the gauge series when the resource is deleted", async () => {
    expect(Object.keys(await gauges("web-servers"))).toHaveLength(5);
    await deleteCustom(kc, ns.name, "certificateprofiles", "web-servers");
    await waitFor(async () => (Object.keys(await gauges("web-servers")).length === 0 ? true : undefined), {
      timeoutMs: 30_000,
      description: "gauge series removed",
    });
    expect(Object.keys(await gauges("edge-acme"))).toHaveLength(5);
  });
});
