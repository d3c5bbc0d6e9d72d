// CertificateProfile (read-only): one certificate profile, found by slug in a project, mirrored
// into status with its certificate counts and enrollment settings, and exported as Prometheus
// gauges so an alert on expiring certificates needs no other tool. keyward never creates,
// changes or deletes a profile; an unknown slug is Ready=False NotFound, looked up again on
// every resync.
//
// The get-by-slug answer has only the scalar fields; the counts and the enrollment configs are
// in the list, which is paged (limit 100) and narrowed by the slug search and the profile's
// enrollment type. An EST passphrase and CA chain are in that list too: they are never copied.
import { z } from "zod";
import type { Gauge } from "prom-client";
import {
  enrollmentTypes,
  type ApiClient,
  type CertificateProfile,
  type CertificateProfileListEntry,
  type EnrollmentType,
} from "../api/index.ts";
import { exactlyOneOf } from "../engine/cel.ts";
import type { CrdSource } from "../engine/kind.ts";
import { ReconcileError } from "../engine/errors.ts";
import { type ManagedContext, type Observation, type StatusPatch } from "../engine/module.ts";
import { kindGauge, type Metrics } from "../engine/metrics.ts";
import type { ObjectKey } from "../engine/types.ts";
import { keyString } from "../kube/keys.ts";
import {
  ageColumn,
  bounds,
  commonStatus,
  kindRef,
  notFoundAsUndefined,
  projectId,
  projectRef,
  providerConfigRef,
  readyColumns,
  pausedKey,
} from "./common.ts";
import { createSharedListing, DEFAULT_LISTING_TTL_MS, isSteady, listedOrTooLarge, listingScope, type SharedListing } from "./listing.ts";
import { connectVia, type ProviderResolver } from "./provider/resolver.ts";
import { resolveProjectId } from "./refs.ts";
import type { Kind, KindModule } from "./kind.ts";
import type { VersionChange } from "../lib/conversion.ts";
import { conditionEdits, initialismEdits, V1BETA1 } from "./common.ts";

export const ref = kindRef("CertificateProfile", "certificateprofiles");

export const PAGE_SIZE = 100;
/** A bound on paging, against a service whose totalCount never stops growing. */
const MAX_PAGES = 1_000;

export const specSchema = z
  .object({
    providerConfigRef: providerConfigRef.optional(),
    projectRef: projectRef.optional(),
    projectId: projectId.optional(),
    slug: z.string().min(1).max(255).describe("Slug of the certificate profile in the project."),
  })
  .strict();
export type CertificateProfileSpec = z.infer<typeof specSchema>;

const counts = z.object({
  total: z.number().int().describe("Every certificate issued under the profile (the Total column)."),
  active: z.number().int().describe("Certificates that are valid now."),
  expired: z.number().int().describe("Certificates past their expiry."),
  expiring: z
    .number()
    .int()
    .describe(
      "Certificates that expire soon, as the service counts them (the Expiring column; the keyward_certificate_profile_certificates gauge).",
    ),
  revoked: z.number().int().describe("Certificates revoked before their expiry."),
});

export const statusSchema = z.object({
  ...commonStatus,
  profileId: z.string().max(bounds.ID).optional().describe("The profile's id at the service."),
  projectId: z.string().max(bounds.ID).optional().describe("The id of the project the profile belongs to."),
  slug: z.string().max(bounds.NAME).optional().describe("The profile's slug at the service (the Slug column)."),
  description: z.string().max(bounds.DESCRIPTION).optional().describe("The profile's description at the service."),
  enrollmentType: z
    .string()
    .max(bounds.WORD)
    .optional()
    .describe("How certificates are enrolled under the profile: api, est or acme (the Enrollment column)."),
  caId: z.string().max(bounds.ID).optional().describe("The id of the certificate authority that issues the profile's certificates."),
  certificateTemplateId: z.string().max(bounds.ID).optional().describe("The id of the certificate template the profile uses."),
  estConfigId: z.string().max(bounds.ID).optional().describe("The id of the profile's EST enrollment settings (enrollmentType est)."),
  apiConfigId: z.string().max(bounds.ID).optional().describe("The id of the profile's API enrollment settings (enrollmentType api)."),
  acmeConfigId: z.string().max(bounds.ID).optional().describe("The id of the profile's ACME enrollment settings (enrollmentType acme)."),
  certificates: counts.optional().describe("Certificates issued under the profile, by state."),
  apiConfig: z
    .object({
      autoRenew: z.boolean().optional().describe("Whether the service renews certificates issued through the API before they expire."),
      renewBeforeDays: z.number().optional().describe("How many days before expiry an automatic renewal happens."),
    })
    .optional()
    .describe("API enrollment settings (enrollmentType api)."),
  acmeConfig: z
    .object({ directoryUrl: z.string().max(bounds.URL_MAX).optional().describe("The ACME directory URL clients enroll through.") })
    .optional()
    .describe("ACME enrollment settings (enrollmentType acme)."),
  estConfig: z
    .object({
      disableBootstrapCaValidation: z
        .boolean()
        .optional()
        .describe("Whether the EST endpoint skips validating the client's bootstrap certificate against a CA chain."),
    })
    .optional()
    .describe("EST settings; the passphrase and CA chain are never copied."),
});
export type CertificateProfileStatus = z.infer<typeof statusSchema>;

export const crdSource: CrdSource = {
  ...ref,
  singular: "certificateprofile",
  shortNames: ["kwcertprofile"],
  categories: ["keyward"],
  description: "Read-only: one certificate profile of a project, found by slug, mirrored into status with its certificate counts.",
  spec: specSchema,
  status: statusSchema,
  specValidations: [exactlyOneOf(["projectRef", "projectId"])],
  printerColumns: [
    { name: "Slug", type: "string", jsonPath: ".status.slug" },
    { name: "Enrollment", type: "string", jsonPath: ".status.enrollmentType" },
    { name: "Total", type: "integer", jsonPath: ".status.certificates.total" },
    { name: "Expiring", type: "integer", jsonPath: ".status.certificates.expiring" },
    { name: "Profile-ID", type: "string", jsonPath: ".status.profileId", priority: 1 },
    ...readyColumns,
    ageColumn,
  ],
};

export const GAUGE_NAME = "keyward_certificate_profile_certificates";
export const certificateStates = ["total", "active", "expired", "expiring", "revoked"] as const;
type GaugeLabel = "namespace" | "name" | "slug" | "state";

type Ctx = ManagedContext<CertificateProfileSpec, CertificateProfileStatus, ApiClient>;

const isEnrollmentType = (v: string): v is EnrollmentType => (enrollmentTypes as readonly string[]).includes(v);

/**
 * The list entry of profile `id`, paging through the project's profiles (limit 100, offset
 * += 100) narrowed by the slug search and the enrollment type. undefined: not listed.
 */
export async function findListEntry(
  api: Pick<ApiClient, "listCertificateProfiles">,
  q: { projectId: string; id: string; slug: string; enrollmentType?: string | null | undefined },
  pageSize = PAGE_SIZE,
): Promise<CertificateProfileListEntry | undefined> {
  const enrollment = q.enrollmentType && isEnrollmentType(q.enrollmentType) ? { enrollmentType: q.enrollmentType } : {};
  for (let page = 0, offset = 0; page < MAX_PAGES; page++, offset += pageSize) {
    const { certificateProfiles, totalCount } = await api.listCertificateProfiles({
      projectId: q.projectId,
      offset,
      limit: pageSize,
      search: q.slug,
      ...enrollment,
    });
    const hit = certificateProfiles.find((p) => p.id === q.id);
    if (hit) return hit;
    if (certificateProfiles.length === 0 || offset + pageSize >= totalCount) return undefined;
  }
  return undefined;
}

/** Every profile of a project, page by page (limit 100): one listing for a whole resync. */
export async function listAllProfiles(
  api: Pick<ApiClient, "listCertificateProfiles">,
  projectId: string,
  pageSize = PAGE_SIZE,
): Promise<CertificateProfileListEntry[]> {
  const all: CertificateProfileListEntry[] = [];
  for (let page = 0, offset = 0; page < MAX_PAGES; page++, offset += pageSize) {
    const { certificateProfiles, totalCount } = await api.listCertificateProfiles({ projectId, offset, limit: pageSize });
    all.push(...certificateProfiles);
    if (certificateProfiles.length === 0 || offset + pageSize >= totalCount) break;
  }
  return all;
}

/** Status from the get-by-slug scalars and the list entry; secrets of the EST config are left out. */
/** Absent at the service → removed from status (null), so status never goes stale. */
function orNull<T>(v: T | null | undefined): T | null {
  return v ?? null;
}

export function statusFrom(profile: CertificateProfile, entry: CertificateProfileListEntry): StatusPatch<CertificateProfileStatus> {
  const m = entry.metrics;
  return {
    profileId: profile.id,
    projectId: profile.projectId,
    slug: profile.slug,
    description: orNull(profile.description),
    enrollmentType: profile.enrollmentType,
    caId: orNull(profile.caId),
    certificateTemplateId: orNull(profile.certificateTemplateId),
    estConfigId: orNull(profile.estConfigId),
    apiConfigId: orNull(profile.apiConfigId),
    acmeConfigId: orNull(profile.acmeConfigId),
    certificates: m
      ? {
          total: m.totalCertificates,
          active: m.activeCertificates,
          expired: m.expiredCertificates,
          expiring: m.expiringCertificates,
          revoked: m.revokedCertificates,
        }
      : null,
    apiConfig: entry.apiConfig
      ? { autoRenew: entry.apiConfig.autoRenew ?? undefined, renewBeforeDays: entry.apiConfig.renewBeforeDays ?? undefined }
      : null,
    acmeConfig: entry.acmeConfig ? { directoryUrl: entry.acmeConfig.directoryUrl ?? undefined } : null,
    estConfig: entry.estConfig ? { disableBootstrapCaValidation: entry.estConfig.disableBootstrapCaValidation ?? undefined } : null,
  };
}

/** The gauge series of each object, so a slug change or a deletion removes exactly what was set. */
function profileGauges(metrics: Metrics) {
  const gauge: Gauge<GaugeLabel> = kindGauge(metrics, {
    name: GAUGE_NAME,
    help: "Certificates of a certificate profile by state (total, active, expired, expiring, revoked), per CertificateProfile resource",
    labelNames: ["namespace", "name", "slug", "state"],
  });
  const slugs = new Map<string, string>();
  const clear = (key: ObjectKey): void => {
    const slug = slugs.get(keyString(key));
    if (slug === undefined) return;
    for (const state of certificateStates) gauge.remove({ namespace: key.namespace, name: key.name, slug, state });
    slugs.delete(keyString(key));
  };
  return {
    set(key: ObjectKey, slug: string, c: NonNullable<CertificateProfileStatus["certificates"]>): void {
      if (slugs.get(keyString(key)) !== slug) clear(key);
      slugs.set(keyString(key), slug);
      for (const state of certificateStates) gauge.set({ namespace: key.namespace, name: key.name, slug, state }, c[state]);
    },
    clear,
  };
}

/** A steady resync pass reads its profile from the project's shared listing (the entry carries the scalars too). */
async function fromListing(
  listing: SharedListing<CertificateProfileListEntry>,
  c: Ctx,
  projectId: string,
): Promise<CertificateProfileListEntry | undefined> {
  if (!isSteady(c.obj)) return undefined;
  return (await listedOrTooLarge(listing, listingScope(c, projectId), () => listAllProfiles(c.conn, projectId)))?.get(c.spec.slug);
}

async function observe(
  c: Ctx,
  gauges: ReturnType<typeof profileGauges>,
  listing: SharedListing<CertificateProfileListEntry>,
): Promise<Observation<CertificateProfileStatus>> {
  const projectId = await resolveProjectId(c.kube, c.key.namespace, c.spec);
  const listed = await fromListing(listing, c, projectId);
  if (listed) return observed(c, gauges, listed, listed);
  const profile = await c.conn.getCertificateProfileBySlug(c.spec.slug, projectId).catch(notFoundAsUndefined);
  if (!profile) {
    gauges.clear(c.key);
    return {
      exists: false,
      upToDate: false,
      status: {},
      canCreate: false,
      absent: { reason: "NotFound", message: `no certificate profile with slug ${c.spec.slug} in project ${projectId}` },
    };
  }
  const entry = await findListEntry(c.conn, { projectId, id: profile.id, slug: profile.slug, enrollmentType: profile.enrollmentType });
  if (!entry) {
    throw new ReconcileError(
      "NotListed",
      `certificate profile ${profile.slug} (${profile.id}) was found by slug but is not in the project's profile list`,
      { retryable: true },
    );
  }
  return observed(c, gauges, profile, entry);
}

function observed(
  c: Ctx,
  gauges: ReturnType<typeof profileGauges>,
  profile: CertificateProfile,
  entry: CertificateProfileListEntry,
): Observation<CertificateProfileStatus> {
  const status = statusFrom(profile, entry);
  if (status.certificates) gauges.set(c.key, profile.slug, status.certificates);
  else gauges.clear(c.key);
  const total = status.certificates
    ? `${status.certificates.total} certificates, ${status.certificates.expiring} expiring`
    : "no certificate counts";
  return {
    exists: true,
    upToDate: true,
    status,
    readiness: { ready: true, reason: "Available", message: `certificate profile ${profile.slug} (${profile.enrollmentType}): ${total}` },
  };
}

export function certificateProfileModule(deps: {
  providers: ProviderResolver;
  metrics: Metrics;
  listingTtlMs?: number;
}): KindModule<CertificateProfileSpec, CertificateProfileStatus, ApiClient> {
  const gauges = profileGauges(deps.metrics);
  const listing = createSharedListing<CertificateProfileListEntry>((p) => p.slug, deps.listingTtlMs ?? DEFAULT_LISTING_TTL_MS);
  return {
    ref,
    parseSpec: (raw) => specSchema.parse(raw),
    needsFinalizer: () => false,
    connect: connectVia(deps.providers),
    observe: (c) => observe(c, gauges, listing),
    forget: (key) => gauges.clear(key),
  };
}

/** How v1alpha1 becomes v1beta1 (docs/api-review.md): ids spelled as initialisms. */
export const v1beta1: VersionChange = {
  from: ref.version,
  to: V1BETA1,
  edits: [
    ...conditionEdits,
    { op: "default", path: "spec.providerConfigRef.kind", value: "ProviderConfig" },
    ...initialismEdits(
      "spec.projectId",
      "status.profileId",
      "status.projectId",
      "status.caId",
      "status.certificateTemplateId",
      "status.estConfigId",
      "status.apiConfigId",
      "status.acmeConfigId",
      "status.acmeConfig.directoryUrl",
    ),
  ],
};

export const kind: Kind = {
  ref,
  crd: crdSource,
  conversion: v1beta1,
  reasons: {
    NotListed: { means: "retrying", doc: "The profile exists but the service's listing does not show it yet." },
  },
  refers: { providerConfig: true, project: true },
  serviceIdFields: ["profileId"],
  metadata: [pausedKey],
  controller: (d) => ({
    reconcile: d.managed(certificateProfileModule({ providers: d.providers, metrics: d.metrics, listingTtlMs: d.listingTtlMs })),
  }),
};
