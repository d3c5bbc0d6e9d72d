// Project: a project at the service, created, adopted by slug, kept as the spec says, and
// deleted only when deletionPolicy is Delete and the project is not delete-protected.
import { createHash } from "node:crypto";
import { z } from "zod";
import { isApiError, isServiceNotFound, type ApiClient, type Project, type UpdateProjectBody } from "../api/index.ts";
import type { CrdSource } from "../engine/kind.ts";
import { duplicateWhilePending, externalIdMismatch, ReconcileError } from "../engine/errors.ts";
import { FINALIZER } from "../engine/meta.ts";
import { ANNOTATION_EXTERNAL_ID } from "../engine/holder.ts";
import { type DeleteResult, type ManagedContext, type Observation } from "../engine/module.ts";
import type { KubeObject, ObjectMeta } from "../engine/types.ts";
import type { SecondaryWatch } from "../engine/controller.ts";
import type { KindRef } from "../kube/client.ts";
import {
  ageColumn,
  bounds,
  commonStatus,
  freshReferrers,
  isObserveOnly,
  kindRef,
  managementPolicy,
  notFoundAsUndefined,
  providerConfigRef,
  readyColumns,
  referrersWatch,
  sameStrings,
  someNames,
  finalizerKey,
  pausedKey,
} from "./common.ts";
import { createSharedListing, DEFAULT_LISTING_TTL_MS, isSteady, listedOrTooLarge, listingScope, type SharedListing } from "./listing.ts";
import { connectVia, type ProviderResolver } from "./provider/resolver.ts";
import type { Kind, KindModule } from "./kind.ts";
import type { VersionChange } from "../lib/conversion.ts";
import { conditionEdits, initialismEdits, providerUserEdits, V1BETA1 } from "./common.ts";

export const ref = kindRef("Project", "projects");

export const projectTypes = ["secret-manager", "cert-manager", "kms", "ssh", "secret-scanning", "pam"] as const;
const slugPattern = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

export const specSchema = z
  .object({
    providerConfigRef: providerConfigRef.optional(),
    name: z.string().min(1).max(64).optional().describe("Display name of the project. Default: metadata.name."),
    slug: z
      .string()
      .min(5)
      .max(36)
      .regex(slugPattern)
      .optional()
      .describe(
        "Slug of the project (5 to 36 lowercase letters, digits and hyphens); changing it renames the project. Default: derived from metadata.name.",
      ),
    description: z
      .string()
      .max(256)
      .optional()
      .describe("Description of the project; keyward updates it at the service when it changes. Unset: left as the service has it."),
    type: z
      .enum(projectTypes)
      .optional()
      .describe("Product type, fixed at creation. Default: secret-manager.")
      .meta({ "x-kubernetes-validations": [{ rule: "self == oldSelf", message: "type is immutable" }] }),
    template: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .describe("Project template used at creation; a later change has no effect. Default: default."),
    kmsKeyId: z
      .string()
      .min(1)
      .max(256)
      .optional()
      .describe("KMS key the project is created with; a later change has no effect. Unset: none is sent."),
    shouldCreateDefaultEnvs: z.boolean().optional().describe("Create the default environments at creation. Default: true."),
    hasDeleteProtection: z.boolean().optional().describe("Delete protection: a protected project is never deleted."),
    autoCapitalization: z
      .boolean()
      .optional()
      .describe(
        "The project's autoCapitalization setting at the service (secret keys upper-cased). Unset: keyward leaves the service's value (false on a new project).",
      ),
    secretSharing: z
      .boolean()
      .optional()
      .describe(
        "The project's secretSharing setting at the service (secrets may be shared from it). Unset: keyward leaves the service's value (true on a new project).",
      ),
    showSnapshotsLegacy: z
      .boolean()
      .optional()
      .describe(
        "The project's showSnapshotsLegacy setting at the service (the legacy snapshots view). Unset: keyward leaves the service's value (false on a new project).",
      ),
    secretDetectionIgnoreValues: z
      .array(z.string().max(1024))
      .max(1000)
      .optional()
      .describe(
        "Values the service's secret detection ignores in this project (up to 1000, each up to 1024 characters), compared as a set. Unset: keyward leaves the service's list.",
      ),
    pitVersionLimit: z.number().int().min(1).max(100).optional().describe("Point-in-time versions kept, 1 to 100."),
    creationPolicy: z
      .enum(["Create", "Adopt", "CreateOrAdopt"])
      .optional()
      .describe(
        "Create (default): create the project, fail if the slug is taken. Adopt: only manage an existing project with the slug. CreateOrAdopt: either.",
      ),
    deletionPolicy: z
      .enum(["Retain", "Delete"])
      .optional()
      .describe("Retain (default): deleting the resource leaves the project. Delete: delete the project and every secret in it."),
    managementPolicy: managementPolicy.optional(),
  })
  .strict();
export type ProjectSpec = z.infer<typeof specSchema>;

export const statusSchema = z.object({
  ...commonStatus,
  projectId: z.string().max(bounds.ID).optional().describe("The project's id at the service."),
  slug: z.string().max(bounds.NAME).optional().describe("The project's slug at the service, as last read (the Slug column)."),
  name: z.string().max(bounds.NAME).optional().describe("The project's display name at the service, as last read."),
  type: z.string().max(bounds.WORD).optional().describe("The project's product type at the service (secret-manager, cert-manager, ...)."),
  orgId: z.string().max(bounds.ID).optional().describe("The id of the organization the project belongs to at the service."),
  version: z.number().optional().describe("The project's version number at the service, as last read."),
  hasDeleteProtection: z
    .boolean()
    .optional()
    .describe(
      "Whether the project is delete-protected at the service; while true, keyward does not delete it (Ready=False DeleteProtected).",
    ),
  environments: z
    .array(
      z.object({
        name: z.string().max(bounds.NAME).describe("The environment's display name."),
        slug: z.string().max(bounds.NAME).describe("The environment's slug, which a SecretSync's spec.environment names."),
        id: z.string().max(bounds.ID).describe("The environment's id at the service."),
      }),
    )
    .max(bounds.ENVIRONMENTS)
    .optional()
    .describe("The project's environments."),
});
export type ProjectStatus = z.infer<typeof statusSchema>;

export const crdSource: CrdSource = {
  ...ref,
  singular: "project",
  shortNames: ["kwproj"],
  categories: ["keyward"],
  description: "A project at the service: created or adopted by slug, kept as the spec says, deleted only with deletionPolicy Delete.",
  spec: specSchema,
  status: statusSchema,
  printerColumns: [
    { name: "Slug", type: "string", jsonPath: ".status.slug" },
    { name: "Project-ID", type: "string", jsonPath: ".status.projectId" },
    ...readyColumns,
    ageColumn,
  ],
};

/** The slug keyward creates with. Deterministic, so a crash between create and status write can find it. */
export function desiredSlug(spec: ProjectSpec, meta: Pick<ObjectMeta, "name">): string {
  if (spec.slug) return spec.slug;
  const base = meta.name
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/^-+|-+$/g, "");
  if (base.length >= 5 && base.length <= 36) return base;
  if (base.length < 5) return `${base}-project`.replace(/^-/, "");
  const h = createHash("sha256").update(base).digest("hex").slice(0, 8);
  return `${base.slice(0, 27).replace(/-+$/, "")}-${h}`;
}

type Ctx = ManagedContext<ProjectSpec, ProjectStatus, ApiClient>;

export function statusFrom(p: Project): Partial<ProjectStatus> {
  return {
    projectId: p.id,
    slug: p.slug,
    name: p.name,
    type: p.type,
    orgId: p.orgId,
    version: p.version ?? undefined,
    hasDeleteProtection: p.hasDeleteProtection ?? false,
    environments: (p.environments ?? []).map((e) => ({ name: e.name, slug: e.slug, id: e.id })),
  };
}

/** The update body that makes `p` match the spec: only the fields the spec sets and that differ. */
export function projectDiff(spec: ProjectSpec, p: Project): UpdateProjectBody {
  const body: UpdateProjectBody = {};
  if (spec.name !== undefined && spec.name !== p.name) body.name = spec.name;
  if (spec.slug !== undefined && spec.slug !== p.slug) body.slug = spec.slug;
  if (spec.description !== undefined && spec.description !== (p.description ?? "")) body.description = spec.description;
  if (spec.hasDeleteProtection !== undefined && spec.hasDeleteProtection !== (p.hasDeleteProtection ?? false))
    body.hasDeleteProtection = spec.hasDeleteProtection;
  if (spec.autoCapitalization !== undefined && spec.autoCapitalization !== (p.autoCapitalization ?? false))
    body.autoCapitalization = spec.autoCapitalization;
  if (spec.secretSharing !== undefined && spec.secretSharing !== (p.secretSharing ?? true)) body.secretSharing = spec.secretSharing;
  if (spec.showSnapshotsLegacy !== undefined && spec.showSnapshotsLegacy !== (p.showSnapshotsLegacy ?? false))
    body.showSnapshotsLegacy = spec.showSnapshotsLegacy;
  if (spec.pitVersionLimit !== undefined && spec.pitVersionLimit !== (p.pitVersionLimit ?? 10)) body.pitVersionLimit = spec.pitVersionLimit;
  if (spec.secretDetectionIgnoreValues !== undefined && !sameStrings(spec.secretDetectionIgnoreValues, p.secretDetectionIgnoreValues)) {
    body.secretDetectionIgnoreValues = spec.secretDetectionIgnoreValues;
  }
  return body;
}

async function findProject(listing: SharedListing<Project>, c: Ctx): Promise<{ project: Project; adopted: boolean } | undefined> {
  const api = c.conn;
  const id = c.status.projectId;
  const deleting = c.obj.metadata.deletionTimestamp !== undefined;
  if (id) {
    // A resync pass of a steady object takes its record from the listing the other passes share;
    // absent there (created since), or any other pass, reads it.
    const listed =
      isSteady(c.obj) && !c.createPending && !c.idFromMetadata
        ? (await listedOrTooLarge(listing, listingScope(c), () => api.listProjects({})))?.get(id)
        : undefined;
    const byId = listed ?? (await api.getProject(id).catch(notFoundAsUndefined));
    if (byId && c.idFromMetadata) return restoredProject(c, byId, deleting);
    if (byId) return { project: byId, adopted: false };
  }
  // While the resource is being deleted only what is known to be ours counts: a slug taken
  // since by another team's project must never be adopted, then deleted. A restored copy's
  // project is the one its slug names (create-rule.ts copiedCreate), as it was for the original.
  if (deleting && !c.createPending && !c.createCopied) return undefined;
  const slug = desiredSlug(c.spec, c.obj.metadata);
  const bySlug = await api.findProjectBySlug(slug);
  if (!bySlug) return undefined;
  if (c.createPending || c.createCopied || c.status.projectId === bySlug.id) return { project: bySlug, adopted: false };
  const policy = c.spec.creationPolicy ?? "Create";
  if (policy === "Create" && !c.observeOnly) throw alreadyExists(slug);
  return { project: bySlug, adopted: true };
}

/**
 * A project named by keyward.dev/external-id alone (a restore, an exported manifest, an id written
 * by hand) is this resource's only if it has the resource's slug: what adopting by slug would find.
 * Being deleted, another project is left alone (the resource is released without a call).
 */
function restoredProject(c: Ctx, project: Project, deleting: boolean): { project: Project; adopted: boolean } | undefined {
  const slug = desiredSlug(c.spec, c.obj.metadata);
  if (project.slug === slug) return { project, adopted: false };
  if (deleting) return undefined;
  throw externalIdMismatch(project.id, `that project's slug is ${project.slug} and this resource's is ${slug}`);
}

async function observe(listing: SharedListing<Project>, c: Ctx): Promise<Observation<ProjectStatus, Project>> {
  const found = await findProject(listing, c);
  if (!found) {
    const adoptOnly = (c.spec.creationPolicy ?? "Create") === "Adopt";
    return {
      exists: false,
      upToDate: false,
      status: {},
      canCreate: !adoptOnly,
      absent: {
        reason: "NotFound",
        message: `no project with slug ${desiredSlug(c.spec, c.obj.metadata)} exists${adoptOnly ? " to adopt (creationPolicy Adopt)" : ""}`,
      },
    };
  }
  if (found.adopted) c.event("Normal", "Adopted", `adopted the existing project with slug ${found.project.slug}`);
  return observed(c, found.project);
}

async function create(listing: SharedListing<Project>, c: Ctx): Promise<Observation<ProjectStatus, Project>> {
  listing.invalidate(listingScope(c));
  const s = c.spec;
  const slug = desiredSlug(s, c.obj.metadata);
  let project: Project;
  try {
    project = await c.conn.createProject({
      projectName: s.name ?? c.obj.metadata.name,
      slug,
      ...(s.description !== undefined ? { projectDescription: s.description } : {}),
      ...(s.kmsKeyId !== undefined ? { kmsKeyId: s.kmsKeyId } : {}),
      ...(s.template !== undefined ? { template: s.template } : {}),
      ...(s.type !== undefined ? { type: s.type } : {}),
      ...(s.shouldCreateDefaultEnvs !== undefined ? { shouldCreateDefaultEnvs: s.shouldCreateDefaultEnvs } : {}),
      ...(s.hasDeleteProtection !== undefined ? { hasDeleteProtection: s.hasDeleteProtection } : {}),
    });
  } catch (err) {
    throw await duplicateSlug(c, slug, err);
  }
  // Settings only the update operation takes differ now: the engine updates them in this pass.
  return observed(c, project);
}

/**
 * A refused create whose slug turns out taken (created between this pass's lookup and its call):
 * an earlier attempt of this resource committed late, or another's project. The former is looked
 * up again; the latter fails AlreadyExists under creationPolicy Create and is adopted by the next
 * pass otherwise (through the claim rule). Any other refusal is the service's own error.
 */
async function duplicateSlug(c: Ctx, slug: string, err: unknown): Promise<unknown> {
  if (!isApiError(err) || err.status !== 400) return err;
  const taken = await c.conn.findProjectBySlug(slug).catch(() => undefined);
  if (!taken) return err;
  const again = duplicateWhilePending(c, `a project with slug ${slug}`, err);
  if (again) return again;
  if ((c.spec.creationPolicy ?? "Create") === "Create") return alreadyExists(slug);
  return new ReconcileError(
    "AlreadyExists",
    `a project with slug ${slug} was created meanwhile by someone else; keyward adopts it on its next pass`,
    {
      retryable: true,
      retryAfterMs: 1_000,
      cause: err,
    },
  );
}

const alreadyExists = (slug: string): ReconcileError =>
  new ReconcileError(
    "AlreadyExists",
    `a project with slug ${slug} already exists and was not created by this resource; set creationPolicy to Adopt or CreateOrAdopt to manage it`,
    { retryable: false },
  );

function observed(c: Ctx, project: Project): Observation<ProjectStatus, Project> {
  const diff = Object.keys(projectDiff(c.spec, project));
  return { exists: true, upToDate: diff.length === 0, diff, status: statusFrom(project), external: project };
}

async function update(listing: SharedListing<Project>, c: Ctx, obs: Observation<ProjectStatus, Project>): Promise<Partial<ProjectStatus>> {
  const id = obs.status.projectId;
  if (!id) throw new ReconcileError("NotFound", "project id unknown", { retryable: true });
  listing.invalidate(listingScope(c));
  const current = obs.external ?? (await c.conn.getProject(id));
  const body = projectDiff(c.spec, current);
  if (Object.keys(body).length === 0) return statusFrom(current);
  return statusFrom(await c.conn.updateProject(id, body));
}

const protectedMessage = (slug: string | undefined): string =>
  `project ${slug ?? ""} has delete protection and is not deleted while protected; set spec.hasDeleteProtection: false to lift it and delete the project, or deletionPolicy: Retain to release the resource and keep the project`;

/**
 * How soon a Project whose deletion waits for its dependents looks again without being woken: a
 * dependent's deletion wakes it (dependentGoneWatch), so this is only the safety net, backed off
 * with how long the deletion has waited: half of it, from 5 s up to a minute.
 */
export function dependentsRecheckMs(deletingSince: string | undefined, now = Date.now()): number {
  const waited = deletingSince ? now - Date.parse(deletingSince) : 0;
  return Math.min(60_000, Math.max(5_000, Number.isFinite(waited) ? Math.floor(waited / 2) : 0));
}

/**
 * The resources of the namespace that use this project (by spec.projectRef, or by
 * spec.projectId = its id) and still hold keyward's finalizer: their own deletion calls the
 * service in this project (a SecretSync's remove-secrets, a membership's revoke). Deleting the
 * project first would cascade their records away at the service and strand what they were to
 * clean up (the synced secrets at the destination), so the project's deletion waits for them.
 * A fresh list, not the cache: a dependent missed here would lose its cleanup.
 */
async function holdingDependents(c: Ctx, kinds: readonly KindRef[], projectId: string): Promise<string[]> {
  return freshReferrers(c.kube, kinds, c.key.namespace, (o) => {
    const spec = o.spec as { projectRef?: { name?: string }; projectId?: string } | undefined;
    const uses = spec?.projectRef?.name === c.key.name || spec?.projectId === projectId;
    return uses && (o.metadata.finalizers ?? []).includes(FINALIZER);
  });
}

function waitingFor(c: Ctx, dependents: string[]): DeleteResult {
  return {
    done: false,
    reason: "InUse",
    message: `the project is deleted at the service after the resources that use it have finished their own deletion (deleting the project first would discard their cleanup): ${someNames(dependents)}`,
    requeueAfterMs: dependentsRecheckMs(c.obj.metadata.deletionTimestamp),
  };
}

async function remove(
  listing: SharedListing<Project>,
  dependentKinds: readonly KindRef[],
  c: Ctx,
  obs: Observation<ProjectStatus, Project>,
): Promise<DeleteResult> {
  const id = obs.status.projectId;
  if (!id) return { done: true };
  const dependents = await holdingDependents(c, dependentKinds, id);
  if (dependents.length > 0) return waitingFor(c, dependents);
  listing.invalidate(listingScope(c));
  if (obs.status.hasDeleteProtection) {
    // The spec lifting the protection is applied first, as the Blocked message advises.
    if (c.spec.hasDeleteProtection !== false) {
      return { done: false, reason: "DeleteProtected", message: protectedMessage(obs.status.slug ?? undefined), requeueAfterMs: 30_000 };
    }
    await c.conn.updateProject(id, { hasDeleteProtection: false });
  }
  try {
    await c.conn.deleteProject(id);
  } catch (err) {
    if (isServiceNotFound(err)) return { done: true };
    throw err;
  }
  return { done: true };
}

export function projectModule(deps: {
  providers: ProviderResolver;
  listingTtlMs?: number;
  /** The Projects keyward holds (its cache): a listing keeps only the projects they record. */
  cached?: () => readonly KubeObject[];
  /** The kinds whose resources use a project (spec.projectRef / spec.projectId) and may hold a finalizer for it. */
  dependentKinds?: readonly KindRef[];
}): KindModule<ProjectSpec, ProjectStatus, ApiClient, Project> {
  const cached = deps.cached;
  const listing = createSharedListing<Project>(
    (p) => p.id,
    deps.listingTtlMs ?? DEFAULT_LISTING_TTL_MS,
    Date.now,
    cached && (() => recordedProjectIds(cached())),
  );
  return {
    ref,
    parseSpec: (raw) => specSchema.parse(raw),
    needsFinalizer: (spec) => spec.deletionPolicy === "Delete",
    connect: connectVia(deps.providers),
    observe: (c) => observe(listing, c),
    create: (c) => create(listing, c),
    update: (c, obs) => update(listing, c, obs),
    delete: (c, obs) => remove(listing, deps.dependentKinds ?? [], c, obs),
    observeOnly: isObserveOnly,
  };
}

/** The project ids Project resources record: in metadata (what outlives status) or status. */
function recordedProjectIds(objs: readonly KubeObject[]): Set<string> {
  const ids = new Set<string>();
  for (const o of objs) {
    const fromMetadata = o.metadata.annotations?.[ANNOTATION_EXTERNAL_ID];
    const fromStatus = (o.status as { projectId?: unknown } | undefined)?.projectId;
    if (fromMetadata) ids.add(fromMetadata);
    if (typeof fromStatus === "string" && fromStatus !== "") ids.add(fromStatus);
  }
  return ids;
}

/** Kinds with spec.projectRef: a Project's change (its id arriving in status, mostly) reconciles them at once. */
export const dependentsWatch = referrersWatch(ref, (spec) => (spec as { projectRef?: { name?: string } } | undefined)?.projectRef?.name);

/**
 * A Project whose deletion waits for its dependents wakes when one of them lets go (deleted, or
 * its finalizer removed) instead of polling; its pass still lists the dependents fresh before it
 * deletes. A dependent naming its project by spec.projectRef maps straight to it; one naming it by
 * spec.projectId finds the namespace's Project with that id in status.
 */
export function dependentGoneWatch(kind: KindRef): SecondaryWatch {
  const holds = (o: KubeObject | undefined): boolean => (o?.metadata.finalizers ?? []).includes(FINALIZER);
  return {
    kind,
    predicate: (type, obj, old) => type === "delete" || (type === "update" && holds(old) && !holds(obj)),
    mapToKeys: (obj, primaries) => {
      const spec = obj.spec as { projectRef?: { name?: string }; projectId?: string } | undefined;
      const namespace = obj.metadata.namespace;
      if (spec?.projectRef?.name) return [{ namespace, name: spec.projectRef.name }];
      if (!spec?.projectId) return [];
      return (primaries?.() ?? [])
        .filter((p) => p.metadata.namespace === namespace && (p.status as { projectId?: string } | undefined)?.projectId === spec.projectId)
        .map((p) => ({ namespace, name: p.metadata.name }));
    },
  };
}

/** How v1alpha1 becomes v1beta1 (docs/api-review.md). */
export const v1beta1: VersionChange = {
  from: ref.version,
  to: V1BETA1,
  edits: [
    ...conditionEdits,
    ...providerUserEdits,
    {
      op: "enum",
      path: "spec.type",
      values: {
        "secret-manager": "SecretManager",
        "cert-manager": "CertManager",
        kms: "KMS",
        ssh: "SSH",
        "secret-scanning": "SecretScanning",
        pam: "PAM",
      },
    },
    { op: "rename", from: "spec.shouldCreateDefaultEnvs", to: "spec.createDefaultEnvironments" },
    { op: "default", path: "spec.createDefaultEnvironments", value: true },
    { op: "rename", from: "spec.hasDeleteProtection", to: "spec.deleteProtection" },
    { op: "rename", from: "status.hasDeleteProtection", to: "status.deleteProtection" },
    { op: "rename", from: "spec.pitVersionLimit", to: "spec.pointInTimeVersionLimit" },
    ...initialismEdits("spec.kmsKeyId", "status.projectId", "status.orgId"),
    { op: "default", path: "spec.creationPolicy", value: "Create" },
    { op: "default", path: "spec.deletionPolicy", value: "Retain" },
  ],
};

export const kind: Kind = {
  ref,
  crd: crdSource,
  conversion: v1beta1,
  reasons: {
    Adopted: { means: "done", doc: "keyward took over an existing project with the slug (creationPolicy Adopt or CreateOrAdopt)." },
    AlreadyExists: { means: "failed", doc: "creationPolicy Create and a project with the slug exists." },
    DeleteProtected: { means: "failed", doc: "deletionPolicy Delete, but the project is delete-protected at the service." },
    InUse: { means: "retrying", doc: "Being deleted: the project is deleted at the service once the resources using it are gone." },
  },
  refers: { providerConfig: true },
  wakesReferrers: { as: "project", watches: [dependentsWatch] },
  serviceIdFields: ["projectId"],
  externalId: "projectId",
  naturalKey: { of: (spec, meta) => desiredSlug(spec as ProjectSpec, meta), field: "slug", name: "slug" },
  metadata: [pausedKey, finalizerKey("deletionPolicy is Delete")],
  controller: (d) => ({
    reconcile: d.managed(
      projectModule({
        providers: d.providers,
        listingTtlMs: d.listingTtlMs,
        dependentKinds: d.projectDependents,
        cached: () => d.cached(ref),
      }),
    ),
    watches: d.projectDependents.map(dependentGoneWatch),
  }),
};
