// `keyward uninstall`: lets go of every finalizer keyward holds, so that once keyward is gone no
// object (and no namespace being deleted) waits for it. Run it after keyward has stopped: a
// running keyward puts its finalizers back on its next pass.
// - keyward.dev/in-use on ProviderConfigs and on the credentials Secrets they hold;
// - keyward.dev/finalizer on managed resources: their deletion no longer reaches the service,
//   which is what uninstalling the operator means (the objects at the service stay as they are).
// Nothing is deleted, in Kubernetes or at the service. Then, with the release's conversion webhook
// about to go, keyward's CRDs serve their stored version alone (stopConversion).
import type { Logger } from "./log.ts";
import { crdKind, deploymentKind, podKind, resourcePath, secretKind, type KindRef, type Kube } from "./kube/client.ts";
import { getObject, isConflict, isKubeNotFound, patchMetadata } from "./kube/objects.ts";
import { keyOf, keyString, parseKeyString } from "./kube/keys.ts";
import { kubeJson, MERGE_PATCH } from "./kube/rest.ts";
import type { KubeObject } from "./kube/types.ts";
import { FINALIZER } from "./engine/meta.ts";
import { ref as providerConfigRef } from "./resources/providerconfig.ts";
import { IN_USE_FINALIZER } from "./resources/provider/in-use.ts";
import { CREDENTIALS_SELECTOR } from "./resources/provider/credentials.ts";
import { ref as projectRef } from "./resources/project.ts";
import { ref as membershipRef } from "./resources/projectmembership.ts";
import { ref as syncRef } from "./resources/secretsync-schema.ts";
import { ref as tokenRef } from "./resources/accesstoken.ts";
import { ref as profileRef } from "./resources/certificateprofile.ts";
import { ref as clusterProviderConfigRef } from "./resources/clusterproviderconfig.ts";
import type { ClientConfig } from "./webhook/keeper.ts";

export const KEYWARD_FINALIZERS = [IN_USE_FINALIZER, FINALIZER] as const;

/** The namespaced kinds whose objects may hold a keyward finalizer. */
export const namespacedKinds: KindRef[] = [providerConfigRef, projectRef, membershipRef, syncRef, tokenRef, profileRef];

export interface ReleaseOptions {
  kube: Kube;
  /** Where keyward worked; empty: every namespace. */
  namespaces: string[];
  /** Whether ClusterProviderConfigs were served (they hold no finalizer today; listed for safety). */
  clusterProviderConfigs?: boolean;
  log: Logger;
}

async function list(kube: Kube, kind: KindRef, namespace: string | undefined, labelSelector?: string): Promise<KubeObject[]> {
  const answer = await kubeJson<{ items?: KubeObject[] }>(kube.access, {
    path: resourcePath(kind, namespace),
    ...(labelSelector ? { query: { labelSelector } } : {}),
  });
  return answer.items ?? [];
}

/** Releases keyward's finalizers; returns what it released, as "Kind namespace/name". */
export async function releaseFinalizers(opts: ReleaseOptions): Promise<string[]> {
  const { kube, log } = opts;
  const scopes: (string | undefined)[] = opts.namespaces.length > 0 ? opts.namespaces : [undefined];
  const released: string[] = [];
  const release = async (kind: KindRef, obj: KubeObject): Promise<void> => {
    const held = KEYWARD_FINALIZERS.filter((f) => (obj.metadata.finalizers ?? []).includes(f));
    const key = keyOf(obj);
    for (const finalizer of held) await patchMetadata(kube, kind, key, { finalizers: { remove: finalizer } });
    if (held.length > 0) {
      released.push(`${kind.kind} ${key.namespace ? keyString(key) : key.name}`);
      log.info({ kind: kind.kind, namespace: key.namespace, name: key.name, finalizers: held }, "released");
    }
  };
  // Secrets the ProviderConfigs name in status (held) even if their credentials label is gone.
  const heldSecrets = new Set<string>();
  for (const namespace of scopes) {
    for (const kind of namespacedKinds) {
      for (const obj of await list(kube, kind, namespace)) {
        if (kind === providerConfigRef) {
          const held = (obj.status as { heldSecret?: unknown } | undefined)?.heldSecret;
          if (typeof held === "string") heldSecrets.add(keyString({ namespace: obj.metadata.namespace, name: held }));
        }
        await release(kind, obj);
      }
    }
    for (const secret of await list(kube, secretKind, namespace, CREDENTIALS_SELECTOR)) {
      heldSecrets.delete(keyString(secret.metadata));
      await release(secretKind, secret);
    }
  }
  for (const entry of heldSecrets) {
    const secret = await patchMetadata(kube, secretKind, parseKeyString(entry), { finalizers: { remove: IN_USE_FINALIZER } });
    if (secret) released.push(`Secret ${entry}`);
  }
  if (opts.clusterProviderConfigs) {
    for (const obj of await list(kube, clusterProviderConfigRef, undefined)) await release(clusterProviderConfigRef, obj);
  }
  return released;
}

/** Where a running keyward is stopped before its finalizers are released: its Deployment. */
export interface DeploymentRef {
  namespace: string;
  name: string;
}

/**
 * Scales keyward's Deployment to 0 and waits until none of its pods is left (a terminating pod
 * still reconciles until its shutdown ends), so that no keyward puts a finalizer back after the
 * release. A Deployment already gone is fine. Throws when pods remain after `timeoutMs`.
 */
export async function stopDeployment(kube: Kube, ref: DeploymentRef, log: Logger, timeoutMs = 120_000): Promise<void> {
  let selector: string;
  try {
    const deployment = await kubeJson<{ spec?: { selector?: { matchLabels?: Record<string, string> } } }>(kube.access, {
      path: resourcePath(deploymentKind, ref.namespace, ref.name),
    });
    selector = Object.entries(deployment.spec?.selector?.matchLabels ?? {})
      .map(([k, v]) => `${k}=${v}`)
      .join(",");
    await kubeJson(kube.access, {
      method: "PATCH",
      path: resourcePath(deploymentKind, ref.namespace, ref.name, "scale"),
      body: { spec: { replicas: 0 } },
      contentType: MERGE_PATCH,
    });
  } catch (err) {
    if (isKubeNotFound(err)) return;
    throw err;
  }
  if (!selector) throw new Error(`deployment ${keyString(ref)} has no matchLabels selector; not waiting on an unbounded set of pods`);
  log.info({ deployment: keyString(ref) }, "scaled keyward to 0; waiting for its pods to stop");
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pods = await kubeJson<{ items?: unknown[] }>(kube.access, {
      path: resourcePath(podKind, ref.namespace),
      query: { labelSelector: selector },
    });
    if ((pods.items ?? []).length === 0) return;
    if (Date.now() >= deadline)
      throw new Error(`${String(pods.items?.length)} pod(s) of deployment ${keyString(ref)} still running after ${timeoutMs / 1000}s`);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}

interface CrdVersion {
  name: string;
  served: boolean;
  storage: boolean;
}

interface ConvertingCrd {
  metadata: { name: string; resourceVersion?: string };
  spec: { versions: CrdVersion[]; conversion?: { strategy?: string; webhook?: { clientConfig?: ClientConfig } } };
  status?: { storedVersions?: string[] };
}

/** One of our CRDs whose objects may be stored in more than one version. */
export interface MixedStorage {
  crd: string;
  storedVersions: string[];
}

/** The CRD `name` when its conversion is the webhook `ours` recognizes, else undefined. */
async function ourConvertingCrd(kube: Kube, name: string, ours: (config: ClientConfig) => boolean): Promise<ConvertingCrd | undefined> {
  const crd = (await getObject(kube, crdKind, { namespace: "", name })) as ConvertingCrd | undefined;
  const config = crd?.spec.conversion?.webhook?.clientConfig;
  return crd?.spec.conversion?.strategy === "Webhook" && config && ours(config) ? crd : undefined;
}

/**
 * Our converting CRDs that list more than one stored version: after a storage switch whose
 * rewrite has not run, some objects are still in the old version, and with conversion None the
 * apiserver would serve them under the new one's name unconverted (their fields misnamed, and
 * dropped by the schema on the next write). Uninstalling then must wait for the rewrite.
 */
export async function mixedStorage(
  kube: Kube,
  crdNames: readonly string[],
  ours: (config: ClientConfig) => boolean,
): Promise<MixedStorage[]> {
  const mixed: MixedStorage[] = [];
  for (const name of crdNames) {
    const storedVersions = (await ourConvertingCrd(kube, name, ours))?.status?.storedVersions ?? [];
    if (storedVersions.length > 1) mixed.push({ crd: name, storedVersions });
  }
  return mixed;
}

/** Throws a MixedStorageError naming each of our CRDs that lists two stored versions. */
export async function refuseMixedStorage(kube: Kube, crdNames: readonly string[], ours: (config: ClientConfig) => boolean): Promise<void> {
  const mixed = await mixedStorage(kube, crdNames, ours);
  if (mixed.length > 0) throw new MixedStorageError(mixed);
}

export class MixedStorageError extends Error {
  readonly mixed: MixedStorage[];
  constructor(mixed: MixedStorage[]) {
    super(
      `keyward's CRDs may hold objects stored in more than one version (${mixed
        .map((m) => `${m.crd}: ${m.storedVersions.join(", ")}`)
        .join("; ")}): without the conversion webhook they would read unconverted. Rewrite them in the storage version and ` +
        "set status.storedVersions to it, as docs/compatibility.md (Switching the storage version) shows, then uninstall again; nothing was changed",
    );
    this.name = "MixedStorageError";
    this.mixed = mixed;
  }
}

/**
 * keyward's CRDs outlive the release (crds.keep), its conversion webhook does not: once the
 * objects' finalizers are released, each CRD whose webhook is `ours` stops serving every version
 * but the stored one and converts with strategy None, so a leftover object still reads, updates
 * and deletes with no webhook running (through a read naming no version too). Returns the CRDs
 * changed. A CRD not installed, converting through another release's webhook or already without
 * one is left alone; a conflict (someone else's write) is retried on a fresh read. Refused with a
 * MixedStorageError, before any CRD is changed, while one of ours lists two stored versions.
 */
export async function stopConversion(
  kube: Kube,
  crdNames: readonly string[],
  ours: (config: ClientConfig) => boolean,
  log: Logger,
): Promise<string[]> {
  await refuseMixedStorage(kube, crdNames, ours);
  const changed: string[] = [];
  for (const name of crdNames) {
    for (let attempt = 0; ; attempt++) {
      const crd = await ourConvertingCrd(kube, name, ours);
      if (!crd) break;
      const versions = crd.spec.versions.map((v) => (v.storage ? v : { ...v, served: false }));
      try {
        await kubeJson(kube.access, {
          method: "PUT",
          path: resourcePath(crdKind, undefined, name),
          body: { ...crd, spec: { ...crd.spec, versions, conversion: { strategy: "None" } } },
        });
      } catch (err) {
        if (isConflict(err) && attempt < 3) continue;
        throw err;
      }
      changed.push(name);
      log.info({ crd: name, served: versions.filter((v) => v.served).map((v) => v.name) }, "conversion webhook taken out of the CRD");
      break;
    }
  }
  return changed;
}
