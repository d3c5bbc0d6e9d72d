// Certificate profiles (read-only): list with metrics and configs, get by slug with scalars
// only, the enrollment-type filter, paging limits. Query parameter names are "not shown" in
// interface.md; projectId, offset, limit and enrollmentType are the real service's (README.md).

import type { ProbeContext } from "./context.ts";
import { compare, expectError, expectOk, field } from "./context.ts";
import type { Spec } from "./shapes.ts";
import {
  absentProblems,
  acmeConfigSpec,
  apiConfigSpec,
  certificateMetricsSpec,
  certificateProfileScalarSpec,
  estConfigSpec,
  LIST_ONLY_PROFILE_FIELDS,
  num,
  object,
  shapeProblems,
  uuid,
} from "./shapes.ts";

const LIST = "/api/v1/pki/certificate-profiles";

// The list entry of each enrollment type carries that type's config and config id.
const CONFIG_OF: Record<"api" | "est" | "acme", [string, string, Spec]> = {
  api: ["apiConfig", "apiConfigId", apiConfigSpec],
  est: ["estConfig", "estConfigId", estConfigSpec],
  acme: ["acmeConfig", "acmeConfigId", acmeConfigSpec],
};

function listItemProblems(item: unknown): string[] {
  const problems = [
    ...shapeProblems(item, certificateProfileScalarSpec),
    ...shapeProblems(item, { metrics: object(certificateMetricsSpec) }),
  ];
  const type = field(item, "enrollmentType");
  if (type === "api" || type === "est" || type === "acme") {
    const [configKey, idKey, spec] = CONFIG_OF[type];
    problems.push(...shapeProblems(item, { [configKey]: object(spec), [idKey]: uuid }));
  }
  const slug = field(item, "slug");
  return problems.map((p) => `${typeof slug === "string" ? slug : "?"}: ${p}`);
}

function profilesOf(body: unknown): unknown[] {
  const list = field(body, "certificateProfiles");
  return Array.isArray(list) ? list : [];
}

export async function probeCertificateProfiles(ctx: ProbeContext): Promise<void> {
  const { projectId, profiles } = ctx.fixtures.certificates;
  const res = await ctx.call("GET", LIST, { query: { projectId, limit: 100 } });
  const items = profilesOf(res.body);
  const missing = profiles.filter((p) => !items.some((i) => field(i, "slug") === p.slug)).map((p) => p.slug);
  ctx.record(
    "certificate-profile.list.shape",
    "list answers {certificateProfiles: [...], totalCount} with metrics and the config of each profile's enrollment type",
    [
      ...expectOk(res),
      ...shapeProblems(res.body, { totalCount: num }),
      ...(Array.isArray(field(res.body, "certificateProfiles")) ? [] : ["certificateProfiles: missing or not an array"]),
      ...items.flatMap(listItemProblems),
      ...(missing.length > 0 ? [`fixture profiles not listed: ${missing.join(", ")}`] : []),
    ],
  );
  await probeGetBySlug(ctx);
  await probeFilterAndPaging(ctx);
  await probeListLimits(ctx);
}

async function probeGetBySlug(ctx: ProbeContext): Promise<void> {
  const { projectId, profiles } = ctx.fixtures.certificates;
  const first = profiles[0];
  if (first === undefined) {
    ctx.record("certificate-profile.get-by-slug.shape", "get profile by slug", ["no certificate profile fixture"]);
    return;
  }
  const res = await ctx.call("GET", `${LIST}/slug/${first.slug}`, { query: { projectId } });
  const profile = field(res.body, "certificateProfile");
  ctx.record("certificate-profile.get-by-slug.shape", "get by slug answers {certificateProfile} with the scalar fields only", [
    ...expectOk(res),
    ...shapeProblems(profile, certificateProfileScalarSpec),
    ...absentProblems(profile, LIST_ONLY_PROFILE_FIELDS),
    ...compare("slug", field(profile, "slug"), first.slug),
    ...compare("enrollmentType", field(profile, "enrollmentType"), first.enrollmentType),
  ]);
  const unknown = await ctx.call("GET", `${LIST}/slug/no-such-profile-${ctx.runId}`, { query: { projectId } });
  ctx.record("certificate-profile.get-by-slug.unknown", "get by an unknown slug answers 404", expectError(unknown, 404));
  const noProject = await ctx.call("GET", `${LIST}/slug/${first.slug}`, { query: { projectId: "" } });
  ctx.record(
    "certificate-profile.get-by-slug.project-min-length",
    "get by slug with an empty projectId answers 422",
    expectError(noProject, 422),
  );
}

async function probeFilterAndPaging(ctx: ProbeContext): Promise<void> {
  const { projectId, profiles } = ctx.fixtures.certificates;
  for (const type of ["api", "est", "acme"] as const) {
    const expected = profiles.filter((p) => p.enrollmentType === type).map((p) => p.slug);
    if (expected.length === 0) continue;
    const res = await ctx.call("GET", LIST, { query: { projectId, enrollmentType: type, limit: 100 } });
    const items = profilesOf(res.body);
    ctx.record(`certificate-profile.list.filter-${type}`, `list with enrollmentType=${type} lists only ${type} profiles`, [
      ...expectOk(res),
      ...items.flatMap((i, n) => compare(`certificateProfiles[${n}].enrollmentType`, field(i, "enrollmentType"), type)),
      ...expected.filter((slug) => !items.some((i) => field(i, "slug") === slug)).map((slug) => `${slug} not listed`),
    ]);
  }
  const page = await ctx.call("GET", LIST, { query: { projectId, limit: 1, offset: 0 } });
  const total = field(page.body, "totalCount");
  ctx.record("certificate-profile.list.page", "limit=1 answers at most one profile, and totalCount counts them all", [
    ...expectOk(page),
    ...(profilesOf(page.body).length <= 1 ? [] : [`expected at most 1 profile, got ${profilesOf(page.body).length}`]),
    ...(typeof total === "number" && total >= profiles.length
      ? []
      : [`totalCount ${JSON.stringify(total)} is below the ${profiles.length} fixture profiles`]),
  ]);
}

async function probeListLimits(ctx: ProbeContext): Promise<void> {
  const { projectId } = ctx.fixtures.certificates;
  const cases: [string, string, Record<string, string | number>, boolean][] = [
    ["limit.profile-page-size.min-accepted", "list with limit=1 is accepted", { limit: 1 }, true],
    ["limit.profile-page-size.min-rejected", "list with limit=0 answers 422", { limit: 0 }, false],
    ["limit.profile-page-size.max-accepted", "list with limit=100 is accepted", { limit: 100 }, true],
    ["limit.profile-page-size.max-rejected", "list with limit=101 answers 422", { limit: 101 }, false],
    ["limit.profile-offset.min-accepted", "list with offset=0 is accepted", { offset: 0 }, true],
    ["limit.profile-offset.min-rejected", "list with offset=-1 answers 422", { offset: -1 }, false],
    [
      "certificate-profile.list.enrollment-type-enum",
      "list with an enrollmentType outside api, est, acme answers 422",
      { enrollmentType: "not-a-type" },
      false,
    ],
  ];
  for (const [id, description, query, accepted] of cases) {
    const res = await ctx.call("GET", LIST, { query: { projectId, ...query } });
    ctx.record(id, description, accepted ? [...expectOk(res), ...shapeProblems(res.body, { totalCount: num })] : expectError(res, 422));
  }
  const empty = await ctx.call("GET", LIST, { query: { projectId: "" } });
  ctx.record("certificate-profile.list.project-min-length", "list with an empty projectId answers 422", expectError(empty, 422));
}
