// Seeding (start, admin API, Emulator.seed) and member management for tests. Seed entries are
// upserts: by id, else by their natural key (username, slug, project + slug).
import { createHash, randomUUID } from "node:crypto";
import { notFound } from "./errors.ts";
import { addProject, addProjectRole, buildMemberRoles, findProjectBySlug, isRoleName, nowIso, setProjectSlug } from "./model.ts";
import type { GroupRec, MembershipRec, ProfileRec, ProjectRec, State, UserRec } from "./state.ts";
import type { MemberSeed, MemberSelector, Seed } from "./types.ts";

export function applySeed(state: State, seed: Seed, orgId: string): void {
  for (const user of seed.users ?? []) upsertUser(state, user);
  for (const group of seed.groups ?? []) upsertGroup(state, group);
  for (const identity of seed.identities ?? []) {
    const ttl = identity.accessTokenTTL ?? 7200;
    state.identities[identity.id] = {
      id: identity.id,
      name: identity.name ?? `identity-${identity.id.slice(0, 8)}`,
      accessTokenTTL: ttl,
      accessTokenMaxTTL: identity.accessTokenMaxTTL ?? Math.max(ttl, 2_592_000),
      ...(identity.answeredExpiresIn !== undefined ? { answeredExpiresIn: identity.answeredExpiresIn } : {}),
    };
  }
  for (const connection of seed.connections ?? []) state.connections[connection.id] = { ...connection };
  for (const project of seed.projects ?? []) upsertProject(state, project, orgId);
  for (const role of seed.customRoles ?? []) {
    const project = resolveProject(state, role);
    addProjectRole(state, project.id, role.slug, role.name ?? role.slug, true, role.id);
  }
  for (const profile of seed.certificateProfiles ?? []) upsertProfile(state, profile);
  for (const member of seed.memberships ?? []) {
    if (awaitsProject(state, member)) deferMember(state, member);
    else addMember(state, member);
  }
}

// A member seeded by the slug of a project that does not exist yet (one the client under test
// creates later, such as keyward's sample Project) waits for that project: see applyDeferredMembers.
function awaitsProject(state: State, member: MemberSeed): boolean {
  return member.projectId === undefined && member.projectSlug !== undefined && !findProjectBySlug(state, member.projectSlug);
}

function deferMember(state: State, member: MemberSeed): void {
  // What can be checked without the project is checked now, so a bad seed fails at seeding,
  // never inside a later project creation.
  resolveSubject(state, member);
  const badRole = member.roles.find((item) => !isRoleName(item.role));
  if (badRole) throw notFound("One or more custom roles not found");
  const sameSubject = (m: MemberSeed): boolean =>
    m.projectSlug === member.projectSlug &&
    m.username === member.username &&
    m.groupId === member.groupId &&
    m.groupSlug === member.groupSlug;
  state.deferredMembers = [...state.deferredMembers.filter((m) => !sameSubject(m)), member];
}

/** Adds the members seeded for this project's slug before it existed (each time such a project is created). */
export function applyDeferredMembers(state: State, project: ProjectRec): void {
  for (const member of state.deferredMembers) {
    if (member.projectSlug === project.slug) addMember(state, { ...member, projectId: project.id });
  }
}

function upsertUser(state: State, input: NonNullable<Seed["users"]>[number]): UserRec {
  const existing = (input.id !== undefined ? state.users[input.id] : undefined) ?? findUser(state, input.username);
  const user: UserRec = {
    id: existing?.id ?? input.id ?? randomUUID(),
    username: input.username,
    email: input.email ?? existing?.email ?? (input.username.includes("@") ? input.username : `${input.username}@example.com`),
    firstName: input.firstName ?? existing?.firstName ?? "",
    lastName: input.lastName ?? existing?.lastName ?? "",
    publicKey: existing?.publicKey ?? createHash("sha256").update(`public-key:${input.username}`).digest("base64"),
  };
  state.users[user.id] = user;
  return user;
}

function findUser(state: State, username: string): UserRec | undefined {
  return Object.values(state.users).find((user) => user.username === username);
}

function upsertGroup(state: State, input: NonNullable<Seed["groups"]>[number]): void {
  const existing = (input.id !== undefined ? state.groups[input.id] : undefined) ?? findGroupBySlug(state, input.slug);
  const group: GroupRec = { id: existing?.id ?? input.id ?? randomUUID(), name: input.name, slug: input.slug };
  state.groups[group.id] = group;
}

function findGroupBySlug(state: State, slug: string): GroupRec | undefined {
  return Object.values(state.groups).find((group) => group.slug === slug);
}

function upsertProject(state: State, input: NonNullable<Seed["projects"]>[number], orgId: string): void {
  const existing = (input.id !== undefined ? state.projects[input.id] : undefined) ?? findProjectBySlug(state, input.slug);
  if (existing) {
    existing.name = input.name;
    setProjectSlug(state, existing, input.slug);
    if (input.type !== undefined) existing.type = input.type;
    if (input.hasDeleteProtection !== undefined) existing.hasDeleteProtection = input.hasDeleteProtection;
    return;
  }
  addProject(state, {
    ...(input.id === undefined ? {} : { id: input.id }),
    name: input.name,
    slug: input.slug,
    type: input.type ?? "secret-manager",
    orgId,
    hasDeleteProtection: input.hasDeleteProtection ?? false,
    createDefaultEnvs: true,
  });
}

function resolveProject(state: State, ref: { projectId?: string; projectSlug?: string }): ProjectRec {
  const project =
    ref.projectId !== undefined
      ? state.projects[ref.projectId]
      : ref.projectSlug !== undefined
        ? findProjectBySlug(state, ref.projectSlug)
        : undefined;
  if (!project) throw notFound(`Project '${ref.projectId ?? ref.projectSlug ?? ""}' not found`);
  return project;
}

type RawProfile = NonNullable<Seed["certificateProfiles"]>[number];

function upsertProfile(state: State, raw: RawProfile): void {
  const existing = Object.values(state.profiles).find(
    (p) => (typeof raw["id"] === "string" && p.id === raw["id"]) || (p.projectId === raw.projectId && p.slug === raw.slug),
  );
  const profile = normalizeProfile(raw, existing);
  state.profiles[profile.id] = profile;
}

function text(raw: Record<string, unknown>, key: string, fallback: string): string {
  const value = raw[key];
  return typeof value === "string" ? value : fallback;
}

function record(raw: Record<string, unknown>, key: string): Record<string, unknown> {
  const value = raw[key];
  return typeof value === "object" && value !== null ? (value as Record<string, unknown>) : {};
}

function count(raw: Record<string, unknown>, key: string): number {
  const value = raw[key];
  return typeof value === "number" ? value : 0;
}

function normalizeProfile(raw: RawProfile, existing: ProfileRec | undefined): ProfileRec {
  const at = nowIso();
  const id = text(raw, "id", existing?.id ?? randomUUID());
  const metrics = record(raw, "metrics");
  const profile: ProfileRec = {
    id,
    projectId: raw.projectId,
    caId: text(raw, "caId", existing?.caId ?? randomUUID()),
    certificateTemplateId: text(raw, "certificateTemplateId", existing?.certificateTemplateId ?? randomUUID()),
    slug: raw.slug,
    description: typeof raw["description"] === "string" ? raw["description"] : null,
    enrollmentType: raw.enrollmentType,
    createdAt: text(raw, "createdAt", existing?.createdAt ?? at),
    updatedAt: text(raw, "updatedAt", at),
    metrics: {
      totalCertificates: count(metrics, "totalCertificates"),
      activeCertificates: count(metrics, "activeCertificates"),
      expiredCertificates: count(metrics, "expiredCertificates"),
      expiringCertificates: count(metrics, "expiringCertificates"),
      revokedCertificates: count(metrics, "revokedCertificates"),
    },
  };
  return addEnrollmentConfig(profile, raw);
}

function addEnrollmentConfig(profile: ProfileRec, raw: RawProfile): ProfileRec {
  if (profile.enrollmentType === "api") {
    const config = record(raw, "apiConfig");
    const id = text(raw, "apiConfigId", text(config, "id", randomUUID()));
    const renewBeforeDays = typeof config["renewBeforeDays"] === "number" ? config["renewBeforeDays"] : 30;
    return { ...profile, apiConfigId: id, apiConfig: { id, autoRenew: config["autoRenew"] === true, renewBeforeDays } };
  }
  if (profile.enrollmentType === "est") {
    const config = record(raw, "estConfig");
    const id = text(raw, "estConfigId", text(config, "id", randomUUID()));
    const estConfig = {
      id,
      disableBootstrapCaValidation: config["disableBootstrapCaValidation"] === true,
      passphrase: text(config, "passphrase", "emulator-est-passphrase"),
      caChain: text(config, "caChain", ""),
    };
    return { ...profile, estConfigId: id, estConfig };
  }
  const config = record(raw, "acmeConfig");
  const id = text(raw, "acmeConfigId", text(config, "id", randomUUID()));
  const directoryUrl = text(config, "directoryUrl", `https://pki.emulator.test/api/v1/cert-manager/acme/profiles/${profile.id}/directory`);
  return { ...profile, acmeConfigId: id, acmeConfig: { id, directoryUrl } };
}

/** Adds a user or group to a project (or replaces its roles). Unknown usernames become users. */
export function addMember(state: State, member: MemberSeed): MembershipRec {
  const project = resolveProject(state, member);
  const subject = resolveSubject(state, member);
  const at = nowIso();
  const existing = Object.values(state.memberships).find((m) => m.projectId === project.id && (m.userId ?? m.groupId) === subject.id);
  const membership: MembershipRec = existing ?? {
    id: randomUUID(),
    projectId: project.id,
    ...(subject.kind === "user" ? { userId: subject.id } : { groupId: subject.id }),
    createdAt: at,
    updatedAt: at,
    roles: [],
  };
  membership.roles = buildMemberRoles(state, project.id, member.roles);
  membership.updatedAt = at;
  state.memberships[membership.id] = membership;
  return membership;
}

function resolveSubject(state: State, member: MemberSeed): { kind: "user" | "group"; id: string } {
  if (member.username !== undefined) {
    const user = findUser(state, member.username) ?? upsertUser(state, { username: member.username });
    return { kind: "user", id: user.id };
  }
  const group =
    member.groupId !== undefined
      ? state.groups[member.groupId]
      : member.groupSlug !== undefined
        ? findGroupBySlug(state, member.groupSlug)
        : undefined;
  if (!group) throw notFound(`Group '${member.groupId ?? member.groupSlug ?? ""}' not found`);
  return { kind: "group", id: group.id };
}

export function removeMember(state: State, selector: MemberSelector): boolean {
  const userId = selector.username === undefined ? undefined : findUser(state, selector.username)?.id;
  const target = Object.values(state.memberships).find(
    (m) =>
      m.projectId === selector.projectId &&
      ((userId !== undefined && m.userId === userId) || (selector.groupId !== undefined && m.groupId === selector.groupId)),
  );
  if (!target) return false;
  Reflect.deleteProperty(state.memberships, target.id);
  return true;
}
