// The emulator's whole world as plain JSON-able data, and its persistence (temp file + rename).
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import type { JobAction, MemberSeed } from "./types.ts";

export interface UserRec {
  id: string;
  username: string;
  email: string;
  firstName: string;
  lastName: string;
  publicKey: string;
}

export interface GroupRec {
  id: string;
  name: string;
  slug: string;
}

export interface IdentityRec {
  id: string;
  name: string;
  accessTokenTTL: number;
  accessTokenMaxTTL: number;
  /** What create-token answers as expiresIn, when not accessTokenTTL (seed: answeredExpiresIn). */
  answeredExpiresIn?: number;
}

export interface ConnectionRec {
  id: string;
  name: string;
  app: string;
}

export interface EnvironmentRec {
  id: string;
  name: string;
  slug: string;
}

export interface ProjectRec {
  id: string;
  name: string;
  slug: string;
  type: string;
  orgId: string;
  description: string | null;
  defaultProduct: string | null;
  autoCapitalization: boolean | null;
  version: number;
  upgradeStatus: string | null;
  pitVersionLimit: number;
  kmsCertificateKeyId: string | null;
  auditLogsRetentionDays: number | null;
  hasDeleteProtection: boolean | null;
  secretSharing: boolean;
  showSnapshotsLegacy: boolean;
  secretDetectionIgnoreValues: string[] | null;
  kmsSecretManagerKeyId: string;
  template: string;
  kmsKeyId: string | null;
  createdAt: string;
  updatedAt: string;
  environments: EnvironmentRec[];
}

/** A project role: the four built-ins and custom ones. */
export interface ProjectRoleRec {
  id: string;
  projectId: string;
  slug: string;
  name: string;
  description: string;
  custom: boolean;
  createdAt: string;
  updatedAt: string;
}

export interface MemberRoleRec {
  id: string;
  /** The slug as requested: a built-in role or a custom role's slug. */
  role: string;
  customRoleId?: string;
  isTemporary: boolean;
  temporaryMode?: string;
  temporaryRange?: string;
  temporaryAccessStartTime?: string;
  temporaryAccessEndTime?: string;
  createdAt: string;
  updatedAt: string;
}

export interface MembershipRec {
  id: string;
  projectId: string;
  userId?: string;
  groupId?: string;
  createdAt: string;
  updatedAt: string;
  roles: MemberRoleRec[];
}

export interface ProfileRec {
  id: string;
  projectId: string;
  caId: string;
  certificateTemplateId: string;
  slug: string;
  description: string | null;
  enrollmentType: "api" | "est" | "acme";
  estConfigId?: string;
  apiConfigId?: string;
  acmeConfigId?: string;
  createdAt: string;
  updatedAt: string;
  metrics: {
    totalCertificates: number;
    activeCertificates: number;
    expiredCertificates: number;
    expiringCertificates: number;
    revokedCertificates: number;
  };
  estConfig?: { id: string; disableBootstrapCaValidation: boolean; passphrase: string; caChain: string };
  apiConfig?: { id: string; autoRenew: boolean; renewBeforeDays: number };
  acmeConfig?: { id: string; directoryUrl: string };
}

export interface FolderRec {
  id: string;
  projectId: string;
  environmentId: string;
  path: string;
}

export type JobStatus = "pending" | "running" | "succeeded" | "failed";

export interface SyncRec {
  id: string;
  destination: string;
  name: string;
  description: string | null;
  isAutoSyncEnabled: boolean;
  version: number;
  projectId: string;
  folderId: string;
  connectionId: string;
  environmentId: string;
  createdAt: string;
  updatedAt: string;
  syncOptions: Record<string, unknown>;
  destinationConfig: Record<string, unknown>;
  syncStatus?: JobStatus;
  importStatus?: JobStatus;
  removeStatus?: JobStatus;
  lastSyncJobId?: string;
  lastImportJobId?: string;
  lastRemoveJobId?: string;
  lastSyncMessage?: string;
  lastImportMessage?: string;
  lastRemoveMessage?: string;
  lastSyncedAt?: string;
  lastImportedAt?: string;
  lastRemovedAt?: string;
}

export interface JobRec {
  id: string;
  syncId: string;
  action: JobAction;
  /** Epoch ms when queued; the phases follow from it and jobDelayMs (see jobs.ts). */
  queuedAt: number;
  state: "pending" | "running";
  deleteSyncOnSuccess?: boolean;
}

export interface MintedTokenRec {
  id: string;
  /** sha256 of the token: the value itself is never stored. */
  hash: string;
  identityId: string;
  name: string | null;
  createdAt: string;
  /** Epoch ms, or null for a token without expiry (TTL 0). */
  expiresAt: number | null;
}

export interface JobOutcomeRec {
  syncId: string;
  action: JobAction;
  outcome: "succeeded" | "failed";
  message?: string;
  remaining: number;
}

export interface State {
  users: Record<string, UserRec>;
  groups: Record<string, GroupRec>;
  identities: Record<string, IdentityRec>;
  connections: Record<string, ConnectionRec>;
  projects: Record<string, ProjectRec>;
  projectRoles: Record<string, ProjectRoleRec>;
  memberships: Record<string, MembershipRec>;
  profiles: Record<string, ProfileRec>;
  folders: Record<string, FolderRec>;
  syncs: Record<string, SyncRec>;
  jobs: Record<string, JobRec>;
  tokens: Record<string, MintedTokenRec>;
  jobOutcomes: JobOutcomeRec[];
  /** Seeded members of a project slug that did not exist yet, added whenever a project with that slug is created. */
  deferredMembers: MemberSeed[];
}

export function emptyState(): State {
  return {
    users: {},
    groups: {},
    identities: {},
    connections: {},
    projects: {},
    projectRoles: {},
    memberships: {},
    profiles: {},
    folders: {},
    syncs: {},
    jobs: {},
    tokens: {},
    jobOutcomes: [],
    deferredMembers: [],
  };
}

export function loadState(path: string): State | undefined {
  if (!existsSync(path)) return undefined;
  const parsed = JSON.parse(readFileSync(path, "utf8")) as Partial<State>;
  return { ...emptyState(), ...parsed };
}

let tempCounter = 0;

/** Writes the state atomically: a reader (or a crash) never sees half a file. */
export function saveState(path: string, state: State): void {
  tempCounter += 1;
  const temp = `${path}.${process.pid}.${tempCounter}.tmp`;
  writeFileSync(temp, JSON.stringify(state));
  renameSync(temp, path);
}
