// SecretSync: a sync at the service to one of seven destinations. keyward creates it (found
// again by destination + name + project after a crash), updates only what differs, mirrors the
// service's record — jobs included — into status, runs a sync or a removal of the synced
// secrets when an annotation gets a new value, and on deletion retains, removes the synced
// secrets, or deletes the sync (deletionPolicy).
//
// Ready: the sync exists and the last job that settled (sync, import or remove, by time) did not
// fail. A failed job is Ready=False reason JobFailed with the service's message; the next job
// that succeeds makes it Ready again. A pending or running job does not change Ready (so normal
// syncs make no Warning events): status.syncStatus (the Sync-Status column) shows it, and while
// any job is pending or running keyward reads the sync again after 1 s, 2 s, 4 s, ... (the time
// the job has been seen active, at most 30 s) until it settles; then only on resync.
//
// On-demand actions — `keyward.dev/sync-requested-at` and `keyward.dev/remove-secrets-requested-at`.
// The annotation holds a value (any string, e.g. a timestamp); status.lastHandledSyncRequest /
// lastHandledRemoveSecretsRequest hold the last value handled, and status.recentRequests digests
// of the last 8 per action. A value that is none of them is a request (one put back after another
// ran — Argo CD's self-heal to an older manifest — is not); only the current value counts (a value
// replaced before it was handled is never sent). The guarantee, per value V:
// - No loss (at least once): V is recorded as handled only in the status write that carries the
//   result of a successful call for V, or once the service's record shows a job of that action
//   begun after V's pending mark (below). A call that certainly did not land (a 4xx, "a job is
//   already in progress", a request never written) leaves V unhandled and is retried later.
// - No repeat (at most one call that the service accepted): before the call keyward writes
//   status.pendingRequest = {action, V, the record's last job id/time/status of that action} and
//   calls only while no job of the sync is pending or running. If keyward dies after the call
//   landed but before the status write, the next pass finds the mark and reads the record: a new
//   last job id, a new last job time, or a pending/running status of that action means the call
//   landed (the service answers "already in progress" to any trigger while a job runs, and
//   keyward never calls while one runs) — V is recorded handled without a second call. Without
//   such a sign once the mark is LATE_APPLY_WINDOW_MS old the call did not land, and it is made
//   (once) again: a service may apply a request after keyward stopped waiting for it, so an
//   earlier look could be before the call's job exists. A call whose answer was lost (timeout,
//   5xx) keeps the mark and is decided the same way.
// - The one case the record cannot tell apart: a job of the same action that someone else starts
//   between the mark and keyward's next look (an auto-sync on a secret change, another client's
//   trigger) reads as V's call having landed. Then V gets no call of its own, but a job of the
//   action V asks for did start after V was seen — what the annotation asks for.
// - The ledger is kept in metadata too: `handled.keyward.dev/<annotation>` holds the last value
//   handled (written before the status write that reports it), so an object restored from a
//   backup without its status does not run it again. An export for Git leaves the ledger out (it
//   changes with every action); on the pass that adopts an object from its metadata, a value the
//   ledger does not know that is a time counts as handled when the service's record shows a job
//   of the action stamped at or after it (handledByRecord). The
//   pending mark is kept in `keyward.dev/pending-action` too (written before the call, removed
//   with the write that records the value handled), so a backup taken while a call was in flight
//   decides as after a crash.
// Each handled value gets an Event (SyncRequested, RemoveSecretsRequested).
import { createHash } from "node:crypto";
import type { ApiClient, CreateSecretSyncBody, Destination, SecretSync, UpdateSecretSyncBody } from "../api/index.ts";
import { DEFAULT_INITIAL_SYNC_BEHAVIOR, isApiError, isJobInProgress, isServiceNotFound, isRouteNotFound } from "../api/index.ts";
import { ANNOTATION_CREATE_STARTED, createScope, createUnconfirmed } from "../engine/create-rule.ts";
import { ANNOTATION_RECENT_HANDLED, handledAnnotation } from "../engine/meta.ts";
import type { Gauge } from "prom-client";
import { backoffCeiling } from "../lib/backoff.ts";
import { requestedAt } from "../lib/request-time.ts";
import { kindGauge, type Metrics } from "../engine/metrics.ts";
import { statusEqual } from "../engine/conditions.ts";
import { duplicateWhilePending, externalIdMismatch, mayHaveLanded, ReconcileError } from "../engine/errors.ts";
import { type DeleteResult, type ManagedContext, type Observation, type Readiness } from "../engine/module.ts";
import type { KubeObject, ObjectKey, ObjectMeta } from "../engine/types.ts";
import { keyString } from "../kube/keys.ts";
import { bounds, finalizerKey, isObserveOnly, notFoundAsUndefined, pausedKey, projectIdKey } from "./common.ts";
import { connectVia, type ProviderResolver } from "./provider/resolver.ts";
import { asProjectId, projectIdForCleanup, projectRecordedIn, resolveProjectId } from "./refs.ts";
import {
  crdSource,
  v1beta1,
  RECENT_REQUESTS_KEPT,
  ref,
  specSchema,
  type RequestAction,
  type SecretSyncSpec,
  type SecretSyncStatus,
} from "./secretsync-schema.ts";

export {
  crdSource,
  ref,
  specSchema,
  statusSchema,
  deletionPolicies,
  type SecretSyncSpec,
  type SecretSyncStatus,
} from "./secretsync-schema.ts";
import type { ActionDescriptor, Kind, KindModule } from "./kind.ts";

/** An action call in flight (the pending request mark), kept where a backup finds it. */
export const ANNOTATION_PENDING_ACTION = "keyward.dev/pending-action";

export const ANNOTATION_SYNC_REQUESTED = "keyward.dev/sync-requested-at";
export const ANNOTATION_REMOVE_SECRETS_REQUESTED = "keyward.dev/remove-secrets-requested-at";

/** Job polling: 1 s doubling (the time the job has been seen active) up to 30 s. */
export const JOB_POLL = { minMs: 1_000, maxMs: 30_000 };
/**
 * How long after its mark an action call whose outcome is unknown (a timeout, a lost answer, a
 * crash) may still be applied by the service; only after it, with no job in the record, is the
 * call taken as never made and made again.
 */
export const LATE_APPLY_WINDOW_MS = 60_000;
/** deletionPolicy RemoveSecrets: wait between failed removals, 5 s doubling up to 5 min. */
export const REMOVAL_RETRY = { baseMs: 5_000, maxMs: 5 * 60_000 };

type Status = SecretSyncStatus;
type Ctx = ManagedContext<SecretSyncSpec, Status, ApiClient>;
type JobKind = "sync" | "import" | "remove";

interface JobFields {
  label: string;
  status: "syncStatus" | "importStatus" | "removeStatus";
  jobId: "lastSyncJobId" | "lastImportJobId" | "lastRemoveJobId";
  message: "lastSyncMessage" | "lastImportMessage" | "lastRemoveMessage";
  at: "lastSyncedAt" | "lastImportedAt" | "lastRemovedAt";
}

const jobFields: Record<JobKind, JobFields> = {
  sync: { label: "sync", status: "syncStatus", jobId: "lastSyncJobId", message: "lastSyncMessage", at: "lastSyncedAt" },
  import: { label: "import", status: "importStatus", jobId: "lastImportJobId", message: "lastImportMessage", at: "lastImportedAt" },
  remove: { label: "remove-secrets", status: "removeStatus", jobId: "lastRemoveJobId", message: "lastRemoveMessage", at: "lastRemovedAt" },
};
const jobKinds: readonly JobKind[] = ["sync", "import", "remove"];

interface RequestKind {
  annotation: string;
  handled: "lastHandledSyncRequest" | "lastHandledRemoveSecretsRequest";
  event: string;
  operation: string;
  call(api: ApiClient, destination: Destination, syncId: string): Promise<SecretSync>;
}

const requestKinds: Record<RequestAction, RequestKind> = {
  sync: {
    annotation: ANNOTATION_SYNC_REQUESTED,
    handled: "lastHandledSyncRequest",
    event: "SyncRequested",
    operation: "sync-secrets",
    call: (api, destination, id) => api.syncSecrets(destination, id),
  },
  remove: {
    annotation: ANNOTATION_REMOVE_SECRETS_REQUESTED,
    handled: "lastHandledRemoveSecretsRequest",
    event: "RemoveSecretsRequested",
    operation: "remove-secrets",
    call: (api, destination, id) => api.removeSecrets(destination, id),
  },
};
const requestOrder: readonly RequestAction[] = ["sync", "remove"];

// ---------------------------------------------------------------- the service's record

/** The sync's name at the service: spec.name, else metadata.name (which must then fit). */
export function syncName(spec: Pick<SecretSyncSpec, "name">, meta: Pick<ObjectMeta, "name">): string {
  if (spec.name !== undefined) return spec.name;
  if (meta.name.length > 64) {
    throw new ReconcileError(
      "InvalidSpec",
      `metadata.name is ${meta.name.length} characters long and a sync name is at most 64: set spec.name`,
      { retryable: false },
    );
  }
  return meta.name;
}

/** Status mirroring the record; fields the service left empty are null, which removes them. */
export function statusFrom(s: SecretSync): Partial<Status> {
  return {
    syncId: s.id,
    name: s.name,
    destination: s.destination,
    projectId: s.projectId,
    connectionId: s.connectionId,
    description: s.description ?? null,
    isAutoSyncEnabled: s.isAutoSyncEnabled,
    version: s.version ?? null,
    syncStatus: s.syncStatus ?? null,
    importStatus: s.importStatus ?? null,
    removeStatus: s.removeStatus ?? null,
    lastSyncJobId: s.lastSyncJobId ?? null,
    lastImportJobId: s.lastImportJobId ?? null,
    lastRemoveJobId: s.lastRemoveJobId ?? null,
    lastSyncMessage: s.lastSyncMessage ?? null,
    lastImportMessage: s.lastImportMessage ?? null,
    lastRemoveMessage: s.lastRemoveMessage ?? null,
    lastSyncedAt: s.lastSyncedAt ?? null,
    lastImportedAt: s.lastImportedAt ?? null,
    lastRemovedAt: s.lastRemovedAt ?? null,
    // only the fields the status schema has: anything else would be pruned by the apiserver
    // and then differ from what keyward computes on every pass
    connection: s.connection ? { app: s.connection.app, name: s.connection.name, id: s.connection.id } : null,
    environment: s.environment ? { slug: s.environment.slug, name: s.environment.name, id: s.environment.id } : null,
    folder: s.folder ? { id: s.folder.id, path: s.folder.path } : null,
  };
}

const isActive = (status: string | null | undefined): boolean => status === "pending" || status === "running";

/** The job of the sync that is pending or running, if any. */
export function activeJob(s: Partial<Status>): JobKind | undefined {
  return jobKinds.find((k) => isActive(s[jobFields[k].status]));
}

/** Ready from the record: the last job that settled (by time) must not have failed. */
export function readiness(s: Partial<Status>): Readiness {
  const settled = jobKinds
    .filter((k) => s[jobFields[k].at] && (s[jobFields[k].status] === "succeeded" || s[jobFields[k].status] === "failed"))
    .sort((a, b) => Date.parse(s[jobFields[b].at] ?? "") - Date.parse(s[jobFields[a].at] ?? ""));
  const running = activeJob(s);
  const runningNote = running ? `; a ${jobFields[running].label} job is ${s[jobFields[running].status] ?? ""}` : "";
  const last = settled[0];
  if (last && s[jobFields[last].status] === "failed") {
    const f = jobFields[last];
    return {
      ready: false,
      reason: "JobFailed",
      message: `the last ${f.label} job failed: ${s[f.message] ?? "no message from the service"}${runningNote}`,
    };
  }
  const what = last ? `its last ${jobFields[last].label} job succeeded` : "no job has settled yet";
  return { ready: true, reason: "Available", message: `the sync exists; ${what}${runningNote}` };
}

/** Whether `want`'s fields (those set) equal the same fields of `have`. */
function fieldsMatch(want: object, have: Record<string, unknown> | null | undefined): boolean {
  return Object.entries(want).every(([key, value]) => value === undefined || statusEqual(value, have?.[key]));
}

/** The update body that makes the record match the spec: only the fields that differ. */
export function syncDiff(spec: SecretSyncSpec, name: string, s: SecretSync): UpdateSecretSyncBody {
  const body: UpdateSecretSyncBody = {};
  if (name !== s.name) body.name = name;
  if (spec.description !== undefined && spec.description !== (s.description ?? "")) body.description = spec.description;
  if (spec.connectionId.toLowerCase() !== s.connectionId.toLowerCase()) body.connectionId = spec.connectionId;
  // environment and folder are compared only when the service reports them
  if (s.environment && spec.environment !== s.environment.slug) body.environment = spec.environment;
  if (s.folder && folderPath(spec.secretPath) !== folderPath(s.folder.path)) body.secretPath = spec.secretPath;
  if (spec.isAutoSyncEnabled !== undefined && spec.isAutoSyncEnabled !== s.isAutoSyncEnabled)
    body.isAutoSyncEnabled = spec.isAutoSyncEnabled;
  // syncOptions and destinationConfig are replaced whole by an update: send the spec's object
  if (spec.syncOptions !== undefined && !fieldsMatch(spec.syncOptions, s.syncOptions))
    body.syncOptions = syncOptionsOf(spec, s.syncOptions.initialSyncBehavior) as UpdateSecretSyncBody["syncOptions"];
  if (!fieldsMatch(spec.destinationConfig, s.destinationConfig)) body.destinationConfig = spec.destinationConfig;
  return body;
}

/**
 * The spec's syncOptions with initialSyncBehavior filled in: the service requires it on create
 * and in every syncOptions an update sends. Unset in the spec, it is the sync's current value
 * (an update keeps what the first sync was made with), else overwrite-destination, the default
 * the CRD documents.
 */
export function syncOptionsOf(spec: SecretSyncSpec, current?: string | null): Record<string, unknown> & { initialSyncBehavior: string } {
  return { ...spec.syncOptions, initialSyncBehavior: spec.syncOptions?.initialSyncBehavior ?? current ?? DEFAULT_INITIAL_SYNC_BEHAVIOR };
}

export function createBody(spec: SecretSyncSpec, name: string, projectId: string): CreateSecretSyncBody {
  return {
    name,
    projectId,
    connectionId: spec.connectionId,
    environment: spec.environment,
    secretPath: spec.secretPath,
    syncOptions: syncOptionsOf(spec),
    destinationConfig: spec.destinationConfig,
    ...(spec.description !== undefined ? { description: spec.description } : {}),
    ...(spec.isAutoSyncEnabled !== undefined ? { isAutoSyncEnabled: spec.isAutoSyncEnabled } : {}),
  } as CreateSecretSyncBody;
}

// ---------------------------------------------------------------- pending marks

interface JobBaseline {
  lastJobId?: string;
  lastJobAt?: string;
  lastJobStatus?: string;
}

function baseline(s: Partial<Status>, kind: JobKind): JobBaseline {
  const f = jobFields[kind];
  const out: JobBaseline = {};
  const id = s[f.jobId];
  const at = s[f.at];
  const status = s[f.status];
  if (id) out.lastJobId = id;
  if (at) out.lastJobAt = at;
  if (status) out.lastJobStatus = status;
  return out;
}

/**
 * Whether a job of `kind` began after the mark: its last job id or time moved, or it is pending
 * or running (marks are only made while no job runs, so an active one is newer than the mark).
 */
export function jobSince(mark: JobBaseline, s: Partial<Status>, kind: JobKind): boolean {
  const f = jobFields[kind];
  return (s[f.jobId] ?? undefined) !== mark.lastJobId || (s[f.at] ?? undefined) !== mark.lastJobAt || isActive(s[f.status]);
}

// ---------------------------------------------------------------- the module

export interface SecretSyncModuleDeps {
  providers: ProviderResolver;
  now?: () => number;
  /** For keyward_secretsync_last_job_failed{namespace,name,action}. */
  metrics?: Metrics;
}

/** What the module keeps between passes (in memory; a restart only resets the poll interval). */
interface Runtime {
  now: () => number;
  /** When keyward first saw a job of each object active: the poll interval grows with it. */
  activeSince: Map<string, number>;
  /** The record observe read, for update and act in the same pass (keyed by the pass's object). */
  records: WeakMap<KubeObject<unknown, Partial<Status>>, SecretSync>;
  /** 1 when the last settled job of an action failed, 0 when it succeeded; no series before one settles. */
  jobFailed: Gauge<"namespace" | "name" | "action"> | undefined;
}

function recordJobOutcomes(rt: Runtime, key: ObjectKey, s: Partial<Status>): void {
  for (const kind of jobKinds) {
    const status = s[jobFields[kind].status];
    if (status === "succeeded" || status === "failed")
      rt.jobFailed?.set({ namespace: key.namespace, name: key.name, action: jobFields[kind].label }, status === "failed" ? 1 : 0);
  }
}

const isoAt = (ms: number): string => new Date(ms).toISOString();

function pollAfter(rt: Runtime, key: ObjectKey): number {
  const since = rt.activeSince.get(keyString(key)) ?? rt.now();
  rt.activeSince.set(keyString(key), since);
  return Math.min(JOB_POLL.maxMs, Math.max(JOB_POLL.minMs, rt.now() - since));
}

/** What a lookup found: the record, nothing, or why keyward cannot tell (then it must not create). */
type Found =
  | { record: SecretSync }
  | { absent: { reason: string; message: string }; canCreate: boolean; vanished?: { reason: string; message: string } };

const foundNothing: Found = { absent: { reason: "NotFound", message: "" }, canCreate: true };

/**
 * Find-by-name is beyond interface.md: a server that answers its path with a route 404 cannot
 * look a sync up by name (never read as "no such sync").
 */
async function findByName(c: Ctx, name: string, projectId: string): Promise<SecretSync | undefined | "unsupported"> {
  try {
    return await c.conn.findSecretSyncByName(c.spec.destination, name, projectId);
  } catch (err) {
    if (isRouteNotFound(err)) return "unsupported";
    throw err;
  }
}

function alreadyExists(destination: string, name: string, projectId: string, lookup: boolean, cause?: unknown): ReconcileError {
  const found = lookup ? "" : " (the service cannot look syncs up by name)";
  return new ReconcileError(
    "AlreadyExists",
    `a ${destination} sync named ${name} already exists in project ${projectId} and was not created by this resource${found}; choose another spec.name, or set spec.syncId to its id to manage it`,
    { retryable: false, ...(cause === undefined ? {} : { cause }) },
  );
}

function createOutcomeUnknown(destination: string, name: string, projectId: string): Found {
  return {
    canCreate: false,
    absent: {
      reason: "CreateOutcomeUnknown",
      message:
        `a create of the ${destination} sync ${name} in project ${projectId} may have reached the service before keyward was interrupted, ` +
        `and the service offers no way to find a sync by name, so keyward will not create it again: ` +
        `if the sync exists, set spec.syncId to its id to adopt it; if it does not, remove the annotation ${ANNOTATION_CREATE_STARTED} to create it`,
    },
  };
}

/**
 * Being deleted, the sync keyward knew is gone at the service, and keyward did not delete it (it
 * releases the resource in the pass that deletes the sync or sees its secrets removed): say so,
 * and never let the release read as the secrets having been removed.
 */
function vanishedWhileDeleting(c: Ctx, id: string): Found {
  const what = `the ${c.spec.destination} sync ${id} no longer exists at the service, though keyward did not delete it (it was deleted outside keyward, or with its project)`;
  const removed = c.status.deletionRemoval != null && c.status.removeStatus === "succeeded";
  const vanished =
    c.spec.deletionPolicy === "RemoveSecrets" && !removed
      ? {
          reason: "SecretsNotRemoved",
          message: `${what}: its synced secrets were not removed from the destination and may still be there; the resource is released`,
        }
      : { reason: "SyncVanished", message: `${what}; the resource is released` };
  return { ...foundNothing, vanished };
}

async function findSync(c: Ctx): Promise<Found> {
  const destination = c.spec.destination;
  const deleting = c.obj.metadata.deletionTimestamp !== undefined;
  const adoptId = c.spec.syncId;
  const knownId = adoptId ?? c.status.syncId;
  if (knownId) {
    const byId = await c.conn.getSecretSync(destination, knownId).catch(notFoundAsUndefined);
    if (byId && adoptId === undefined && c.idFromMetadata) return restoredSync(c, byId, deleting);
    if (byId) return { record: byId };
    if (adoptId)
      return { canCreate: false, absent: { reason: "NotFound", message: `spec.syncId: no ${destination} sync with id ${adoptId} exists` } };
    if (deleting) return vanishedWhileDeleting(c, knownId);
  }
  // Being deleted, only what is known to be ours counts: a same-named sync of someone else
  // must neither block the deletion nor be deleted.
  if (deleting && !c.createPending) return foundNothing;
  const projectId = await lookupProject(c, deleting);
  if (projectId === undefined) return foundNothing;
  const name = syncName(c.spec, c.obj.metadata);
  const byName = await findByName(c, name, projectId);
  if (byName === "unsupported") {
    // A create that may have landed cannot be found again: never risk a second one.
    return c.createPending && !deleting ? createOutcomeUnknown(destination, name, projectId) : foundNothing;
  }
  if (!byName) return foundNothing;
  if (c.createPending || byName.id === c.status.syncId) return { record: byName };
  throw alreadyExists(destination, name, projectId, true);
}

/**
 * The project to look the sync up in by name. A pending create is looked up where it was sent (its
 * mark says, even once the Project resource is gone or names another project: found there,
 * checkProject tells). Being deleted with the Project gone and no such mark, keyward knows of
 * nothing to clean up (undefined).
 */
async function lookupProject(c: Ctx, deleting: boolean): Promise<string | undefined> {
  const sent = c.createPending ? sentTo(c) : undefined;
  if (sent !== undefined) return sent;
  return deleting ? projectIdForCleanup(c) : resolveProjectId(c.kube, c.key.namespace, c.spec);
}

/** The project this object's pending create was sent to, as its mark records it (a project id's bounds). */
function sentTo(c: Ctx): string | undefined {
  return asProjectId(createScope(c.obj.metadata.annotations ?? {}, c.obj.metadata.uid));
}

/**
 * A sync named by keyward.dev/external-id alone (a restore, an exported manifest, an id written by
 * hand) is this resource's only if it has the resource's name and project: what a lookup by name
 * would find. Otherwise nothing is changed; being deleted, the resource is released without a call
 * (a remove-secrets on another's sync would wipe its destination).
 */
async function restoredSync(c: Ctx, record: SecretSync, deleting: boolean): Promise<Found> {
  const name = syncName(c.spec, c.obj.metadata);
  const projectId = deleting ? await projectIdForCleanup(c) : await resolveProjectId(c.kube, c.key.namespace, c.spec);
  if (record.name === name && record.projectId === projectId) return { record };
  // Being deleted with its Project gone (deleted with Retain), the project is the one the resource
  // recorded (projectIdForCleanup). Where it recorded none (a create mark of a keyward before marks
  // recorded the project), the resource's name and its own create mark (its UID) decide, as a create
  // pass that announced the id and died before its status write leaves them; a copy or restore
  // (another UID) is released without a call.
  const ownCreate = createUnconfirmed(c.obj.metadata.annotations ?? {}, undefined, c.obj.metadata.uid);
  if (deleting && projectId === undefined && record.name === name && ownCreate && projectRecordedIn(c.obj) === undefined) {
    return { record };
  }
  if (deleting) return foundNothing;
  throw externalIdMismatch(
    record.id,
    `that ${record.destination} sync is ${record.name} in project ${record.projectId}, and this resource's is ${name} in project ${projectId ?? "?"}`,
  );
}

/** The service stores folder paths without a trailing slash: "/app/" and "/app" are one folder. */
export function folderPath(path: string): string {
  return path.length > 1 ? path.replace(/\/+$/, "") || "/" : path;
}

async function checkProject(c: Ctx, record: SecretSync): Promise<void> {
  if (c.obj.metadata.deletionTimestamp !== undefined) return;
  const projectId = await resolveProjectId(c.kube, c.key.namespace, c.spec);
  if (projectId !== record.projectId) {
    throw new ReconcileError(
      "ProjectChanged",
      `the sync ${record.id} belongs to project ${record.projectId}, the spec names project ${projectId}; a sync cannot move between projects: create a new SecretSync`,
      { retryable: false },
    );
  }
}

async function observe(rt: Runtime, c: Ctx): Promise<Observation<Status>> {
  const found = await findSync(c);
  if ("absent" in found) {
    rt.activeSince.delete(keyString(c.key));
    const message = found.absent.message || `no ${c.spec.destination} sync named ${c.spec.name ?? c.obj.metadata.name} exists`;
    return {
      exists: false,
      upToDate: false,
      status: {},
      canCreate: found.canCreate,
      absent: { reason: found.absent.reason, message },
      ...(found.vanished ? { vanished: found.vanished } : {}),
    };
  }
  const record = found.record;
  await checkProject(c, record);
  return observedRecord(rt, c, record);
}

/** The observation a record makes: its status, readiness, drift, and a poll while a job runs. */
function observedRecord(rt: Runtime, c: Ctx, record: SecretSync): Observation<Status> {
  rt.records.set(c.obj, record);
  const status = statusFrom(record);
  recordJobOutcomes(rt, c.key, status);
  const diff = Object.keys(syncDiff(c.spec, syncName(c.spec, c.obj.metadata), record));
  const running = activeJob(status) !== undefined;
  if (!running) rt.activeSince.delete(keyString(c.key));
  return {
    exists: true,
    upToDate: diff.length === 0,
    diff,
    status,
    readiness: readiness(status),
    ...(running ? { requeueAfterMs: pollAfter(rt, c.key) } : {}),
  };
}

async function create(rt: Runtime, c: Ctx, scope: string | undefined): Promise<Observation<Status>> {
  // The project resolved before the create-started mark, which records it (createScope).
  const projectId = scope ?? (await resolveProjectId(c.kube, c.key.namespace, c.spec));
  const name = syncName(c.spec, c.obj.metadata);
  const destination = c.spec.destination;
  return observedRecord(rt, c, await createOrFind(c, destination, name, projectId));
}

async function createOrFind(c: Ctx, destination: Destination, name: string, projectId: string): Promise<SecretSync> {
  try {
    return await c.conn.createSecretSync(destination, createBody(c.spec, name, projectId));
  } catch (err) {
    // A 400 for a duplicate name: look the sync up rather than fail.
    if (!isApiError(err) || err.status !== 400 || err.jobInProgress) throw err;
    const existing = await findByName(c, name, projectId);
    if (existing === "unsupported") throw alreadyExists(destination, name, projectId, false, err);
    if (!existing) throw err;
    // Found by name, it is this resource's only through the next pass's lookup and the claim rule.
    throw (
      duplicateWhilePending(c, `a ${destination} sync named ${name} in project ${projectId}`, err) ??
      alreadyExists(destination, name, projectId, true, err)
    );
  }
}

async function currentRecord(rt: Runtime, c: Ctx, syncId: string): Promise<SecretSync> {
  return rt.records.get(c.obj) ?? (await c.conn.getSecretSync(c.spec.destination, syncId));
}

async function update(rt: Runtime, c: Ctx, obs: Observation<Status>): Promise<Partial<Status>> {
  const id = obs.status.syncId;
  if (!id) throw new ReconcileError("NotFound", "sync id unknown", { retryable: true });
  const record = await currentRecord(rt, c, id);
  const body = syncDiff(c.spec, syncName(c.spec, c.obj.metadata), record);
  if (Object.keys(body).length === 0) return statusFrom(record);
  const updated = await c.conn.updateSecretSync(c.spec.destination, id, body);
  rt.records.set(c.obj, updated);
  const status = statusFrom(updated);
  // with auto-sync on, the update queued a job: follow it (status writes alone do not requeue)
  if (activeJob(status)) c.requeueAfter(pollAfter(rt, c.key));
  return status;
}

/** A request value as status.recentRequests keeps it: short, fixed-size, and not the value itself. */
export function requestDigest(value: string): string {
  return createHash("sha256").update(value).digest("hex").slice(0, 16);
}

/**
 * The digests of the values handled for `action`, newest first: the recent list (only its strings,
 * at most RECENT_REQUESTS_KEPT: it may come from an annotation anyone can edit) with the last
 * value handled in front when the list lacks it (an object of a keyward before the list).
 */
function recentDigests(s: Partial<Status>, action: RequestAction): string[] {
  const listed = s.recentRequests?.[action];
  const recent = Array.isArray(listed) ? listed.filter((d): d is string => typeof d === "string") : [];
  const last = s[requestKinds[action].handled];
  const lastDigest = typeof last === "string" ? requestDigest(last) : undefined;
  const all = lastDigest === undefined || recent.includes(lastDigest) ? recent : [lastDigest, ...recent];
  return all.slice(0, RECENT_REQUESTS_KEPT);
}

/** Whether `value` was handled for `action`: the last value, or one of the recent ones (put back after another). */
export function handledBefore(s: Partial<Status>, action: RequestAction, value: string): boolean {
  return value === s[requestKinds[action].handled] || recentDigests(s, action).includes(requestDigest(value));
}

/** The status fields that record `value` handled for `action`: the last value and the recent digests. */
export function recordHandled(s: Partial<Status>, action: RequestAction, value: string): Partial<Status> {
  const digest = requestDigest(value);
  const kept = [digest, ...recentDigests(s, action).filter((d) => d !== digest)].slice(0, RECENT_REQUESTS_KEPT);
  return { [requestKinds[action].handled]: value, recentRequests: { ...s.recentRequests, [action]: kept } };
}

/**
 * Whether the service's record shows a job of `action` stamped at or after `value`, read as the
 * time it was requested at: what a request value the ledger does not know asks for has happened.
 * Asked only of an object adopted from its metadata (a rebuild from Git, where keyward's ledger is
 * not kept), never on the cluster that handles the values as they come.
 */
export function handledByRecord(s: Partial<Status>, action: RequestAction, value: string): string | undefined {
  const requested = requestedAt(value);
  const at = s[jobFields[action].at];
  return at && requested !== undefined && Date.parse(at) >= requested ? at : undefined;
}

/** The first annotation whose value was not handled yet. */
function nextRequest(obj: Ctx["obj"], s: Partial<Status>): { action: RequestAction; value: string } | undefined {
  for (const action of requestOrder) {
    const value = obj.metadata.annotations?.[requestKinds[action].annotation];
    if (value !== undefined && !handledBefore(s, action, value)) return { action, value };
  }
  return undefined;
}

async function act(rt: Runtime, c: Ctx): Promise<Partial<Status>> {
  const id = c.status.syncId;
  if (!id) return {};
  const out: Partial<Status> = {};
  let s: Partial<Status> = c.status;
  const mark = s.pendingRequest;
  if (mark) {
    const kind = requestKinds[mark.action];
    if (jobSince(mark, s, mark.action)) {
      // An earlier pass made the call and did not live to record it: it is handled.
      Object.assign(out, recordHandled(s, mark.action, mark.value));
      c.event(
        "Normal",
        kind.event,
        `${kind.operation} for ${kind.annotation}=${mark.value} reached the service (recorded after an interruption)`,
      );
    } else {
      // No sign yet, but a call whose answer was lost may still be applied: a service can finish a
      // request it received after keyward stopped waiting for it. Calling again now could make two
      // jobs of one value, so the mark is let stand until the window has passed.
      const wait = Date.parse(mark.markedAt) + LATE_APPLY_WINDOW_MS - rt.now();
      if (wait > 0) {
        c.requeueAfter(Math.min(wait, JOB_POLL.maxMs));
        return out;
      }
    }
    out.pendingRequest = null;
    s = { ...s, ...out };
  }
  if (c.idFromMetadata) {
    // Adopted from a manifest that carries no ledger (Git holds what the user asks for, not what
    // keyward did): a value the service's record shows a job for since it was requested is done.
    for (const action of requestOrder) {
      const kind = requestKinds[action];
      const value = c.obj.metadata.annotations?.[kind.annotation];
      if (value === undefined || handledBefore(s, action, value)) continue;
      const at = handledByRecord(s, action, value);
      if (at === undefined) continue;
      Object.assign(out, recordHandled(s, action, value));
      s = { ...s, ...out };
      c.event(
        "Normal",
        kind.event,
        `${kind.annotation}=${value} is already done: the service's record shows a ${kind.operation} job at ${at}`,
      );
    }
  }
  const next = nextRequest(c.obj, s);
  if (!next) return out;
  if (next.value.length > bounds.ANNOTATION_VALUE) {
    // Its pending mark and handled record could not be written (status bounds it), so it would be
    // retried for ever: refused before any call.
    throw new ReconcileError(
      "InvalidRequest",
      `${requestKinds[next.action].annotation} holds ${next.value.length} characters; a request value is at most ${bounds.ANNOTATION_VALUE} (a timestamp is plenty)`,
      { retryable: false },
    );
  }
  if (activeJob(s)) {
    // The service refuses a trigger while a job runs: this request waits for it to settle.
    c.requeueAfter(pollAfter(rt, c.key));
    return out;
  }
  const kind = requestKinds[next.action];
  await c.saveStatus({
    ...out,
    pendingRequest: { action: next.action, value: next.value, markedAt: isoAt(rt.now()), ...baseline(s, next.action) },
  });
  let record: SecretSync;
  try {
    record = await kind.call(c.conn, c.spec.destination, id);
  } catch (err) {
    if (mayHaveLanded(err)) throw err; // the mark stays: the next pass asks the record
    if (isJobInProgress(err)) {
      // Not handled yet: the per-key backoff spaces the retries out, so a lock the service holds
      // longer than its status shows cannot turn into a trigger a second.
      await c.saveStatus({ pendingRequest: null });
      throw new ReconcileError(
        "JobInProgress",
        `a job of this sync is still running at the service; ${kind.annotation}=${next.value} is retried later`,
        { retryable: true, cause: err },
      );
    }
    await c.saveStatus({ pendingRequest: null });
    throw err;
  }
  c.event("Normal", kind.event, `called ${kind.operation} for ${kind.annotation}=${next.value}`);
  c.requeueAfter(JOB_POLL.minMs);
  return { ...out, ...statusFrom(record), ...recordHandled(s, next.action, next.value), pendingRequest: null };
}

async function removeSecretsThenRelease(rt: Runtime, c: Ctx, obs: Observation<Status>, id: string): Promise<DeleteResult> {
  const destination = c.spec.destination;
  let s = { ...c.status, ...obs.status } as Partial<Status>;
  if (s.isAutoSyncEnabled) {
    // An auto-sync would put the secrets back on the next change.
    s = { ...s, ...statusFrom(await c.conn.updateSecretSync(destination, id, { isAutoSyncEnabled: false })) };
  }
  const running = activeJob(s);
  if (running) {
    return {
      done: false,
      reason: running === "remove" ? "RemovingSecrets" : "WaitingForJob",
      message:
        running === "remove"
          ? "removing the synced secrets from the destination before releasing the resource"
          : `waiting for the ${jobFields[running].label} job to settle before removing the synced secrets`,
      requeueAfterMs: pollAfter(rt, c.key),
    };
  }
  const mark = s.deletionRemoval;
  if (mark && jobSince(mark, s, "remove")) {
    if (s.removeStatus === "succeeded") return { done: true };
    const retryAt = mark.retryAt ?? new Date(rt.now() + backoffCeiling(mark.attempts - 1, REMOVAL_RETRY)).toISOString();
    if (mark.retryAt === undefined) await c.saveStatus({ deletionRemoval: { ...mark, retryAt } });
    const wait = Date.parse(retryAt) - rt.now();
    if (wait > 0) {
      return {
        done: false,
        reason: "RemoveSecretsFailed",
        message: `removing the synced secrets failed: ${s.lastRemoveMessage ?? "no message from the service"}; trying again at ${retryAt}`,
        requeueAfterMs: wait,
      };
    }
  } else if (mark) {
    // The last call's outcome is unknown and its job not in the record yet: it may still be
    // applied (as for the action requests, LATE_APPLY_WINDOW_MS).
    const wait = Date.parse(mark.markedAt) + LATE_APPLY_WINDOW_MS - rt.now();
    if (wait > 0) {
      return {
        done: false,
        reason: "RemovingSecrets",
        message: "the last remove-secrets call got no answer; waiting for the service's record before calling again",
        requeueAfterMs: Math.min(wait, JOB_POLL.maxMs),
      };
    }
  }
  await c.saveStatus({ deletionRemoval: { attempts: (mark?.attempts ?? 0) + 1, markedAt: isoAt(rt.now()), ...baseline(s, "remove") } });
  try {
    await c.conn.removeSecrets(destination, id);
  } catch (err) {
    if (isJobInProgress(err)) {
      // Refused: the call certainly did not land, so the mark goes back to what it was.
      await c.saveStatus({ deletionRemoval: mark ?? null });
      return {
        done: false,
        reason: "WaitingForJob",
        message: "waiting for a job to settle before removing the synced secrets",
        requeueAfterMs: JOB_POLL.minMs,
      };
    }
    throw err;
  }
  c.event("Normal", "RemoveSecretsRequested", "removing the synced secrets from the destination (deletionPolicy RemoveSecrets)");
  return {
    done: false,
    reason: "RemovingSecrets",
    message: "removing the synced secrets from the destination before releasing the resource",
    requeueAfterMs: JOB_POLL.minMs,
  };
}

async function remove(rt: Runtime, c: Ctx, obs: Observation<Status>): Promise<DeleteResult> {
  const id = obs.status.syncId;
  if (!id) return { done: true };
  if (c.spec.deletionPolicy === "RemoveSecrets") return removeSecretsThenRelease(rt, c, obs, id);
  try {
    await c.conn.deleteSecretSync(c.spec.destination, id);
  } catch (err) {
    if (!isServiceNotFound(err)) throw err;
  }
  return { done: true };
}

export function secretSyncModule(deps: SecretSyncModuleDeps): KindModule<SecretSyncSpec, Status, ApiClient> {
  const jobFailed = deps.metrics
    ? kindGauge(deps.metrics, {
        name: "keyward_secretsync_last_job_failed",
        help: "Whether the last settled job of an action (sync, import, remove-secrets) of a SecretSync failed (1) or succeeded (0)",
        labelNames: ["namespace", "name", "action"],
      })
    : undefined;
  const rt: Runtime = { now: deps.now ?? Date.now, activeSince: new Map(), records: new WeakMap(), jobFailed };
  return {
    ref,
    parseSpec: (raw) => specSchema.parse(raw),
    needsFinalizer: (spec) => spec.deletionPolicy === "RemoveSecrets" || spec.deletionPolicy === "Delete",
    connect: connectVia(deps.providers),
    observe: (c) => observe(rt, c),
    create: (c, scope) => create(rt, c, scope),
    // The mark records the project the create is sent to: a lookup while it is pending asks there,
    // even once the Project resource is gone.
    createScope: (c) => resolveProjectId(c.kube, c.key.namespace, c.spec),
    update: (c, obs) => update(rt, c, obs),
    act: (c) => act(rt, c),
    delete: (c, obs) => remove(rt, c, obs),
    observeOnly: isObserveOnly,
    forget: (key) => {
      rt.activeSince.delete(keyString(key));
      for (const kind of jobKinds) jobFailed?.remove({ namespace: key.namespace, name: key.name, action: jobFields[kind].label });
    },
  };
}

/** What the kubectl plugin needs of an annotation action: the request's fields and its job's, from the tables the reconcile uses. */
function pluginAction(request: RequestAction, job: JobKind): ActionDescriptor {
  const r = requestKinds[request];
  const j = jobFields[job];
  return {
    annotation: r.annotation,
    handled: r.handled,
    handledAnnotation: handledAnnotation(r.annotation),
    operation: r.operation,
    job: j.label,
    status: j.status,
    jobId: j.jobId,
    at: j.at,
    message: j.message,
  };
}

export const kind: Kind = {
  ref,
  crd: crdSource,
  conversion: v1beta1,
  reasons: {
    AlreadyExists: { means: "failed", doc: "A sync with the name exists at the service and is not this resource's." },
    CreateOutcomeUnknown: {
      means: "failed",
      doc: "A create may have landed and the service cannot look syncs up by name; see the message.",
    },
    ProjectChanged: { means: "failed", doc: "The sync's project cannot change; delete and recreate the resource." },
    JobFailed: { means: "failed", doc: "The last sync, import or remove job at the service failed." },
    InvalidRequest: { means: "failed", doc: "An action annotation's value is longer than a request value may be (1024 characters)." },
    JobInProgress: { means: "retrying", doc: "The service is still running a job; the requested action waits for it." },
    WaitingForJob: { means: "progress", doc: "A sync or import job runs at the service." },
    RemovingSecrets: { means: "progress", doc: "A remove-secrets job runs at the service." },
    RemoveSecretsFailed: { means: "failed", doc: "Being deleted: removing the synced secrets failed (deletionPolicy RemoveSecrets)." },
    SecretsNotRemoved: {
      means: "failed",
      doc: "Being deleted: the sync vanished before its secrets were removed; they may still be at the destination.",
    },
    SyncVanished: { means: "failed", doc: "Being deleted: the sync was already gone at the service (deleted with its project)." },
    SyncRequested: { means: "done", doc: "keyward called sync-secrets for the sync-requested-at annotation." },
    RemoveSecretsRequested: { means: "done", doc: "keyward called remove-secrets for the annotation or the deletionPolicy." },
  },
  refers: { providerConfig: true, project: true },
  serviceIdFields: ["syncId"],
  externalId: "syncId",
  actions: { sync: pluginAction("sync", "sync"), "remove-secrets": pluginAction("remove", "remove") },
  metadata: [
    pausedKey,
    finalizerKey("deletionPolicy is RemoveSecrets or Delete"),
    projectIdKey,
    {
      key: ANNOTATION_PENDING_ACTION,
      what: "annotation",
      by: "keyward",
      mirrors: { field: "pendingRequest", json: true },
      inFlight: true,
      doc: "While an action call is in flight: a copy of status.pendingRequest, so that an object restored from a backup taken meanwhile decides, as after a crash, whether the call landed.",
    },
    {
      key: ANNOTATION_RECENT_HANDLED,
      what: "annotation",
      by: "keyward",
      mirrors: { field: "recentRequests", json: true },
      doc: "Digests of the last 8 values handled per action (mirrors status.recentRequests), so a value put back after another ran (Argo CD's self-heal, an old manifest applied again) does not run again.",
    },
  ],
  controller: (d) => ({ reconcile: d.managed(secretSyncModule({ providers: d.providers, metrics: d.metrics })) }),
};
