// In-use tracking of a ProviderConfig: which resources use it, the finalizers that keep it and
// its token Secret while they do, and the InUse wait of its deletion. A ClusterProviderConfig
// needs none of this (deleting a namespace never deletes it).
//
// May import: src/kube, src/engine, src/resources/common.ts and other files of
// src/resources/provider; never a kind's file (the kind passes its ref and its object).
import { keyOf } from "../../kube/keys.ts";
import { resourcePath, secretKind, type KindRef, type Kube } from "../../kube/client.ts";
import type { EventRecorder } from "../../kube/events.ts";
import { getObject, patchMetadata, readCached } from "../../kube/objects.ts";
import { kubeJson } from "../../kube/rest.ts";
import { METADATA_LIST_ACCEPT } from "../../kube/watch.ts";
import { done, requeueAfter, type KubeObject, type Outcome } from "../../engine/types.ts";
import { freshReferrers, providerConfigKind, providerConfigName, someNames } from "../common.ts";
import { writeReady } from "./connection-check.ts";
import { CREDENTIALS_SELECTOR, isMarkedCredentials } from "./credentials.ts";

/**
 * Deleting a namespace deletes a ProviderConfig, its token Secret and the resources that use
 * them all at once; those resources' finalizers then need the ProviderConfig and the token to
 * reach the service. So a ProviderConfig keeps a finalizer, and puts one on its token Secret,
 * while it exists; once it is being deleted, both stay until no keyward resource of its
 * namespace refers to it any more (crossplane's ProviderConfigUsage, in small). A Secret the
 * user deletes while its ProviderConfig stays is let go after DELETED_SECRET_GRACE_MS: that
 * deletion is deliberate.
 */
export const IN_USE_FINALIZER = "keyward.dev/in-use";
/** The label earlier keywards wrote on every token Secret; keyward now only removes it (releaseSecret). */
export const PROVIDER_CONFIG_LABEL = "keyward.dev/provider-config";
const IN_USE_RECHECK_MS = 5_000;

/** A provider config that holds its token Secret: status records which one. */
export type HoldingConfig = KubeObject<unknown, { heldSecret?: string | undefined }>;

export interface InUseDeps {
  kube: Kube;
  events: EventRecorder;
  /** The kinds whose spec.providerConfigRef may name the config. */
  users: readonly KindRef[];
}

/** The resources of the config's namespace whose spec.providerConfigRef names it, as "Kind/name" (a fresh list). */
function usersOf(deps: InUseDeps, ref: KindRef, pc: HoldingConfig): Promise<string[]> {
  const { namespace, name } = pc.metadata;
  return freshReferrers(
    deps.kube,
    deps.users,
    namespace,
    (o) => providerConfigKind(o.spec) === ref.kind && providerConfigName(o.spec) === name,
  );
}

/** The Secret a ProviderConfig spec names: its static token, or its tokenAuth bootstrap token. */
export function tokenSecretName(pcSpec: unknown): string | undefined {
  const spec = pcSpec as { credentialsSecretRef?: { name?: string }; tokenAuth?: { bootstrapSecretRef?: { name?: string } } } | undefined;
  return spec?.credentialsSecretRef?.name ?? spec?.tokenAuth?.bootstrapSecretRef?.name;
}

/**
 * How long a deleted token Secret is still held before keyward takes the deletion as the user's
 * own. Deleting a namespace deletes its Secrets, ProviderConfigs and resources in an order of the
 * namespace controller's choosing, often the Secrets first: within this window the ProviderConfig
 * (or a resource using it) shows its own deletion, and the Secret stays until they are finalized.
 */
export const DELETED_SECRET_GRACE_MS = 15_000;

/**
 * Lets go of a token Secret: keyward's finalizer, and the label an earlier keyward wrote on every
 * token Secret (PROVIDER_CONFIG_LABEL; keyward no longer writes it), come off in one patch.
 */
async function releaseSecret(deps: InUseDeps, namespace: string, name: string): Promise<void> {
  await patchMetadata(
    deps.kube,
    secretKind,
    { namespace, name },
    { finalizers: { remove: IN_USE_FINALIZER }, labels: { [PROVIDER_CONFIG_LABEL]: null } },
  );
}

/**
 * Holds the token Secret while the ProviderConfig uses it, if the Secret is marked as
 * credentials (src/resources/provider/credentials.ts; keyward writes nothing on any other Secret); lets go
 * of a Secret it no longer uses, that is no longer marked, or that the user deletes (after the
 * grace). Returns when to look again, if it must.
 */
async function holdSecret(deps: InUseDeps, ref: KindRef, pc: HoldingConfig, now = Date.now()): Promise<number | undefined> {
  const namespace = pc.metadata.namespace;
  const wanted = tokenSecretName(pc.spec);
  const held = pc.status?.heldSecret;
  if (held && held !== wanted) await releaseSecret(deps, namespace, held);
  if (!wanted) return undefined;
  const secret = await readCached(deps.kube, secretKind, { namespace, name: wanted }, CREDENTIALS_SELECTOR);
  if (!secret) return undefined;
  const holding = (secret.metadata.finalizers ?? []).includes(IN_USE_FINALIZER);
  if (!isMarkedCredentials(secret)) {
    // An earlier keyward held every named Secret; this one only takes its own finalizer back.
    if (holding || secret.metadata.labels?.[PROVIDER_CONFIG_LABEL] !== undefined) await releaseSecret(deps, namespace, wanted);
    return undefined;
  }
  const deletedAt = secret.metadata.deletionTimestamp;
  if (deletedAt) {
    // Let go only of a Secret deleted on its own: ask the apiserver (the cache may lag) whether
    // the ProviderConfig is being deleted too, and give a namespace deletion time to show.
    const fresh = await getObject(deps.kube, ref, { namespace, name: pc.metadata.name });
    if (fresh?.metadata.deletionTimestamp) return undefined;
    const wait = Date.parse(deletedAt) + DELETED_SECRET_GRACE_MS - now;
    if (wait > 0) return wait;
    await releaseSecret(deps, namespace, wanted);
    return undefined;
  }
  if (holding) return undefined;
  await patchMetadata(deps.kube, secretKind, { namespace, name: wanted }, { finalizers: { add: IN_USE_FINALIZER } });
  return undefined;
}

/**
 * A ProviderConfig not being deleted: keeps its own finalizer and holds its token Secret.
 * Returns when to look again at the Secret, if it must.
 */
export async function hold(deps: InUseDeps, ref: KindRef, pc: HoldingConfig): Promise<number | undefined> {
  if (!(pc.metadata.finalizers ?? []).includes(IN_USE_FINALIZER))
    await patchMetadata(deps.kube, ref, keyOf(pc), { finalizers: { add: IN_USE_FINALIZER } });
  return holdSecret(deps, ref, pc);
}

/** A ProviderConfig being deleted: released (with its Secret) once nothing uses it; until then Ready=False InUse. */
export async function release(deps: InUseDeps, ref: KindRef, pc: HoldingConfig): Promise<Outcome> {
  const key = keyOf(pc);
  if (!(pc.metadata.finalizers ?? []).includes(IN_USE_FINALIZER)) return done();
  const users = await usersOf(deps, ref, pc);
  if (users.length > 0) {
    await writeReady(deps, ref, pc, { status: "False", reason: "InUse", message: `kept until no resource uses it: ${someNames(users)}` });
    return requeueAfter(IN_USE_RECHECK_MS);
  }
  const secret = pc.status?.heldSecret ?? tokenSecretName(pc.spec);
  if (secret && !(await secretStillUsed(deps, ref, pc, secret))) await releaseSecret(deps, key.namespace, secret);
  for (const orphan of await orphanedHolds(deps, ref, pc)) if (orphan !== secret) await releaseSecret(deps, key.namespace, orphan);
  await patchMetadata(deps.kube, ref, key, { finalizers: { remove: IN_USE_FINALIZER } });
  return done();
}

/**
 * The Secrets of the namespace keyward holds that no other ProviderConfig still in use names: holds whose record (status.heldSecret) was lost — the ProviderConfig restored
 * from a backup taken after its credentialsSecretRef changed and before keyward let go of the old
 * Secret. Released with the ProviderConfig, so such a Secret never keeps a namespace Terminating.
 * Marked credentials only: keyward holds no other Secret.
 */
async function orphanedHolds(deps: InUseDeps, ref: KindRef, pc: HoldingConfig): Promise<string[]> {
  const namespace = pc.metadata.namespace;
  const held = await kubeJson<{ items?: KubeObject[] }>(deps.kube.access, {
    path: resourcePath(secretKind, namespace),
    query: { labelSelector: CREDENTIALS_SELECTOR },
    accept: METADATA_LIST_ACCEPT,
  });
  const holding = (held.items ?? []).filter((s) => (s.metadata.finalizers ?? []).includes(IN_USE_FINALIZER)).map((s) => s.metadata.name);
  if (holding.length === 0) return [];
  const named = new Set<string>();
  await freshReferrers(deps.kube, [ref], namespace, (other) => {
    const o = other as HoldingConfig;
    // Still using its Secrets: not being deleted (it may not have reached its finalizer yet), or
    // kept for its users. Both the one it records and the one its spec names: between hold() and
    // the status write that records it, the new one holds the finalizer and status the old name.
    const inUse = o.metadata.deletionTimestamp === undefined || (o.metadata.finalizers ?? []).includes(IN_USE_FINALIZER);
    if (o.metadata.name === pc.metadata.name || !inUse) return false;
    for (const name of [o.status?.heldSecret, tokenSecretName(o.spec)]) if (name) named.add(name);
    return false;
  });
  return holding.filter((name) => !named.has(name));
}

/**
 * Another ProviderConfig of the namespace, not being deleted, names the same Secret: it keeps
 * its finalizer, or a namespace deletion in between could take the Secret before that
 * ProviderConfig's users have finished. A fresh list, as for the users.
 */
async function secretStillUsed(deps: InUseDeps, ref: KindRef, pc: HoldingConfig, secret: string): Promise<boolean> {
  const others = await freshReferrers(deps.kube, [ref], pc.metadata.namespace, (other) => {
    const o = other as HoldingConfig;
    return (
      o.metadata.name !== pc.metadata.name &&
      o.metadata.deletionTimestamp === undefined &&
      (o.status?.heldSecret ?? tokenSecretName(o.spec)) === secret
    );
  });
  return others.length > 0;
}
