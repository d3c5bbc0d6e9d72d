// Secret syncs, one per destination: create (shape, defaults, destination and connection.app
// per the naming note), trigger and remove (pending, then settled), update; plus duplicates,
// 404s, the in-progress 400 and the sync rows of the Limits section.
//
// interface.md has no read operation for a sync, so waiting for a job to settle uses the
// real service's GET /api/v1/secret-syncs/{destination}/{syncId}, which DESIGN.md lists as
// beyond the interface (README.md).

import type { HttpResponse } from "./http.ts";
import { sleep } from "./http.ts";
import type { ProbeContext, ProbeResult } from "./context.ts";
import {
  compare,
  expectError,
  expectNotValidationFailure,
  expectOk,
  field,
  fieldString,
  makeRecorder,
  repeat,
  UNKNOWN_UUID,
} from "./context.ts";
import type { Destination } from "./shapes.ts";
import { dateTime, DESTINATIONS, nullable, oneOf, secretSyncSpec, shapeProblems, str } from "./shapes.ts";
import type { ProbeProject } from "./projects.ts";

const SAMPLE_CONFIG: Record<Destination, Record<string, unknown>> = {
  "workflow-engine": { scope: "cluster", clusterUUID: "3f0c7a52-probe-cluster" },
  "code-host": { scope: "organization", org: "probe-org", visibility: "all", selectedRepositoryIds: [101, 202] },
  "data-platform": { scope: "probe-scope" },
  "cloud-secrets-manager": { mappingBehavior: "one-to-one", region: "us-east-1" },
  "app-platform": { appId: "probe-app-id", appName: "probe-app" },
  "git-host": { repositorySlug: "probe-repo", environmentId: "probe-env-id", workspaceSlug: "probe-workspace" },
  monitoring: { accountId: "probe-account", accountName: "Probe Account", groupId: "probe-group", groupName: "Probe Group" },
};

function sampleSyncOptions(destination: Destination): Record<string, unknown> {
  const common = { initialSyncBehavior: "overwrite-destination", keySchema: "probe-{{secretKey}}", disableSecretDeletion: false };
  if (destination !== "cloud-secrets-manager") return common;
  return { ...common, keyId: "alias/probe", tags: [{ key: "owner", value: "probe" }], syncSecretMetadataAsTags: false };
}

const base = (d: Destination): string => `/api/v1/secret-syncs/${d}`;
const SETTLED = ["succeeded", "failed"];
const IN_PROGRESS = ["pending", "running"];

interface SyncTarget {
  project: ProbeProject;
  envSlug: string;
}

function createBody(ctx: ProbeContext, t: SyncTarget, d: Destination, overrides: Record<string, unknown>): Record<string, unknown> {
  return {
    name: `probe-${d}-${ctx.runId}`,
    projectId: t.project.id,
    connectionId: ctx.fixtures.connections[d],
    environment: t.envSlug,
    secretPath: "/",
    syncOptions: sampleSyncOptions(d),
    destinationConfig: SAMPLE_CONFIG[d],
    ...overrides,
  };
}

export async function probeSecretSyncs(ctx: ProbeContext, project: ProbeProject | undefined): Promise<void> {
  if (project?.envSlug === undefined) {
    ctx.record("sync.prerequisite", "a project with an environment to sync from", [
      "the probe project or its environments were not created",
    ]);
    return;
  }
  const target = { project, envSlug: project.envSlug };
  // Destinations run side by side (each waits on jobs); their results are kept in order.
  const perDestination = await Promise.all(
    DESTINATIONS.map(async (d) => {
      const local: ProbeResult[] = [];
      await probeDestination({ ...ctx, record: makeRecorder(local) }, target, d);
      return local;
    }),
  );
  const results: ProbeResult[] = perDestination.flat();
  for (const r of results) ctx.record(r.id, r.description, r.passed ? [] : [r.detail], r.detail);
  await probeSyncErrors(ctx, target, "code-host");
  await probeSyncLimits(ctx, target, "data-platform");
}

async function probeDestination(ctx: ProbeContext, t: SyncTarget, d: Destination): Promise<void> {
  const body = createBody(ctx, t, d, {});
  const res = await ctx.call("POST", base(d), { body });
  const sync = field(res.body, "secretSync");
  ctx.record(
    `sync.${d}.create.shape`,
    `create ${d} sync answers {secretSync} with every field, destination ${d} and connection.app per the naming note`,
    [...expectOk(res), ...shapeProblems(sync, secretSyncSpec(d))],
  );
  ctx.record(`sync.${d}.create.request-fields`, `create ${d} sync: isAutoSyncEnabled defaults to true; the record reflects the request`, [
    ...compare("isAutoSyncEnabled", field(sync, "isAutoSyncEnabled"), true),
    ...compare("name", field(sync, "name"), body.name),
    ...compare("projectId", field(sync, "projectId"), t.project.id),
    ...compare("connectionId", field(sync, "connectionId"), ctx.fixtures.connections[d]),
    ...compare("connection.id", field(field(sync, "connection"), "id"), ctx.fixtures.connections[d]),
    ...compare("environment.slug", field(field(sync, "environment"), "slug"), t.envSlug),
    ...compare("folder.path", field(field(sync, "folder"), "path"), "/"),
    ...compare("destinationConfig", JSON.stringify(field(sync, "destinationConfig")), JSON.stringify(SAMPLE_CONFIG[d])),
  ]);
  const id = fieldString(sync, "id");
  if (id === undefined) return;
  // Auto-sync queues a sync at creation (DESIGN.md); let it finish before triggering one.
  await waitFor(ctx, d, id, (s) => !IN_PROGRESS.includes(String(field(s, "syncStatus"))));
  await probeJob(ctx, d, id, "sync", d === "workflow-engine");
  await probeJob(ctx, d, id, "remove", false);
  const update = await ctx.call("PATCH", `${base(d)}/${id}`, { body: { description: "updated by the probe", isAutoSyncEnabled: false } });
  const updated = field(update.body, "secretSync");
  ctx.record(`sync.${d}.update`, `update ${d} sync answers {secretSync} with the updated fields`, [
    ...expectOk(update),
    ...shapeProblems(updated, secretSyncSpec(d)),
    ...compare("description", field(updated, "description"), "updated by the probe"),
    ...compare("isAutoSyncEnabled", field(updated, "isAutoSyncEnabled"), false),
  ]);
}

const JOB = {
  sync: {
    path: "sync-secrets",
    status: "syncStatus",
    jobId: "lastSyncJobId",
    message: "lastSyncMessage",
    at: "lastSyncedAt",
    verb: "trigger",
  },
  remove: {
    path: "remove-secrets",
    status: "removeStatus",
    jobId: "lastRemoveJobId",
    message: "lastRemoveMessage",
    at: "lastRemovedAt",
    verb: "remove",
  },
} as const;

async function probeJob(ctx: ProbeContext, d: Destination, id: string, kind: keyof typeof JOB, tryAgainAtOnce: boolean): Promise<void> {
  const job = JOB[kind];
  const res = await ctx.call("POST", `${base(d)}/${id}/${job.path}`);
  const sync = field(res.body, "secretSync");
  ctx.record(`sync.${d}.${job.verb}.pending`, `${job.path} answers the sync record with ${job.status} pending`, [
    ...expectOk(res),
    ...shapeProblems(sync, secretSyncSpec(d)),
    ...compare(job.status, field(sync, job.status), "pending"),
  ]);
  if (tryAgainAtOnce) {
    const again = await ctx.call("POST", `${base(d)}/${id}/${job.path}`);
    ctx.record(
      `sync.${job.verb}.in-progress`,
      `${job.path} while the sync's job is still pending or running answers 400`,
      expectError(again, 400),
    );
  }
  const settled = await waitFor(ctx, d, id, (s) => SETTLED.includes(String(field(s, job.status))));
  ctx.record(
    `sync.${d}.${job.verb}.settled`,
    `after ${job.path}, ${job.status} settles (succeeded or failed) with ${job.jobId}, ${job.message} and ${job.at}`,
    [
      ...settled.problems,
      ...shapeProblems(settled.sync, {
        [job.status]: oneOf(SETTLED),
        [job.jobId]: (v) => (typeof v === "string" && v !== "" ? [] : [`expected a job id, got ${JSON.stringify(v)}`]),
        [job.message]: nullable(str),
        [job.at]: dateTime,
      }),
    ],
  );
}

// Poll the sync (beyond the interface, see the header) until `done` holds or time runs out.
async function waitFor(
  ctx: ProbeContext,
  d: Destination,
  id: string,
  done: (sync: unknown) => boolean,
): Promise<{ sync: unknown; problems: string[] }> {
  const deadline = Date.now() + ctx.settleTimeoutMs;
  let last: HttpResponse | undefined;
  while (Date.now() < deadline) {
    last = await ctx.call("GET", `${base(d)}/${id}`);
    const sync = field(last.body, "secretSync");
    if (last.status === 200 && done(sync)) return { sync, problems: [] };
    await sleep(ctx.pollIntervalMs);
  }
  const why = last?.status === 200 ? "the job did not settle in time" : `reading the sync answered HTTP ${last?.status ?? 0}`;
  return { sync: field(last?.body, "secretSync"), problems: [`${why} (waited ${ctx.settleTimeoutMs} ms)`] };
}

async function probeSyncErrors(ctx: ProbeContext, t: SyncTarget, d: Destination): Promise<void> {
  const dup = await ctx.call("POST", base(d), { body: createBody(ctx, t, d, {}) });
  ctx.record("sync.create.duplicate-name", "create a sync with a name already used in the project answers 400", expectError(dup, 400));
  const cases: [string, string, Promise<HttpResponse>][] = [
    [
      "sync.trigger.unknown-id",
      "sync-secrets for an unknown sync id answers 404",
      ctx.call("POST", `${base(d)}/${UNKNOWN_UUID}/sync-secrets`),
    ],
    [
      "sync.remove.unknown-id",
      "remove-secrets for an unknown sync id answers 404",
      ctx.call("POST", `${base(d)}/${UNKNOWN_UUID}/remove-secrets`),
    ],
    [
      "sync.update.unknown-id",
      "update an unknown sync id answers 404",
      ctx.call("PATCH", `${base(d)}/${UNKNOWN_UUID}`, { body: { description: "x" } }),
    ],
  ];
  for (const [id, description, pending] of cases) ctx.record(id, description, expectError(await pending, 404));
  const notUuid = await ctx.call("PATCH", `${base(d)}/not-a-uuid`, { body: { description: "x" } });
  ctx.record("sync.update.sync-id-uuid", "update with a syncId that is not a uuid answers 422", expectError(notUuid, 422));
}

async function probeSyncLimits(ctx: ProbeContext, t: SyncTarget, d: Destination): Promise<void> {
  type Case = [string, string, Record<string, unknown>, "ok" | "valid" | "reject"];
  const name = (suffix: string): string => `probe-limit-${suffix}-${ctx.runId}`;
  const cases: Case[] = [
    ["limit.sync-name.min-accepted", "create sync with a 1-char name is accepted", { name: "a" }, "ok"],
    ["limit.sync-name.min-rejected", "create sync with an empty name answers 422", { name: "" }, "reject"],
    ["limit.sync-name.max-accepted", "create sync with a 64-char name is accepted", { name: repeat(name("n64"), 64) }, "ok"],
    ["limit.sync-name.max-rejected", "create sync with a 65-char name answers 422", { name: repeat(name("n65"), 65) }, "reject"],
    [
      "limit.sync-environment.min-accepted",
      "create sync with a 1-char environment passes validation",
      { name: name("e1"), environment: "e" },
      "valid",
    ],
    [
      "limit.sync-environment.min-rejected",
      "create sync with an empty environment answers 422",
      { name: name("e0"), environment: "" },
      "reject",
    ],
    [
      "limit.sync-environment.max-accepted",
      "create sync with a 64-char environment passes validation",
      { name: name("e64"), environment: repeat("probe-env-", 64) },
      "valid",
    ],
    [
      "limit.sync-environment.max-rejected",
      "create sync with a 65-char environment answers 422",
      { name: name("e65"), environment: repeat("probe-env-", 65) },
      "reject",
    ],
    [
      "limit.sync-description.max-accepted",
      "create sync with a 256-char description is accepted",
      { name: name("d256"), description: repeat("probe ", 256) },
      "ok",
    ],
    [
      "limit.sync-description.max-rejected",
      "create sync with a 257-char description answers 422",
      { name: name("d257"), description: repeat("probe ", 257) },
      "reject",
    ],
    [
      "limit.sync-description.null-accepted",
      "create sync with a null description is accepted",
      { name: name("dnull"), description: null },
      "ok",
    ],
    [
      "limit.sync-project-id.min-accepted",
      "create sync with a 1-char projectId passes validation",
      { name: name("p1"), projectId: "p" },
      "valid",
    ],
    [
      "limit.sync-project-id.min-rejected",
      "create sync with an empty projectId answers 422",
      { name: name("p0"), projectId: "" },
      "reject",
    ],
    [
      "limit.sync-secret-path.min-accepted",
      "create sync with a 1-char secretPath (/) is accepted",
      { name: name("s1"), secretPath: "/" },
      "ok",
    ],
    [
      "limit.sync-secret-path.min-rejected",
      "create sync with an empty secretPath answers 422",
      { name: name("s0"), secretPath: "" },
      "reject",
    ],
    // DESIGN.md: the real service requires initialSyncBehavior on create, and a keySchema may also hold {{environment}}.
    [
      "limit.sync-initial-sync-behavior.required",
      "create sync whose syncOptions lack initialSyncBehavior answers 422",
      { name: name("ib0"), syncOptions: { keySchema: "probe-{{secretKey}}" } },
      "reject",
    ],
    ["limit.sync-options.required", "create sync without syncOptions answers 422", { name: name("so0"), syncOptions: undefined }, "reject"],
    [
      "limit.sync-key-schema.environment-accepted",
      "create sync with a keySchema holding {{environment}} passes validation",
      {
        name: name("ksenv"),
        syncOptions: { initialSyncBehavior: "overwrite-destination", keySchema: "probe-{{environment}}-{{secretKey}}" },
      },
      "valid",
    ],
    [
      "limit.sync-key-schema.secret-key-required",
      "create sync with a keySchema without {{secretKey}} answers 422",
      { name: name("ks0"), syncOptions: { initialSyncBehavior: "overwrite-destination", keySchema: "probe-{{environment}}" } },
      "reject",
    ],
  ];
  for (const [id, description, overrides, expected] of cases) {
    const res = await ctx.call("POST", base(d), { body: createBody(ctx, t, d, { isAutoSyncEnabled: false, ...overrides }) });
    ctx.record(id, description, limitOutcome(res, overrides, expected));
  }
  const longUpdate = await ctx.call("PATCH", `${base(d)}/${UNKNOWN_UUID}`, { body: { name: repeat(name("u65"), 65) } });
  ctx.record(
    "limit.sync-update-name.max-rejected",
    "update sync with a 65-char name answers 422 (update takes the same fields)",
    expectError(longUpdate, 422),
  );
}

function limitOutcome(res: HttpResponse, overrides: Record<string, unknown>, expected: "ok" | "valid" | "reject"): string[] {
  if (expected === "reject") return expectError(res, 422);
  if (expected === "valid") return expectNotValidationFailure(res);
  const sync = field(res.body, "secretSync");
  return [...expectOk(res), ...Object.entries(overrides).flatMap(([k, v]) => (k === "secretPath" ? [] : compare(k, field(sync, k), v)))];
}
