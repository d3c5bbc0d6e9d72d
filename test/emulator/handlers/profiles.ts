// Certificate profiles (read-only): list with metrics and configs, get by slug (scalars only).
// Both accept anonymous requests: interface.md's samples for them carry no Authorization.
import { notFound } from "../errors.ts";
import type { HandlerContext, Route } from "../router.ts";
import type { ProfileRec, State } from "../state.ts";
import { parse } from "../schemas/parse.ts";
import { listProfilesQuery, profileSlugParams, profileSlugQuery } from "../schemas/profiles.ts";

/** The scalar fields, all of them: the config ids of other enrollment types are null. */
function scalarView(p: ProfileRec): Record<string, unknown> {
  return {
    id: p.id,
    projectId: p.projectId,
    caId: p.caId,
    certificateTemplateId: p.certificateTemplateId,
    slug: p.slug,
    description: p.description,
    enrollmentType: p.enrollmentType,
    estConfigId: p.estConfigId ?? null,
    apiConfigId: p.apiConfigId ?? null,
    acmeConfigId: p.acmeConfigId ?? null,
    createdAt: p.createdAt,
    updatedAt: p.updatedAt,
  };
}

function listEntryView(p: ProfileRec): Record<string, unknown> {
  const view = { ...scalarView(p), metrics: { profileId: p.id, ...p.metrics } };
  if (p.estConfig) Object.assign(view, { estConfig: { ...p.estConfig } });
  if (p.apiConfig) Object.assign(view, { apiConfig: { ...p.apiConfig } });
  if (p.acmeConfig) Object.assign(view, { acmeConfig: { ...p.acmeConfig } });
  return view;
}

/** A project is known when it exists or when seeded profiles name it. */
function requireProfileProject(state: State, projectId: string): void {
  const known = projectId in state.projects || Object.values(state.profiles).some((p) => p.projectId === projectId);
  if (!known) throw notFound(`Project with ID '${projectId}' not found`);
}

function listProfiles({ core, query }: HandlerContext): unknown {
  const q = parse(listProfilesQuery, query);
  requireProfileProject(core.state, q.projectId);
  const search = q.search?.toLowerCase();
  const matching = Object.values(core.state.profiles)
    .filter((p) => p.projectId === q.projectId)
    .filter((p) => q.enrollmentType === undefined || p.enrollmentType === q.enrollmentType)
    .filter((p) => search === undefined || p.slug.toLowerCase().includes(search))
    .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  return { certificateProfiles: matching.slice(q.offset, q.offset + q.limit).map(listEntryView), totalCount: matching.length };
}

function getProfileBySlug({ core, params, query }: HandlerContext): unknown {
  const { slug } = parse(profileSlugParams, params);
  const { projectId } = parse(profileSlugQuery, query);
  const profile = Object.values(core.state.profiles).find((p) => p.projectId === projectId && p.slug === slug);
  if (!profile) throw notFound(`Certificate profile with slug '${slug}' not found`);
  return { certificateProfile: scalarView(profile) };
}

export const profileRoutes: Route[] = [
  {
    method: "GET",
    path: "/api/v1/pki/certificate-profiles",
    operation: "listCertificateProfiles",
    limit: "read",
    anonymous: true,
    handle: listProfiles,
  },
  {
    method: "GET",
    path: "/api/v1/pki/certificate-profiles/slug/:slug",
    operation: "getCertificateProfileBySlug",
    limit: "read",
    anonymous: true,
    handle: getProfileBySlug,
  },
];
