// One list and one watch request against the apiserver, by path, for any kind. The informer
// (informer.ts) strings them together and restarts them; here is only the protocol.
import type { KubeObject } from "./types.ts";
import type { Kube } from "./client.ts";
import { errorFrom, KubeApiError, kubeJson, kubeRequest, withDeadline, type KubeResponse } from "./rest.ts";

export interface ListResult {
  items: KubeObject[];
  resourceVersion: string;
}

/**
 * Accept headers that ask the apiserver for metadata only (its PartialObjectMetadata form, as
 * client-go's metadata informers do): objects without spec and status, for a watcher that only
 * reads names and labels (the sharder).
 */
export const METADATA_LIST_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
export const METADATA_WATCH_ACCEPT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

interface ListPage {
  metadata?: { resourceVersion?: string; continue?: string };
  items?: KubeObject[];
}

/** Every object under `path`, page by page, and the resourceVersion to watch from. */
export async function listAll(
  kube: Kube,
  path: string,
  opts: {
    labelSelector?: string;
    fieldSelector?: string;
    pageSize?: number;
    signal?: AbortSignal;
    metadataOnly?: boolean;
    /** Applied to each item as its page arrives, so only what it keeps outlives the page. */
    transform?: (obj: KubeObject) => KubeObject;
  } = {},
): Promise<ListResult> {
  const items: KubeObject[] = [];
  let token: string | undefined;
  let resourceVersion = "";
  do {
    const page = await kubeJson<ListPage>(kube.access, {
      path,
      query: { limit: opts.pageSize ?? 500, continue: token, labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector },
      ...(opts.metadataOnly ? { accept: METADATA_LIST_ACCEPT } : {}),
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    for (const item of page.items ?? []) items.push(opts.transform ? opts.transform(item) : item);
    resourceVersion = page.metadata?.resourceVersion ?? resourceVersion;
    token = page.metadata?.continue || undefined;
  } while (token);
  return { items, resourceVersion };
}

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK";

export interface WatchOptions {
  /** Where the watch starts; with sendInitialEvents, absent (the newest state). */
  resourceVersion?: string;
  /**
   * Stream the current state first (KEP-3157 "watch-list", on by default in kube-apiserver 1.32 and 1.34+): an
   * ADDED event per object, then a BOOKMARK annotated `k8s.io/initial-events-end`, then changes,
   * instead of a list whose pages are held whole while parsed. An apiserver without it answers
   * with an error (isWatchListRefusal).
   */
  sendInitialEvents?: boolean;
  labelSelector?: string;
  /** Objects as PartialObjectMetadata (metadata only). */
  metadataOnly?: boolean;
  /** Server-side timeout; the server ends the watch cleanly after it. */
  timeoutSeconds: number;
  signal: AbortSignal;
  /** Called once the server has answered 200 and the stream begins. */
  onOpen?: () => void;
  onEvent: (type: WatchEventType, obj: KubeObject) => void;
}

/**
 * How a watch ended: "closed" when the server ended it (its timeout, or it went away between
 * events), "gone" when the resourceVersion is too old (410 Expired) and the caller must relist.
 * Any other failure rejects.
 */
export type WatchEnd = { end: "closed" | "gone"; events: number };

export async function watchOnce(kube: Kube, path: string, opts: WatchOptions): Promise<WatchEnd> {
  // A half-open connection delivers nothing and never ends; the server should have closed the
  // watch at timeoutSeconds, so silence well past that ends it from this side.
  const idle = new AbortController();
  const idleMs = (opts.timeoutSeconds + 60) * 1000;
  const timer = setTimeout(() => idle.abort(), idleMs);
  // Once per chunk: refresh() re-arms the one timer instead of allocating another.
  const touch = (): void => void timer.refresh();
  try {
    return await streamWatch(kube, path, opts, AbortSignal.any([opts.signal, idle.signal]), touch);
  } catch (err) {
    if (idle.signal.aborted && !opts.signal.aborted) return { end: "closed", events: 0 };
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

async function streamWatch(kube: Kube, path: string, opts: WatchOptions, signal: AbortSignal, touch: () => void): Promise<WatchEnd> {
  // The headers come within the request deadline; the stream then runs for as long as the
  // server keeps it (its timeoutSeconds, and watchOnce's idle limit behind it).
  const request = {
    path,
    query: {
      watch: true,
      resourceVersion: opts.resourceVersion,
      ...(opts.sendInitialEvents ? { sendInitialEvents: true, resourceVersionMatch: "NotOlderThan" } : {}),
      allowWatchBookmarks: true,
      timeoutSeconds: opts.timeoutSeconds,
      labelSelector: opts.labelSelector,
    },
    ...(opts.metadataOnly ? { accept: METADATA_WATCH_ACCEPT } : {}),
    signal,
  };
  // The caller's signal (and watchOnce's idle limit) end the stream at any time; the deadline
  // only until the headers are in.
  const stream = new AbortController();
  const follow = (): void => stream.abort();
  if (signal.aborted) stream.abort();
  signal.addEventListener("abort", follow, { once: true });
  try {
    const response = await withDeadline(kube.access, request, async (headersSignal) => {
      // Only until the headers are in, and taken off then: headersSignal is an AbortSignal.any
      // whose deadline never aborts once its timer is cleared, and Node keeps such a signal with
      // a listener (and all the listener reaches: this request, its stream) for good.
      headersSignal.addEventListener("abort", follow, { once: true });
      try {
        return await kubeRequest(kube.access, { ...request, signal: stream.signal });
      } finally {
        headersSignal.removeEventListener("abort", follow);
      }
    });
    return await readWatch(response, path, opts, touch);
  } finally {
    signal.removeEventListener("abort", follow);
  }
}

async function readWatch(response: KubeResponse, path: string, opts: WatchOptions, touch: () => void): Promise<WatchEnd> {
  if (response.statusCode === 410) {
    await response.body.dump();
    return { end: "gone", events: 0 };
  }
  if (response.statusCode !== 200) {
    const text = await response.body.text();
    throw errorFrom(response.statusCode, text, `watch ${path}: HTTP ${response.statusCode}`);
  }
  opts.onOpen?.();
  return readEvents(response.body, opts.onEvent, touch);
}

/**
 * The stream's events, each line handed on as it arrives. Read with 'data' callbacks rather than
 * for await: the async iterator costs a promise and a microtask round per chunk (3% of keyward's
 * CPU while creating, bench/RESULTS.md). A "gone" event, a handler's throw, an error or a cut
 * stream destroys the body, which closes the connection (or the HTTP/2 stream).
 */
function readEvents(body: KubeResponse["body"], onEvent: WatchOptions["onEvent"], touch: () => void): Promise<WatchEnd> {
  return new Promise<WatchEnd>((resolve, reject) => {
    let events = 0;
    let settled = false;
    const decoder = new TextDecoder();
    let buffered = "";
    const settle = (outcome: () => void): void => {
      if (settled) return;
      settled = true;
      body.off("data", onData);
      outcome();
    };
    const onData = (chunk: Buffer): void => {
      touch();
      buffered += decoder.decode(chunk, { stream: true });
      // Lines are cut by index and the rest kept once per chunk: re-slicing the buffer after every
      // line would copy a large relist burst over and over.
      let start = 0;
      let newline = buffered.indexOf("\n");
      try {
        while (newline >= 0) {
          const line = buffered.slice(start, newline).trim();
          start = newline + 1;
          newline = buffered.indexOf("\n", start);
          if (!line) continue;
          if (handleLine(line, onEvent) === "gone") {
            settle(() => resolve({ end: "gone", events }));
            body.destroy();
            return;
          }
          events += 1;
        }
      } catch (err) {
        settle(() => reject(err instanceof Error ? err : new Error(String(err))));
        body.destroy();
        return;
      }
      buffered = buffered.slice(start);
    };
    body.on("data", onData);
    body.once("end", () => settle(() => resolve({ end: "closed", events })));
    body.once("error", (err) => settle(() => reject(err)));
    body.once("close", () => settle(() => reject(new Error("the watch stream was cut off before its end"))));
  });
}

interface WatchStatus {
  code?: number;
  reason?: string;
  message?: string;
}

function handleLine(line: string, onEvent: WatchOptions["onEvent"]): "event" | "gone" {
  const event = JSON.parse(line) as { type: string; object: unknown };
  if (event.type === "ERROR") {
    const status = event.object as WatchStatus;
    if (status.code === 410) return "gone";
    throw new KubeApiError(status.code ?? 500, `watch error: ${status.reason ?? ""} ${status.message ?? ""}`.trim(), status.reason);
  }
  onEvent(event.type as WatchEventType, event.object as KubeObject);
  return "event";
}

/** The annotation of the BOOKMARK that ends a watch's initial events (sendInitialEvents). */
export const INITIAL_EVENTS_END = "k8s.io/initial-events-end";

/** Whether a watch event is the bookmark after the last initial event. */
export function endsInitialEvents(type: WatchEventType, obj: KubeObject): boolean {
  return type === "BOOKMARK" && obj.metadata.annotations?.[INITIAL_EVENTS_END] === "true";
}

/**
 * Whether an apiserver refused a watch for asking for its initial events: 1.33 and 1.27–1.31 (the WatchList
 * feature off by default) and any with it turned off answer 422 Invalid ("sendInitialEvents is
 * forbidden for watch unless the WatchList feature gate is enabled"), servers before 1.27 refuse
 * resourceVersionMatch on a watch the same way, and an apiserver without a watch cache for the
 * resource, or whose storage cannot report watch progress, cannot serve it either. The caller
 * lists instead.
 */
export function isWatchListRefusal(err: unknown): boolean {
  if (!(err instanceof KubeApiError)) return false;
  if (err.code === 400 || err.code === 422) return true;
  // A storage without watch progress requests answers 200 and then an ERROR event (500) saying a
  // "watch stream was requested" but RequestWatchProgress is disabled (kube-apiserver's cacher).
  return err.code >= 500 && /sendInitialEvents|resourceVersionMatch|initial events|RequestWatchProgress/i.test(err.message);
}
