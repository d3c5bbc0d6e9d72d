// Watches one namespace's objects of a kind through the apiserver and records, per object,
// when it was created and when it became Ready: only three numbers each, so the watcher adds
// next to nothing to the heap figures. Also counts MODIFIED events, i.e. writes to the objects.
import type { KindRef, Kube } from "../../src/kube/client.ts";
import { resourcePath } from "../../src/kube/client.ts";
import { listAll, watchOnce } from "../../src/kube/watch.ts";
import type { KubeObject } from "../../src/engine/types.ts";

export interface ReadyTimes {
  /** metadata.creationTimestamp (whole seconds: the apiserver truncates it). */
  createdMs: number;
  /** lastTransitionTime of the Ready condition (as keyward wrote it, in milliseconds). */
  readyMs: number;
  /** When this watcher saw the object Ready. */
  seenMs: number;
}

export interface ReadyWatch {
  ready: ReadonlyMap<string, ReadyTimes>;
  /** MODIFIED events seen so far: every write of an object (spec, metadata or status). */
  modifications(): number;
  /** Resolves once `count` objects are Ready; rejects after timeoutMs (a safety net). */
  waitForReady(count: number, timeoutMs: number): Promise<void>;
  stop(): void;
}

function readyTimes(obj: KubeObject, seenMs: number): ReadyTimes | undefined {
  const ready = obj.status?.conditions?.find((c) => c.type === "Ready");
  if (ready?.status !== "True" || ready.observedGeneration !== obj.metadata.generation) return undefined;
  return { createdMs: Date.parse(obj.metadata.creationTimestamp ?? ""), readyMs: Date.parse(ready.lastTransitionTime), seenMs };
}

export async function watchReady(kube: Kube, kind: KindRef, namespace: string): Promise<ReadyWatch> {
  const ready = new Map<string, ReadyTimes>();
  const waiters = new Set<() => void>();
  const stop = new AbortController();
  let modified = 0;

  const see = (obj: KubeObject): void => {
    if (ready.has(obj.metadata.name)) return;
    const times = readyTimes(obj, Date.now());
    if (!times) return;
    ready.set(obj.metadata.name, times);
    for (const check of waiters) check();
  };

  const path = resourcePath(kind, namespace);
  const listed = await listAll(kube, path);
  listed.items.forEach(see);

  const run = async (resourceVersion: string): Promise<void> => {
    let rv = resourceVersion;
    while (!stop.signal.aborted) {
      try {
        const end = await watchOnce(kube, path, {
          resourceVersion: rv,
          timeoutSeconds: 600,
          signal: stop.signal,
          onEvent: (type, obj) => {
            rv = obj.metadata.resourceVersion ?? rv;
            if (type === "MODIFIED") modified += 1;
            if (type === "ADDED" || type === "MODIFIED") see(obj);
          },
        });
        if (end.end === "gone") {
          const relisted = await listAll(kube, path);
          relisted.items.forEach(see);
          rv = relisted.resourceVersion;
        }
      } catch {
        if (stop.signal.aborted) return;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  };
  void run(listed.resourceVersion);

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
      stop.abort();
    },
  };
}
