// The soak's invariants, judged from outside: the service's call log and state (the emulator) and
// the apiserver's objects, never keyward's own words (its logs, metrics or Events). Pure: the
// runner gathers the evidence, this decides.
import type { Kind } from "./workload.ts";

/** One service request as the emulator logged it, cut to what the judge reads. */
export interface Call {
  /** Epoch ms when the emulator handled it. */
  at: number;
  method: string;
  operation: string;
  path: string;
  status: number;
  fault?: string;
  principal?: string;
  /** createProject's slug, createSecretSync's name and projectId. */
  slug?: string;
  name?: string;
  projectId?: string;
}

/** One resource from its create to its end: the workload never reuses a name, so a name is a UID lineage. */
export interface Lineage {
  kind: Kind;
  namespace: string;
  name: string;
  deletionPolicy?: string;
  /** Project: its slug (unique in the run). SecretSync: its sync name is `name` (unique in the run). */
  slug?: string;
  /** SecretSync and ProjectMembership: the Project resource (same namespace) it names. */
  projectName?: string;
  /** Values the workload set on the action annotations, in order (each set once the previous was handled). */
  syncValues: string[];
  removeValues: string[];
  /** Epoch ms: the workload asked the apiserver to delete it; and when a list first missed it. */
  deleteRequestedAt?: number;
  goneAt?: number;
  /**
   * One of the runner's lists saw keyward's finalizer on it: keyward had taken on what its
   * deletion owes (a Revoke). A resource deleted before keyward added the finalizer never held it.
   */
  heldFinalizer?: boolean;
  /** The object as the apiserver holds it after the quiet tail (absent once gone). */
  final?: FinalObject;
}

export interface FinalObject {
  generation: number;
  spec: Record<string, unknown>;
  conditions: { type: string; status: string; reason?: string; observedGeneration?: number }[];
}

/** The parts of the emulator's state the judge reads. */
export interface ServiceState {
  projects: Record<string, { id: string; slug: string; description: string | null }>;
  syncs: Record<string, { id: string; name: string; projectId: string; description: string | null; removeStatus?: string }>;
  memberships: Record<string, { id: string; projectId: string; userId?: string; roles: ServiceRole[] }>;
  users: Record<string, { id: string; username: string }>;
}

export interface ServiceRole {
  role: string;
  isTemporary?: boolean;
  temporaryRange?: string;
  temporaryAccessStartTime?: string;
  temporaryAccessEndTime?: string;
}

export interface Evidence {
  calls: readonly Call[];
  lineages: readonly Lineage[];
  /** Every id seen at the service for a project slug / a sync name, over the whole run (state snapshots). */
  projectIdsBySlug: ReadonlyMap<string, ReadonlySet<string>>;
  syncIdsByName: ReadonlyMap<string, ReadonlySet<string>>;
  /**
   * The principals (emulator log) of each namespace's credentials: its ProviderConfig's tokens
   * (rotated during the run), or the ClusterProviderConfig's it uses (shared with the other
   * namespaces that use it).
   */
  principalsOf: ReadonlyMap<string, ReadonlySet<string>>;
  final: ServiceState;
  /** Slugs and sync names of the soak start with this (anything else at the service is not the soak's). */
  prefix: string;
}

export interface Verdict {
  name: string;
  /** How many things were checked. */
  checked: number;
  violations: string[];
  /** What held only by a limit keyward documents, counted apart. */
  notes?: string[];
}

const writeMethods = new Set(["POST", "PATCH", "PUT", "DELETE"]);
/** A request the service applied: it answered 200, or applied it and lost the answer on the way. */
const landed = (c: Call): boolean => c.status === 200;
const key = (l: Lineage): string => `${l.kind} ${l.namespace}/${l.name}`;

export function judge(e: Evidence): Verdict[] {
  const byId = new Map<string, Call[]>();
  for (const c of e.calls) for (const part of new Set(c.path.split("/"))) byId.set(part, [...(byId.get(part) ?? []), c]);
  const on = (ids: readonly string[]): Call[] => [...new Set(ids.flatMap((id) => byId.get(id) ?? []))];
  return [oneCreate(e), actionsOnce(e, on), nothingAfterDeletion(e, on), serviceMatches(e, on), allReady(e), ownNamespaceOnly(e)];
}

type CallsOn = (ids: readonly string[]) => Call[];

/** At most one external object per resource: creates that landed, and ids ever seen for its key. */
function oneCreate(e: Evidence): Verdict {
  const violations: string[] = [];
  const projectCreates = countBy(e.calls.filter((c) => c.operation === "createProject" && landed(c)).map((c) => c.slug ?? "?"));
  const syncCreates = countBy(e.calls.filter((c) => c.operation === "createSecretSync" && landed(c)).map((c) => c.name ?? "?"));
  let checked = 0;
  for (const l of e.lineages) {
    const naturalKey = l.kind === "Project" ? l.slug : l.kind === "SecretSync" ? l.name : undefined;
    if (naturalKey === undefined) continue;
    checked += 1;
    const creates = (l.kind === "Project" ? projectCreates : syncCreates).get(naturalKey) ?? 0;
    const ids = (l.kind === "Project" ? e.projectIdsBySlug : e.syncIdsByName).get(naturalKey)?.size ?? 0;
    if (creates > 1) violations.push(`${key(l)}: ${creates} creates landed`);
    if (ids > 1) violations.push(`${key(l)}: ${ids} external ids seen for ${naturalKey}`);
  }
  const known = new Set(e.lineages.flatMap((l) => (l.kind === "Project" ? [l.slug] : l.kind === "SecretSync" ? [l.name] : [])));
  for (const [k] of [...projectCreates, ...syncCreates]) {
    if (!known.has(k)) violations.push(`a create of ${k} that no resource declares`);
  }
  return { name: "at most one external object created per resource", checked, violations };
}

function idsOf(e: Evidence, l: Lineage): string[] {
  if (l.kind === "Project" && l.slug) return [...(e.projectIdsBySlug.get(l.slug) ?? [])];
  if (l.kind === "SecretSync") return [...(e.syncIdsByName.get(l.name) ?? [])];
  if (l.kind === "ProjectMembership") return projectOf(e, l).flatMap((p) => idsOf(e, p));
  return [];
}

function projectOf(e: Evidence, l: Lineage): Lineage[] {
  return e.lineages.filter((p) => p.kind === "Project" && p.namespace === l.namespace && p.name === l.projectName);
}

/** Each action value ran exactly once (live resources), at most once (deleted ones); RemoveSecrets ran at deletion. */
function actionsOnce(e: Evidence, on: CallsOn): Verdict {
  const violations: string[] = [];
  const notes: string[] = [];
  let checked = 0;
  for (const l of e.lineages.filter((x) => x.kind === "SecretSync")) {
    const ids = idsOf(e, l);
    const count = (operation: string): number => on(ids).filter((c) => c.operation === operation && landed(c)).length;
    const syncs = count("triggerSecretSync");
    const removes = count("removeSecretSyncSecrets");
    checked += l.syncValues.length + l.removeValues.length;
    const gone = l.deleteRequestedAt !== undefined;
    const removeAtDeletion = gone && l.deletionPolicy === "RemoveSecrets" && ids.length > 0 ? 1 : 0;
    // keyward's documented limit (src/resources/secretsync.ts): a value whose call's outcome is
    // unknown counts as done when a job of its action started after its mark, such as the sync job
    // the service queues on an update. So fewer syncs than values is a loss only without an update.
    const updated = count("updateSecretSync") > 0;
    if (syncs < l.syncValues.length && updated) {
      notes.push(`${key(l)}: ${l.syncValues.length} sync values set, ${syncs} syncs ran, after an update that queued a sync job`);
    }
    if (!gone) {
      if (syncs > l.syncValues.length || (syncs < l.syncValues.length && !updated)) {
        violations.push(`${key(l)}: ${l.syncValues.length} sync values set, ${syncs} syncs ran`);
      }
      if (removes !== l.removeValues.length)
        violations.push(`${key(l)}: ${l.removeValues.length} remove values set, ${removes} removes ran`);
    } else {
      if (syncs > l.syncValues.length) violations.push(`${key(l)}: ${l.syncValues.length} sync values set, ${syncs} syncs ran`);
      if (removes > l.removeValues.length + removeAtDeletion || removes < removeAtDeletion) {
        violations.push(`${key(l)} (${l.deletionPolicy ?? "Retain"}): ${l.removeValues.length} remove values set, ${removes} removes ran`);
      }
    }
  }
  return { name: "each action value ran exactly once", checked, violations, notes };
}

/** No write on a resource's external object once the resource was gone from the apiserver. */
function nothingAfterDeletion(e: Evidence, on: CallsOn): Verdict {
  const violations: string[] = [];
  const notes: string[] = [];
  let checked = 0;
  const ops: Record<string, (c: Call) => boolean> = {
    Project: (c) => c.operation === "updateProject" || c.operation === "deleteProject",
    SecretSync: () => true,
    ProjectMembership: (c) => c.operation === "updateMembership",
  };
  for (const l of e.lineages) {
    const relevant = ops[l.kind];
    if (l.goneAt === undefined || relevant === undefined) continue;
    const ids = idsOf(e, l);
    checked += 1;
    // A request held before handling and committed after its client gave up (fault client-gone)
    // was sent before: the service finishing late is not keyward acting.
    const late = on(ids).filter(
      (c) => writeMethods.has(c.method) && landed(c) && c.fault !== "client-gone" && c.at > (l.goneAt ?? 0) && relevant(c),
    );
    // Without a finalizer (deletionPolicy Retain of a Project or a ProjectMembership) a resource
    // is gone the moment it is deleted: a pass already under way, or one whose cache had not yet
    // seen the deletion, may still apply its spec once, which Retain leaves at the service anyway
    // (docs/architecture.md, "A deleted object leaves nothing"). Counted apart; a SecretSync's
    // call, a delete, or a write after a finalizer's release stays a violation.
    const unfenced = (l.kind === "Project" || l.kind === "ProjectMembership") && (l.deletionPolicy ?? "Retain") === "Retain";
    for (const c of late) {
      const line = `${key(l)} (${l.deletionPolicy ?? "Retain"}): ${c.operation} ${c.path} ${c.at - (l.goneAt ?? 0)} ms after it was gone`;
      if (unfenced && (c.operation === "updateProject" || c.operation === "updateMembership")) notes.push(`${line} (no finalizer)`);
      else violations.push(line);
    }
  }
  return { name: "no action after its resource was deleted", checked, violations, notes };
}

/** After the quiet tail the service holds what the live resources declare, and nothing a deletion removed. */
function serviceMatches(e: Evidence, on: CallsOn): Verdict {
  const violations: string[] = [];
  const notes: string[] = [];
  let checked = 0;
  const createdAt = new Map<string, number>();
  for (const c of e.calls) {
    if (c.operation === "createProject" && landed(c) && c.slug !== undefined)
      createdAt.set(c.slug, Math.min(c.at, createdAt.get(c.slug) ?? Infinity));
  }
  const projectsBySlug = groupBy(Object.values(e.final.projects), (p) => p.slug);
  const syncsByName = groupBy(Object.values(e.final.syncs), (s) => s.name);
  const aliceIds = new Set(
    Object.values(e.final.users)
      .filter((u) => u.username.startsWith("alice"))
      .map((u) => u.id),
  );
  for (const l of e.lineages) {
    checked += 1;
    const live = l.deleteRequestedAt === undefined;
    const everCreated = idsOf(e, l).length > 0;
    if (l.kind === "Project" && l.slug) {
      const found = projectsBySlug.get(l.slug) ?? [];
      if (live && found.length !== 1) violations.push(`${key(l)}: ${found.length} projects with slug ${l.slug}`);
      if (live && found[0] && found[0].description !== l.final?.spec["description"]) violations.push(`${key(l)}: description differs`);
      if (!live && l.deletionPolicy === "Delete" && found.length > 0) violations.push(`${key(l)} (Delete): project ${l.slug} left`);
      if (!live && l.deletionPolicy !== "Delete" && everCreated && found.length !== 1) violations.push(`${key(l)} (Retain): project gone`);
    }
    const projectLive = (): boolean => projectOf(e, l).some((p) => p.slug !== undefined && (projectsBySlug.get(p.slug)?.length ?? 0) > 0);
    if (l.kind === "SecretSync") {
      const found = syncsByName.get(l.name) ?? [];
      if (live && found.length !== 1) violations.push(`${key(l)}: ${found.length} syncs named ${l.name}`);
      if (live && found[0] && found[0].description !== l.final?.spec["description"]) violations.push(`${key(l)}: description differs`);
      if (!live && l.deletionPolicy === "Delete" && found.length > 0) violations.push(`${key(l)} (Delete): sync left`);
      if (!live && l.deletionPolicy !== "Delete" && everCreated && projectLive() && found.length !== 1) {
        violations.push(`${key(l)} (${l.deletionPolicy ?? "Retain"}): sync gone`);
      }
      if (!live && l.deletionPolicy === "RemoveSecrets" && found[0] && found[0].removeStatus !== "succeeded") {
        violations.push(`${key(l)} (RemoveSecrets): remove job ${found[0].removeStatus ?? "never ran"}`);
      }
    }
    if (l.kind === "ProjectMembership") {
      const projectIds = new Set(projectOf(e, l).flatMap((p) => (p.slug ? (projectsBySlug.get(p.slug) ?? []).map((x) => x.id) : [])));
      if (projectIds.size === 0) continue;
      const member = Object.values(e.final.memberships).find(
        (m) => projectIds.has(m.projectId) && m.userId !== undefined && aliceIds.has(m.userId),
      );
      const roles = (member?.roles ?? []).map(roleKey).sort();
      const declared = ((l.final?.spec["roles"] as ServiceRole[] | undefined) ?? []).map(roleKey).sort();
      if (live && JSON.stringify(roles) !== JSON.stringify(declared))
        violations.push(`${key(l)}: roles ${roles.join(",")}, declared ${declared.join(",")}`);
      if (!live && l.deletionPolicy === "Revoke" && JSON.stringify(roles) !== JSON.stringify([roleKey({ role: "no-access" })])) {
        // The runner seeds the member into each project as the service creates it: a membership
        // gone before its project existed at the service never had a member to revoke.
        const projectCreatedAt = Math.min(...projectOf(e, l).map((p) => createdAt.get(p.slug ?? "") ?? Infinity));
        const goneFirst = l.goneAt !== undefined && l.goneAt < projectCreatedAt;
        if (goneFirst) continue;
        // keyward owes the revoke once it has taken the membership on: its finalizer was seen, or
        // it wrote this member's roles (only ever after the finalizer's write, src/engine/
        // managed.ts), a PATCH naming the member's id. A lookup proves nothing: a pass on a copy
        // read before the deletion looks the member up, finds the resource gone as it adds the
        // finalizer, and writes nothing (seed 7's soak-04/m-p41, deleted by the churn's fourth
        // step as its first pass with the project's id ran; docs/architecture.md, "A deleted
        // object leaves nothing"). Nor does a call on another member of the project. Let go so,
        // or without a call (its Project gone with Retain before it had the id, nothing recorded
        // on itself: "Across a cluster's life"), it leaves the seeded member: counted apart.
        const wrote =
          member !== undefined &&
          on([member.id]).some(
            (c) =>
              c.operation === "updateMembership" &&
              [...projectIds].some((id) => c.path === `/api/v1/projects/${id}/memberships/${member.id}`),
          );
        if (l.heldFinalizer === true || wrote) violations.push(`${key(l)} (Revoke): roles ${roles.join(",")}`);
        else
          notes.push(
            `${key(l)} (Revoke): roles ${roles.join(",")} left; keyward never took it on (no finalizer seen, no write of its member)`,
          );
      }
    }
  }
  const declaredSlugs = new Set(e.lineages.flatMap((l) => (l.slug ? [l.slug] : [])));
  const declaredSyncs = new Set(e.lineages.filter((l) => l.kind === "SecretSync").map((l) => l.name));
  for (const p of Object.values(e.final.projects)) {
    if (p.slug.startsWith(e.prefix) && !declaredSlugs.has(p.slug))
      violations.push(`project ${p.slug} at the service, no resource declares it`);
  }
  for (const s of Object.values(e.final.syncs)) {
    if (s.name.startsWith(e.prefix) && !declaredSyncs.has(s.name))
      violations.push(`sync ${s.name} at the service, no resource declares it`);
  }
  return { name: "the service holds exactly what the live resources declare", checked, violations, notes };
}

/** A role and, for a temporary one, its range and start: what spec and service must agree on (an ended role stays listed). */
function roleKey(r: ServiceRole): string {
  if (r.isTemporary !== true) return r.role;
  const start = r.temporaryAccessStartTime === undefined ? "?" : new Date(r.temporaryAccessStartTime).toISOString();
  return `${r.role} temporary ${r.temporaryRange ?? "?"} from ${start}`;
}

function allReady(e: Evidence): Verdict {
  const live = e.lineages.filter((l) => l.deleteRequestedAt === undefined);
  const violations: string[] = [];
  for (const l of live) {
    const ready = l.final?.conditions.find((c) => c.type === "Ready");
    if (!l.final) violations.push(`${key(l)}: missing from the apiserver`);
    else if (ready?.status !== "True" || ready.observedGeneration !== l.final.generation) {
      violations.push(
        `${key(l)}: Ready=${ready?.status ?? "none"} ${ready?.reason ?? ""} at generation ${ready?.observedGeneration ?? "?"}/${l.final.generation}`,
      );
    }
  }
  const deleting = e.lineages.filter((l) => l.deleteRequestedAt !== undefined && l.goneAt === undefined);
  for (const l of deleting) violations.push(`${key(l)}: still being deleted`);
  return { name: "every live resource Ready, every deleted one gone", checked: e.lineages.length, violations };
}

/**
 * Every write on an external object carries a credential of the namespace whose resource created
 * it. Namespaces sharing a ClusterProviderConfig share its credential: between them the call log
 * cannot tell, and a write by it on one of their objects passes.
 */
function ownNamespaceOnly(e: Evidence): Verdict {
  const owner = new Map<string, string>();
  for (const l of e.lineages) {
    if (l.kind === "Project" || l.kind === "SecretSync") for (const id of idsOf(e, l)) owner.set(id, l.namespace);
  }
  const namespacesOf = new Map<string, string[]>();
  for (const [ns, set] of e.principalsOf) for (const p of set) namespacesOf.set(p, [...(namespacesOf.get(p) ?? []), ns]);
  const violations: string[] = [];
  let checked = 0;
  for (const c of e.calls) {
    if (!writeMethods.has(c.method) || c.principal === undefined) continue;
    const ids = [...c.path.split("/"), ...(c.projectId ? [c.projectId] : [])].filter((part) => owner.has(part));
    for (const id of new Set(ids)) {
      checked += 1;
      const of = owner.get(id) ?? "?";
      if (e.principalsOf.get(of)?.has(c.principal) !== true) {
        const by = namespacesOf.get(c.principal)?.join(",") ?? `unknown credential ${c.principal}`;
        violations.push(`${c.operation} ${c.path} by ${by} on an object of ${of}`);
      }
    }
  }
  return { name: "no resource acted on another namespace's external object", checked, violations };
}

function countBy(keys: readonly string[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const k of keys) out.set(k, (out.get(k) ?? 0) + 1);
  return out;
}

function groupBy<T>(items: readonly T[], by: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) out.set(by(item), [...(out.get(by(item)) ?? []), item]);
  return out;
}
