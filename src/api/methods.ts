// The ApiClient: one typed function per operation, each checking its arguments against
// interface.md's limits (unless validateRequests is false) and unwrapping the response.
import { z } from "zod";
import { createCaller, type CallOptions, type Caller, type ClientOptions } from "./client.ts";
import { isServiceNotFound } from "./errors.ts";
import {
  createProjectBodySchema,
  createProjectResponseSchema,
  deleteProjectResponseSchema,
  getProjectBySlugResponseSchema,
  getProjectResponseSchema,
  listProjectsQuerySchema,
  listProjectsResponseSchema,
  projectSlugSchema,
  updateProjectBodySchema,
  updateProjectResponseSchema,
  type CreateProjectBody,
  type ListProjectsQuery,
  type Project,
  type ProjectWithEnvironments,
  type UpdateProjectBody,
} from "./schemas/projects.ts";
import {
  listGroupsResponseSchema,
  listMembershipsResponseSchema,
  membershipDetailsBodySchema,
  membershipDetailsResponseSchema,
  pathProjectIdSchema,
  updateGroupRolesBodySchema,
  updateMembershipRolesBodySchema,
  updateRolesResponseSchema,
  type GroupMembership,
  type RoleRequest,
  type UpdatedRole,
  type UserMembership,
} from "./schemas/memberships.ts";
import { createTokenBodySchema, createTokenResponseSchema, type CreateTokenBody, type CreateTokenResponse } from "./schemas/tokens.ts";
import {
  getCertificateProfileBySlugParamsSchema,
  getCertificateProfileResponseSchema,
  listCertificateProfilesQuerySchema,
  listCertificateProfilesResponseSchema,
  type CertificateProfile,
  type CertificateProfileList,
  type ListCertificateProfilesQuery,
} from "./schemas/profiles.ts";
import {
  createSecretSyncBodySchemas,
  destinations,
  secretSyncResponseSchema,
  syncIdSchema,
  syncNameLookupSchema,
  updateSecretSyncBodySchemas,
  type CreateSecretSyncBody,
  type Destination,
  type SecretSync,
  type UpdateSecretSyncBody,
} from "./schemas/syncs.ts";

export interface ApiClient {
  /** A hash of the base URL and token: what the service knows the caller by (rate limits, what it may list). */
  readonly credential: string;
  /** The limit of one request, in ms: the config's timeout after the admin's ceiling. */
  readonly timeoutMs: number;
  /**
   * The same client (connections, rate limit) for one reconcile pass: every call is cancelled by
   * `signal`, and once one call has gone out, the rate limit never turns the later ones away
   * (they borrow; see PassAdmission), so a pass that got its turn finishes.
   */
  withSignal(signal: AbortSignal): ApiClient;
  createProject(body: CreateProjectBody, opts?: CallOptions): Promise<ProjectWithEnvironments>;
  listProjects(query?: ListProjectsQuery, opts?: CallOptions): Promise<ProjectWithEnvironments[]>;
  getProject(projectId: string, opts?: CallOptions): Promise<ProjectWithEnvironments>;
  getProjectBySlug(slug: string, opts?: CallOptions): Promise<ProjectWithEnvironments>;
  /** getProjectBySlug, with undefined for a slug the service does not know (no ApiError). */
  findProjectBySlug(slug: string, opts?: CallOptions): Promise<ProjectWithEnvironments | undefined>;
  updateProject(projectId: string, body: UpdateProjectBody, opts?: CallOptions): Promise<Project>;
  deleteProject(projectId: string, opts?: CallOptions): Promise<Project>;

  listProjectMemberships(projectId: string, opts?: CallOptions): Promise<UserMembership[]>;
  listWorkspaceMemberships(workspaceId: string, opts?: CallOptions): Promise<UserMembership[]>;
  getMembershipByUsername(projectId: string, username: string, opts?: CallOptions): Promise<UserMembership>;
  updateMembershipRoles(projectId: string, membershipId: string, roles: RoleRequest[], opts?: CallOptions): Promise<UpdatedRole[]>;
  listProjectGroups(projectId: string, opts?: CallOptions): Promise<GroupMembership[]>;
  updateGroupRoles(projectId: string, groupId: string, roles: RoleRequest[], opts?: CallOptions): Promise<UpdatedRole[]>;

  /** The response carries a credential (`accessToken`): never log it. */
  createIdentityToken(identityId: string, body?: CreateTokenBody, opts?: CallOptions): Promise<CreateTokenResponse>;

  listCertificateProfiles(query: ListCertificateProfilesQuery, opts?: CallOptions): Promise<CertificateProfileList>;
  getCertificateProfileBySlug(slug: string, projectId: string, opts?: CallOptions): Promise<CertificateProfile>;

  createSecretSync<D extends Destination>(destination: D, body: CreateSecretSyncBody<D>, opts?: CallOptions): Promise<SecretSync>;
  updateSecretSync<D extends Destination>(
    destination: D,
    syncId: string,
    body: UpdateSecretSyncBody<D>,
    opts?: CallOptions,
  ): Promise<SecretSync>;
  syncSecrets(destination: Destination, syncId: string, opts?: CallOptions): Promise<SecretSync>;
  removeSecrets(destination: Destination, syncId: string, opts?: CallOptions): Promise<SecretSync>;
  /** Beyond interface.md: GET /api/v1/secret-syncs/{destination}/{syncId}. */
  getSecretSync(destination: Destination, syncId: string, opts?: CallOptions): Promise<SecretSync>;
  /** Beyond interface.md: GET …/sync-name/{name}?projectId=…; undefined when there is none (404). */
  findSecretSyncByName(destination: Destination, name: string, projectId: string, opts?: CallOptions): Promise<SecretSync | undefined>;
  /** Beyond interface.md: DELETE …/{syncId}, `removeSecrets` first removes the synced secrets. */
  deleteSecretSync(
    destination: Destination,
    syncId: string,
    options?: { removeSecrets?: boolean },
    opts?: CallOptions,
  ): Promise<SecretSync>;
}

type ProjectMethods = Pick<
  ApiClient,
  "createProject" | "listProjects" | "getProject" | "getProjectBySlug" | "findProjectBySlug" | "updateProject" | "deleteProject"
>;

function projectMethods(c: Caller): ProjectMethods {
  return {
    async createProject(body, opts) {
      c.check("createProject", createProjectBodySchema, body);
      return (await c.call({ op: "createProject", body, response: createProjectResponseSchema }, opts)).project;
    },
    async listProjects(query = {}, opts) {
      c.check("listProjects", listProjectsQuerySchema, query);
      return (await c.call({ op: "listProjects", query, response: listProjectsResponseSchema }, opts)).projects;
    },
    async getProject(projectId, opts) {
      return (await c.call({ op: "getProject", params: { projectId }, response: getProjectResponseSchema }, opts)).project;
    },
    async getProjectBySlug(slug, opts) {
      c.check("getProjectBySlug", projectSlugSchema, slug);
      return c.call({ op: "getProjectBySlug", params: { slug }, response: getProjectBySlugResponseSchema }, opts);
    },
    async findProjectBySlug(slug, opts) {
      c.check("getProjectBySlug", projectSlugSchema, slug);
      return c.call(
        { op: "getProjectBySlug", params: { slug }, response: getProjectBySlugResponseSchema.optional(), absentOn404: true },
        opts,
      );
    },
    async updateProject(projectId, body, opts) {
      c.check("updateProject", updateProjectBodySchema, body);
      return (await c.call({ op: "updateProject", params: { projectId }, body, response: updateProjectResponseSchema }, opts)).project;
    },
    async deleteProject(projectId, opts) {
      return (await c.call({ op: "deleteProject", params: { projectId }, response: deleteProjectResponseSchema }, opts)).project;
    },
  };
}

type MembershipMethods = Pick<
  ApiClient,
  | "listProjectMemberships"
  | "listWorkspaceMemberships"
  | "getMembershipByUsername"
  | "updateMembershipRoles"
  | "listProjectGroups"
  | "updateGroupRoles"
>;

function membershipMethods(c: Caller): MembershipMethods {
  return {
    async listProjectMemberships(projectId, opts) {
      return (await c.call({ op: "listProjectMemberships", params: { projectId }, response: listMembershipsResponseSchema }, opts))
        .memberships;
    },
    async listWorkspaceMemberships(workspaceId, opts) {
      return (await c.call({ op: "listWorkspaceMemberships", params: { workspaceId }, response: listMembershipsResponseSchema }, opts))
        .memberships;
    },
    async getMembershipByUsername(projectId, username, opts) {
      c.check("getMembershipByUsername", pathProjectIdSchema, projectId);
      const body = { username };
      c.check("getMembershipByUsername", membershipDetailsBodySchema, body);
      return (await c.call({ op: "getMembershipByUsername", params: { projectId }, body, response: membershipDetailsResponseSchema }, opts))
        .membership;
    },
    async updateMembershipRoles(projectId, membershipId, roles, opts) {
      const body = { roles };
      c.check("updateMembershipRoles", updateMembershipRolesBodySchema, body);
      const call = { op: "updateMembershipRoles", params: { projectId, membershipId }, body, response: updateRolesResponseSchema } as const;
      return (await c.call(call, opts)).roles;
    },
    async listProjectGroups(projectId, opts) {
      return (await c.call({ op: "listProjectGroups", params: { projectId }, response: listGroupsResponseSchema }, opts)).groupMemberships;
    },
    async updateGroupRoles(projectId, groupId, roles, opts) {
      const body = { roles };
      c.check("updateGroupRoles", updateGroupRolesBodySchema, body);
      return (await c.call({ op: "updateGroupRoles", params: { projectId, groupId }, body, response: updateRolesResponseSchema }, opts))
        .roles;
    },
  };
}

type AccessMethods = Pick<ApiClient, "createIdentityToken" | "listCertificateProfiles" | "getCertificateProfileBySlug">;

function accessMethods(c: Caller): AccessMethods {
  return {
    async createIdentityToken(identityId, body = {}, opts) {
      c.check("createIdentityToken", createTokenBodySchema, body);
      return c.call({ op: "createIdentityToken", params: { identityId }, body, response: createTokenResponseSchema }, opts);
    },
    async listCertificateProfiles(query, opts) {
      c.check("listCertificateProfiles", listCertificateProfilesQuerySchema, query);
      return c.call({ op: "listCertificateProfiles", query: { ...query }, response: listCertificateProfilesResponseSchema }, opts);
    },
    async getCertificateProfileBySlug(slug, projectId, opts) {
      c.check("getCertificateProfileBySlug", getCertificateProfileBySlugParamsSchema, { slug, projectId });
      const call = {
        op: "getCertificateProfileBySlug",
        params: { slug },
        query: { projectId },
        response: getCertificateProfileResponseSchema,
      } as const;
      return (await c.call(call, opts)).certificateProfile;
    },
  };
}

const destinationSchema = z.enum(destinations);

type SyncMethods = Pick<
  ApiClient,
  "createSecretSync" | "updateSecretSync" | "syncSecrets" | "removeSecrets" | "getSecretSync" | "findSecretSyncByName" | "deleteSecretSync"
>;

function syncMethods(c: Caller): SyncMethods {
  const target = (op: Parameters<Caller["check"]>[0], destination: Destination, syncId?: string): Record<string, string> => {
    c.check(op, destinationSchema, destination);
    if (syncId === undefined) return { destination };
    c.check(op, syncIdSchema, syncId);
    return { destination, syncId };
  };
  const response = secretSyncResponseSchema;
  return {
    async createSecretSync(destination, body, opts) {
      const params = target("createSecretSync", destination);
      c.check("createSecretSync", createSecretSyncBodySchemas[destination], body);
      return (await c.call({ op: "createSecretSync", params, body, response }, opts)).secretSync;
    },
    async updateSecretSync(destination, syncId, body, opts) {
      const params = target("updateSecretSync", destination, syncId);
      c.check("updateSecretSync", updateSecretSyncBodySchemas[destination], body);
      return (await c.call({ op: "updateSecretSync", params, body, response }, opts)).secretSync;
    },
    async syncSecrets(destination, syncId, opts) {
      const params = target("syncSecrets", destination, syncId);
      return (await c.call({ op: "syncSecrets", params, response }, opts)).secretSync;
    },
    async removeSecrets(destination, syncId, opts) {
      const params = target("removeSecrets", destination, syncId);
      return (await c.call({ op: "removeSecrets", params, response }, opts)).secretSync;
    },
    async getSecretSync(destination, syncId, opts) {
      const params = target("getSecretSync", destination, syncId);
      return (await c.call({ op: "getSecretSync", params, response }, opts)).secretSync;
    },
    async findSecretSyncByName(destination, name, projectId, opts) {
      const params = { ...target("findSecretSyncByName", destination), name };
      c.check("findSecretSyncByName", syncNameLookupSchema, name);
      c.check("findSecretSyncByName", pathProjectIdSchema, projectId);
      try {
        return (await c.call({ op: "findSecretSyncByName", params, query: { projectId }, response }, opts)).secretSync;
      } catch (err) {
        if (isServiceNotFound(err)) return undefined;
        throw err;
      }
    },
    async deleteSecretSync(destination, syncId, options = {}, opts) {
      const params = target("deleteSecretSync", destination, syncId);
      const query = options.removeSecrets ? { removeSecrets: true } : {};
      return (await c.call({ op: "deleteSecretSync", params, query, response }, opts)).secretSync;
    },
  };
}

export function buildMethods(c: Caller): ApiClient {
  // A client per pass: its methods are built on the pass's first call. A resync pass served from
  // a shared listing calls nothing, and building every method for it was 4% of keyward's CPU in
  // steady state (bench/RESULTS.md); credential and timeoutMs need no build.
  const withSignal = (signal: AbortSignal): ApiClient => {
    let built: ApiClient | undefined;
    const build = (): ApiClient => {
      if (built === undefined) {
        const pass = { admitted: false };
        built = buildMethods({ ...c, call: (call, opts) => c.call(call, { signal, pass, ...opts }) });
      }
      return built;
    };
    return new Proxy({} as ApiClient, {
      get: (_target, prop) => {
        if (prop === "credential") return c.credential;
        if (prop === "timeoutMs") return c.timeoutMs;
        return Reflect.get(build(), prop) as unknown;
      },
      has: (_target, prop) => Reflect.has(build(), prop),
      ownKeys: () => Reflect.ownKeys(build()),
      getOwnPropertyDescriptor: (_target, prop) => {
        const descriptor = Reflect.getOwnPropertyDescriptor(build(), prop);
        return descriptor === undefined ? undefined : { ...descriptor, configurable: true };
      },
    });
  };
  return {
    credential: c.credential,
    timeoutMs: c.timeoutMs,
    withSignal,
    ...projectMethods(c),
    ...membershipMethods(c),
    ...accessMethods(c),
    ...syncMethods(c),
  };
}

/** A client of the service: one typed function per operation over one caller (retries, limits, timeouts). */
export function createApiClient(options: ClientOptions): ApiClient {
  return buildMethods(createCaller(options));
}
