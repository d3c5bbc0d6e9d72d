// Shape rules transcribed from ../shared/interface.md ("Resources and their fields").
// A rule returns the problems it finds (empty when the value fits), each prefixed with the
// path of the offending field. Fields marked optional in the document may be absent; every
// other listed field must be present. Where the document lists a plain type but the value
// has nothing to report yet (a job that never ran, a role that is not temporary) the rule
// accepts null too; each such leniency is listed in README.md.

export type Rule = ((value: unknown) => string[]) & { optional?: boolean };
export type Spec = Record<string, Rule>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/;

export function describeValue(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  return typeof v;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function check(ok: boolean, problem: () => string): string[] {
  return ok ? [] : [problem()];
}

export const str: Rule = (v) => check(typeof v === "string", () => `expected string, got ${describeValue(v)}`);
export const num: Rule = (v) => check(typeof v === "number" && Number.isFinite(v), () => `expected number, got ${describeValue(v)}`);
export const bool: Rule = (v) => check(typeof v === "boolean", () => `expected boolean, got ${describeValue(v)}`);
export const any: Rule = () => [];
export const uuid: Rule = (v) => check(typeof v === "string" && UUID.test(v), () => `expected uuid, got ${short(v)}`);
export const dateTime: Rule = (v) =>
  check(
    typeof v === "string" && ISO_DATE_TIME.test(v) && !Number.isNaN(Date.parse(v)),
    () => `expected ISO 8601 date-time, got ${short(v)}`,
  );

export function literal(expected: string | number | boolean): Rule {
  return (v) => check(v === expected, () => `expected ${JSON.stringify(expected)}, got ${short(v)}`);
}

export function oneOf(values: readonly string[]): Rule {
  return (v) => check(typeof v === "string" && values.includes(v), () => `expected one of ${values.join("|")}, got ${short(v)}`);
}

export function nullable(rule: Rule): Rule {
  return (v) => (v === null ? [] : rule(v));
}

export function optional(rule: Rule): Rule {
  const r: Rule = (v) => rule(v);
  r.optional = true;
  return r;
}

export function arrayOf(rule: Rule): Rule {
  return (v) => {
    if (!Array.isArray(v)) return [`expected array, got ${describeValue(v)}`];
    return v.flatMap((item: unknown, i) => rule(item).map((p) => `[${i}]${joiner(p)}${p}`));
  };
}

export function object(spec: Spec): Rule {
  return (v) => shapeProblems(v, spec);
}

export function shapeProblems(value: unknown, spec: Spec): string[] {
  if (!isRecord(value)) return [`expected object, got ${describeValue(value)}`];
  const problems: string[] = [];
  for (const [key, rule] of Object.entries(spec)) {
    if (!(key in value) || value[key] === undefined) {
      if (rule.optional !== true) problems.push(`${key}: missing`);
      continue;
    }
    problems.push(...rule(value[key]).map((p) => `${key}${joiner(p)}${p}`));
  }
  return problems;
}

// "a.b: problem" for nested fields, "a: problem" for a field's own problem.
function joiner(problem: string): string {
  if (problem.startsWith("[")) return "";
  return /^[\w$.[\]-]+: /.test(problem) ? "." : ": ";
}

export function absentProblems(value: unknown, keys: readonly string[]): string[] {
  if (!isRecord(value)) return [`expected object, got ${describeValue(value)}`];
  return keys.filter((k) => k in value).map((k) => `${k}: present, but the document says it is absent here`);
}

export function short(v: unknown): string {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

// ---- Resources ---------------------------------------------------------------------------

export const environmentSpec: Spec = { name: str, slug: str, id: str };

// Project fields every project response carries (create, get, get-by-slug, list, update, delete).
export const projectCoreSpec: Spec = {
  id: str,
  name: str,
  slug: str,
  type: str,
  orgId: uuid,
  createdAt: dateTime,
  updatedAt: dateTime,
  description: optional(nullable(str)),
  defaultProduct: optional(nullable(str)),
  autoCapitalization: nullable(bool),
  version: num,
  upgradeStatus: optional(nullable(str)),
  pitVersionLimit: num,
  kmsCertificateKeyId: optional(nullable(uuid)),
  auditLogsRetentionDays: optional(nullable(num)),
  hasDeleteProtection: nullable(bool),
  secretSharing: bool,
  showSnapshotsLegacy: bool,
  secretDetectionIgnoreValues: optional(nullable(arrayOf(str))),
};

// get-by-id, get-by-slug, list and create: the core plus _id and environments.
export const projectWithEnvSpec: Spec = {
  ...projectCoreSpec,
  _id: str,
  environments: arrayOf(object(environmentSpec)),
};

export const projectRoleSpec: Spec = {
  id: uuid,
  name: str,
  description: nullable(str),
  slug: str,
  permissions: any,
  createdAt: dateTime,
  updatedAt: dateTime,
  projectId: str,
  version: num,
};

export const PROJECT_DEFAULTS: Record<string, unknown> = {
  version: 1,
  pitVersionLimit: 10,
  hasDeleteProtection: false,
  secretSharing: true,
  showSnapshotsLegacy: false,
  autoCapitalization: false,
};

// Membership role entry. id, role and isTemporary always have a value; the custom-role and
// temporary-access fields have nothing to say for a permanent built-in role, so null is allowed.
export const membershipRoleSpec: Spec = {
  id: str,
  role: str,
  customRoleId: nullable(str),
  customRoleName: nullable(str),
  customRoleSlug: nullable(str),
  isTemporary: bool,
  temporaryMode: nullable(str),
  temporaryRange: nullable(str),
  temporaryAccessStartTime: nullable(dateTime),
  temporaryAccessEndTime: nullable(dateTime),
};

export const updateRoleSpec: Spec = {
  id: uuid,
  role: str,
  projectMembershipId: uuid,
  customRoleId: nullable(uuid),
  isTemporary: bool,
  temporaryMode: nullable(str),
  temporaryRange: nullable(str),
  temporaryAccessStartTime: nullable(dateTime),
  temporaryAccessEndTime: nullable(dateTime),
  createdAt: dateTime,
  updatedAt: dateTime,
};

const membershipUserBase: Spec = { email: str, firstName: str, lastName: str, id: uuid, publicKey: str };

export const userMembershipListSpec: Spec = {
  id: uuid,
  createdAt: dateTime,
  userId: uuid,
  projectId: str,
  user: object({ ...membershipUserBase, username: str }),
  roles: arrayOf(object(membershipRoleSpec)),
};

export const userMembershipDetailsSpec: Spec = {
  id: uuid,
  userId: uuid,
  projectId: str,
  user: object(membershipUserBase),
  roles: arrayOf(object(membershipRoleSpec)),
};

export const groupMembershipSpec: Spec = {
  id: str,
  groupId: str,
  createdAt: dateTime,
  updatedAt: dateTime,
  roles: arrayOf(object(membershipRoleSpec)),
  group: object({ name: str, id: uuid, slug: str }),
};

// tokenData: the two last-used/renewed times and the UA client secret id have no value for a
// fresh token issued by token auth, so null is allowed there. So is `name` for a token created
// without one: interface.md's create-token request is "{name: string, optional}", so
// "tokenData fields: ... name string" has nothing to carry when none was sent.
export const tokenDataSpec: Spec = {
  id: str,
  accessTokenTTL: num,
  accessTokenMaxTTL: num,
  accessTokenNumUses: num,
  accessTokenNumUsesLimit: num,
  accessTokenLastUsedAt: nullable(dateTime),
  accessTokenLastRenewedAt: nullable(dateTime),
  isAccessTokenRevoked: bool,
  identityUAClientSecretId: nullable(str),
  identityId: uuid,
  createdAt: dateTime,
  updatedAt: dateTime,
  name: nullable(str),
  authMethod: str,
  accessTokenPeriod: num,
};

export const createTokenSpec: Spec = {
  accessToken: str,
  expiresIn: num,
  accessTokenMaxTTL: num,
  tokenType: literal("Bearer"),
  tokenData: object(tokenDataSpec),
};

// Certificate profile scalars. The three config ids are listed as uuid without saying which
// are set; a profile only has the config of its enrollment type, so the others may be null.
export const certificateProfileScalarSpec: Spec = {
  id: uuid,
  projectId: str,
  caId: uuid,
  certificateTemplateId: uuid,
  slug: str,
  description: nullable(str),
  enrollmentType: oneOf(["api", "est", "acme"]),
  estConfigId: nullable(uuid),
  apiConfigId: nullable(uuid),
  acmeConfigId: nullable(uuid),
  createdAt: dateTime,
  updatedAt: dateTime,
};

export const certificateMetricsSpec: Spec = {
  profileId: str,
  totalCertificates: num,
  activeCertificates: num,
  expiredCertificates: num,
  expiringCertificates: num,
  revokedCertificates: num,
};

export const estConfigSpec: Spec = { id: str, disableBootstrapCaValidation: bool, passphrase: str, caChain: str };
export const apiConfigSpec: Spec = { id: str, autoRenew: bool, renewBeforeDays: num };
export const acmeConfigSpec: Spec = { id: str, directoryUrl: str };

export const LIST_ONLY_PROFILE_FIELDS = ["metrics", "estConfig", "apiConfig", "acmeConfig"] as const;

// ---- Secret syncs ----------------------------------------------------------------------

export const DESTINATIONS = [
  "workflow-engine",
  "code-host",
  "data-platform",
  "cloud-secrets-manager",
  "app-platform",
  "git-host",
  "monitoring",
] as const;
export type Destination = (typeof DESTINATIONS)[number];

// interface.md, naming note: connection.app is the connection kind.
export const CONNECTION_APP: Record<Destination, string> = {
  "workflow-engine": "workflow-engine",
  "code-host": "code-host",
  "data-platform": "data-platform",
  "cloud-secrets-manager": "cloud",
  "app-platform": "app-platform-host",
  "git-host": "git-host",
  monitoring: "monitoring",
};

export const destinationConfigSpec: Record<Destination, Spec> = {
  "workflow-engine": { scope: str, clusterUUID: str },
  "data-platform": { scope: str },
  monitoring: { accountId: str, accountName: str, groupId: str, groupName: str },
  "code-host": {
    scope: literal("organization"),
    org: str,
    visibility: literal("all"),
    selectedRepositoryIds: arrayOf(num),
  },
  "cloud-secrets-manager": { mappingBehavior: literal("one-to-one"), region: str },
  "app-platform": { appId: str, appName: str },
  "git-host": { repositorySlug: str, environmentId: str, workspaceSlug: str },
};

const syncOptionsCommon: Spec = { initialSyncBehavior: str, keySchema: str, disableSecretDeletion: bool };

export function syncOptionsSpec(destination: Destination): Spec {
  if (destination !== "cloud-secrets-manager") return syncOptionsCommon;
  return {
    ...syncOptionsCommon,
    keyId: str,
    tags: arrayOf(object({ key: str, value: str })),
    syncSecretMetadataAsTags: bool,
  };
}

// Status, job id, message and time fields: present, and a string (date-time for the times) or
// null while no job of that kind has run.
export function secretSyncSpec(destination: Destination): Spec {
  return {
    id: uuid,
    name: str,
    description: nullable(str),
    isAutoSyncEnabled: bool,
    version: num,
    projectId: str,
    folderId: uuid,
    connectionId: uuid,
    createdAt: dateTime,
    updatedAt: dateTime,
    syncStatus: nullable(str),
    importStatus: nullable(str),
    removeStatus: nullable(str),
    lastSyncJobId: nullable(str),
    lastImportJobId: nullable(str),
    lastRemoveJobId: nullable(str),
    lastSyncMessage: nullable(str),
    lastImportMessage: nullable(str),
    lastRemoveMessage: nullable(str),
    lastSyncedAt: nullable(dateTime),
    lastImportedAt: nullable(dateTime),
    lastRemovedAt: nullable(dateTime),
    syncOptions: object(syncOptionsSpec(destination)),
    connection: object({ app: literal(CONNECTION_APP[destination]), name: str, id: uuid }),
    environment: object({ slug: str, name: str, id: uuid }),
    folder: object({ id: str, path: str }),
    destination: literal(destination),
    destinationConfig: object(destinationConfigSpec[destination]),
  };
}

// The service's error body (DESIGN.md fills in what interface.md leaves "not shown").
export function errorBodyProblems(body: unknown, status: number): string[] {
  return shapeProblems(body, {
    reqId: str,
    statusCode: literal(status),
    message: (v) => check(v !== null, () => "expected a message, got null"),
    error: str,
  });
}
