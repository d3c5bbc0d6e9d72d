// AccessToken: a machine identity's token, issued at the service and delivered into a Secret
// that the AccessToken owns (controller ownerReference, so the garbage collector removes it
// with the AccessToken), issued again before it expires and whenever the Secret is deleted or
// edited.
//
// The token lives only in the Secret. Status, events, logs and error messages carry its id,
// its expiry and a salted hash of the Secret's data — never the token.
//
// In the engine's terms: observe = the Secret is present, owned, intact and not due for
// renewal; create (Secret missing) and update (edited, spec changed, renewal due) both issue a
// token and write the Secret. guardCreate is false: a token has no natural key to find it by,
// and a duplicate only wastes a token.
//
// createIdentityToken is not idempotent and the interface can neither look a token up nor
// revoke one. A token minted whose Secret write then fails is kept in memory (per object, with
// the spec it was minted for) and written again by the next pass instead of minting another, so
// a Secret that cannot be written (a quota, an admission policy, an apiserver outage) does not
// leak a token per pass. If keyward dies in between, the next pass mints another and the first
// is leaked at the service until it expires — it was never written anywhere, so nobody holds
// it. Likewise a token replaced by a renewal, or whose AccessToken is deleted, stays valid at
// the service until its own expiry.
import { createHash } from "node:crypto";
import { z } from "zod";
import type { ApiClient } from "../api/index.ts";
import { resourcePath, secretKind, type Kube } from "../kube/client.ts";
import { validations } from "../engine/cel.ts";
import type { CrdSource } from "../engine/kind.ts";
import { getObject, isKubeNotFound, replacingPatch, statusCodeOf } from "../kube/objects.ts";
import { keyString } from "../kube/keys.ts";
import { KubeApiError, kubeJson, MERGE_PATCH } from "../kube/rest.ts";
import type { SecondaryWatch } from "../engine/controller.ts";
import { kindGauge, type Metrics } from "../engine/metrics.ts";
import { ReconcileError } from "../engine/errors.ts";
import { type ManagedContext, type Observation, type StatusPatch } from "../engine/module.ts";
import { API_VERSION, type KubeObject, type ObjectKey, type ObjectMeta, type OwnerReference } from "../engine/types.ts";
import {
  ageColumn,
  bounds,
  commonStatus,
  dropUndefined,
  isObserveOnly,
  kindRef,
  managementPolicy,
  providerConfigRef,
  readyColumns,
  pausedKey,
} from "./common.ts";
import type { Kind, KindModule } from "./kind.ts";
import { connectVia, type ProviderResolver } from "./provider/resolver.ts";
import { renewBeforeSchema } from "./provider/crd-fields.ts";
import { InvalidTokenLifetimeError, renewalPlan, renewWaitMs, rfc3339, tokenExpiry, type RenewalPlan } from "./provider/token-schedule.ts";
import type { Edit, VersionChange } from "../lib/conversion.ts";
import { conditionEdits, initialismEdits, providerUserEdits, timeEdits, V1BETA1 } from "./common.ts";

export const ref = kindRef("AccessToken", "accesstokens");

/** On the Secret: the hash of the data keyward wrote, to tell an edit from keyward's own write. */
export const ANNOTATION_DATA_HASH = "keyward.dev/data-hash";
/** The AccessToken a token Secret is for, by name: what survives a restore that drops ownerReferences. */
export const ANNOTATION_OWNER_NAME = "keyward.dev/access-token";
/** On the Secret: lets keyward watch only the Secrets it writes. */
export const LABEL_OWNER_KIND = "keyward.dev/owner-kind";
export const LABEL_MANAGED_BY = "app.kubernetes.io/managed-by";
export const SECRET_SELECTOR = `${LABEL_OWNER_KIND}=AccessToken`;

/** A core/v1 Secret as the apiserver sends it (plain JSON; data values are base64). */
export interface SecretObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  type?: string;
  data?: Record<string, string>;
}

export const defaultSecretKeys = { token: "token", tokenType: "tokenType", expiresAt: "expiresAt" } as const;
export type SecretKeys = { token: string; tokenType: string; expiresAt: string };

/** Longest sleep before looking again at a token that is not due; the resync covers the rest. */
const MAX_RENEW_WAIT_MS = 60 * 60_000;
/** Once due, look again soon after the renewal to record the new token's schedule. */
const AFTER_ISSUE_REQUEUE_MS = 1_000;

const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const secretKeyName = z
  .string()
  .min(1)
  .max(253)
  .regex(/^[-._a-zA-Z0-9]+$/);

const keyOr = (field: keyof SecretKeys): string => `(has(self.${field}) ? self.${field} : '${defaultSecretKeys[field]}')`;

export const specSchema = z
  .object({
    providerConfigRef: providerConfigRef.optional(),
    identityId: z.guid().describe("The machine identity the token is issued for; changing it issues a new token (SpecChanged)."),
    name: z
      .string()
      .min(1)
      .max(256)
      .optional()
      .describe(
        "Name given to each token at the service; changing it issues a new token (SpecChanged). Unset: the token is created without a name.",
      ),
    secretName: z
      .string()
      .min(1)
      .max(253)
      .regex(dnsSubdomain)
      .describe(
        "The Secret in the same namespace that receives the token. keyward creates and owns it; an existing Secret it does not own is never overwritten.",
      ),
    secretKeys: z
      .object({
        token: secretKeyName.optional().describe("Key of the token. Default: token."),
        tokenType: secretKeyName.optional().describe("Key of the token type (Bearer). Default: tokenType."),
        expiresAt: secretKeyName.optional().describe("Key of the expiry time (RFC 3339). Default: expiresAt."),
      })
      .strict()
      .optional()
      .describe("Names of the keys written into the Secret.")
      .meta(
        validations({
          rule: `${keyOr("token")} != ${keyOr("tokenType")} && ${keyOr("token")} != ${keyOr("expiresAt")} && ${keyOr("tokenType")} != ${keyOr("expiresAt")}`,
          message: "the token, tokenType and expiresAt keys must differ",
        }),
      ),
    renewBefore: renewBeforeSchema(
      "Issue a new token this long before the current one expires (a duration such as 10m or 1h30m; at most half the token's lifetime). Default: a third of the token's lifetime.",
    ),
    managementPolicy: managementPolicy.optional(),
  })
  .strict();
export type AccessTokenSpec = z.infer<typeof specSchema>;

export const issueReasons = ["Initial", "SecretMissing", "SecretEdited", "SpecChanged", "RenewalDue", "Unrecorded"] as const;
export type IssueReason = (typeof issueReasons)[number];

export const statusSchema = z.object({
  ...commonStatus,
  tokenId: z.string().max(bounds.ID).optional().describe("Id of the current token at the service (tokenData.id)."),
  identityId: z.string().max(bounds.ID).optional().describe("The machine identity the current token belongs to."),
  tokenName: z.string().max(bounds.NAME).optional().describe("The name the current token was issued with."),
  secretName: z.string().max(bounds.K8S_NAME).optional().describe("The Secret holding the current token."),
  expiresAt: z
    .string()
    .max(bounds.TIME)
    .optional()
    .describe("When the current token expires (RFC 3339); absent for a token without expiry."),
  renewAt: z
    .string()
    .max(bounds.TIME)
    .optional()
    .describe("When keyward issues the next token (RFC 3339): renewBefore ahead of expiresAt."),
  lastIssuedAt: z.string().max(bounds.TIME).optional().describe("When the current token was issued (RFC 3339)."),
  lastIssueReason: z
    .enum(issueReasons)
    .optional()
    .describe(
      "Why the current token was issued: Initial (the first), SecretMissing (the Secret was gone), SecretEdited (its data was changed), SpecChanged (identityId or name changed), RenewalDue (renewAt passed), Unrecorded (the Secret held a token this resource had not recorded, e.g. after a restore).",
    ),
  renewals: z.number().int().optional().describe("How many tokens keyward issued after the first one (renewals and re-issues)."),
  secretDataHash: z
    .string()
    .max(bounds.HASH)
    .optional()
    .describe("Salted hash of the data keyward wrote into the Secret, to detect edits."),
});
export type AccessTokenStatus = z.infer<typeof statusSchema>;

export const crdSource: CrdSource = {
  ...ref,
  singular: "accesstoken",
  shortNames: ["kwtoken"],
  categories: ["keyward"],
  description: "A machine identity's access token, written into a Secret the AccessToken owns and issued again before it expires.",
  spec: specSchema,
  status: statusSchema,
  printerColumns: [
    { name: "Secret", type: "string", jsonPath: ".status.secretName" },
    { name: "Expires", type: "string", jsonPath: ".status.expiresAt" },
    { name: "Renewals", type: "integer", jsonPath: ".status.renewals", priority: 1 },
    ...readyColumns,
    ageColumn,
  ],
};

type Ctx = ManagedContext<AccessTokenSpec, AccessTokenStatus, ApiClient>;

/** The key names the spec asks for, defaults filled in; the three must differ. */
export function secretKeysOf(spec: Pick<AccessTokenSpec, "secretKeys">): SecretKeys {
  const keys = { ...defaultSecretKeys, ...dropUndefined(spec.secretKeys ?? {}) };
  if (new Set([keys.token, keys.tokenType, keys.expiresAt]).size !== 3) {
    throw new ReconcileError("InvalidSpec", "spec.secretKeys: the token, tokenType and expiresAt keys must differ", { retryable: false });
  }
  return keys;
}

/** Hash of the Secret data under `keys`, salted with the owner's uid so it is no bare hash of the token. */
export function dataHash(ownerUid: string, data: Record<string, string> | undefined, keys: SecretKeys): string {
  const picked = [keys.token, keys.tokenType, keys.expiresAt].map((k) => [k, data?.[k] ?? null]);
  return `sha256:${createHash("sha256")
    .update(`keyward.dev/accesstoken\u0000${ownerUid}\u0000${JSON.stringify(picked)}`)
    .digest("hex")}`;
}

export function controlledBy(secret: Pick<SecretObject, "metadata">, ownerUid: string): boolean {
  return (secret.metadata.ownerReferences ?? []).some((r) => r.uid === ownerUid && r.controller === true);
}

/**
 * A controller reference to an earlier AccessToken of this name in this namespace: the Secret and
 * its AccessToken were restored from a backup (the UID changed), or the AccessToken was deleted
 * and applied again. The Secret is this AccessToken's: it takes it over instead of reporting a
 * conflict (the garbage collector would otherwise delete it for its absent owner).
 */
export function isEarlierCopy(r: OwnerReference, owner: { name: string; uid: string }): boolean {
  return (
    r.controller === true && r.kind === ref.kind && r.apiVersion.startsWith(`${ref.group}/`) && r.name === owner.name && r.uid !== owner.uid
  );
}

/**
 * An AccessToken's Secret (keyward's labels) that no controller owns: restored by Velero, which
 * drops every ownerReference, or left by a deletion with `--cascade=orphan`. The AccessToken
 * naming it in its namespace takes it over, as from an earlier copy of itself; a Secret without
 * keyward's labels is never taken.
 */
export function isOrphanedTokenSecret(secret: Pick<SecretObject, "metadata">, ownerName: string): boolean {
  const labels = secret.metadata.labels ?? {};
  // Written for another AccessToken of the namespace: never this one's (no name: a keyward before the annotation).
  const writtenFor = secret.metadata.annotations?.[ANNOTATION_OWNER_NAME];
  return (
    labels[LABEL_OWNER_KIND] === ref.kind &&
    labels[LABEL_MANAGED_BY] === "keyward" &&
    (writtenFor === undefined || writtenFor === ownerName) &&
    !(secret.metadata.ownerReferences ?? []).some((r) => r.controller === true)
  );
}

/** Controlled by this AccessToken or an earlier copy of it (see isEarlierCopy), or an orphaned token Secret written for it. */
export function ownedBy(secret: Pick<SecretObject, "metadata">, owner: { name: string; uid: string }): boolean {
  return (
    controlledBy(secret, owner.uid) ||
    (secret.metadata.ownerReferences ?? []).some((r) => isEarlierCopy(r, owner)) ||
    isOrphanedTokenSecret(secret, owner.name)
  );
}

export type Assessment =
  | { kind: "missing" }
  | { kind: "conflict" }
  | { kind: "reissue"; reason: Exclude<IssueReason, "Initial" | "SecretMissing">; message: string }
  | { kind: "valid"; plan: RenewalPlan | undefined };

/** What the Secret and the recorded status say must happen. Pure. */
export function assess(input: {
  secret: SecretObject | undefined;
  ownerUid: string;
  /** The AccessToken's name: a Secret an earlier copy of it controlled is its own (see isEarlierCopy). */
  ownerName: string;
  spec: AccessTokenSpec;
  status: Partial<AccessTokenStatus>;
  now: Date;
}): Assessment {
  const { secret, ownerUid, spec, status, now } = input;
  if (!secret) return { kind: "missing" };
  if (!ownedBy(secret, { name: input.ownerName, uid: ownerUid })) return { kind: "conflict" };
  if (!controlledBy(secret, ownerUid)) {
    // Taken over (an earlier copy's, or no owner at all): the write that issues the token also
    // makes this AccessToken its controller, so the garbage collector and the watch find it.
    return {
      kind: "reissue",
      reason: "Unrecorded",
      message: "the Secret is not controlled by this AccessToken yet (restored, or its owner reference removed)",
    };
  }
  if (!status.secretDataHash || !status.tokenId || status.secretName !== spec.secretName) {
    return { kind: "reissue", reason: "Unrecorded", message: "the Secret holds no token this resource recorded" };
  }
  if (status.identityId !== spec.identityId || (status.tokenName ?? "") !== (spec.name ?? "")) {
    return { kind: "reissue", reason: "SpecChanged", message: "spec.identityId or spec.name changed" };
  }
  const keys = secretKeysOf(spec);
  const written = secret.metadata.annotations?.[ANNOTATION_DATA_HASH];
  if (dataHash(ownerUid, secret.data, keys) !== status.secretDataHash || written !== status.secretDataHash) {
    return {
      kind: "reissue",
      reason: "SecretEdited",
      message: "the Secret's data differs from what keyward wrote (edited, or spec.secretKeys changed)",
    };
  }
  const issuedAt = status.lastIssuedAt ? new Date(status.lastIssuedAt) : undefined;
  const expiresAt = status.expiresAt ? new Date(status.expiresAt) : undefined;
  const plan = issuedAt ? renewalPlan(issuedAt, expiresAt, spec.renewBefore) : undefined;
  if (plan && now.getTime() >= plan.renewAt.getTime()) {
    return {
      kind: "reissue",
      reason: "RenewalDue",
      message: `the token expires at ${status.expiresAt ?? "?"}; renewal was due at ${rfc3339(plan.renewAt)}`,
    };
  }
  return { kind: "valid", plan };
}

async function readSecret(kube: Kube, namespace: string, name: string): Promise<SecretObject | undefined> {
  try {
    return await getObject(kube, secretKind, { namespace, name });
  } catch (err) {
    throw secretError("read", namespace, name, err);
  }
}

/**
 * Kubernetes errors name only the status code and the apiserver's Status reason (KubeApiError's
 * `reason`, e.g. Forbidden, Invalid): its message could echo what was sent, and what is sent here
 * holds a token.
 */
function secretError(verb: string, namespace: string, name: string, err: unknown): ReconcileError {
  const code = statusCodeOf(err);
  const reason = statusReason(err);
  const retryable = code === undefined || code >= 500 || code === 409 || code === 429;
  return new ReconcileError(
    verb === "read" ? "SecretReadFailed" : "SecretWriteFailed",
    `could not ${verb} Secret ${keyString({ namespace, name })}: HTTP ${code ?? "error"}${reason ? ` ${reason}` : ""}`,
    { retryable },
  );
}

/** The apiserver's Status reason when it is one word (a reason is CamelCase; anything else is not shown). */
function statusReason(err: unknown): string | undefined {
  const reason = err instanceof KubeApiError ? err.reason : undefined;
  return reason !== undefined && /^[A-Za-z]{1,64}$/.test(reason) ? reason : undefined;
}

const clock = (deps: { now?: () => Date }): Date => deps.now?.() ?? new Date();

function ownerReference(c: Ctx): OwnerReference {
  return {
    apiVersion: API_VERSION,
    kind: ref.kind,
    name: c.key.name,
    uid: c.obj.metadata.uid ?? "",
    controller: true,
    blockOwnerDeletion: true,
  };
}

function ownedMetadata(c: Ctx, existing: SecretObject | undefined, hash: string) {
  const self = { name: c.key.name, uid: c.obj.metadata.uid ?? "" };
  const otherOwners = (existing?.metadata.ownerReferences ?? []).filter((r) => r.uid !== self.uid && !isEarlierCopy(r, self));
  return {
    labels: { [LABEL_MANAGED_BY]: "keyward", [LABEL_OWNER_KIND]: ref.kind },
    annotations: { [ANNOTATION_DATA_HASH]: hash, [ANNOTATION_OWNER_NAME]: c.key.name },
    ownerReferences: [...otherOwners, ownerReference(c)],
  };
}

/** A new Secret: keyward's labels, annotation and ownerReference, and the data. */
function newSecretBody(c: Ctx, data: Record<string, string>, hash: string): SecretObject {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: c.spec.secretName, namespace: c.key.namespace, ...ownedMetadata(c, undefined, hash) },
    type: "Opaque",
    data,
  };
}

/**
 * A merge patch of an existing Secret, on the resourceVersion read: labels and annotations are
 * merged (other controllers' stay), finalizers are not sent (they stay), the ownerReferences are
 * the read ones with ours, and the data is replaced whole — what keyward wrote and nothing else:
 * keys it no longer writes (spec.secretKeys changed, or someone added one) are sent as null.
 */
function secretPatch(c: Ctx, existing: SecretObject, data: Record<string, string>, hash: string): object {
  return {
    metadata: {
      ...(existing.metadata.resourceVersion ? { resourceVersion: existing.metadata.resourceVersion } : {}),
      ...ownedMetadata(c, existing, hash),
    },
    data: replacingPatch(existing.data ?? {}, data),
  };
}

const SECRET_WRITE_ATTEMPTS = 3;

/**
 * Writes the token just minted: a new Secret is created, an existing one patched (see
 * secretPatch; a replace would strip other controllers' finalizers). A conflict (someone labelled
 * the Secret meanwhile, or created it) is retried from a fresh read with the same token.
 */
async function writeSecret(c: Ctx, existing: SecretObject | undefined, data: Record<string, string>, hash: string): Promise<void> {
  const { namespace } = c.key;
  const name = c.spec.secretName;
  let current = existing;
  for (let attempt = 1; ; attempt++) {
    try {
      if (current)
        await kubeJson(c.kube.access, {
          method: "PATCH",
          path: resourcePath(secretKind, namespace, name),
          body: secretPatch(c, current, data, hash),
          contentType: MERGE_PATCH,
        });
      else await kubeJson(c.kube.access, { method: "POST", path: resourcePath(secretKind, namespace), body: newSecretBody(c, data, hash) });
      return;
    } catch (err) {
      const code = statusCodeOf(err);
      const retry = (code === 409 || (code === 404 && current !== undefined)) && attempt < SECRET_WRITE_ATTEMPTS;
      if (!retry) throw secretError(current ? "patch" : "create", namespace, name, err);
    }
    current = await readSecret(c.kube, namespace, name);
    if (current && !ownedBy(current, { name: c.key.name, uid: c.obj.metadata.uid ?? "" })) {
      throw new ReconcileError("SecretConflict", `Secret ${name} was created meanwhile by someone else; it is never overwritten`, {
        retryable: false,
      });
    }
  }
}

/** After spec.secretName changed: the old Secret (still holding a live token) goes, if it is ours. */
async function removeOldSecret(c: Ctx): Promise<void> {
  const old = c.status.secretName;
  if (!old || old === c.spec.secretName) return;
  const secret = await readSecret(c.kube, c.key.namespace, old);
  if (!secret || !controlledBy(secret, c.obj.metadata.uid ?? "")) return;
  try {
    await kubeJson(c.kube.access, { method: "DELETE", path: resourcePath(secretKind, c.key.namespace, old) });
    c.event("Normal", "SecretRemoved", `removed Secret ${old}, replaced by ${c.spec.secretName}`);
  } catch (err) {
    if (!isKubeNotFound(err)) throw secretError("delete", c.key.namespace, old, err);
  }
}

const b64 = (s: string): string => Buffer.from(s, "utf8").toString("base64");

/** A token minted for an object whose Secret write failed: written again by the next pass. */
interface UnwrittenToken {
  uid: string;
  /** The spec fields the token was minted for (identity, name, Secret, keys): another spec mints anew. */
  mintedFor: string;
  accessToken: string;
  tokenType: string;
  tokenId: string;
  issuedAt: Date;
  expiresAt: Date | undefined;
}

/** Unwritten tokens by object key; held only in memory (a restart mints anew). */
export type UnwrittenTokens = Map<string, UnwrittenToken>;

const mintedFor = (spec: AccessTokenSpec): string =>
  JSON.stringify([spec.identityId, spec.name ?? "", spec.secretName, secretKeysOf(spec)]);

/** The token to write: the unwritten one of this object, if it is still for this spec and not due, else a new one. */
async function tokenToWrite(c: Ctx, deps: { now?: () => Date }, unwritten: UnwrittenTokens): Promise<UnwrittenToken> {
  const now = clock(deps);
  const kept = unwritten.get(keyString(c.key));
  if (kept) {
    const plan = renewalPlan(kept.issuedAt, kept.expiresAt, c.spec.renewBefore);
    if (kept.uid === c.obj.metadata.uid && kept.mintedFor === mintedFor(c.spec) && (!plan || now.getTime() < plan.renewAt.getTime())) {
      c.log.info(
        { tokenId: kept.tokenId, secret: c.spec.secretName },
        "writing the token minted earlier, whose Secret write failed, instead of minting another",
      );
      return kept;
    }
    unwritten.delete(keyString(c.key));
  }
  // Taken before the call: the service starts the token's lifetime later, so an expiry
  // counted from here is never later than the real one.
  const issuedAt = new Date(Math.floor(now.getTime() / 1000) * 1000);
  const minted = await c.conn.createIdentityToken(c.spec.identityId, c.spec.name === undefined ? {} : { name: c.spec.name });
  let expiresAt: Date | undefined;
  try {
    // At most ten years; the renewal no sooner than MIN_RENEW_INTERVAL_MS (token-schedule.ts).
    expiresAt = tokenExpiry(issuedAt, minted.expiresIn);
  } catch (err) {
    if (!(err instanceof InvalidTokenLifetimeError)) throw err;
    throw new ReconcileError("InvalidTokenLifetime", `token ${minted.tokenData.id}: ${err.message}; it is not written`, {
      retryable: false,
    });
  }
  const token: UnwrittenToken = {
    uid: c.obj.metadata.uid ?? "",
    mintedFor: mintedFor(c.spec),
    accessToken: minted.accessToken,
    tokenType: minted.tokenType,
    tokenId: minted.tokenData.id,
    issuedAt,
    expiresAt,
  };
  unwritten.set(keyString(c.key), token);
  return token;
}

async function issue(
  c: Ctx,
  deps: { now?: () => Date },
  unwritten: UnwrittenTokens,
  reason: IssueReason,
  existing: SecretObject | undefined,
): Promise<StatusPatch<AccessTokenStatus>> {
  const keys = secretKeysOf(c.spec);
  const minted = await tokenToWrite(c, deps, unwritten);
  const { issuedAt, expiresAt, tokenId } = minted;
  const data: Record<string, string> = { [keys.token]: b64(minted.accessToken), [keys.tokenType]: b64(minted.tokenType) };
  if (expiresAt) data[keys.expiresAt] = b64(rfc3339(expiresAt));
  const hash = dataHash(c.obj.metadata.uid ?? "", data, keys);
  await writeSecret(c, existing, data, hash);
  unwritten.delete(keyString(c.key));
  await removeOldSecret(c);
  c.log.info(
    { tokenId, reason, expiresAt: expiresAt ? rfc3339(expiresAt) : undefined, secret: c.spec.secretName },
    "issued a token into the Secret",
  );
  const plan = renewalPlan(issuedAt, expiresAt, c.spec.renewBefore);
  return {
    tokenId,
    identityId: c.spec.identityId,
    tokenName: c.spec.name ?? "",
    secretName: c.spec.secretName,
    expiresAt: expiresAt ? rfc3339(expiresAt) : null,
    renewAt: plan ? rfc3339(plan.renewAt) : null,
    lastIssuedAt: rfc3339(issuedAt),
    lastIssueReason: reason,
    renewals: c.status.tokenId ? (c.status.renewals ?? 0) + 1 : (c.status.renewals ?? 0),
    secretDataHash: hash,
  };
}

async function observe(c: Ctx, deps: { now?: () => Date }): Promise<Observation<AccessTokenStatus>> {
  const secretName = c.spec.secretName;
  const now = clock(deps);
  const secret = await readSecret(c.kube, c.key.namespace, secretName);
  const verdict = assess({ secret, ownerUid: c.obj.metadata.uid ?? "", ownerName: c.key.name, spec: c.spec, status: c.status, now });
  switch (verdict.kind) {
    case "missing":
      return {
        exists: false,
        upToDate: false,
        status: {},
        absent: { reason: "SecretMissing", message: `Secret ${secretName} does not exist` },
      };
    case "conflict":
      return {
        exists: false,
        upToDate: false,
        status: {},
        canCreate: false,
        absent: {
          reason: "SecretConflict",
          message: `Secret ${secretName} exists and is not owned by this AccessToken; it is never overwritten: delete it or choose another spec.secretName`,
        },
      };
    case "reissue":
      // ObserveOnly issues nothing, so there is nothing to come back for before the resync.
      return {
        exists: true,
        upToDate: false,
        status: {},
        diff: [`token (${verdict.message})`],
        ...(c.observeOnly ? {} : { requeueAfterMs: AFTER_ISSUE_REQUEUE_MS }),
      };
    case "valid": {
      const plan = verdict.plan;
      const when = plan ? `expires at ${c.status.expiresAt ?? "?"}, renewed at ${rfc3339(plan.renewAt)}` : "does not expire";
      const clamped = plan?.clamped ? " (renewBefore cut to half the token's lifetime)" : "";
      return {
        exists: true,
        upToDate: true,
        status: { renewAt: plan ? rfc3339(plan.renewAt) : null },
        readiness: {
          ready: true,
          reason: "Available",
          message: `token ${c.status.tokenId ?? ""} is in Secret ${secretName}; ${when}${clamped}`,
        },
        ...(plan ? { requeueAfterMs: renewWaitMs(plan.renewAt, now.getTime(), MAX_RENEW_WAIT_MS) } : {}),
      };
    }
  }
}

async function create(c: Ctx, deps: { now?: () => Date }, unwritten: UnwrittenTokens): Promise<Observation<AccessTokenStatus>> {
  const status = await issue(c, deps, unwritten, c.status.tokenId ? "SecretMissing" : "Initial", undefined);
  // The next pass reads the Secret back and plans the renewal from it.
  return { exists: true, upToDate: true, status, requeueAfterMs: AFTER_ISSUE_REQUEUE_MS };
}

async function update(c: Ctx, deps: { now?: () => Date }, unwritten: UnwrittenTokens): Promise<StatusPatch<AccessTokenStatus>> {
  // Read again: the replace needs the current resourceVersion, and the reason is recorded.
  const secret = await readSecret(c.kube, c.key.namespace, c.spec.secretName);
  const verdict = assess({
    secret,
    ownerUid: c.obj.metadata.uid ?? "",
    ownerName: c.key.name,
    spec: c.spec,
    status: c.status,
    now: clock(deps),
  });
  if (verdict.kind === "conflict")
    throw new ReconcileError("SecretConflict", `Secret ${c.spec.secretName} is not owned by this AccessToken`, { retryable: true });
  if (verdict.kind === "valid") return {};
  return issue(c, deps, unwritten, verdict.kind === "missing" ? "SecretMissing" : verdict.reason, secret);
}

/** Secondary watch: a change to a Secret an AccessToken controls reconciles that AccessToken. */
export const secretWatch: SecondaryWatch = {
  kind: secretKind,
  labelSelector: SECRET_SELECTOR,
  mapToKeys: (obj: KubeObject): ObjectKey[] =>
    (obj.metadata.ownerReferences ?? [])
      .filter((r) => r.controller === true && r.kind === ref.kind && r.apiVersion === API_VERSION)
      .map((r) => ({ namespace: obj.metadata.namespace, name: r.name })),
};

/**
 * keyward_token_expiry_timestamp_seconds and keyward_token_renewal_due_timestamp_seconds per
 * AccessToken: when the token in its Secret expires and when keyward means to renew it (the
 * alerts compare them with time()).
 */
function tokenGauges(metrics: Metrics | undefined) {
  if (!metrics) return undefined;
  const labelNames = ["kind", "namespace", "name"] as const;
  const expiry = kindGauge(metrics, {
    name: "keyward_token_expiry_timestamp_seconds",
    help: "Unix time the token in use expires, per resource",
    labelNames,
  });
  const renewal = kindGauge(metrics, {
    name: "keyward_token_renewal_due_timestamp_seconds",
    help: "Unix time keyward plans to renew the token in use, per resource",
    labelNames,
  });
  const series = (key: ObjectKey) => ({ kind: ref.kind, namespace: key.namespace, name: key.name });
  const put = (gauge: typeof expiry, key: ObjectKey, at: string | null | undefined): void => {
    const ms = at ? Date.parse(at) : Number.NaN;
    if (Number.isFinite(ms)) gauge.set(series(key), ms / 1000);
    else gauge.remove(series(key));
  };
  return {
    record(key: ObjectKey, status: StatusPatch<AccessTokenStatus>): void {
      put(expiry, key, status.expiresAt);
      put(renewal, key, status.renewAt);
    },
    clear(key: ObjectKey): void {
      expiry.remove(series(key));
      renewal.remove(series(key));
    },
  };
}

/**
 * AccessTokens are served only in `namespaces` (--access-token-namespaces; empty: every watched
 * namespace), checked before anything is read, minted or written. The chart grants Secret
 * writes only there, but `patch` on Secrets stays cluster-wide for the credentials finalizer, so
 * without this a tenant's AccessToken elsewhere would have its token patched into a Secret the
 * tenant made and gave a controller reference to the AccessToken.
 */
export function refuseOutsideNamespaces(namespaces: readonly string[], namespace: string): void {
  if (namespaces.length === 0 || namespaces.includes(namespace)) return;
  throw new ReconcileError(
    "NamespaceNotAllowed",
    `AccessTokens are not served in namespace ${namespace}: keyward writes token Secrets only in ${namespaces.join(", ")} (--access-token-namespaces, chart value accessTokens.namespaces)`,
    { retryable: false },
  );
}

export function accessTokenModule(deps: {
  providers: ProviderResolver;
  now?: () => Date;
  metrics?: Metrics;
  /** --access-token-namespaces; empty or absent: every namespace keyward watches. */
  namespaces?: readonly string[];
}): KindModule<AccessTokenSpec, AccessTokenStatus, ApiClient> {
  const gauges = tokenGauges(deps.metrics);
  const unwritten: UnwrittenTokens = new Map();
  const recorded = <T extends { status?: StatusPatch<AccessTokenStatus> } | StatusPatch<AccessTokenStatus>>(
    c: Ctx,
    result: T,
    status: StatusPatch<AccessTokenStatus>,
  ): T => {
    gauges?.record(c.key, { ...c.status, ...status });
    return result;
  };
  return {
    ref,
    parseSpec: (raw) => {
      const spec = specSchema.parse(raw);
      secretKeysOf(spec);
      return spec;
    },
    // The Secret goes with its owner through the garbage collector; nothing at the service to delete.
    needsFinalizer: () => false,
    connect: async (input) => {
      refuseOutsideNamespaces(deps.namespaces ?? [], input.namespace);
      return connectVia(deps.providers)(input);
    },
    observe: async (c) => {
      const obs = await observe(c, deps);
      return recorded(c, obs, obs.status);
    },
    create: async (c) => {
      const obs = await create(c, deps, unwritten);
      return recorded(c, obs, obs.status);
    },
    update: async (c) => {
      const status = await update(c, deps, unwritten);
      return recorded(c, status, status);
    },
    observeOnly: isObserveOnly,
    forget: (key) => {
      gauges?.clear(key);
      unwritten.delete(keyString(key));
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
    ...initialismEdits("spec.identityId", "status.tokenId", "status.identityId"),
    ...Object.entries(defaultSecretKeys).map(([key, value]): Edit => ({ op: "default", path: `spec.secretKeys.${key}`, value })),
    ...timeEdits("status.expiresAt", "status.renewAt", "status.lastIssuedAt"),
  ],
};

export const kind: Kind = {
  ref,
  crd: crdSource,
  conversion: v1beta1,
  reasons: {
    SecretMissing: {
      means: "failed",
      doc: "The token's Secret does not exist and keyward may not issue one (ObserveOnly); otherwise it issues a token at once.",
    },
    SecretConflict: {
      means: "failed",
      doc: "The Secret named by secretName exists and is not keyward's for this AccessToken; it is never overwritten.",
    },
    SecretRemoved: { means: "done", doc: "keyward removed the Secret of the old secretName after a rename." },
    NamespaceNotAllowed: {
      means: "failed",
      doc: "The AccessToken's namespace is not among --access-token-namespaces (chart value accessTokens.namespaces); nothing is minted or written.",
    },
  },
  refers: { providerConfig: true },
  serviceIdFields: ["tokenId"],
  metadata: [
    pausedKey,
    {
      key: LABEL_OWNER_KIND,
      what: "label",
      on: "the token Secret",
      by: "keyward",
      doc: "AccessToken: keyward watches only the Secrets it writes (with app.kubernetes.io/managed-by: keyward and an owner reference to the AccessToken).",
    },
    {
      key: ANNOTATION_OWNER_NAME,
      what: "annotation",
      on: "the token Secret",
      by: "keyward",
      doc: "The AccessToken the Secret is for: a Secret restored without its owner reference (Velero drops them) is taken back by that AccessToken only.",
    },
    {
      key: ANNOTATION_DATA_HASH,
      what: "annotation",
      on: "the token Secret",
      by: "keyward",
      doc: "A hash of the data keyward wrote, never the token: a Secret whose data no longer matches it was edited, and keyward writes it again.",
    },
  ],
  controller: (d) => ({
    reconcile: d.managed(accessTokenModule({ providers: d.providers, metrics: d.metrics, namespaces: d.accessTokenNamespaces })),
    watches: [secretWatch],
  }),
};
