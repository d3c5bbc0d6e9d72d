import { z } from "zod";
import { limits, optionalBoolean, optionalNumber, optionalString } from "./common.ts";

export const enrollmentTypes = ["api", "est", "acme"] as const;
export type EnrollmentType = (typeof enrollmentTypes)[number];

/** The scalar fields: all get-by-slug carries. */
export const certificateProfileSchema = z.looseObject({
  id: z.string(),
  projectId: z.string(),
  caId: optionalString(),
  certificateTemplateId: optionalString(),
  slug: z.string(),
  description: optionalString(),
  enrollmentType: z.string(),
  estConfigId: optionalString(),
  apiConfigId: optionalString(),
  acmeConfigId: optionalString(),
  createdAt: optionalString(),
  updatedAt: optionalString(),
});
export type CertificateProfile = z.infer<typeof certificateProfileSchema>;

export const profileMetricsSchema = z.looseObject({
  profileId: optionalString(),
  totalCertificates: z.number(),
  activeCertificates: z.number(),
  expiredCertificates: z.number(),
  expiringCertificates: z.number(),
  revokedCertificates: z.number(),
});
export type ProfileMetrics = z.infer<typeof profileMetricsSchema>;

/** A list entry: the scalars plus metrics and the enrollment configs. estConfig carries a passphrase. */
export const certificateProfileListEntrySchema = certificateProfileSchema.extend({
  metrics: profileMetricsSchema.nullish(),
  estConfig: z
    .looseObject({
      id: optionalString(),
      disableBootstrapCaValidation: optionalBoolean(),
      passphrase: optionalString(),
      caChain: optionalString(),
    })
    .nullish(),
  apiConfig: z.looseObject({ id: optionalString(), autoRenew: optionalBoolean(), renewBeforeDays: optionalNumber() }).nullish(),
  acmeConfig: z.looseObject({ id: optionalString(), directoryUrl: optionalString() }).nullish(),
});
export type CertificateProfileListEntry = z.infer<typeof certificateProfileListEntrySchema>;

export const listCertificateProfilesResponseSchema = z.looseObject({
  certificateProfiles: z.array(certificateProfileListEntrySchema),
  totalCount: z.number(),
});
export type CertificateProfileList = z.infer<typeof listCertificateProfilesResponseSchema>;

export const getCertificateProfileResponseSchema = z.looseObject({ certificateProfile: certificateProfileSchema });

/**
 * List query. interface.md leaves the names out; the real service's are `projectId`,
 * `offset` (default 0), `limit` (default 20) and `enrollmentType`. `search` (a slug filter)
 * is the real service's too, beyond interface.md's four; `issuerType` and `caId` are not used.
 */
export const listCertificateProfilesQuerySchema = z.object({
  projectId: z.string().min(limits.profileProjectIdMin),
  offset: z.number().int().min(limits.profileOffsetMin).optional(),
  limit: z.number().int().min(limits.profilePageSize.min).max(limits.profilePageSize.max).optional(),
  enrollmentType: z.enum(enrollmentTypes).optional(),
  /** Beyond interface.md: the real service's slug filter. */
  search: z.string().optional(),
});
export type ListCertificateProfilesQuery = z.input<typeof listCertificateProfilesQuerySchema>;

/** Get by slug: path slug (min 1) and the `projectId` query string (min 1). */
export const getCertificateProfileBySlugParamsSchema = z.object({
  slug: z.string().min(limits.profileSlugMin),
  projectId: z.string().min(limits.profileProjectIdMin),
});
