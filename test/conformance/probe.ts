// The conformance probe: exercises every operation of ../shared/interface.md over plain
// HTTP and reports one result per check. It knows nothing of the emulator or the client, so
// it can be pointed at any deployment of the service (see README.md and cli.ts).

import { makeCaller } from "./http.ts";
import type { ProbeContext, ProbeFixtures, ProbeHelpers, ProbeResult } from "./context.ts";
import { makeRecorder, randomSuffix } from "./context.ts";
import { probeAuth } from "./auth.ts";
import { probeCertificateProfiles } from "./certificates.ts";
import { memberProject, probeMemberships } from "./memberships.ts";
import type { ProbeProject } from "./projects.ts";
import {
  probeCreate,
  probeDeleteProtection,
  probeProjectErrors,
  probeProjectLimits,
  probeReads,
  probeTypeFilter,
  probeUpdate,
} from "./projects.ts";
import { probeSecretSyncs } from "./syncs.ts";
import { probeTokens } from "./tokens.ts";

export type { MemberToAdd, ProbeFixtures, ProbeHelpers, ProbeResult } from "./context.ts";

export interface ProbeOptions {
  baseUrl: string;
  token: string;
  fixtures: ProbeFixtures;
  helpers?: ProbeHelpers;
  settleTimeoutMs?: number; // how long a sync job may take to settle; default 30 s
  pollIntervalMs?: number; // default 100 ms
  requestTimeoutMs?: number; // default 15 s
}

export async function runProbe(opts: ProbeOptions): Promise<ProbeResult[]> {
  const results: ProbeResult[] = [];
  const ctx: ProbeContext = {
    call: makeCaller({
      baseUrl: opts.baseUrl,
      token: opts.token,
      timeoutMs: opts.requestTimeoutMs ?? 15_000,
      maxRateLimitRetries: 3,
      maxRetryAfterMs: 65_000,
    }),
    fixtures: opts.fixtures,
    helpers: opts.helpers ?? {},
    runId: randomSuffix(8),
    settleTimeoutMs: opts.settleTimeoutMs ?? 30_000,
    pollIntervalMs: opts.pollIntervalMs ?? 100,
    record: makeRecorder(results),
    cleanup: new Set(),
  };
  try {
    await runSections(ctx);
  } catch (err) {
    ctx.record("probe.internal-error", "the probe itself ran to the end", [err instanceof Error ? err.message : "unknown error"]);
  } finally {
    await cleanUp(ctx);
  }
  return results.map((r) => ({ ...r, detail: redact(r.detail, [opts.token]) }));
}

async function runSections(ctx: ProbeContext): Promise<void> {
  const main = await probeCreate(ctx);
  if (main === undefined) {
    ctx.record("project.prerequisite", "the probe's project could be created", [
      "create project failed; the checks that need it were skipped",
    ]);
  } else {
    await probeProjectSections(ctx, main);
  }
  await probeDeleteProtection(ctx);
  const membershipId = await probeMemberships(ctx, await memberProject(ctx, main?.id));
  await probeTokens(ctx);
  await probeCertificateProfiles(ctx);
  await probeSecretSyncs(ctx, main);
  await probeAuth(ctx, main, membershipId);
}

async function probeProjectSections(ctx: ProbeContext, main: ProbeProject): Promise<void> {
  await probeReads(ctx, main);
  await probeTypeFilter(ctx, main);
  await probeUpdate(ctx, main);
  await probeProjectErrors(ctx, main);
  await probeProjectLimits(ctx, main);
}

// Best effort: every project the probe created goes, protected or not.
async function cleanUp(ctx: ProbeContext): Promise<void> {
  for (const id of ctx.cleanup) {
    await ctx.call("PATCH", `/api/v1/projects/${id}`, { body: { hasDeleteProtection: false } });
    await ctx.call("DELETE", `/api/v1/projects/${id}`);
  }
}

function redact(text: string, secrets: string[]): string {
  return secrets.filter((s) => s.length > 0).reduce((t, s) => t.split(s).join("[redacted]"), text);
}
