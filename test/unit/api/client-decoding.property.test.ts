// Issue 16 §6, bad input tried in bulk: generated response bodies, served by a real loopback
// HTTP server (node:http) to the real client. Whatever comes back — truncated JSON, wrong types,
// huge or odd numbers, unknown enum values, lone surrogates, NUL, RTL marks, extra fields, nulls,
// error bodies of every shape — a call either resolves with a value its schema accepts or
// rejects with one of the client's typed errors, never a TypeError, SyntaxError or other raw
// exception; and the token never appears in the error (message, stack, JSON form, the engine's
// condition message), even when the server echoes the Authorization header into the body or into
// response headers. Fixed seeds, so a failure replays; fast-check shrinks it to a small body.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  ApiError,
  closeConnections,
  createApiClient,
  ResponseTooLargeError,
  ResponseValidationError,
  TransportError,
  type ApiClient,
} from "../../../src/api/index.ts";
import { classifyError } from "../../../src/engine/errors.ts";
import { groupMembershipSchema, updatedRoleSchema, userMembershipSchema } from "../../../src/api/schemas/memberships.ts";
import { certificateProfileSchema, listCertificateProfilesResponseSchema } from "../../../src/api/schemas/profiles.ts";
import { projectWithEnvironmentsSchema } from "../../../src/api/schemas/projects.ts";
import { secretSyncSchema } from "../../../src/api/schemas/syncs.ts";
import { createTokenResponseSchema } from "../../../src/api/schemas/tokens.ts";

/** Where the server writes the request's Authorization header (JSON-escaped) into a body. */
const ECHO = "@@ECHO-AUTH@@";
/** Distinctive tokens; the second has characters JSON escapes, the third is JWT-shaped. */
const TOKENS = [
  "kw-prop-token-5f2c9a71d3e4",
  'kw-prop-"quoted"\\back-slash-7a1e',
  "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJrdy1wcm9wIn0.c2lnbmF0dXJlLWt3LXByb3A",
] as const;
const SEED = 0x6b657977; // "keyw"
const CONDITION_MESSAGE_MAX = 32768; // the CRDs' status.conditions[].message maxLength
const MAX_TIMER_MS = 2 ** 31 - 1;

// ---- the server ----------------------------------------------------------------------------

interface Plan {
  status: number;
  /** Body text; every ECHO is replaced by the request's Authorization header. */
  body: string;
  /** Response headers; a value ECHO is replaced by the request's Authorization header. */
  headers: Record<string, string>;
}

let plan: Plan = { status: 200, body: "{}", headers: {} };
let server: Server;
let baseUrl: string;

/** A header value as the server may send it (no CR, LF or NUL; latin1 only). */
const headerSafe = (v: string): string => v.replace(/[^\t\x20-\x7e]/g, "?");

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    const auth = req.headers.authorization ?? "";
    const body = plan.body.split(ECHO).join(JSON.stringify(auth).slice(1, -1));
    const headers: Record<string, string> = { "content-type": "application/json" };
    for (const [k, v] of Object.entries(plan.headers)) headers[k] = headerSafe(v.split(ECHO).join(auth));
    res.writeHead(plan.status, headers);
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await closeConnections();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function client(token: string, maxResponseBytes?: number): ApiClient {
  return createApiClient({
    baseUrl,
    token,
    retry: { maxAttempts: 1 },
    timeoutMs: 10_000,
    ...(maxResponseBytes ? { maxResponseBytes } : {}),
  });
}

// ---- valid bodies, one per operation -------------------------------------------------------

const ID = "5b0c3a52-3f2e-4f5e-9d55-2f8b8f0c1a01";
const AT = "2026-01-02T03:04:05.000Z";
const project = {
  id: ID,
  _id: ID,
  name: "Demo",
  slug: "demo-project",
  type: "secret-manager",
  orgId: ID,
  createdAt: AT,
  updatedAt: AT,
  environments: [{ name: "Development", slug: "dev", id: ID }],
  description: null,
  autoCapitalization: false,
  version: 3,
  pitVersionLimit: 10,
  hasDeleteProtection: false,
  secretSharing: true,
  showSnapshotsLegacy: false,
  secretDetectionIgnoreValues: null,
};
const role = { id: ID, role: "admin", customRoleId: null, customRoleName: null, customRoleSlug: null, isTemporary: false };
const membership = {
  id: ID,
  createdAt: AT,
  userId: ID,
  projectId: ID,
  user: { id: ID, email: "a@example.com", firstName: "A", lastName: "B", publicKey: "", username: "alice" },
  roles: [role],
};
const group = { id: ID, groupId: ID, createdAt: AT, updatedAt: AT, roles: [role], group: { id: ID, name: "Ops", slug: "ops" } };
const updated = { id: ID, role: "member", projectMembershipId: ID, customRoleId: null, isTemporary: false, createdAt: AT, updatedAt: AT };
const token = {
  accessToken: "minted-token-value",
  expiresIn: 7200,
  accessTokenMaxTTL: 2_592_000,
  tokenType: "Bearer",
  tokenData: {
    id: ID,
    accessTokenTTL: 7200,
    accessTokenNumUses: 0,
    isAccessTokenRevoked: false,
    identityId: ID,
    createdAt: AT,
    authMethod: "token-auth",
  },
};
const profile = {
  id: ID,
  projectId: ID,
  caId: ID,
  slug: "web",
  description: null,
  enrollmentType: "api",
  apiConfigId: ID,
  createdAt: AT,
  updatedAt: AT,
};
const sync = {
  id: ID,
  name: "to-git",
  description: null,
  isAutoSyncEnabled: true,
  version: 1,
  projectId: ID,
  folderId: ID,
  connectionId: ID,
  createdAt: AT,
  updatedAt: AT,
  syncStatus: "succeeded",
  lastSyncMessage: null,
  syncOptions: { initialSyncBehavior: "overwrite-destination", keySchema: "{{secretKey}}", disableSecretDeletion: false },
  connection: { app: "git-host", name: "gh", id: ID },
  environment: { slug: "dev", name: "Development", id: ID },
  folder: { id: ID, path: "/" },
  destination: "git-host",
  destinationConfig: { owner: "o", repo: "r" },
};

interface Op {
  name: string;
  call: (c: ApiClient) => Promise<unknown>;
  /** What the method resolves with must pass this. */
  result: z.ZodType;
  /** A 200 body the operation accepts, the seed of the mutations. */
  ok: unknown;
}

const ops: Op[] = [
  { name: "getProject", call: (c) => c.getProject(ID), result: projectWithEnvironmentsSchema, ok: { project } },
  { name: "getProjectBySlug", call: (c) => c.getProjectBySlug("demo-project"), result: projectWithEnvironmentsSchema, ok: project },
  {
    name: "listProjects",
    call: (c) => c.listProjects({ includeRoles: true }),
    result: z.array(projectWithEnvironmentsSchema),
    ok: { projects: [project, project] },
  },
  {
    name: "createProject",
    call: (c) => c.createProject({ projectName: "Demo", slug: "demo-project" }),
    result: projectWithEnvironmentsSchema,
    ok: { project: { ...project, kmsSecretManagerKeyId: ID } },
  },
  { name: "getSecretSync", call: (c) => c.getSecretSync("git-host", ID), result: secretSyncSchema, ok: { secretSync: sync } },
  {
    name: "findSecretSyncByName",
    call: (c) => c.findSecretSyncByName("git-host", "to-git", ID),
    result: secretSyncSchema.optional(),
    ok: { secretSync: sync },
  },
  {
    name: "syncSecrets",
    call: (c) => c.syncSecrets("git-host", ID),
    result: secretSyncSchema,
    ok: { secretSync: { ...sync, syncStatus: "pending" } },
  },
  {
    name: "listProjectMemberships",
    call: (c) => c.listProjectMemberships(ID),
    result: z.array(userMembershipSchema),
    ok: { memberships: [membership] },
  },
  {
    name: "getMembershipByUsername",
    call: (c) => c.getMembershipByUsername(ID, "alice"),
    result: userMembershipSchema,
    ok: { membership },
  },
  {
    name: "updateMembershipRoles",
    call: (c) => c.updateMembershipRoles(ID, ID, [{ role: "member" }]),
    result: z.array(updatedRoleSchema),
    ok: { roles: [updated] },
  },
  {
    name: "listProjectGroups",
    call: (c) => c.listProjectGroups(ID),
    result: z.array(groupMembershipSchema),
    ok: { groupMemberships: [group] },
  },
  { name: "createIdentityToken", call: (c) => c.createIdentityToken(ID, { name: "kw" }), result: createTokenResponseSchema, ok: token },
  {
    name: "getCertificateProfileBySlug",
    call: (c) => c.getCertificateProfileBySlug("web", ID),
    result: certificateProfileSchema,
    ok: { certificateProfile: profile },
  },
  {
    name: "listCertificateProfiles",
    call: (c) => c.listCertificateProfiles({ projectId: ID, limit: 100 }),
    result: listCertificateProfilesResponseSchema,
    ok: {
      certificateProfiles: [
        {
          ...profile,
          metrics: {
            profileId: ID,
            totalCertificates: 3,
            activeCertificates: 2,
            expiredCertificates: 1,
            expiringCertificates: 0,
            revokedCertificates: 0,
          },
          estConfig: null,
          apiConfig: { id: ID, autoRenew: true, renewBeforeDays: 7 },
          acmeConfig: null,
        },
      ],
      totalCount: 1,
    },
  },
];

// A counterexample names its operation, not the schema objects.
for (const op of ops) Object.defineProperty(op, fc.toStringMethod, { value: () => op.name });

// ---- generators ----------------------------------------------------------------------------

/** Strings that break naive code: lone surrogates, NUL, RTL overrides, huge, the echo marker, numbers-as-text. */
const nastyString = fc.oneof(
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({ unit: "grapheme", maxLength: 40 }),
  fc.constantFrom(
    "\ud800",
    "\udfff",
    "a\ud83dz",
    "\u0000",
    "nul\u0000inside",
    "\u202eevil\u202c",
    "\u05e9\u05dc\u05d5\u05dd",
    "\ufeff",
    "NaN",
    "-0",
    "Infinity",
    "1e308",
    "9007199254740993",
    "",
    " ",
    "__proto__",
    "constructor",
  ),
  fc.constantFrom(ECHO, `Bearer ${ECHO}`, `token ${ECHO} echoed`),
  fc.integer({ min: 1, max: 64 }).map((n) => "x".repeat(n * 1024)),
);
/** Numbers JSON can carry that a typed field might not expect (1e309 parses to Infinity). */
const nastyNumberText = fc.constantFrom(
  "1e308",
  "1e309",
  "-1e309",
  "-0",
  "0.0",
  "9007199254740993",
  "-9007199254740993",
  "1e-400",
  "123456789012345678901234567890",
  "0e0",
);
/** Any JSON value, with the nasty strings among its leaves. */
const nastyValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 3, arbitrary: nastyString },
  {
    weight: 1,
    arbitrary: fc.constantFrom(null, true, false, 0, -0, 1e308, -1e308, 2 ** 53 + 1, Number.MIN_VALUE, [], {}, [null], { "": null }),
  },
  { weight: 1, arbitrary: fc.constantFrom("Bearer", "bearer", "unknown-destination", "secret-manager ", "ADMIN", "est2", "paused") },
);

type Json = unknown;

/** Every path to a value inside `doc`. */
function pathsOf(doc: Json, prefix: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = [prefix];
  if (Array.isArray(doc)) doc.forEach((v: Json, i) => out.push(...pathsOf(v, [...prefix, i])));
  else if (doc !== null && typeof doc === "object") for (const [k, v] of Object.entries(doc)) out.push(...pathsOf(v, [...prefix, k]));
  return out;
}

type Mutation =
  | { kind: "set"; path: number; value: unknown }
  | { kind: "delete"; path: number }
  | { kind: "extra"; path: number; key: string; value: unknown }
  /** Keeps the leaf's type: a string becomes a nasty string, a number an extreme one, a boolean flips. */
  | { kind: "same-type"; path: number; str: string; num: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant("set" as const), path: fc.nat(), value: nastyValue }),
  fc.record({ kind: fc.constant("delete" as const), path: fc.nat() }),
  fc.record({
    kind: fc.constant("same-type" as const),
    path: fc.nat(),
    str: nastyString,
    num: fc.constantFrom(1e308, -1e308, -0, 2 ** 53 + 1, -(2 ** 53) - 1, Number.MIN_VALUE, 0.1, 4294967296),
  }),
  fc.record({
    kind: fc.constant("same-type" as const),
    path: fc.nat(),
    str: nastyString,
    num: fc.double({ noNaN: true, noDefaultInfinity: true }),
  }),
  fc.record({
    kind: fc.constant("extra" as const),
    path: fc.nat(),
    key: fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom(ECHO, "__proto__", "constructor", "\ud800")),
    value: nastyValue,
  }),
);

function applyMutation(doc: Json, m: Mutation): Json {
  const copy = structuredClone(doc);
  const paths = pathsOf(copy);
  const path = paths[m.path % paths.length]!;
  if (path.length === 0) return m.kind === "set" ? m.value : copy;
  let parent = copy as Record<string | number, Json>;
  for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, Json>;
  const last = path[path.length - 1]!;
  if (m.kind === "set") parent[last] = m.value;
  else if (m.kind === "same-type") {
    const v = parent[last];
    parent[last] = typeof v === "string" ? m.str : typeof v === "number" ? m.num : typeof v === "boolean" ? !v : v;
  } else if (m.kind === "delete") {
    if (Array.isArray(parent)) parent.splice(Number(last), 1);
    else Reflect.deleteProperty(parent, last);
  } else {
    const target = parent[last];
    if (target !== null && typeof target === "object" && !Array.isArray(target))
      Object.defineProperty(target, m.key, { value: m.value, enumerable: true, writable: true, configurable: true });
  }
  return copy;
}

/** How the serialised body is damaged on the way out. */
type Damage = { kind: "none" } | { kind: "truncate"; at: number } | { kind: "number"; text: string } | { kind: "raw"; text: string };

const damage: fc.Arbitrary<Damage> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ kind: "none" as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("number" as const), text: nastyNumberText }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("raw" as const),
      text: fc.oneof(
        fc.string({ unit: "binary", maxLength: 30 }),
        fc.constantFrom("", "null", "[]", '"str"', "{", "}{", "\u0000", "<html>bad gateway</html>", ECHO),
      ),
    }),
  },
);

function serialise(doc: Json, d: Damage): string {
  const text = JSON.stringify(doc) ?? "null";
  switch (d.kind) {
    case "none":
      return text;
    case "truncate":
      return text.slice(0, d.at % Math.max(text.length, 1));
    case "number": {
      // Every number in the body written as the odd literal (JSON.stringify cannot write them).
      const replaced = text.replace(/(?<=[:,[])-?\d+(\.\d+)?([eE][-+]?\d+)?(?=[,}\]])/g, d.text);
      return replaced;
    }
    case "raw":
      return d.text;
  }
}

/** Error bodies: `{reqId, statusCode, message, error}` with every field mistyped in turn, 422 issue lists, echoes. */
const errorBody = fc.record(
  {
    reqId: fc.oneof(nastyString, nastyValue),
    statusCode: fc.oneof(fc.integer(), nastyValue),
    message: fc.oneof(
      nastyString,
      nastyValue,
      fc.array(
        fc.record(
          {
            path: fc.array(fc.oneof(nastyString, fc.integer()), { maxLength: 3 }),
            message: fc.oneof(nastyString, nastyValue),
            code: nastyString,
          },
          { requiredKeys: [] },
        ),
        { maxLength: 4 },
      ),
      fc.constantFrom({ [ECHO]: 1 }, [ECHO], { nested: { auth: ECHO } }, [{ path: [ECHO], message: 1 }]),
    ),
    error: fc.oneof(
      nastyString,
      nastyValue,
      fc.constantFrom("ValidationFailure", "NotFound", "Not Found", "RateLimitExceeded", "TokenError"),
    ),
  },
  { requiredKeys: [] },
);

const statuses = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(200, 200, 200, 201, 204, 299) },
  { weight: 4, arbitrary: fc.constantFrom(301, 400, 401, 403, 404, 409, 422, 429, 500, 502, 503) },
);
const headerValue = fc.oneof(
  fc.constant(ECHO),
  fc.constant(`Bearer realm="${ECHO}"`),
  nastyString.filter((v) => v.length < 256),
  fc.constantFrom(
    "120",
    "-1",
    "1e309",
    "Wed, 21 Oct 2015 07:28:00 GMT",
    "Sat, 01 Jan 10000 00:00:00 GMT",
    "Fri, 01 Jan 2300 00:00:00 GMT",
    "9007199254740993",
    "9".repeat(400),
    "2592000",
  ),
);
const echoedHeaders = fc.dictionary(
  fc.constantFrom("x-echo", "www-authenticate", "retry-after", "x-request-id", "content-type", "location"),
  headerValue,
  { maxKeys: 3 },
);

interface Case {
  op: Op;
  token: string;
  plan: Plan;
}

const caseArb: fc.Arbitrary<Case> = fc
  .record({
    op: fc.constantFrom(...ops),
    token: fc.constantFrom(...TOKENS),
    status: statuses,
    mutations: fc.oneof(fc.array(mutation, { maxLength: 1 }), fc.array(mutation, { maxLength: 4 })),
    errBody: errorBody,
    whole: fc.option(nastyValue, { freq: 6 }),
    damage,
    headers: echoedHeaders,
  })
  .map((r) => {
    const doc = r.status >= 200 && r.status < 300 ? (r.whole ?? r.mutations.reduce(applyMutation, r.op.ok)) : r.errBody;
    return { op: r.op, token: r.token, plan: { status: r.status, body: serialise(doc, r.damage), headers: r.headers } };
  });

// ---- the properties ------------------------------------------------------------------------

const typedErrors = [ApiError, ResponseValidationError, ResponseTooLargeError, TransportError] as const;

/** Everything an error shows or carries, as text. */
function renderings(err: unknown): string[] {
  const e = err as Error;
  return [
    e.message,
    e.stack ?? "",
    String(e),
    JSON.stringify(e),
    JSON.stringify(Object.getOwnPropertyDescriptors(e)),
    classifyError(e).message,
  ];
}

/** The token as it might be written: itself, and JSON-escaped (how a body carries it). */
function tokenForms(t: string): string[] {
  return [t, JSON.stringify(t).slice(1, -1)];
}

/** Outcomes per class, printed only with KEYWARD_PROPERTY_STATS=1 (silent on success otherwise). */
const outcomes = new Map<string, number>();
const tally = (what: string): void => void outcomes.set(what, (outcomes.get(what) ?? 0) + 1);
afterAll(() => {
  if (process.env["KEYWARD_PROPERTY_STATS"] === "1") console.log("client decoding outcomes", Object.fromEntries([...outcomes].sort()));
});

async function check(c: Case, maxResponseBytes?: number): Promise<void> {
  plan = c.plan;
  let value: unknown;
  let failure: { err: unknown } | undefined;
  try {
    value = await c.op.call(client(c.token, maxResponseBytes));
  } catch (err) {
    failure = { err };
  }
  if (failure === undefined) {
    tally(value === undefined ? "resolved undefined" : "resolved");
    const again = c.op.result.safeParse(value);
    if (!again.success) throw new Error(`${c.op.name} resolved with a value its schema refuses: ${again.error.message.slice(0, 300)}`);
    return;
  }
  const err = failure.err;
  tally(
    err instanceof TransportError ? `TransportError ${err.kind} ${err.code ?? ""}`.trim() : err instanceof Error ? err.name : typeof err,
  );
  if (!typedErrors.some((cls) => err instanceof cls)) throw new Error(`${c.op.name} threw an untyped error`, { cause: err });
  const e = err as ApiError | ResponseValidationError | ResponseTooLargeError | TransportError;
  for (const text of renderings(e)) {
    for (const form of tokenForms(c.token)) {
      if (text.includes(form)) throw new Error(`${c.op.name}: the token appears in the ${e.name}: ${text.slice(0, 300)}`);
    }
  }
  // A Retry-After becomes a timer (client backoff, work-queue requeue): finite, and no longer
  // than a Node timer can wait (2^31-1 ms; a longer one fires at once).
  const after = e instanceof ApiError ? e.retryAfterMs : undefined;
  if (after !== undefined && !(Number.isFinite(after) && after >= 0 && after <= MAX_TIMER_MS))
    throw new Error(`${c.op.name}: retryAfterMs ${after}`);
  const cond = classifyError(e).message;
  if (cond.length > CONDITION_MESSAGE_MAX)
    throw new Error(`${c.op.name}: condition message of ${cond.length} chars (CRD maxLength ${CONDITION_MESSAGE_MAX})`);
}

describe("response decoding, property-based over a real loopback server", () => {
  it("the unmutated bodies decode (the generators start from valid answers)", async () => {
    for (const op of ops) {
      plan = { status: 200, body: JSON.stringify(op.ok), headers: {} };
      expect(op.result.safeParse(await op.call(client(TOKENS[0]))).success, op.name).toBe(true);
    }
  });

  it("every answer resolves to a schema-valid value or rejects with a typed error that never shows the token", async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, (c) => check(c)),
      { seed: SEED, numRuns: 5000 },
    );
  });

  it("error answers echoing the Authorization header into every field never show the token", async () => {
    const echoing = fc.record({
      op: fc.constantFrom(...ops),
      token: fc.constantFrom(...TOKENS),
      status: fc.constantFrom(400, 401, 403, 404, 422, 429, 500, 503),
      field: fc.constantFrom("reqId", "message", "error"),
      shape: fc.constantFrom("plain", "prefixed", "object", "array", "issue-path", "issue-message", "key"),
      headers: echoedHeaders,
    });
    const wrap = (shape: string): unknown =>
      shape === "plain"
        ? ECHO
        : shape === "prefixed"
          ? `invalid token: ${ECHO}; again ${ECHO}`
          : shape === "object"
            ? { got: ECHO, nested: [ECHO] }
            : shape === "array"
              ? [ECHO, 1, null]
              : shape === "issue-path"
                ? [{ path: ["headers", ECHO], message: "bad" }]
                : shape === "issue-message"
                  ? [{ path: ["x"], message: `saw ${ECHO}` }, { code: ECHO }]
                  : { [ECHO]: true };
    await fc.assert(
      fc.asyncProperty(echoing, (r) =>
        check({
          op: r.op,
          token: r.token,
          plan: { status: r.status, body: JSON.stringify({ statusCode: r.status, [r.field]: wrap(r.shape) }), headers: r.headers },
        }),
      ),
      { seed: SEED + 1, numRuns: 1000 },
    );
  });

  it("huge strings: within the limit they decode, past it the call fails with ResponseTooLargeError", async () => {
    const LIMIT = 256 * 1024;
    const big = fc.record({
      op: fc.constantFrom(...ops),
      token: fc.constantFrom(...TOKENS),
      size: fc.integer({ min: LIMIT - 4096, max: LIMIT + 4096 }),
      char: fc.constantFrom("a", "é", "€", "😀", "\u0000", "\u202e", ECHO),
      status: fc.constantFrom(200, 400, 500),
    });
    await fc.assert(
      fc.asyncProperty(big, async (r) => {
        const doc = r.status === 200 ? r.op.ok : { message: "x" };
        const skeleton = JSON.stringify({ pad: "", ...(doc as object) });
        const unit = JSON.stringify(r.char).slice(1, -1);
        const pad = unit.repeat(Math.max(0, Math.floor((r.size - skeleton.length) / Buffer.byteLength(unit))));
        const body = JSON.stringify({ ...(doc as object), pad: "" }).replace('"pad":""', `"pad":"${pad}"`);
        const bytes = Buffer.byteLength(body.split(ECHO).join(JSON.stringify(`Bearer ${r.token}`).slice(1, -1)));
        let outcome: unknown;
        plan = { status: r.status, body, headers: {} };
        try {
          outcome = await r.op.call(client(r.token, LIMIT));
        } catch (err) {
          outcome = err;
        }
        if (bytes > LIMIT) expect(outcome, `${bytes} bytes`).toBeInstanceOf(ResponseTooLargeError);
        else expect(outcome).not.toBeInstanceOf(ResponseTooLargeError);
        await check({ op: r.op, token: r.token, plan }, LIMIT);
      }),
      { seed: SEED + 2, numRuns: 60 },
    );
  });

  it("at the default 16 MiB limit: a 15 MiB field decodes, a 17 MiB body is ResponseTooLargeError", async () => {
    const op = ops[0]!;
    const at = (mib: number): string => JSON.stringify({ project: { ...project, description: "d".repeat(mib * 1024 * 1024) } });
    plan = { status: 200, body: at(15), headers: {} };
    expect(((await op.call(client(TOKENS[0]))) as { description: string }).description).toHaveLength(15 * 1024 * 1024);
    plan = { status: 200, body: at(17), headers: {} };
    await expect(op.call(client(TOKENS[0]))).rejects.toBeInstanceOf(ResponseTooLargeError);
  });
});
