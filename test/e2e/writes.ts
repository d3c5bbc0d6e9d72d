// Every write to the keyward objects of one namespace, from a given moment: one watch per kind
// (client-node's Watch against the e2e cluster), each event's object kept in order. A write is
// a new resourceVersion of an object; the versions let a test count the writes after any point
// of an object's history and show what each one changed.
import { KubeConfig, Watch } from "@kubernetes/client-node";
import { context, keywardKinds, kubectl, type KubeObject } from "./support.ts";

export type Versioned = KubeObject & { metadata: { resourceVersion: string; generation?: number } };

interface ListWithVersion {
  metadata: { resourceVersion: string };
  items: Versioned[];
}

export interface WriteRecorder {
  /** `Kind/name` → the object as it was when recording began (absent: created since), then every version written since. */
  history(): ReadonlyMap<string, { initial: Versioned | undefined; writes: Versioned[] }>;
  /** Date.now() of the last write to an object `counts` accepts (for waiting until things settle). */
  lastWriteAt(): number;
  /**
   * Watches that ended with 410 Gone (a CRD update renews the storage behind them): the kind was
   * listed again, and an object whose version differed from the last one seen got one write for
   * the gap — a lower bound, said in failure messages.
   */
  gaps(): readonly string[];
  stop(): void;
}

export const objectKey = (o: KubeObject): string => `${o.kind}/${o.metadata.name}`;

/** Starts recording; resolves once every kind's watch runs from the version it listed. */
export async function recordWrites(namespace: string, counts: (key: string) => boolean = () => true): Promise<WriteRecorder> {
  const kc = new KubeConfig();
  kc.loadFromFile(context().kubeconfig);
  const history = new Map<string, { initial: Versioned | undefined; writes: Versioned[] }>();
  const lastSeen = new Map<string, string>();
  const gaps: string[] = [];
  let lastWriteAt = Date.now();
  let stopped = false;
  const aborts = new Set<AbortController>();

  const write = (obj: Versioned): void => {
    const key = objectKey(obj);
    if (lastSeen.get(key) === obj.metadata.resourceVersion) return;
    lastSeen.set(key, obj.metadata.resourceVersion);
    const entry = history.get(key) ?? { initial: undefined, writes: [] };
    entry.writes.push(obj);
    history.set(key, entry);
    if (counts(key)) lastWriteAt = Date.now();
  };

  // The apiserver's own list: its resourceVersion is the point the watch goes on from.
  const list = async (plural: string): Promise<{ rv: string; items: Versioned[] }> => {
    const listed = JSON.parse(
      await kubectl(["get", "--raw", `/apis/keyward.dev/v1alpha1/namespaces/${namespace}/${plural}`]),
    ) as ListWithVersion & { kind: string };
    const kind = listed.kind.replace(/List$/, "");
    return { rv: listed.metadata.resourceVersion, items: listed.items.map((o) => ({ ...o, kind })) };
  };

  const watchKind = async (plural: string): Promise<void> => {
    const first = await list(plural);
    for (const obj of first.items) {
      history.set(objectKey(obj), { initial: obj, writes: [] });
      lastSeen.set(objectKey(obj), obj.metadata.resourceVersion);
    }
    let rv = first.rv;
    const relist = async (reason: string): Promise<void> => {
      const again = await list(plural);
      for (const obj of again.items) {
        if (lastSeen.get(objectKey(obj)) === obj.metadata.resourceVersion) continue;
        gaps.push(`${objectKey(obj)}: ${reason}`);
        write(obj);
      }
      rv = again.rv;
    };
    const start = async (): Promise<void> => {
      let expired = false;
      // A watch ends after 30 s without events (client-node's inactivity timeout) or when the
      // apiserver closes it: it goes on from the last version seen.
      let abort: AbortController | undefined = undefined;
      abort = await new Watch(kc).watch(
        `/apis/keyward.dev/v1alpha1/namespaces/${namespace}/${plural}`,
        { resourceVersion: rv, allowWatchBookmarks: true },
        (phase, obj: Versioned) => {
          if (phase === "ERROR") {
            expired = true;
            return;
          }
          rv = obj.metadata.resourceVersion;
          if (phase === "ADDED" || phase === "MODIFIED" || phase === "DELETED") write(obj);
        },
        () => {
          if (abort !== undefined) aborts.delete(abort);
          if (stopped) return;
          void (async () => {
            if (expired) await relist(`written while the watch of ${plural} was renewed (410 Gone)`);
            else await new Promise((resolve) => setTimeout(resolve, 200)); // no busy loop when the apiserver refuses
            if (!stopped) await start();
          })().catch((error: unknown) => gaps.push(`${plural}: the watch could not be renewed: ${String(error)}`));
        },
      );
      aborts.add(abort);
    };
    await start();
  };

  await Promise.all(keywardKinds.map(watchKind));
  return {
    history: () => history,
    lastWriteAt: () => lastWriteAt,
    gaps: () => gaps,
    stop: () => {
      stopped = true;
      for (const abort of aborts) abort.abort();
    },
  };
}

/** The fields a write changed (dotted paths; resourceVersion and managedFields left out). */
export function changedFields(before: unknown, after: unknown, path = ""): string[] {
  if (path === "metadata.resourceVersion" || path === "metadata.managedFields") return [];
  if (
    typeof before !== "object" ||
    typeof after !== "object" ||
    before === null ||
    after === null ||
    Array.isArray(before) ||
    Array.isArray(after)
  ) {
    return JSON.stringify(before) === JSON.stringify(after) ? [] : [path || "(root)"];
  }
  const a = before as Record<string, unknown>;
  const b = after as Record<string, unknown>;
  return [...new Set([...Object.keys(a), ...Object.keys(b)])].sort().flatMap((k) => changedFields(a[k], b[k], path ? `${path}.${k}` : k));
}
