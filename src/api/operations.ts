// Every operation the client performs: the 19 of interface.md (with listProjectMemberships and
// listWorkspaceMemberships as two paths of one) and three beyond it that DESIGN.md names.
import type { Idempotency } from "./retry.ts";

export type HttpMethod = "GET" | "POST" | "PATCH" | "DELETE";

export interface OperationInfo {
  name: string;
  method: HttpMethod;
  /** Path template; `{name}` segments are filled (URI-encoded) from the call's arguments. */
  path: string;
  /** True for the operations the real service has but interface.md does not list. */
  beyondInterface: boolean;
  idempotency: Idempotency;
}

const SYNC = "/api/v1/secret-syncs/{destination}";

export const operations = [
  { name: "createProject", method: "POST", path: "/api/v2/workspace", beyondInterface: false, idempotency: "non-idempotent" },
  { name: "listProjects", method: "GET", path: "/api/v1/projects", beyondInterface: false, idempotency: "idempotent" },
  { name: "getProject", method: "GET", path: "/api/v1/projects/{projectId}", beyondInterface: false, idempotency: "idempotent" },
  { name: "getProjectBySlug", method: "GET", path: "/api/v1/projects/slug/{slug}", beyondInterface: false, idempotency: "idempotent" },
  { name: "updateProject", method: "PATCH", path: "/api/v1/projects/{projectId}", beyondInterface: false, idempotency: "idempotent" },
  { name: "deleteProject", method: "DELETE", path: "/api/v1/projects/{projectId}", beyondInterface: false, idempotency: "idempotent" },
  {
    name: "listProjectMemberships",
    method: "GET",
    path: "/api/v1/projects/{projectId}/memberships",
    beyondInterface: false,
    idempotency: "idempotent",
  },
  {
    name: "listWorkspaceMemberships",
    method: "GET",
    path: "/api/v1/workspace/{workspaceId}/memberships",
    beyondInterface: false,
    idempotency: "idempotent",
  },
  // A POST that only reads.
  {
    name: "getMembershipByUsername",
    method: "POST",
    path: "/api/v1/projects/{projectId}/memberships/details",
    beyondInterface: false,
    idempotency: "idempotent",
  },
  {
    name: "updateMembershipRoles",
    method: "PATCH",
    path: "/api/v1/projects/{projectId}/memberships/{membershipId}",
    beyondInterface: false,
    idempotency: "idempotent",
  },
  {
    name: "listProjectGroups",
    method: "GET",
    path: "/api/v1/projects/{projectId}/groups",
    beyondInterface: false,
    idempotency: "idempotent",
  },
  {
    name: "updateGroupRoles",
    method: "PATCH",
    path: "/api/v1/projects/{projectId}/groups/{groupId}",
    beyondInterface: false,
    idempotency: "idempotent",
  },
  {
    name: "createIdentityToken",
    method: "POST",
    path: "/api/v1/auth/token-auth/identities/{identityId}/tokens",
    beyondInterface: false,
    idempotency: "non-idempotent",
  },
  {
    name: "listCertificateProfiles",
    method: "GET",
    path: "/api/v1/pki/certificate-profiles",
    beyondInterface: false,
    idempotency: "idempotent",
  },
  {
    name: "getCertificateProfileBySlug",
    method: "GET",
    path: "/api/v1/pki/certificate-profiles/slug/{slug}",
    beyondInterface: false,
    idempotency: "idempotent",
  },
  { name: "createSecretSync", method: "POST", path: SYNC, beyondInterface: false, idempotency: "non-idempotent" },
  { name: "updateSecretSync", method: "PATCH", path: `${SYNC}/{syncId}`, beyondInterface: false, idempotency: "idempotent" },
  { name: "syncSecrets", method: "POST", path: `${SYNC}/{syncId}/sync-secrets`, beyondInterface: false, idempotency: "non-idempotent" },
  { name: "removeSecrets", method: "POST", path: `${SYNC}/{syncId}/remove-secrets`, beyondInterface: false, idempotency: "non-idempotent" },
  { name: "getSecretSync", method: "GET", path: `${SYNC}/{syncId}`, beyondInterface: true, idempotency: "idempotent" },
  { name: "findSecretSyncByName", method: "GET", path: `${SYNC}/sync-name/{name}`, beyondInterface: true, idempotency: "idempotent" },
  // Repeating a delete converges (the repeat answers 404), so it is retried like a read.
  { name: "deleteSecretSync", method: "DELETE", path: `${SYNC}/{syncId}`, beyondInterface: true, idempotency: "idempotent" },
] as const satisfies readonly OperationInfo[];

export type OperationName = (typeof operations)[number]["name"];

export const operationByName = Object.fromEntries(operations.map((op) => [op.name, op])) as Record<OperationName, OperationInfo>;

/** Fills `{name}` segments; every value is URI-encoded as one segment. */
export function fillPath(template: string, params: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`missing path parameter ${name}`);
    return encodeURIComponent(value);
  });
}
