// What every section of the probe shares: the caller, the fixtures, a results recorder and
// small helpers that turn an HTTP response into a pass/fail with a short, secret-free detail.

import type { Call, HttpResponse } from "./http.ts";
import type { Destination } from "./shapes.ts";
import { errorBodyProblems, isRecord, short } from "./shapes.ts";

export interface ProbeResult {
  id: string;
  description: string;
  passed: boolean;
  detail: string;
}

// What the interface cannot create, provided by whoever runs the probe.
export interface ProbeFixtures {
  identityId: string; // a machine identity the probe's token may issue tokens for
  user: { username: string }; // an org user; added to the probe's project through helpers.addMember
  group: { id: string }; // an org group; likewise
  connections: Record<Destination, string>; // one stored connection id per destination, of the right kind
  certificates: {
    projectId: string;
    profiles: { slug: string; enrollmentType: "api" | "est" | "acme" }[]; // at least one; ideally one per type
  };
  // A project that already has `user` and `group` as members, for deployments without helpers.addMember.
  memberProjectId?: string;
}

export interface MemberToAdd {
  projectId: string;
  username?: string;
  groupId?: string;
  roles: { role: string }[];
}

export interface ProbeHelpers {
  addMember?: (m: MemberToAdd) => Promise<void>;
}

export interface ProbeContext {
  call: Call;
  fixtures: ProbeFixtures;
  helpers: ProbeHelpers;
  runId: string; // a short random suffix that keeps names and slugs unique per run
  settleTimeoutMs: number;
  pollIntervalMs: number;
  record(id: string, description: string, problems: readonly string[], detail?: string): void;
  // Projects to delete when the probe ends (best effort).
  cleanup: Set<string>;
}

export function makeRecorder(results: ProbeResult[]): ProbeContext["record"] {
  return (id, description, problems, detail) => {
    const passed = problems.length === 0;
    results.push({ id, description, passed, detail: passed ? (detail ?? "ok") : problems.join("; ") });
  };
}

// The status line of a response for a detail message. Bodies are summarised, never dumped,
// so an access token in a response can never reach the output.
export function statusOf(res: HttpResponse): string {
  if (res.status === 0) return `no response (${res.networkError ?? "network error"})`;
  return `HTTP ${res.status}`;
}

function errorSummary(res: HttpResponse): string {
  if (!isRecord(res.body)) return statusOf(res);
  const message = res.body.message;
  const text = typeof message === "string" ? message : short(message);
  return `${statusOf(res)} ${short(res.body.error)}: ${text.slice(0, 160)}`;
}

export function expectOk(res: HttpResponse): string[] {
  return res.status === 200 ? [] : [`expected HTTP 200, got ${errorSummary(res)}`];
}

// An error response: this status and the body {reqId, statusCode, message, error}.
export function expectError(res: HttpResponse, status: number): string[] {
  if (res.status !== status) return [`expected HTTP ${status}, got ${errorSummary(res)}`];
  return errorBodyProblems(res.body, status).map((p) => `error body ${p}`);
}

// "At the boundary, accepted": for values the request may still fail on for other reasons
// (an environment or template that does not exist), validation must at least let it through.
export function expectNotValidationFailure(res: HttpResponse): string[] {
  if (res.status === 0) return [statusOf(res)];
  return res.status === 422 ? [`expected the value to pass validation, got ${errorSummary(res)}`] : [];
}

export function field(body: unknown, key: string): unknown {
  return isRecord(body) ? body[key] : undefined;
}

export function fieldString(body: unknown, key: string): string | undefined {
  const v = field(body, key);
  return typeof v === "string" ? v : undefined;
}

export function compare(label: string, actual: unknown, expected: unknown): string[] {
  return actual === expected ? [] : [`${label}: expected ${short(expected)}, got ${short(actual)}`];
}

export function randomSuffix(length: number): string {
  let s = "";
  while (s.length < length) s += Math.random().toString(36).slice(2);
  return s.slice(0, length);
}

export function repeat(prefix: string, length: number): string {
  return (prefix + "x".repeat(length)).slice(0, length);
}

export const UNKNOWN_UUID = "00000000-0000-4000-8000-00000000dead";
