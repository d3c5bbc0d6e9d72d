// Watches one namespace's Projects through the apiserver and records when the bench saw each
// Ready. It lists and watches across all namespaces (with a field selector on the namespace),
// so its requests carry scope "cluster" in apiserver_request_total and are told apart from
// keyward's, which are all namespaced. Also counts MODIFIED events: writes to the objects.
import { CustomObjectsApi, Watch, type KubeConfig } from "@kubernetes/client-node";

export interface KindRef {
  group: string;
  version: string;
  plural: string;
}

interface Obj {
  metadata: { name: string; namespace?: string; generation?: number; resourceVersion?: string };
  status?: { conditions?: Array<{ type: string; status: string; observedGeneration?: number }> };
}

export interface ReadyWatch {
  /** name → when the bench saw it Ready (Date.now()). */
  ready: ReadonlyMap<string, number>;
  /** MODIFIED events so far: every write of an object (spec, metadata or status). */
  modifications(): number;
  /** Resolves once `count` objects are Ready; rejects after timeoutMs (a safety net). */
  waitForReady(count: number, timeoutMs: number): Promise<void>;
  stop(): void;
}

const isReady = (obj: Obj): boolean => {
  const c = obj.status?.conditions?.find((x) => x.type === "Ready");
  return c?.status === "True" && c.observedGeneration === obj.metadata.generation;
};

export async function watchReady(kc: KubeConfig, kind: KindRef, namespace: string): Promise<ReadyWatch> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const fieldSelector = `metadata.namespace=${namespace}`;
  const ready = new Map<string, number>();
  const waiters = new Set<() => void>();
  let modified = 0;
  let stopped = false;
  let abort: AbortController | undefined;

  const see = (obj: Obj): void => {
    if (ready.has(obj.metadata.name) || !isReady(obj)) return;
    ready.set(obj.metadata.name, Date.now());
    for (const check of waiters) check();
  };
  const list = async (): Promise<string> => {
    const listed = (await custom.listClusterCustomObject({ ...kind, fieldSelector })) as {
      items: Obj[];
      metadata: { resourceVersion: string };
    };
    listed.items.forEach(see);
    return listed.metadata.resourceVersion;
  };
  const path = `/apis/${kind.group}/${kind.version}/${kind.plural}`;
  const watchFrom = async (resourceVersion: string): Promise<void> => {
    let rv = resourceVersion;
    abort = await new Watch(kc).watch(
      path,
      { resourceVersion: rv, fieldSelector, allowWatchBookmarks: true, timeoutSeconds: 3600 },
      (phase, obj: Obj) => {
        rv = obj.metadata.resourceVersion ?? rv;
        if (phase === "MODIFIED") modified += 1;
        if (phase === "ADDED" || phase === "MODIFIED") see(obj);
      },
      (err: unknown) => {
        if (stopped) return;
        // Ended (timeout, error, 410 Gone): relist and watch again after a pause.
        void (async () => {
          await new Promise((resolve) => setTimeout(resolve, err ? 500 : 0));
          if (stopped) return;
          await watchFrom(await list().catch(() => rv));
        })();
      },
    );
  };
  await watchFrom(await list());

  return {
    ready,
    modifications: () => modified,
    waitForReady: (count, timeoutMs) =>
      new Promise<void>((resolve, reject) => {
        const check = (): void => {
          if (ready.size < count) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`${ready.size} of ${count} objects in ${namespace} Ready after ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(check);
        check();
      }),
    stop: () => {
      stopped = true;
      abort?.abort();
    },
  };
}
