// The emulator: a faithful server of interface.md over node:http (see README.md).
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { handleAdminRequest, type AdminOps } from "./admin.ts";
import type { Core } from "./core.ts";
import { createFaultState } from "./faults.ts";
import { membershipRoutes } from "./handlers/memberships.ts";
import { profileRoutes } from "./handlers/profiles.ts";
import { projectRoutes } from "./handlers/projects.ts";
import { syncRoutes } from "./handlers/syncs.ts";
import { tokenRoutes } from "./handlers/tokens.ts";
import { sendJson } from "./http.ts";
import { createJobRunner } from "./jobs.ts";
import { handleApiRequest, type Pipeline } from "./pipeline.ts";
import { createRateLimiter } from "./rate-limit.ts";
import type { Route } from "./router.ts";
import { addMember, applySeed, removeMember } from "./seed.ts";
import { emptyState, loadState, saveState, type State } from "./state.ts";
import type { Emulator, EmulatorOptions, RecordedRequest } from "./types.ts";

export type {
  Emulator,
  EmulatorOptions,
  Faults,
  JobOutcome,
  MemberSeed,
  MemberSelector,
  RateLimitOptions,
  RecordedRequest,
  Seed,
} from "./types.ts";

export const defaultOrgId = "6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b";
export const defaultRateLimit = { readsPerMinute: 60, writesPerMinute: 200, projectCreatesPerMinute: 30 };

/** Literal-segment routes come before the parameterised ones that could shadow them. */
export const routes: readonly Route[] = [...projectRoutes, ...membershipRoutes, ...tokenRoutes, ...profileRoutes, ...syncRoutes];

const maxRecorded = 20_000;

export async function startEmulator(opts: EmulatorOptions): Promise<Emulator> {
  const orgId = opts.orgId ?? defaultOrgId;
  const persistPath = opts.persistPath;
  // A persisted state wins: the seed only initialises a fresh one, so a restart undoes nothing.
  const restored = persistPath === undefined ? undefined : loadState(persistPath);
  let state: State = restored ?? emptyState();
  if (!restored && opts.seed) applySeed(state, opts.seed, orgId);
  const persist = (): void => {
    if (persistPath !== undefined) saveState(persistPath, state);
  };
  const jobs = createJobRunner(() => state, opts.jobDelayMs ?? 200, persist);
  const core: Core = {
    get state() {
      return state;
    },
    set state(next: State) {
      state = next;
    },
    orgId,
    jobDelayMs: opts.jobDelayMs ?? 200,
    staticTokens: new Set(opts.tokens),
    jobs,
    changed: persist,
  };

  let recorded: RecordedRequest[] = [];
  let seq = 0;
  const faults = createFaultState();
  const limiter = createRateLimiter(opts.rateLimit ?? false);
  const without = new Set(opts.withoutOperations ?? []);
  const unknown = [...without].filter((op) => !routes.some((r) => r.operation === op));
  if (unknown.length > 0) throw new Error(`withoutOperations: no such operation: ${unknown.join(", ")}`);
  const pipeline: Pipeline = {
    core,
    routes: routes.filter((r) => !without.has(r.operation)),
    faults,
    limiter,
    record(entry) {
      seq += 1;
      recorded.push({ seq, ...entry });
      if (recorded.length > maxRecorded) recorded = recorded.slice(-maxRecorded);
    },
  };

  const mutate = <T>(change: () => T): T => {
    const result = change();
    persist();
    return result;
  };
  const admin: AdminOps = {
    requests: () => structuredClone(recorded),
    clearRequests: () => {
      recorded = [];
    },
    setFaults: (f) => faults.set(f),
    faults: () => faults.get(),
    seed: (s) => mutate(() => applySeed(state, s, orgId)),
    setJobOutcome: (o) =>
      mutate(() => {
        const outcome = { syncId: o.syncId, action: o.action, outcome: o.outcome, remaining: o.times ?? 1 };
        state.jobOutcomes.push(o.message === undefined ? outcome : { ...outcome, message: o.message });
      }),
    addMember: (m) => mutate(() => structuredClone(addMember(state, m))),
    removeMember: (m) => mutate(() => removeMember(state, m)),
    state: () => structuredClone(state),
    reset: () =>
      mutate(() => {
        state = emptyState();
        if (opts.seed) applySeed(state, opts.seed, orgId);
        recorded = [];
        faults.set({});
        limiter.reset();
        jobs.resume();
      }),
  };

  const server = createServer((req, res) => {
    dispatch(pipeline, admin, req, res).catch((err: unknown) => {
      console.error("emulator: request failed", err);
      if (!res.headersSent) sendJson(res, 500, { statusCode: 500, message: "Something went wrong", error: "InternalServerError" });
      else res.destroy();
    });
  });
  const host = opts.host ?? "127.0.0.1";
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  persist();
  jobs.resume();
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
    close: async () => {
      jobs.stop();
      persist();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    requests: admin.requests,
    clearRequests: admin.clearRequests,
    setFaults: admin.setFaults,
    heldRequests: (filter) => faults.held(filter),
    releaseHeld: (count) => faults.release(count),
    seed: admin.seed,
    setJobOutcome: admin.setJobOutcome,
    addMember: (m) => void admin.addMember(m),
    removeMember: (m) => void admin.removeMember(m),
  };
}

async function dispatch(pipeline: Pipeline, admin: AdminOps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? "/").split("?")[0] ?? "/";
  if (path === "/api" || path.startsWith("/api/")) return handleApiRequest(pipeline, req, res);
  if (path.startsWith("/_emulator/")) return handleAdminRequest(admin, req, res);
  req.resume();
  sendJson(res, 404, { statusCode: 404, message: `Route ${req.method ?? ""}:${path} not found`, error: "Not Found" });
}
