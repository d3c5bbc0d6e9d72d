// The admin API under /_emulator (no auth): what tests and the CLI's users need besides /api.
import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { errorBody, ServiceError } from "./errors.ts";
import { parseJsonBody, readBody, sendJson, splitUrl } from "./http.ts";
import { faultsBody, jobOutcomeBody, memberSeedBody, memberSelectorBody, seedBody } from "./schemas/admin.ts";
import { parse } from "./schemas/parse.ts";
import type { MembershipRec, State } from "./state.ts";
import type { Faults, JobOutcome, MemberSeed, MemberSelector, RecordedRequest, Seed } from "./types.ts";

export interface AdminOps {
  requests: () => RecordedRequest[];
  clearRequests: () => void;
  setFaults: (f: Faults) => void;
  faults: () => Faults;
  seed: (s: Seed) => void;
  setJobOutcome: (o: JobOutcome) => void;
  addMember: (m: MemberSeed) => MembershipRec;
  removeMember: (m: MemberSelector) => boolean;
  state: () => State;
  reset: () => void;
}

type AdminHandler = (ops: AdminOps, body: unknown) => unknown;

const handlers: Record<string, AdminHandler> = {
  "GET /_emulator/healthz": () => ({ ok: true }),
  "GET /_emulator/requests": (ops) => ({ requests: ops.requests() }),
  // What was cleared comes back: a reader that drains the log over HTTP misses nothing recorded
  // between a GET and a DELETE.
  "DELETE /_emulator/requests": (ops) => {
    const requests = ops.requests();
    ops.clearRequests();
    return { ok: true, requests };
  },
  "GET /_emulator/faults": (ops) => ({ faults: ops.faults() }),
  "PUT /_emulator/faults": (ops, body) => {
    ops.setFaults(parse(faultsBody, body ?? {}));
    return { faults: ops.faults() };
  },
  "POST /_emulator/seed": (ops, body) => {
    ops.seed(parse(seedBody, body));
    return { ok: true };
  },
  "POST /_emulator/job-outcomes": (ops, body) => {
    ops.setJobOutcome(parse(jobOutcomeBody, body));
    return { ok: true };
  },
  "POST /_emulator/members": (ops, body) => ({ membership: ops.addMember(parse(memberSeedBody, body)) }),
  "DELETE /_emulator/members": (ops, body) => {
    if (!ops.removeMember(parse(memberSelectorBody, body))) throw new ServiceError(404, "NotFound", "No such membership");
    return { ok: true };
  },
  "GET /_emulator/state": (ops) => ops.state(),
  "POST /_emulator/reset": (ops) => {
    ops.reset();
    return { ok: true };
  },
};

export async function handleAdminRequest(ops: AdminOps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const reqId = `req-${randomBytes(8).toString("hex")}`;
  const { path } = splitUrl(req.url);
  const handler = handlers[`${(req.method ?? "GET").toUpperCase()} ${path}`];
  const body = parseJsonBody(await readBody(req));
  try {
    if (!handler) throw new ServiceError(404, "Not Found", `Route ${req.method ?? ""}:${path} not found`);
    if (!body.ok) throw new ServiceError(400, "Bad Request", "Body is not valid JSON");
    sendJson(res, 200, handler(ops, body.value));
  } catch (err) {
    if (!(err instanceof ServiceError)) throw err;
    sendJson(res, err.statusCode, errorBody(err, reqId));
  }
}
