import { z } from "zod";

// Shared building blocks of the request and response schemas.
//
// Responses are parsed with loose objects: the fields keyward relies on are checked, every
// field the service adds is kept as it came (never dropped), so a newer service does not break
// an older keyward. Requests are checked, never transformed: the client sends the caller's
// object as given once it passed (see client.ts), so a schema here never rewrites a body.

/** Lengths and ranges of interface.md's Limits section and body tables, in one place. */
export const limits = {
  syncName: { min: 1, max: 64 },
  syncEnvironment: { min: 1, max: 64 },
  syncDescriptionMax: 256,
  syncProjectIdMin: 1,
  syncSecretPathMin: 1,
  projectSlug: { min: 5, max: 36 },
  templateName: { min: 1, max: 64 },
  projectUpdateNameMax: 64,
  projectUpdateDescriptionMax: 256,
  pitVersionLimit: { min: 1, max: 100 },
  profilePageSize: { min: 1, max: 100 },
  profileOffsetMin: 0,
  roleListMin: 1,
  slugLookup: { min: 1, max: 64 },
  usernameMin: 1,
  pathProjectIdMin: 1,
  profileSlugMin: 1,
  profileProjectIdMin: 1,
} as const;

/** A uuid in the 8-4-4-4-12 hex form, without RFC version/variant checks (as the service does). */
export const uuid = () => z.guid();

/** ISO 8601 date-time as sent in requests. */
export const isoDateTime = () => z.iso.datetime({ offset: true });

/** A response string that may be absent or null (the service returns null for unset columns). */
export const optionalString = () => z.string().nullish();
export const optionalNumber = () => z.number().nullish();
export const optionalBoolean = () => z.boolean().nullish();

/** The error body of every non-2xx answer: `{reqId, statusCode, message, error}`. */
export const errorBodySchema = z.looseObject({
  reqId: z.string().optional(),
  statusCode: z.number().optional(),
  // 422 carries the zod issues (an array) here; every other status a string.
  message: z.unknown().optional(),
  error: z.string().optional(),
});
export type ErrorBody = z.infer<typeof errorBodySchema>;
