// The claim on an external id across replicas (sharding, docs/sharding.md). A kind whose id the
// service assigns (guardCreate: Project, SecretSync) lets the resource that holds an id keep it
// (externalIdHolder, managed.ts), across namespaces that share a credential. With sharding each
// replica caches only its share, so the rivals on other replicas come from a view of every
// replica's objects of the kind that is cheap enough for every replica to keep: metadata only
// (PartialObjectMetadata, no spec or status), trimmed to what the rule reads (claimMetadata). A
// rival found there is read whole before it counts (claimHolder). And a holder's change on any
// replica wakes the objects it holds back on this one (claimWakeWatch): the next oldest takes the
// id over when the holder goes, not at its resync.
import { apiVersionOf, type KindRef } from "../kube/client.ts";
import type { SharedInformer } from "../kube/informer.ts";
import { keyString } from "../kube/keys.ts";
import type { SecondaryWatch } from "./controller.ts";
import { ANNOTATION_EXTERNAL_ID } from "./holder.ts";
import type { KubeObject, ObjectKey } from "./types.ts";

/**
 * What the claim view keeps of an object: its name, namespace, UID, resourceVersion (the
 * informer's) and its keyward.dev/external-id annotation (the id it names); no other annotation,
 * label, owner reference or managedFields. Not its creation time either: the rule orders rivals
 * on the whole objects it reads (claimHolder), and every replica holds one of these per object of
 * the kind in the cluster, so each field costs that many times over.
 */
export function claimMetadata(obj: KubeObject, kind: KindRef): KubeObject {
  const m = obj.metadata;
  const id = m.annotations?.[ANNOTATION_EXTERNAL_ID];
  const metadata: KubeObject["metadata"] = { name: m.name, namespace: m.namespace };
  if (m.uid !== undefined) metadata.uid = m.uid;
  if (m.resourceVersion !== undefined) metadata.resourceVersion = m.resourceVersion;
  if (id !== undefined) metadata.annotations = { [ANNOTATION_EXTERNAL_ID]: id };
  // No spec: PartialObjectMetadata has none, and nothing reads one from this view.
  return { apiVersion: apiVersionOf(kind), kind: kind.kind, metadata } as KubeObject;
}

/**
 * The view's objects by the id their annotation names, kept from its events, so that a claim check
 * costs O(the objects naming its id), never a scan of every replica's objects.
 */
export interface ClaimIndex {
  naming(id: string): KubeObject[];
}

export function claimIndex(view: SharedInformer): ClaimIndex {
  // One object per id but for copies: the object itself, an array only for several (memory: a
  // Map per id would cost more than the trimmed object).
  const byId = new Map<string, KubeObject | KubeObject[]>();
  const named = (o: KubeObject | undefined): string | undefined => o?.metadata.annotations?.[ANNOTATION_EXTERNAL_ID];
  const same = (a: KubeObject, b: KubeObject): boolean =>
    a.metadata.name === b.metadata.name && a.metadata.namespace === b.metadata.namespace;
  const drop = (id: string | undefined, obj: KubeObject): void => {
    const held = id === undefined ? undefined : byId.get(id);
    if (id === undefined || held === undefined) return;
    const rest = (Array.isArray(held) ? held : [held]).filter((o) => !same(o, obj));
    if (rest.length === 0) byId.delete(id);
    else byId.set(id, rest.length === 1 ? (rest[0] as KubeObject) : rest);
  };
  const add = (id: string, obj: KubeObject): void => {
    const held = byId.get(id);
    const rest = held === undefined ? [] : (Array.isArray(held) ? held : [held]).filter((o) => !same(o, obj));
    byId.set(id, rest.length === 0 ? obj : [...rest, obj]);
  };
  view.subscribe((type, obj, old) => {
    drop(named(old), obj);
    const id = named(obj);
    if (type === "delete") drop(id, obj);
    else if (id !== undefined) add(id, obj);
  });
  return {
    naming: (id) => {
      const held = byId.get(id);
      return held === undefined ? [] : Array.isArray(held) ? [...held] : [held];
    },
  };
}

/** Which objects of this replica another resource holds back (ExternalIdClaimed), by holder. */
export interface ClaimWaits {
  /** `key` is held back by `holder` (from now on, by it only). */
  wait(key: ObjectKey, holder: ObjectKey): void;
  /** `key` is held back by no one. */
  release(key: ObjectKey): void;
  /** The keys `holder` holds back. */
  waiting(holder: ObjectKey): ObjectKey[];
  /** How many keys wait (for tests). */
  size(): number;
}

export function createClaimWaits(): ClaimWaits {
  const holderOf = new Map<string, string>();
  const byHolder = new Map<string, Map<string, ObjectKey>>();
  const release = (key: ObjectKey): void => {
    const k = keyString(key);
    const holder = holderOf.get(k);
    if (holder === undefined) return;
    holderOf.delete(k);
    const keys = byHolder.get(holder);
    keys?.delete(k);
    if (keys?.size === 0) byHolder.delete(holder);
  };
  return {
    wait(key, holder) {
      release(key);
      const k = keyString(key);
      const h = keyString(holder);
      holderOf.set(k, h);
      let keys = byHolder.get(h);
      if (!keys) {
        keys = new Map<string, ObjectKey>();
        byHolder.set(h, keys);
      }
      keys.set(k, { namespace: key.namespace, name: key.name });
    },
    release,
    waiting: (holder) => [...(byHolder.get(keyString(holder))?.values() ?? [])],
    size: () => holderOf.size,
  };
}

/**
 * A holder that goes (deleted) or names another id (its annotation changed or removed), on any
 * replica, wakes the objects of this replica it held back. Events that change nothing the rule
 * reads (status writes, labels) wake nothing.
 */
export function claimWakeWatch(kind: KindRef, view: SharedInformer, waits: ClaimWaits): SecondaryWatch {
  const named = (o: KubeObject | undefined): string | undefined => o?.metadata.annotations?.[ANNOTATION_EXTERNAL_ID];
  return {
    kind,
    informer: view,
    predicate: (type, obj, old) => type === "delete" || (type === "update" && named(obj) !== named(old)),
    mapToKeys: (obj) => (waits.size() === 0 ? [] : waits.waiting({ namespace: obj.metadata.namespace ?? "", name: obj.metadata.name })),
  };
}
