// The emulator's public contract (see README.md). server.ts re-exports these.

export interface EmulatorOptions {
  host?: string;
  port?: number;
  tokens: string[];
  seed?: Seed;
  persistPath?: string;
  jobDelayMs?: number;
  rateLimit?: RateLimitOptions | false;
  orgId?: string;
  /**
   * Operations (route `operation` names, e.g. "getSecretSyncByName") this server does not serve:
   * their paths answer Fastify's route 404, as a server that implements only interface.md would.
   */
  withoutOperations?: string[];
}

export interface RateLimitOptions {
  readsPerMinute: number;
  writesPerMinute: number;
  projectCreatesPerMinute: number;
}

export interface Emulator {
  url: string;
  close(): Promise<void>;
  requests(): RecordedRequest[];
  clearRequests(): void;
  setFaults(f: Faults): void;
  /**
   * Requests a latency fault is holding right now (not yet answered); `clientGone`: only those
   * whose client closed its connection meanwhile.
   */
  heldRequests(filter?: { clientGone?: boolean }): number;
  /**
   * Ends every latency hold now, or the `count` oldest (returns how many): a held request then lands (landsWithoutClient)
   * or is answered. Tests order a late commit after an event this way, not by a latency.
   */
  releaseHeld(count?: number): number;
  seed(s: Seed): void;
  setJobOutcome(o: JobOutcome): void;
  addMember(m: MemberSeed): void;
  removeMember(m: MemberSelector): void;
}

export type JobAction = "sync" | "import" | "remove";

export interface JobOutcome {
  syncId: string;
  action: JobAction;
  outcome: "succeeded" | "failed";
  message?: string;
  /** How many upcoming jobs of that sync and action this outcome applies to (default 1). */
  times?: number;
}

export interface MemberSelector {
  projectId: string;
  username?: string;
  groupId?: string;
}

export interface RecordedRequest {
  seq: number;
  at: string;
  method: string;
  path: string;
  query: Record<string, string>;
  body: unknown;
  status: number;
  operation: string;
  auth: "none" | "valid" | "invalid";
  /**
   * Which credential a valid request carried: the first 12 hex digits of its token's sha256 (an
   * extension of the contract), so a log tells whose request it was without holding the token.
   */
  principal?: string;
  reqId: string;
  /** Set when an injected fault shaped the answer (an extension of the contract). */
  fault?: "error" | "rateLimit" | "drop-before-handling" | "drop-after-handling" | "client-gone";
}

export interface Faults {
  match?: { method?: string; pathPattern?: string };
  latencyMs?: number;
  /**
   * When latencyMs applies: before handling (default), or after handling, holding the answer of
   * a request that was already applied (and logged), as a slow network on the way back would.
   */
  latencyWhen?: "before-handling" | "after-handling";
  /**
   * A request held before handling is still handled (and logged) when its client gave up meanwhile,
   * as a server that finishes what it received does: a create whose client timed out commits late.
   * Default: a request whose client has gone is dropped unhandled.
   */
  landsWithoutClient?: boolean;
  errorRate?: number;
  errorStatus?: number;
  rateLimit?: { count: number; retryAfterSeconds: number };
  drop?: { count: number; when: "before-handling" | "after-handling" };
}

export interface Seed {
  users?: { id?: string; username: string; email?: string; firstName?: string; lastName?: string }[];
  groups?: { id?: string; name: string; slug: string }[];
  /**
   * answeredExpiresIn: create-token answers this expiresIn instead of accessTokenTTL, while the
   * token still lives accessTokenTTL seconds (a service whose numbers cannot be trusted).
   */
  identities?: { id: string; name?: string; accessTokenTTL?: number; accessTokenMaxTTL?: number; answeredExpiresIn?: number }[];
  connections?: { id: string; name: string; app: string }[];
  projects?: { id?: string; name: string; slug: string; type?: string; hasDeleteProtection?: boolean }[];
  certificateProfiles?: (Record<string, unknown> & { projectId: string; slug: string; enrollmentType: "api" | "est" | "acme" })[];
  memberships?: MemberSeed[];
  /** Extension: named custom project roles. Unseeded custom slugs are also accepted (README). */
  customRoles?: { id?: string; projectId?: string; projectSlug?: string; slug: string; name?: string }[];
}

export interface MemberSeed {
  projectId?: string;
  projectSlug?: string;
  username?: string;
  groupId?: string;
  groupSlug?: string;
  roles: {
    role: string;
    isTemporary?: boolean;
    temporaryMode?: string;
    temporaryRange?: string;
    temporaryAccessStartTime?: string;
  }[];
}
