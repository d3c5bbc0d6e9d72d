// ProjectMembership: the roles of one user (by username) or one group in a project. The
// interface can read and change a member's roles but cannot add or remove members, so a subject
// that is not a member is reported (MemberNotFound) and looked for again on every resync.
import { z } from "zod";
import type { KubeObject, ObjectKey } from "../engine/types.ts";
import {
  isServiceNotFound,
  type ApiClient,
  type GroupMembership,
  type MembershipRole,
  type RoleRequest,
  type UserMembership,
} from "../api/index.ts";
import type { CrdSource } from "../engine/kind.ts";
import { exactlyOneOf, immutable, validations } from "../engine/cel.ts";
import { keyOf, keyString } from "../kube/keys.ts";
import type { SharedInformer } from "../kube/informer.ts";
import type { SecondaryWatch } from "../engine/controller.ts";
import { parseMsStyleDuration } from "../lib/duration.ts";
import { ReconcileError } from "../engine/errors.ts";
import { type DeleteResult, type ManagedContext, type Observation, type StatusPatch } from "../engine/module.ts";
import {
  ageColumn,
  bounds,
  commonStatus,
  dropUndefined,
  isObserveOnly,
  kindRef,
  managementPolicy,
  notFoundAsUndefined,
  projectId,
  projectRef,
  providerConfigRef,
  readyColumns,
  finalizerKey,
  pausedKey,
  projectIdKey,
} from "./common.ts";
import { createSharedListing, DEFAULT_LISTING_TTL_MS, isSteady, listedOrTooLarge, listingScope, type SharedListing } from "./listing.ts";
import { connectVia, type ProviderResolver } from "./provider/resolver.ts";
import { projectIdForCleanup, resolveProjectId } from "./refs.ts";
import type { Kind, KindModule } from "./kind.ts";
import type { VersionChange } from "../lib/conversion.ts";
import { conditionEdits, initialismEdits, providerUserEdits, timeEdits, V1BETA1 } from "./common.ts";

export const ref = kindRef("ProjectMembership", "projectmemberships");

export const DEFAULT_REVOKE_ROLE = "no-access";
/** The service reads a custom role back as role "custom" with its slug beside it. */
const CUSTOM = "custom";
/** Longest wait asked of the work queue (timers above 2^31 ms fire at once); the resync comes sooner anyway. */
const MAX_REQUEUE_MS = 24 * 3_600_000;
/** Look again this long after a temporary role's end, so the clocks of keyward and the service agree it ended. */
const EXPIRY_GRACE_MS = 1_000;

const roleSlugPattern = /^[a-z0-9]+(?:[-_][a-z0-9]+)*$/;

const roleName = (description: string) =>
  z
    .string()
    .min(1)
    .max(64)
    .regex(roleSlugPattern)
    .refine((role) => role !== CUSTOM, { message: 'name a custom role by its slug, not "custom"' })
    .meta({ description, ...validations({ rule: `self != '${CUSTOM}'`, message: 'name a custom role by its slug, not "custom"' }) });

const temporaryFieldNames = ["temporaryMode", "temporaryRange", "temporaryAccessStartTime"] as const;
const temporaryNeedsFields = "a temporary role (isTemporary: true) needs temporaryMode, temporaryRange and temporaryAccessStartTime";
const temporaryOnly = "temporaryMode, temporaryRange and temporaryAccessStartTime apply only to a temporary role (isTemporary: true)";

export const roleSchema = z
  .object({
    role: roleName("admin, member, viewer, no-access, or the slug of a custom role of the project."),
    isTemporary: z
      .boolean()
      .optional()
      .describe("A temporary role grants access for temporaryRange from temporaryAccessStartTime. Default: false."),
    temporaryMode: z
      .enum(["relative"])
      .optional()
      .describe("How the range is measured; the service knows relative (from temporaryAccessStartTime)."),
    temporaryRange: z
      .string()
      .max(16)
      .regex(/^[1-9][0-9]*(ms|s|m|h|d)$/)
      .optional()
      .describe('How long the role lasts, ms-style: a positive whole number and a unit (ms, s, m, h, d), e.g. "8h".'),
    temporaryAccessStartTime: z.iso.datetime({ offset: true }).optional().describe("When the temporary access starts (RFC 3339)."),
  })
  .strict()
  .superRefine((r, ctx) => {
    const given = temporaryFieldNames.filter((f) => r[f] !== undefined);
    if (r.isTemporary === true && given.length < temporaryFieldNames.length)
      ctx.addIssue({ code: "custom", message: temporaryNeedsFields });
    if (r.isTemporary !== true && given.length > 0) ctx.addIssue({ code: "custom", message: temporaryOnly });
  })
  .meta(
    validations(
      {
        rule: "!has(self.isTemporary) || !self.isTemporary || (has(self.temporaryMode) && has(self.temporaryRange) && has(self.temporaryAccessStartTime))",
        message: temporaryNeedsFields,
      },
      {
        rule: "(has(self.isTemporary) && self.isTemporary) || !(has(self.temporaryMode) || has(self.temporaryRange) || has(self.temporaryAccessStartTime))",
        message: temporaryOnly,
      },
    ),
  );
export type SpecRole = z.infer<typeof roleSchema>;

const groupSubjects = ["id", "slug", "name"] as const;

export const groupSchema = z
  .object({
    id: z.string().min(1).max(128).optional().describe("The group's id."),
    slug: z.string().min(1).max(64).optional().describe("The group's slug."),
    name: z.string().min(1).max(256).optional().describe("The group's name (must name one group among the project's)."),
  })
  .strict()
  .refine((g) => groupSubjects.filter((k) => g[k] !== undefined).length === 1, { message: "exactly one of id, slug or name must be set" })
  .meta({
    description: "A group, by id, slug or name, found among the project's group memberships. Immutable.",
    ...validations(
      exactlyOneOf(groupSubjects, "exactly one of id, slug or name must be set"),
      ...immutable("group is immutable: create another ProjectMembership for another group")["x-kubernetes-validations"],
    ),
  });

const userNeedsPermanent = "a user membership needs at least one permanent role (the service requires it)";

export const specSchema = z
  .object({
    providerConfigRef: providerConfigRef.optional(),
    projectRef: projectRef.optional().meta(immutable("projectRef is immutable: create another ProjectMembership for another project")),
    projectId: projectId.optional().meta(immutable("projectId is immutable: create another ProjectMembership for another project")),
    username: z
      .string()
      .min(1)
      .max(256)
      .optional()
      .meta({
        description:
          "A user, by username; the user must already be a member of the project (keyward sets roles, it cannot add members: MemberNotFound). Immutable.",
        ...immutable("username is immutable: create another ProjectMembership for another user"),
      }),
    group: groupSchema.optional(),
    roles: z
      .array(roleSchema)
      .min(1)
      .max(32)
      .describe("The member's roles at the service, permanent or temporary; compared without regard to order."),
    deletionPolicy: z
      .enum(["Retain", "Revoke"])
      .optional()
      .describe(
        "Retain (default): deleting the resource leaves the roles. Revoke: set the roles to revokeRole first (the interface cannot remove a member).",
      ),
    revokeRole: roleName("The role Revoke leaves the member with. Default: no-access.").optional(),
    managementPolicy: managementPolicy.optional(),
  })
  .strict()
  .superRefine((s, ctx) => {
    if ((s.projectRef === undefined) === (s.projectId === undefined))
      ctx.addIssue({ code: "custom", message: "exactly one of projectRef or projectId must be set" });
    if ((s.username === undefined) === (s.group === undefined))
      ctx.addIssue({ code: "custom", message: "exactly one of username or group must be set" });
    if (s.username !== undefined && s.roles.every((r) => r.isTemporary === true))
      ctx.addIssue({ code: "custom", path: ["roles"], message: userNeedsPermanent });
  });
export type ProjectMembershipSpec = z.infer<typeof specSchema>;

export const statusRoleSchema = z.object({
  role: z.string().max(bounds.NAME).describe("As the service reports it: a built-in role, or custom for a custom role."),
  customRoleSlug: z.string().max(bounds.NAME).optional().describe("For a custom role: its slug (what spec.roles[].role names)."),
  customRoleName: z.string().max(bounds.NAME).optional().describe("For a custom role: its display name."),
  isTemporary: z.boolean().describe("Whether the role is temporary (it ends at temporaryAccessEndTime)."),
  temporaryMode: z.string().max(bounds.WORD).optional().describe("For a temporary role: how its range is measured (relative)."),
  temporaryRange: z
    .string()
    .max(bounds.WORD)
    .optional()
    .describe('For a temporary role: how long it lasts, as the service reports it (e.g. "8h").'),
  temporaryAccessStartTime: z
    .string()
    .max(bounds.TIME)
    .optional()
    .describe("For a temporary role: when its access started or starts (RFC 3339)."),
  temporaryAccessEndTime: z
    .string()
    .max(bounds.TIME)
    .optional()
    .describe("For a temporary role: when its access ends (RFC 3339), as the service computes it."),
  expired: z.boolean().optional().describe("For a temporary role: its access has ended (as of the last reconcile)."),
});
export type StatusRole = z.infer<typeof statusRoleSchema>;

export const statusSchema = z.object({
  ...commonStatus,
  projectId: z.string().max(bounds.ID).optional().describe("The project's id."),
  membershipId: z.string().max(bounds.ID).optional().describe("The user's membership id."),
  userId: z.string().max(bounds.ID).optional().describe("The user's id."),
  groupMembershipId: z.string().max(bounds.ID).optional().describe("The group membership's id."),
  groupId: z.string().max(bounds.ID).optional().describe("The group's id."),
  groupSlug: z.string().max(bounds.NAME).optional().describe("For a group member: the group's slug (the Group column)."),
  groupName: z.string().max(bounds.NAME).optional().describe("For a group member: the group's name."),
  roles: z.array(statusRoleSchema).max(bounds.STATUS_ROLES).optional().describe("The member's roles as the service reports them."),
  nextTemporaryAccessEndTime: z
    .string()
    .max(bounds.TIME)
    .optional()
    .describe("The soonest end of a temporary role that has not ended yet."),
});
export type ProjectMembershipStatus = z.infer<typeof statusSchema>;

export const crdSource: CrdSource = {
  ...ref,
  singular: "projectmembership",
  shortNames: ["kwmember"],
  categories: ["keyward"],
  description:
    "The roles of one user or one group in a project, permanent or temporary. keyward changes the roles; it cannot add or remove members (a subject that is not a member is reported as MemberNotFound).",
  spec: specSchema,
  status: statusSchema,
  specValidations: [
    exactlyOneOf(["projectRef", "projectId"]),
    exactlyOneOf(["username", "group"]),
    { rule: "!has(self.username) || self.roles.exists(r, !has(r.isTemporary) || !r.isTemporary)", message: userNeedsPermanent },
    {
      rule: "has(self.username) == has(oldSelf.username) && has(self.group) == has(oldSelf.group)",
      message: "the subject cannot change between a user and a group: create another ProjectMembership",
    },
    {
      rule: "has(self.projectRef) == has(oldSelf.projectRef) && has(self.projectId) == has(oldSelf.projectId)",
      message: "the project is immutable: create another ProjectMembership for another project",
    },
  ],
  printerColumns: [
    { name: "User", type: "string", jsonPath: ".spec.username" },
    { name: "Group", type: "string", jsonPath: ".status.groupSlug" },
    ...readyColumns,
    { name: "Next-Expiry", type: "string", jsonPath: ".status.nextTemporaryAccessEndTime", priority: 1 },
    ageColumn,
  ],
};

// ---------------------------------------------------------------- comparing roles

/** A role in any of its shapes: the spec's, the service's, or status's. */
export interface RoleLike {
  role: string;
  customRoleSlug?: string | null | undefined;
  isTemporary?: boolean | null | undefined;
  temporaryMode?: string | null | undefined;
  temporaryRange?: string | null | undefined;
  temporaryAccessStartTime?: string | null | undefined;
}

function normalRange(range: string | null | undefined): number | string {
  if (range == null) return "";
  return parseMsStyleDuration(range) ?? `text:${range}`;
}

function normalTime(time: string | null | undefined): number | string {
  if (time == null) return "";
  const ms = Date.parse(time);
  return Number.isNaN(ms) ? `text:${time}` : ms;
}

/**
 * The role slug (a custom role's slug, not "custom"), and for a temporary role its mode, its
 * range in ms and its start in epoch ms: equal keys mean the same grant, however written
 * ("1h" = "60m", "…T00:00:00Z" = "…T00:00:00.000Z").
 */
export function roleKey(r: RoleLike): string {
  const slug = r.role === CUSTOM && r.customRoleSlug ? r.customRoleSlug : r.role;
  if (r.isTemporary !== true) return JSON.stringify([slug]);
  return JSON.stringify([slug, r.temporaryMode ?? "", normalRange(r.temporaryRange), normalTime(r.temporaryAccessStartTime)]);
}

/** Whether two role lists grant the same roles, in any order. */
export function sameRoles(a: readonly RoleLike[], b: readonly RoleLike[]): boolean {
  if (a.length !== b.length) return false;
  const x = a.map(roleKey).sort();
  const y = b.map(roleKey).sort();
  return x.every((key, i) => key === y[i]);
}

/** The update body's role item for a spec role. */
export function roleRequest(r: SpecRole): RoleRequest {
  if (r.isTemporary !== true) return { role: r.role, isTemporary: false };
  const { temporaryRange, temporaryAccessStartTime } = r;
  if (temporaryRange === undefined || temporaryAccessStartTime === undefined) {
    throw new ReconcileError("InvalidSpec", temporaryNeedsFields, { retryable: false });
  }
  return { role: r.role, isTemporary: true, temporaryMode: "relative", temporaryRange, temporaryAccessStartTime };
}

// ---------------------------------------------------------------- status

/** A role as status shows it: the service's fields without nulls, and whether a temporary one has ended. */
export function statusRole(r: MembershipRole, now: number): StatusRole {
  const out: StatusRole = { role: r.role, isTemporary: r.isTemporary };
  if (r.customRoleSlug != null) out.customRoleSlug = r.customRoleSlug;
  if (r.customRoleName != null) out.customRoleName = r.customRoleName;
  if (!r.isTemporary) return out;
  if (r.temporaryMode != null) out.temporaryMode = r.temporaryMode;
  if (r.temporaryRange != null) out.temporaryRange = r.temporaryRange;
  if (r.temporaryAccessStartTime != null) out.temporaryAccessStartTime = r.temporaryAccessStartTime;
  if (r.temporaryAccessEndTime != null) {
    out.temporaryAccessEndTime = r.temporaryAccessEndTime;
    const end = Date.parse(r.temporaryAccessEndTime);
    if (!Number.isNaN(end)) out.expired = end <= now;
  }
  return out;
}

/** The soonest end of a temporary role still running at `now`, in epoch ms. */
export function nextEnd(roles: readonly MembershipRole[], now: number): number | undefined {
  const ends = roles
    .filter((r) => r.isTemporary && r.temporaryAccessEndTime != null)
    .map((r) => Date.parse(r.temporaryAccessEndTime ?? ""))
    .filter((end) => !Number.isNaN(end) && end > now);
  return ends.length === 0 ? undefined : Math.min(...ends);
}

/** Every field of the kind's status, null: the engine drops null fields, so what no longer applies goes. */
const cleared: Record<Exclude<keyof ProjectMembershipStatus, "conditions" | "observedGeneration">, null> = {
  projectId: null,
  membershipId: null,
  userId: null,
  groupMembershipId: null,
  groupId: null,
  groupSlug: null,
  groupName: null,
  roles: null,
  nextTemporaryAccessEndTime: null,
};

/**
 * `status` as the kind's whole status: every field it leaves out is null, so the engine removes
 * it. (Fields of the result may therefore be null at run time: read them with `== null`.)
 */
function wholeStatus(status: Partial<ProjectMembershipStatus>): Partial<ProjectMembershipStatus> {
  return { ...cleared, ...dropUndefined(status) } as unknown as Partial<ProjectMembershipStatus>;
}

// ---------------------------------------------------------------- finding the member

/** A membership found at the service, user or group, in one shape. */
export interface Member {
  kind: "user" | "group";
  /** The user membership's id, or the group membership's id. */
  membershipId: string;
  /** The user's or the group's id (a group's roles are updated by group id). */
  subjectId: string;
  group?: { slug: string; name: string };
  roles: MembershipRole[];
}

type GroupSelector = NonNullable<ProjectMembershipSpec["group"]>;

function fromUser(m: UserMembership): Member {
  return { kind: "user", membershipId: m.id, subjectId: m.userId, roles: m.roles };
}

function fromGroup(m: GroupMembership): Member {
  return { kind: "group", membershipId: m.id, subjectId: m.groupId, group: { slug: m.group.slug, name: m.group.name }, roles: m.roles };
}

export function describeSubject(spec: Pick<ProjectMembershipSpec, "username" | "group">): string {
  if (spec.username !== undefined) return `user ${spec.username}`;
  const g = spec.group;
  if (g?.id !== undefined) return `group with id ${g.id}`;
  if (g?.slug !== undefined) return `group with slug ${g.slug}`;
  return `group named "${g?.name ?? ""}"`;
}

/** The group memberships `selector` names (more than one only for a name shared by several groups). */
export function matchGroups(memberships: readonly GroupMembership[], selector: GroupSelector): GroupMembership[] {
  return memberships.filter((m) => {
    if (selector.id !== undefined) return m.groupId === selector.id || m.group.id === selector.id;
    if (selector.slug !== undefined) return m.group.slug === selector.slug;
    return m.group.name === selector.name;
  });
}

/** Shared listings of a project's user and group memberships, for steady resync passes. */
interface Listings {
  users: SharedListing<UserMembership>;
  groups: SharedListing<GroupMembership>;
}

/** Where a pass reads members: the shared listings (a steady resync pass) or the service directly. */
interface MemberSource {
  api: ApiClient;
  /** Set for a steady pass: the listings and their scope (ProviderConfig and project). */
  shared?: { listings: Listings; scope: string };
}

function sourceOf(listings: Listings, c: Ctx, projectId: string): MemberSource {
  if (!isSteady(c.obj)) return { api: c.conn };
  return { api: c.conn, shared: { listings, scope: listingScope(c, projectId) } };
}

async function findMember(source: MemberSource, projectId: string, spec: ProjectMembershipSpec): Promise<Member | undefined> {
  const { api, shared } = source;
  if (spec.username !== undefined) {
    if (shared) {
      // One list of the project's users serves every membership of the project in this resync.
      const users = await listedOrTooLarge(shared.listings.users, shared.scope, () => api.listProjectMemberships(projectId)).catch(
        notFoundAsUndefined,
      );
      const listed = users?.get(spec.username);
      if (listed) return fromUser(listed);
    }
    try {
      return fromUser(await api.getMembershipByUsername(projectId, spec.username));
    } catch (err) {
      // The details lookup answers 404 for a user who is not a member.
      if (isServiceNotFound(err)) return undefined;
      throw err;
    }
  }
  if (!spec.group) throw new ReconcileError("InvalidSpec", "exactly one of username or group must be set", { retryable: false });
  // A project that is gone answers 404: it has no members (and a deletion has nothing to revoke).
  const groups = shared
    ? [
        ...((await shared.listings.groups.get(shared.scope, () => api.listProjectGroups(projectId)).catch(notFoundAsUndefined))?.values() ??
          []),
      ]
    : await api.listProjectGroups(projectId).catch(notFoundAsUndefined);
  if (!groups) return undefined;
  const matches = matchGroups(groups, spec.group);
  if (matches.length > 1) {
    throw new ReconcileError(
      "AmbiguousGroup",
      `${matches.length} groups of project ${projectId} are named "${spec.group.name ?? ""}": name the group by slug or id`,
      { retryable: false },
    );
  }
  const [match] = matches;
  return match ? fromGroup(match) : undefined;
}

function statusOf(projectId: string, member: Member, now: number): Partial<ProjectMembershipStatus> {
  const next = nextEnd(member.roles, now);
  const subject =
    member.kind === "user"
      ? { membershipId: member.membershipId, userId: member.subjectId }
      : { groupMembershipId: member.membershipId, groupId: member.subjectId, groupSlug: member.group?.slug, groupName: member.group?.name };
  return wholeStatus({
    projectId,
    ...subject,
    roles: member.roles.map((r) => statusRole(r, now)),
    ...(next === undefined ? {} : { nextTemporaryAccessEndTime: new Date(next).toISOString() }),
  });
}

// ---------------------------------------------------------------- the module

type Ctx = ManagedContext<ProjectMembershipSpec, ProjectMembershipStatus, ApiClient>;

/**
 * The project id; while the resource is being deleted, an unresolved Project falls back to the id
 * last seen, and without one (a restore, a pass that died before its status write) a Project that
 * exists is waited for, and one that is gone gives the project this resource recorded
 * (projectIdForCleanup).
 */
async function projectIdOf(c: Ctx): Promise<string | undefined> {
  try {
    return await resolveProjectId(c.kube, c.key.namespace, c.spec);
  } catch (err) {
    const deleting = c.obj.metadata.deletionTimestamp !== undefined;
    if (!deleting || !(err instanceof ReconcileError) || err.reason !== "ReferenceNotReady") throw err;
    return c.status.projectId ?? (await projectIdForCleanup(c));
  }
}

function notMember(c: Ctx, projectId: string): { reason: string; message: string } {
  return {
    reason: "MemberNotFound",
    message: `${describeSubject(c.spec)} is not a member of project ${projectId}; keyward cannot add members (the service's interface has none): add it at the service and keyward picks it up on the next resync`,
  };
}

/** A subject as peers can compare it: a user by username, a group by its resolved id. */
export function subjectKey(spec: { username?: string | undefined }, status: { groupId?: string | null | undefined }): string | undefined {
  if (spec.username !== undefined) return `user:${spec.username.toLowerCase()}`;
  return status.groupId ? `group:${status.groupId}` : undefined;
}

const objectOrder = (o: KubeObject): string => `${o.metadata.creationTimestamp ?? ""}|${keyString(o.metadata)}`;

/**
 * Two ProjectMemberships (often of two teams, in two namespaces) naming one subject of one
 * project would each correct the other on every resync, and one's Revoke would undo the other's
 * grant. The oldest one recording the member manages the subject; the others report
 * SubjectClaimed and change nothing. One that records the project but no member id is waiting
 * (SubjectClaimed, MemberNotFound) and holds nothing: counted, an older one that lost the lock to
 * a younger would make the younger yield too, and neither would manage.
 */
export function claimant(self: KubeObject, peers: readonly KubeObject[], projectId: string, subject: string): KubeObject | undefined {
  const rivals = peers.filter((p) => {
    const st = (p.status ?? {}) as { projectId?: string; groupId?: string; membershipId?: string; groupMembershipId?: string };
    const recordsMember = typeof (st.membershipId ?? st.groupMembershipId) === "string";
    return p.metadata.deletionTimestamp === undefined && st.projectId === projectId && recordsMember && subjectKey(p.spec, st) === subject;
  });
  const first = [...rivals, self].sort((a, b) => objectOrder(a).localeCompare(objectOrder(b)))[0];
  return first && first.metadata.uid !== self.metadata.uid ? first : undefined;
}

/**
 * Who manages the subject of the project, when not this resource: an older membership recording
 * it (claimant, the caches), else the holder of the claim rule's lock on it (holder.ts), taken by
 * this resource's first pass on the member and by its finalizer (which releases it), so that two
 * memberships created at once never both manage the member. A pass of a resource that already
 * records the member takes no lock.
 */
async function subjectHolder(
  c: Ctx,
  projectId: string,
  subject: string,
  found: StatusPatch<ProjectMembershipStatus>,
): Promise<ObjectKey | undefined> {
  const older = claimant(c.obj as KubeObject, c.peers(), projectId, subject);
  if (older) return keyOf(older);
  const memberId = (s: StatusPatch<ProjectMembershipStatus>): unknown => s.membershipId ?? s.groupMembershipId;
  const recorded = c.status.projectId === projectId && memberId(c.status) != null && memberId(c.status) === memberId(found);
  if (recorded && c.obj.metadata.deletionTimestamp === undefined) return undefined;
  return c.hold(`${projectId}/${subject}`);
}

async function observe(listings: Listings, c: Ctx): Promise<Observation<ProjectMembershipStatus>> {
  const projectId = await projectIdOf(c);
  if (projectId === undefined) {
    return {
      exists: false,
      upToDate: false,
      canCreate: false,
      status: wholeStatus({}),
      absent: { reason: "ReferenceNotReady", message: "the project is unknown" },
    };
  }
  const member = await findMember(sourceOf(listings, c, projectId), projectId, c.spec);
  if (!member) {
    return { exists: false, upToDate: false, canCreate: false, status: wholeStatus({ projectId }), absent: notMember(c, projectId) };
  }
  const now = Date.now();
  const status = statusOf(projectId, member, now);
  const subject = subjectKey(c.spec, status);
  const owner = subject === undefined ? undefined : await subjectHolder(c, projectId, subject, status);
  if (owner) {
    const message = `${describeSubject(c.spec)} of project ${projectId} is managed by ProjectMembership ${keyString(owner)}; this one changes nothing while that one exists`;
    return {
      exists: false,
      upToDate: false,
      canCreate: false,
      status: wholeStatus({ projectId }),
      absent: { reason: "SubjectClaimed", message },
    };
  }
  const upToDate = sameRoles(c.spec.roles, member.roles);
  const next = nextEnd(member.roles, now);
  return {
    exists: true,
    upToDate,
    diff: upToDate ? [] : ["roles"],
    status,
    // Status says which temporary roles have ended: look again when the next one ends.
    ...(next === undefined ? {} : { requeueAfterMs: Math.min(next - now + EXPIRY_GRACE_MS, MAX_REQUEUE_MS) }),
  };
}

async function writeRoles(listings: Listings, c: Ctx, status: StatusPatch<ProjectMembershipStatus>, roles: RoleRequest[]): Promise<void> {
  const projectId = status.projectId;
  const target = c.spec.username !== undefined ? status.membershipId : status.groupId;
  if (projectId == null || target == null)
    throw new ReconcileError("MemberNotFound", "the membership is not known yet", { retryable: true });
  const scope = listingScope(c, projectId);
  listings.users.invalidate(scope);
  listings.groups.invalidate(scope);
  if (c.spec.username !== undefined) await c.conn.updateMembershipRoles(projectId, target, roles);
  else await c.conn.updateGroupRoles(projectId, target, roles);
}

async function update(listings: Listings, c: Ctx, obs: Observation<ProjectMembershipStatus>): Promise<Partial<ProjectMembershipStatus>> {
  const projectId = obs.status.projectId ?? "";
  try {
    await writeRoles(listings, c, obs.status, c.spec.roles.map(roleRequest));
  } catch (err) {
    if (isServiceNotFound(err))
      throw new ReconcileError("MemberNotFound", notMember(c, projectId).message, { retryable: false, cause: err });
    throw err;
  }
  // The update's answer names custom roles by id only: read the membership again for status.
  const member = await findMember({ api: c.conn }, projectId, c.spec);
  if (!member) throw new ReconcileError("MemberNotFound", notMember(c, projectId).message, { retryable: false });
  return statusOf(projectId, member, Date.now());
}

async function revoke(listings: Listings, c: Ctx, obs: Observation<ProjectMembershipStatus>): Promise<DeleteResult> {
  const role = c.spec.revokeRole ?? DEFAULT_REVOKE_ROLE;
  const target: RoleRequest[] = [{ role, isTemporary: false }];
  if (sameRoles(target, obs.status.roles ?? [])) return { done: true };
  try {
    await writeRoles(listings, c, obs.status, target);
  } catch (err) {
    if (isServiceNotFound(err)) return { done: true };
    throw err;
  }
  c.event("Normal", "Revoked", `set the roles of ${describeSubject(c.spec)} to ${role}`);
  return { done: true };
}

export function projectMembershipModule(deps: {
  providers: ProviderResolver;
  listingTtlMs?: number;
}): KindModule<ProjectMembershipSpec, ProjectMembershipStatus, ApiClient> {
  const ttl = deps.listingTtlMs ?? DEFAULT_LISTING_TTL_MS;
  const listings: Listings = {
    users: createSharedListing<UserMembership>((m) => m.user.username ?? m.id, ttl),
    groups: createSharedListing<GroupMembership>((m) => m.id, ttl),
  };
  return {
    ref,
    parseSpec: (raw) => specSchema.parse(raw),
    needsFinalizer: (spec) => spec.deletionPolicy === "Revoke",
    // The lock on its member of the project (subjectHolder).
    holds: true,
    connect: connectVia(deps.providers),
    observe: (c) => observe(listings, c),
    update: (c, obs) => update(listings, c, obs),
    delete: (c, obs) => revoke(listings, c, obs),
    observeOnly: isObserveOnly,
  };
}

/** How v1alpha1 becomes v1beta1 (docs/api-review.md): a temporary role is one optional struct. */
export const v1beta1: VersionChange = {
  from: ref.version,
  to: V1BETA1,
  edits: [
    ...conditionEdits,
    ...providerUserEdits,
    ...initialismEdits(
      "spec.projectId",
      "status.projectId",
      "status.membershipId",
      "status.userId",
      "status.groupMembershipId",
      "status.groupId",
    ),
    { op: "enum", path: "spec.roles[].temporaryMode", values: { relative: "Relative" } },
    {
      op: "presence",
      path: "spec.roles[]",
      flag: "isTemporary",
      struct: "temporary",
      fields: { temporaryMode: "mode", temporaryRange: "range", temporaryAccessStartTime: "startTime" },
      // mode too: its default fills it in
      required: ["mode", "range", "startTime"],
    },
    { op: "default", path: "spec.roles[].temporary.mode", value: "Relative" },
    {
      op: "rule",
      path: "spec",
      from: "!has(self.username) || self.roles.exists(r, !has(r.isTemporary) || !r.isTemporary)",
      to: {
        rule: "!has(self.username) || self.roles.exists(r, !has(r.temporary))",
        message: "a user membership needs at least one permanent role (the service requires it)",
      },
    },
    { op: "default", path: "spec.deletionPolicy", value: "Retain" },
    { op: "default", path: "spec.revokeRole", value: DEFAULT_REVOKE_ROLE },
    ...timeEdits("status.nextTemporaryAccessEndTime"),
  ],
};

export const kind: Kind = {
  ref,
  crd: crdSource,
  conversion: v1beta1,
  reasons: {
    AmbiguousGroup: { means: "failed", doc: "The group selector matches more than one group." },
    MemberNotFound: { means: "failed", doc: "The user or group is not a member of the project and keyward may not add it." },
    SubjectClaimed: {
      means: "failed",
      doc: "Another ProjectMembership (an older one, or the one that took the member first) manages the same member of the project; this one waits.",
    },
    Revoked: { means: "done", doc: "keyward set the member's roles to the revoked role (deletionPolicy)." },
  },
  refers: { providerConfig: true, project: true },
  serviceIdFields: ["membershipId", "groupMembershipId"],
  metadata: [pausedKey, finalizerKey("deletionPolicy is Revoke"), projectIdKey],
  controller: (d) => {
    // The rule spans namespaces, so its rivals come from every replica's share (with sharding).
    const everyone = d.everywhere(ref);
    return {
      reconcile: d.managed(projectMembershipModule({ providers: d.providers, listingTtlMs: d.listingTtlMs }), () => everyone.list()),
      watches: [rivalsWatch(everyone)],
    };
  },
};

/**
 * A membership that goes (deleted, or being deleted) wakes this replica's memberships of the same
 * subject of the same project, wherever it was reconciled: the next oldest takes the subject over
 * at once, not at its resync.
 */
export function rivalsWatch(everyone: SharedInformer): SecondaryWatch {
  const sameSubject = (a: KubeObject, b: KubeObject): boolean => {
    const sa = (a.status ?? {}) as { projectId?: string; groupId?: string };
    const sb = (b.status ?? {}) as { projectId?: string; groupId?: string };
    const key = subjectKey(a.spec ?? {}, sa);
    return (
      a.metadata.uid !== b.metadata.uid &&
      sa.projectId !== undefined &&
      sa.projectId === sb.projectId &&
      key !== undefined &&
      key === subjectKey(b.spec ?? {}, sb)
    );
  };
  return {
    kind: ref,
    informer: everyone,
    predicate: (type, obj, old) =>
      type === "delete" || (obj.metadata.deletionTimestamp !== undefined && old?.metadata.deletionTimestamp === undefined),
    mapToKeys: (obj, primaries) => (primaries?.() ?? []).filter((p) => sameSubject(p, obj)).map((p) => keyOf(p)),
  };
}
