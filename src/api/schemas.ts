// zod schemas of every request body and response of interface.md, with its limits, and the
// TypeScript types inferred from them. Split by resource under ./schemas/.
export * from "./schemas/common.ts";
export * from "./schemas/projects.ts";
export * from "./schemas/memberships.ts";
export * from "./schemas/tokens.ts";
export * from "./schemas/profiles.ts";
export * from "./schemas/syncs.ts";
