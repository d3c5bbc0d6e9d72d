// A list+watch cache of one kind (client-go's reflector + store, in small). Per namespace (or
// cluster-wide) it lists, then watches from the list's resourceVersion, and keeps going:
// - the server ending a watch (its timeout) resumes from the last resourceVersion seen;
// - 410 Gone (resourceVersion too old) relists at once;
// - any other failure (network, 404 while a CRD is gone, 5xx) counts a restart, waits a
//   jittered exponential backoff and relists.
// A relist replaces the cache and reports the difference (deletes for objects that vanished
// meanwhile), so the cache stays consistent whatever was missed.
import type { Logger } from "../log.ts";
import type { KubeObject, ObjectKey } from "../engine/types.ts";
import { backoffDelay } from "../engine/backoff.ts";
import { apiVersionOf, resourcePath, type KindRef, type Kube } from "./client.ts";
import { listAll, watchOnce, type WatchEventType } from "./watch.ts";
import { errorSummary } from "./rest.ts";

export type InformerEventType = "add" | "update" | "delete";

export interface WatchKindOptions {
  /** Namespaces to watch; empty or absent: all namespaces. */
  namespaces?: string[];
  labelSelector?: string;
  logger: Logger;
  onEvent: (type: InformerEventType, obj: KubeObject) => void;
  restartBackoff?: { baseMs: number; maxMs: number };
  /** Called on every restart (for keyward_informer_restarts_total). */
  onRestart?: (reason: string) => void;
}

export interface Informer {
  /** Starts listing and watching; resolves once every namespace has been listed. */
  start(): Promise<void>;
  stop(): void;
  list(): KubeObject[];
  get(key: ObjectKey): KubeObject | undefined;
  hasSynced(): boolean;
}

const DEFAULT_RESTART_BACKOFF = { baseMs: 500, maxMs: 30_000 };
// client-go's reflector picks a watch timeout in [5, 10) minutes so watchers spread out.
const randomWatchTimeoutSeconds = (): number => 300 + Math.floor(Math.random() * 300);
// A watch that ends this soon having delivered nothing counts as a failure, so a server that
// keeps closing at once is not hammered.
const MIN_HEALTHY_WATCH_MS = 1000;

const cacheKey = (namespace: string | undefined, name: string): string => `${namespace ?? ""}/${name}`;

export function watchKind(kube: Kube, kind: KindRef, opts: WatchKindOptions): Informer {
  const scopes = opts.namespaces && opts.namespaces.length > 0 ? [...new Set(opts.namespaces)] : [undefined];
  const cache = new Map<string, KubeObject>();
  const synced = new Set<string | undefined>();
  const backoff = { ...(opts.restartBackoff ?? DEFAULT_RESTART_BACKOFF), jitter: "full" as const };
  const log = opts.logger.child({ informer: kind.kind });
  const stopController = new AbortController();
  let started: Promise<void> | undefined;
  let markAllSynced: (() => void) | undefined;
  let abandonSync: ((err: Error) => void) | undefined;

  const emit = (type: InformerEventType, obj: KubeObject): void => {
    try {
      opts.onEvent(type, obj);
    } catch (err) {
      log.error({ err, event: type, name: obj.metadata.name }, "informer event handler threw");
    }
  };

  const withKind = (obj: KubeObject): KubeObject => {
    // Items of core lists carry no apiVersion/kind; the controller and events need them.
    if (!obj.apiVersion) obj.apiVersion = apiVersionOf(kind);
    if (!obj.kind) obj.kind = kind.kind;
    return obj;
  };

  const upsert = (obj: KubeObject): void => {
    const key = cacheKey(obj.metadata.namespace, obj.metadata.name);
    const old = cache.get(key);
    if (old && old.metadata.resourceVersion === obj.metadata.resourceVersion) return;
    cache.set(key, obj);
    emit(old ? "update" : "add", obj);
  };

  const remove = (obj: KubeObject): void => {
    const key = cacheKey(obj.metadata.namespace, obj.metadata.name);
    const last = cache.get(key) ?? obj;
    if (cache.delete(key)) emit("delete", obj.metadata.resourceVersion ? obj : last);
  };

  const replaceScope = (scope: string | undefined, items: KubeObject[]): void => {
    const fresh = new Set(items.map((o) => cacheKey(o.metadata.namespace, o.metadata.name)));
    for (const [key, obj] of cache) {
      if ((scope === undefined || obj.metadata.namespace === scope) && !fresh.has(key)) {
        cache.delete(key);
        emit("delete", obj);
      }
    }
    for (const obj of items) upsert(withKind(obj));
  };

  const onWatchEvent = (type: WatchEventType, obj: KubeObject): void => {
    if (type === "ADDED" || type === "MODIFIED") upsert(withKind(obj));
    else if (type === "DELETED") remove(withKind(obj));
  };

  const relist = async (scope: string | undefined, path: string): Promise<string> => {
    const listed = await listAll(kube, path, {
      ...(opts.labelSelector ? { labelSelector: opts.labelSelector } : {}),
      signal: stopController.signal,
    });
    replaceScope(scope, listed.items);
    if (!synced.has(scope)) {
      synced.add(scope);
      if (synced.size === scopes.length) markAllSynced?.();
    }
    return listed.resourceVersion;
  };

  const restart = (scope: string | undefined, reason: string, attempt: number): void => {
    log.warn({ namespace: scope ?? "*", reason, attempt }, "informer restarting its list/watch");
    opts.onRestart?.(reason);
  };

  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      stopController.signal.addEventListener("abort", () => {
        clearTimeout(timer);
        resolve();
      }, { once: true });
    });

  const runScope = async (scope: string | undefined): Promise<void> => {
    const path = resourcePath(kind, scope);
    let resourceVersion: string | undefined;
    let failures = 0;
    while (!stopController.signal.aborted) {
      try {
        resourceVersion ??= await relist(scope, path);
        const began = Date.now();
        const ended = await watchOnce(kube, path, {
          resourceVersion,
          timeoutSeconds: randomWatchTimeoutSeconds(),
          signal: stopController.signal,
          ...(opts.labelSelector ? { labelSelector: opts.labelSelector } : {}),
          onEvent: (type, obj) => {
            resourceVersion = obj.metadata.resourceVersion ?? resourceVersion;
            onWatchEvent(type, obj);
          },
        });
        if (stopController.signal.aborted) return;
        if (ended.end === "gone") {
          resourceVersion = undefined;
          restart(scope, "resourceVersion expired (410 Gone): relisting", failures);
          continue;
        }
        if (ended.events > 0 || Date.now() - began >= MIN_HEALTHY_WATCH_MS) {
          failures = 0;
          continue;
        }
        throw new Error("watch closed at once without delivering anything");
      } catch (err) {
        if (stopController.signal.aborted) return;
        resourceVersion = undefined;
        restart(scope, errorSummary(err), failures);
        await sleep(backoffDelay(failures, backoff));
        failures += 1;
      }
    }
  };

  const start = (): Promise<void> => {
    started ??= new Promise<void>((resolve, reject) => {
      markAllSynced = resolve;
      abandonSync = reject;
      for (const scope of scopes) void runScope(scope);
    });
    return started;
  };

  return {
    start,
    stop: () => {
      stopController.abort();
      if (synced.size < scopes.length) abandonSync?.(new Error(`informer for ${kind.kind} stopped before it synced`));
    },
    list: () => [...cache.values()],
    get: (key) => cache.get(cacheKey(key.namespace, key.name)),
    hasSynced: () => synced.size === scopes.length,
  };
}
