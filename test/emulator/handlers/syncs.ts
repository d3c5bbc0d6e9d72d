// Secret syncs: create, update, trigger, remove secrets (interface.md), and get, find by name
// and delete (beyond the interface, per DESIGN.md). One route set serves all seven destinations.
import { randomUUID } from "node:crypto";
import type { Core } from "../core.ts";
import { badRequest, notFound, routeNotFound } from "../errors.ts";
import { folderFor, nowIso } from "../model.ts";
import type { HandlerContext, Route } from "../router.ts";
import type { ConnectionRec, EnvironmentRec, ProjectRec, State, SyncRec } from "../state.ts";
import { parse } from "../schemas/parse.ts";
import { createSyncBody, deleteSyncQuery, destinationApps, syncByNameQuery, syncIdParams, updateSyncBody } from "../schemas/syncs.ts";
import { requireProject } from "./projects.ts";
import type { JobAction } from "../types.ts";

const statusKeys = [
  "syncStatus",
  "importStatus",
  "removeStatus",
  "lastSyncJobId",
  "lastImportJobId",
  "lastRemoveJobId",
  "lastSyncMessage",
  "lastImportMessage",
  "lastRemoveMessage",
  "lastSyncedAt",
  "lastImportedAt",
  "lastRemovedAt",
] as const;

export function syncView(state: State, sync: SyncRec): Record<string, unknown> {
  const connection = state.connections[sync.connectionId];
  const environment = state.projects[sync.projectId]?.environments.find((env) => env.id === sync.environmentId);
  const folder = state.folders[sync.folderId];
  const view: Record<string, unknown> = {
    id: sync.id,
    name: sync.name,
    description: sync.description,
    isAutoSyncEnabled: sync.isAutoSyncEnabled,
    version: sync.version,
    projectId: sync.projectId,
    folderId: sync.folderId,
    connectionId: sync.connectionId,
    createdAt: sync.createdAt,
    updatedAt: sync.updatedAt,
  };
  // Every listed field is sent; one whose job never ran (or has nothing to say) is null, as the
  // real service's nullable columns answer.
  for (const key of statusKeys) view[key] = sync[key] ?? null;
  return {
    ...view,
    syncOptions: structuredClone(sync.syncOptions),
    connection: { app: connection?.app ?? destinationApps[sync.destination], name: connection?.name ?? "", id: sync.connectionId },
    environment: { slug: environment?.slug ?? "", name: environment?.name ?? "", id: sync.environmentId },
    folder: { id: sync.folderId, path: folder?.path ?? "/" },
    destination: sync.destination,
    destinationConfig: structuredClone(sync.destinationConfig),
  };
}

function destinationOf({ params, method, path }: HandlerContext): string {
  const destination = params["destination"] ?? "";
  if (!(destination in destinationApps)) throw routeNotFound(method, path);
  return destination;
}

function requireConnection(state: State, connectionId: string, destination: string): ConnectionRec {
  const connection = state.connections[connectionId];
  if (!connection) throw notFound(`App connection with ID '${connectionId}' not found`);
  const app = destinationApps[destination];
  if (connection.app !== app) {
    throw badRequest(
      `App connection '${connection.name}' is of kind '${connection.app}'; a ${destination} sync needs a '${app ?? ""}' connection`,
    );
  }
  return connection;
}

function requireEnvironment(project: ProjectRec, slug: string): EnvironmentRec {
  const environment = project.environments.find((env) => env.slug === slug);
  if (!environment) throw notFound(`Environment with slug '${slug}' in project with ID '${project.id}' not found`);
  return environment;
}

function requireSync(state: State, syncId: string, destination: string): SyncRec {
  const sync = state.syncs[syncId];
  if (sync?.destination !== destination) throw notFound(`Secret sync with ID '${syncId}' not found`);
  return sync;
}

function assertNameFree(state: State, projectId: string, name: string): void {
  if (Object.values(state.syncs).some((s) => s.projectId === projectId && s.name === name)) {
    throw badRequest(`A secret sync with the name '${name}' already exists in this project`);
  }
}

function queueAutoSync(core: Core, sync: SyncRec, onCreate: boolean): void {
  if (!sync.isAutoSyncEnabled || core.jobs.hasActiveJob(sync.id)) return;
  const behavior = sync.syncOptions["initialSyncBehavior"];
  if (onCreate && typeof behavior === "string" && behavior.startsWith("import-")) core.jobs.queue(sync, "import");
  core.jobs.queue(sync, "sync");
}

function createSync(ctx: HandlerContext): unknown {
  const { core } = ctx;
  const destination = destinationOf(ctx);
  const input = parse(createSyncBody(destination), ctx.body);
  const project = requireProject(core.state, input.projectId);
  requireConnection(core.state, input.connectionId, destination);
  const environment = requireEnvironment(project, input.environment);
  assertNameFree(core.state, project.id, input.name);
  const at = nowIso();
  const sync: SyncRec = {
    id: randomUUID(),
    destination,
    name: input.name,
    description: input.description ?? null,
    isAutoSyncEnabled: input.isAutoSyncEnabled,
    version: 1,
    projectId: project.id,
    folderId: folderFor(core.state, project.id, environment.id, input.secretPath).id,
    connectionId: input.connectionId,
    environmentId: environment.id,
    createdAt: at,
    updatedAt: at,
    syncOptions: input.syncOptions,
    destinationConfig: input.destinationConfig,
  };
  core.state.syncs[sync.id] = sync;
  queueAutoSync(core, sync, true);
  return { secretSync: syncView(core.state, sync) };
}

function updateSync(ctx: HandlerContext): unknown {
  const { core } = ctx;
  const destination = destinationOf(ctx);
  const { syncId } = parse(syncIdParams, ctx.params);
  const input = parse(updateSyncBody(destination), ctx.body);
  const sync = requireSync(core.state, syncId, destination);
  const project = requireProject(core.state, sync.projectId);
  if (input.name !== undefined && input.name !== sync.name) assertNameFree(core.state, project.id, input.name);
  if (input.connectionId !== undefined) requireConnection(core.state, input.connectionId, destination);
  const environment = input.environment === undefined ? undefined : requireEnvironment(project, input.environment);
  if (environment !== undefined || input.secretPath !== undefined) {
    const path = input.secretPath ?? core.state.folders[sync.folderId]?.path ?? "/";
    const folder = folderFor(core.state, project.id, environment?.id ?? sync.environmentId, path);
    sync.folderId = folder.id;
    sync.environmentId = folder.environmentId;
  }
  if (input.name !== undefined) sync.name = input.name;
  if (input.connectionId !== undefined) sync.connectionId = input.connectionId;
  if (input.syncOptions !== undefined) sync.syncOptions = input.syncOptions;
  if (input.destinationConfig !== undefined) sync.destinationConfig = input.destinationConfig;
  if (input.description !== undefined) sync.description = input.description;
  if (input.isAutoSyncEnabled !== undefined) sync.isAutoSyncEnabled = input.isAutoSyncEnabled;
  sync.version += 1;
  sync.updatedAt = nowIso();
  queueAutoSync(core, sync, false);
  return { secretSync: syncView(core.state, sync) };
}

function startJob(action: JobAction) {
  return (ctx: HandlerContext): unknown => {
    const destination = destinationOf(ctx);
    const { syncId } = parse(syncIdParams, ctx.params);
    const sync = requireSync(ctx.core.state, syncId, destination);
    assertNoActiveJob(ctx.core, sync);
    ctx.core.jobs.queue(sync, action);
    return { secretSync: syncView(ctx.core.state, sync) };
  };
}

function assertNoActiveJob(core: Core, sync: SyncRec): void {
  if (core.jobs.hasActiveJob(sync.id)) {
    throw badRequest(`A job for secret sync '${sync.name}' is already in progress; retry once it has finished`);
  }
}

function getSync(ctx: HandlerContext): unknown {
  const destination = destinationOf(ctx);
  const { syncId } = parse(syncIdParams, ctx.params);
  return { secretSync: syncView(ctx.core.state, requireSync(ctx.core.state, syncId, destination)) };
}

function findSyncByName(ctx: HandlerContext): unknown {
  const destination = destinationOf(ctx);
  const { projectId } = parse(syncByNameQuery, ctx.query);
  const name = ctx.params["name"] ?? "";
  const sync = Object.values(ctx.core.state.syncs).find(
    (s) => s.destination === destination && s.projectId === projectId && s.name === name,
  );
  if (!sync) throw notFound(`Secret sync with name '${name}' not found`);
  return { secretSync: syncView(ctx.core.state, sync) };
}

/** With removeSecrets the sync stays until its remove job succeeds, as in the real service. */
function deleteSync(ctx: HandlerContext): unknown {
  const { core } = ctx;
  const destination = destinationOf(ctx);
  const { syncId } = parse(syncIdParams, ctx.params);
  const { removeSecrets } = parse(deleteSyncQuery, ctx.query);
  const sync = requireSync(core.state, syncId, destination);
  if (removeSecrets) {
    assertNoActiveJob(core, sync);
    core.jobs.queue(sync, "remove", { deleteSyncOnSuccess: true });
    return { secretSync: syncView(core.state, sync) };
  }
  const view = syncView(core.state, sync);
  Reflect.deleteProperty(core.state.syncs, sync.id);
  for (const job of Object.values(core.state.jobs)) if (job.syncId === sync.id) Reflect.deleteProperty(core.state.jobs, job.id);
  return { secretSync: view };
}

const base = "/api/v1/secret-syncs/:destination";

export const syncRoutes: Route[] = [
  { method: "POST", path: base, operation: "createSecretSync", limit: "write", handle: createSync },
  { method: "GET", path: `${base}/sync-name/:name`, operation: "getSecretSyncByName", limit: "read", handle: findSyncByName },
  { method: "POST", path: `${base}/:syncId/sync-secrets`, operation: "triggerSecretSync", limit: "write", handle: startJob("sync") },
  {
    method: "POST",
    path: `${base}/:syncId/remove-secrets`,
    operation: "removeSecretSyncSecrets",
    limit: "write",
    handle: startJob("remove"),
  },
  { method: "GET", path: `${base}/:syncId`, operation: "getSecretSync", limit: "read", handle: getSync },
  { method: "PATCH", path: `${base}/:syncId`, operation: "updateSecretSync", limit: "write", handle: updateSync },
  { method: "DELETE", path: `${base}/:syncId`, operation: "deleteSecretSync", limit: "write", handle: deleteSync },
];
