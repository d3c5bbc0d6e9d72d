// Kubernetes Events for keyward's objects, written as core/v1 Events.
//
// Why core/v1 rather than events.k8s.io/v1: `kubectl describe` lists core/v1 Events for the
// object (both APIs share one storage, but describe reads the core view) and renders
// source.component as "From", firstTimestamp/lastTimestamp as "Age" and count as
// "(xN over T)" on every kubectl version; an events.k8s.io Event leaves those core fields
// empty unless its deprecated* twins are filled too, and older kubectl shows a blank From and
// Age for it. client-go's record.EventRecorder, which controller-runtime's recorder wraps,
// writes core/v1 for the same reason.
//
// Repeats of the same (object uid, type, reason, message) bump count and lastTimestamp on the
// Event already written (client-go's EventCorrelator) instead of creating a new one.
import { hostname } from "node:os";
import type { Logger } from "../log.ts";
import type { ObjectMeta } from "./types.ts";
import { resourcePath, type KindRef, type Kube } from "./client.ts";
import { keyString } from "./keys.ts";
import { isKubeNotFound } from "./objects.ts";
import { errorSummary, kubeJson, MERGE_PATCH } from "./rest.ts";

export const eventKind: KindRef = { group: "", version: "v1", plural: "events", kind: "Event" };

/** The core/v1 Event fields keyward writes. */
interface CoreEvent {
  metadata: { name: string; namespace: string };
  involvedObject: Record<string, string>;
  type: string;
  reason: string;
  message: string;
  source: { component: string };
  reportingComponent: string;
  reportingInstance: string;
  firstTimestamp: string;
  lastTimestamp: string;
  count: number;
}

export type EventType = "Normal" | "Warning";

export interface EventSubject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
}

export interface EventRecorder {
  /** Fire-and-forget; never throws. Failures are logged. */
  record(obj: EventSubject, type: EventType, reason: string, message: string): void;
  /** Resolves when every write started so far has settled (for shutdown and tests). */
  flush(): Promise<void>;
}

export interface EventRecorderOptions {
  component: string;
  logger: Logger;
  /** reportingInstance; default: the host name (the pod name in a cluster). */
  instance?: string;
  /** How many distinct (object, reason, message) series to remember for aggregation. */
  cacheSize?: number;
}

export const MAX_EVENT_MESSAGE = 1024;

interface Series {
  namespace: string;
  name: string | undefined;
  count: number;
  /** Writes for one series run one after another, so a repeat never races its own create. */
  chain: Promise<void>;
}

export function truncateMessage(message: string, max = MAX_EVENT_MESSAGE): string {
  return message.length <= max ? message : `${message.slice(0, max - 1)}…`;
}

export function createEventRecorder(kube: Kube, opts: EventRecorderOptions): EventRecorder {
  const instance = opts.instance ?? hostname();
  const cacheSize = opts.cacheSize ?? 4096;
  const series = new Map<string, Series>();
  const pending = new Set<Promise<void>>();

  const write = async (s: Series, obj: EventSubject, type: EventType, reason: string, message: string): Promise<void> => {
    const now = new Date();
    s.count += 1;
    if (s.name !== undefined) {
      try {
        await kubeJson(kube.access, {
          method: "PATCH",
          path: resourcePath(eventKind, s.namespace, s.name),
          body: { count: s.count, lastTimestamp: now.toISOString() },
          contentType: MERGE_PATCH,
        });
        return;
      } catch (err) {
        // The Event expired (events live an hour by default): start a new series below.
        if (!isKubeNotFound(err)) throw err;
        s.count = 1;
      }
    }
    const body = eventBody(obj, type, reason, message, now, opts.component, instance);
    const created = await kubeJson<CoreEvent>(kube.access, { method: "POST", path: resourcePath(eventKind, s.namespace), body });
    s.name = created.metadata.name;
  };

  const record = (obj: EventSubject, type: EventType, reason: string, message: string): void => {
    try {
      const text = truncateMessage(message);
      const key = `${obj.metadata.uid ?? keyString(obj.metadata)}\u0000${type}\u0000${reason}\u0000${text}`;
      let s = series.get(key);
      if (s) {
        series.delete(key); // re-insert: Map order doubles as least-recently-used order
      } else {
        s = { namespace: eventNamespace(obj.metadata), name: undefined, count: 0, chain: Promise.resolve() };
      }
      series.set(key, s);
      evictOldest(series, cacheSize);
      const current = s;
      const run = current.chain
        .then(() => write(current, obj, type, reason, text))
        .catch((err: unknown) => {
          opts.logger.warn({ err: errorSummary(err), reason, object: keyString(obj.metadata) }, "event not recorded");
        });
      current.chain = run;
      pending.add(run);
      void run.finally(() => pending.delete(run));
    } catch (err) {
      opts.logger.warn({ err: errorSummary(err), reason }, "event not recorded");
    }
  };

  return {
    record,
    flush: async () => {
      while (pending.size > 0) await Promise.allSettled([...pending]);
    },
  };
}

function evictOldest(series: Map<string, Series>, max: number): void {
  while (series.size > max) {
    const oldest = series.keys().next();
    if (oldest.done) return;
    series.delete(oldest.value);
  }
}

function eventBody(
  obj: EventSubject,
  type: EventType,
  reason: string,
  message: string,
  now: Date,
  component: string,
  instance: string,
): CoreEvent {
  const meta = obj.metadata;
  return {
    metadata: { name: eventName(meta.name, now), namespace: eventNamespace(meta) },
    involvedObject: {
      apiVersion: obj.apiVersion,
      kind: obj.kind,
      name: meta.name,
      namespace: meta.namespace,
      ...(meta.uid ? { uid: meta.uid } : {}),
      ...(meta.resourceVersion ? { resourceVersion: meta.resourceVersion } : {}),
    },
    type,
    reason,
    message,
    source: { component },
    reportingComponent: component,
    reportingInstance: instance,
    firstTimestamp: now.toISOString(),
    lastTimestamp: now.toISOString(),
    count: 1,
  };
}

/** A cluster-scoped object's Events go to `default`, as client-go's recorder puts them. */
function eventNamespace(meta: ObjectMeta): string {
  return meta.namespace || "default";
}

// client-go names Events "<object>.<unix nanos in hex>"; the random tail keeps two Events
// recorded in the same millisecond apart. Names are DNS subdomains: at most 253 characters.
function eventName(objectName: string, now: Date): string {
  const nanos = BigInt(now.getTime()) * 1_000_000n + BigInt(Math.floor(Math.random() * 1_000_000));
  const suffix = nanos.toString(16);
  return `${objectName.slice(0, 253 - suffix.length - 1)}.${suffix}`;
}
