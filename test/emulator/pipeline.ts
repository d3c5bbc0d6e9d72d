// One /api request from arrival to answer: faults, routing, auth, rate limit, body, handler,
// persistence, and the request log entry.
import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { authenticate, enforceAuth, hashToken, type AuthResult } from "./auth.ts";
import type { Core } from "./core.ts";
import { errorBody, faultBody, routeNotFound, ServiceError } from "./errors.ts";
import type { FaultState } from "./faults.ts";
import { parseJsonBody, readBody, sendJson, splitUrl, type ParsedBody } from "./http.ts";
import type { RateLimiter } from "./rate-limit.ts";
import { matchRoute, type Route, type RouteMatch } from "./router.ts";
import type { RecordedRequest } from "./types.ts";

export interface Pipeline {
  core: Core;
  routes: readonly Route[];
  faults: FaultState;
  limiter: RateLimiter;
  record(entry: Omit<RecordedRequest, "seq">): void;
}

interface Answer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

interface Incoming {
  reqId: string;
  method: string;
  path: string;
  query: Record<string, string>;
  body: ParsedBody;
  auth: AuthResult;
  match: RouteMatch | undefined;
  remoteKey: string;
}

export async function handleApiRequest(p: Pipeline, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const incoming = await receive(p, req);
  const log = (status: number, fault?: RecordedRequest["fault"]): void => {
    p.record({
      at: new Date().toISOString(),
      method: incoming.method,
      path: incoming.path,
      query: incoming.query,
      body: incoming.body.ok ? incoming.body.value : incoming.body.raw,
      status,
      operation: incoming.match?.route.operation ?? "unknown",
      auth: incoming.auth.kind,
      ...(incoming.auth.kind === "valid" ? { principal: principalOf(incoming.auth.token) } : {}),
      reqId: incoming.reqId,
      ...(fault ? { fault } : {}),
    });
  };

  const latency = p.faults.latencyFor(incoming.method, incoming.path);
  // Read before the hold: a fault set meanwhile (the next step of a test's schedule) does not
  // change what this request was promised.
  const landsWithoutClient = latency > 0 && p.faults.get().landsWithoutClient === true;
  if (latency > 0) await p.faults.hold(latency, req.socket);
  // The emulator may have closed (or the client gone) during the delay: nothing left to answer,
  // and nothing handled unless the fault says a held request lands anyway.
  if (req.socket.destroyed) {
    if (landsWithoutClient) log(answerRequest(p, incoming).status, "client-gone");
    return;
  }
  const decision = p.faults.decide(incoming.method, incoming.path);
  if (decision.kind === "drop" && decision.when === "before-handling") {
    log(0, "drop-before-handling");
    req.socket.destroy();
    return;
  }
  if (decision.kind === "rateLimit" || decision.kind === "error") {
    const answer =
      decision.kind === "rateLimit"
        ? rateLimited(incoming.reqId, decision.retryAfterSeconds)
        : { status: decision.status, body: faultBody(decision.status, incoming.reqId) };
    log(answer.status, decision.kind);
    sendJson(res, answer.status, answer.body, answer.headers);
    return;
  }
  const answer = answerRequest(p, incoming);
  if (decision.kind === "drop") {
    log(answer.status, "drop-after-handling");
    req.socket.destroy();
    return;
  }
  log(answer.status);
  // Held after handling: the change is applied and logged; a client that gives up (or dies)
  // meanwhile never learns the answer.
  const held = p.faults.latencyFor(incoming.method, incoming.path, "after-handling");
  if (held > 0) {
    await p.faults.hold(held);
    if (req.socket.destroyed) return;
  }
  sendJson(res, answer.status, answer.body, answer.headers);
}

/** The name a request log gives a credential: a prefix of its token's sha256, never the token. */
export function principalOf(token: string): string {
  return hashToken(token).slice(0, 12);
}

async function receive(p: Pipeline, req: IncomingMessage): Promise<Incoming> {
  const method = (req.method ?? "GET").toUpperCase();
  const { path, query } = splitUrl(req.url);
  const body = parseJsonBody(await readBody(req));
  return {
    reqId: `req-${randomBytes(8).toString("hex")}`,
    method,
    path,
    query,
    body,
    auth: authenticate(p.core, req.headers.authorization),
    match: matchRoute(p.routes, method, path),
    remoteKey: `anonymous:${req.socket.remoteAddress ?? "unknown"}`,
  };
}

function rateLimited(reqId: string, retryAfterSeconds: number): Answer {
  return {
    status: 429,
    body: {
      reqId,
      statusCode: 429,
      message: `Rate limit exceeded. Please try again in ${retryAfterSeconds} seconds`,
      error: "RateLimitExceeded",
    },
    headers: { "retry-after": String(retryAfterSeconds) },
  };
}

function answerRequest(p: Pipeline, incoming: Incoming): Answer {
  try {
    return run(p, incoming);
  } catch (err) {
    if (err instanceof ServiceError) return { status: err.statusCode, body: errorBody(err, incoming.reqId) };
    console.error("emulator: handler failed", err);
    return { status: 500, body: { reqId: incoming.reqId, statusCode: 500, message: "Something went wrong", error: "InternalServerError" } };
  } finally {
    if (incoming.method !== "GET" && incoming.match) p.core.changed();
  }
}

function run(p: Pipeline, incoming: Incoming): Answer {
  const { match, auth } = incoming;
  if (!match) throw routeNotFound(incoming.method, incoming.path);
  enforceAuth(auth, match.route.anonymous === true);
  const key = auth.kind === "valid" ? `token:${auth.token}` : incoming.remoteKey;
  const retryAfter = p.limiter.take(key, match.route.limit, Date.now());
  if (retryAfter !== undefined) return rateLimited(incoming.reqId, retryAfter);
  if (!incoming.body.ok) throw new ServiceError(400, "Bad Request", "Body is not valid JSON");
  const body = match.route.handle({
    core: p.core,
    method: incoming.method,
    path: incoming.path,
    params: match.params,
    query: incoming.query,
    body: incoming.body.value,
  });
  return { status: 200, body };
}
