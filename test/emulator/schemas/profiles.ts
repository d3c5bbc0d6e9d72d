// Query schemas of the certificate-profile reads. Names are the real service's; `search` is
// the real service's optional slug filter, beyond the four parameters interface.md lists.
import { z } from "zod";

export const enrollmentTypes = ["api", "est", "acme"] as const;

export const listProfilesQuery = z.object({
  projectId: z.string().min(1),
  offset: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  enrollmentType: z.enum(enrollmentTypes).optional(),
  search: z.string().optional(),
});

export const profileSlugParams = z.object({ slug: z.string().min(1) });
export const profileSlugQuery = z.object({ projectId: z.string().min(1) });
