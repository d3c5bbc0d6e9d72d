// A list+watch cache of one kind (client-go's reflector + store, in small). Per namespace (or
// cluster-wide) it takes the current state, then watches from its resourceVersion, and keeps
// going. The current state comes as the first events of the watch itself (sendInitialEvents, as
// client-go's WatchListClient), so no page of objects is ever held whole; an apiserver that
// refuses that (1.33 or older than 1.32, or the WatchList feature off) gets a paged list instead. Then:
// - the server ending a watch (its timeout) resumes from the last resourceVersion seen;
// - 410 Gone (resourceVersion too old) relists, at once when the watch had delivered events,
//   else after the backoff (a server answering every watch with 410 is no relist storm);
// - a connection lost mid-watch (reset, idle, a deadline) resumes from the last resourceVersion
//   seen, as client-go's reflector does: the watch replays what was missed, and a 410 relists;
// - an answer of the apiserver's own (404 while a CRD is gone, 5xx, 403) relists;
// - either way the restart waits a jittered exponential backoff, whose count starts again after a
//   watch that was healthy (it delivered events or ran a while): a lost connection once a minute
//   must not grow the wait of the next one, or the cache lags the apiserver by the backoff's cap.
// A relist replaces the cache and reports the difference (deletes for objects that vanished
// meanwhile), so the cache stays consistent whatever was missed.
import type { Logger } from "../log.ts";
import type { KubeObject, ObjectKey } from "./types.ts";
import { backoffDelay, interruptibleSleep, type BackoffPolicy } from "../lib/backoff.ts";
import { apiVersionOf, resourcePath, type CacheReader, type KindRef, type Kube } from "./client.ts";
import { endsInitialEvents, isWatchListRefusal, listAll, watchOnce, type WatchEnd, type WatchEventType } from "./watch.ts";
import { keyString } from "./keys.ts";
import { errorSummary, KubeApiError } from "./rest.ts";

export type InformerEventType = "add" | "update" | "delete";

export interface WatchKindOptions {
  /** Namespaces to watch; empty or absent: all namespaces. */
  namespaces?: string[];
  labelSelector?: string;
  /** Cache metadata only (PartialObjectMetadata: no spec, no status), for a watcher of names and labels. */
  metadataOnly?: boolean;
  /**
   * What the cache keeps of each object, after `slim`: applied to every listed page item and watch
   * event before it is stored or handed to `onEvent`, so only what it returns outlives the event.
   */
  transform?: (obj: KubeObject) => KubeObject;
  logger: Logger;
  /** `old` is the cached object an update replaces. */
  onEvent: (type: InformerEventType, obj: KubeObject, old?: KubeObject) => void;
  restartBackoff?: { baseMs: number; maxMs: number };
  /** Called on every restart (for keyward_informer_restarts_total). */
  onRestart?: (reason: string) => void;
  /** Server-side timeout of each watch request, in seconds; default a random 300–599 (as client-go's reflector). */
  watchTimeoutSeconds?: number;
  /**
   * How long a streamed start may go without an event, once the watch is open, before the bookmark
   * that ends its initial events; past it the informer lists instead. Default 30 s.
   */
  initialEventsQuietMs?: number;
}

export interface Informer {
  /** Starts listing and watching; resolves once every namespace has been listed. */
  start(): Promise<void>;
  stop(): void;
  list(): KubeObject[];
  /** How many objects the cache holds. */
  size(): number;
  get(key: ObjectKey): KubeObject | undefined;
  hasSynced(): boolean;
}

const DEFAULT_RESTART_BACKOFF = { baseMs: 500, maxMs: 30_000 };
// client-go's reflector picks a watch timeout in [5, 10) minutes so watchers spread out.
const randomWatchTimeoutSeconds = (): number => 300 + Math.floor(Math.random() * 300);
// A watch that ends this soon having delivered nothing counts as a failure, so a server that
// keeps closing at once is not hammered.
const MIN_HEALTHY_WATCH_MS = 1000;
// A kube-apiserver (1.30+) does all its waiting (its watch cache, at most a few seconds) before it
// sends the headers, and the end bookmark right after the last initial event; a server quiet this
// long after opening the stream, or between objects, is not going to send it.
const INITIAL_EVENTS_QUIET_MS = 30_000;

type Emit = (type: InformerEventType, obj: KubeObject, old?: KubeObject) => void;

const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";

/** Annotations and labels keyward reads or writes carry this in their key (keyward.dev/…, shard.keyward.dev/…). */
const OWN_KEY = "keyward.dev/";
/**
 * The most base64 bytes of a Secret's data the cache keeps per Secret. A token (what keyward
 * reads from a credentials Secret) is far smaller; the keys past it are left out and the Secret
 * is marked (dataOmitted), so a read of one of them goes to the apiserver (readSecretData).
 */
export const CACHED_SECRET_DATA_BYTES = 16 * 1024;
/** Objects per list page of a Secret informer: a Secret may hold 1 MiB, so a page is read at most this many MiB at once. */
export const SECRET_LIST_PAGE = 8;

const OMITTED = Symbol("keyward.omittedData");

/** Whether the cache left out some of this Secret's data (more than CACHED_SECRET_DATA_BYTES). */
export function dataOmitted(obj: KubeObject): boolean {
  return (obj as { [OMITTED]?: boolean })[OMITTED] === true;
}

function ownOnly(record: Record<string, string> | undefined): Record<string, string> | undefined {
  if (!record) return record;
  const kept = Object.entries(record).filter(([k]) => k.includes(OWN_KEY));
  return kept.length === Object.keys(record).length ? record : Object.fromEntries(kept);
}

/**
 * What the cache keeps of an object: all but managedFields and kubectl's last-applied copy of
 * the whole object, which nothing in keyward reads and which together are often larger than
 * the object itself. Beyond that, what a tenant could make large and keyward never reads:
 * - of a Secret (a credentials Secret, or one an AccessToken writes), the labels and
 *   annotations of keyward's own keys only, and its data up to CACHED_SECRET_DATA_BYTES in all
 *   (the rest is read from the apiserver when used; see dataOmitted); no `stringData`;
 * - of keyward's own kinds, the annotations of keyward's own keys only (its action, paused,
 *   create and durable-field annotations; nothing reads another annotation of them, and none of
 *   them is ever written back whole — keyward patches what it changes). Their spec and status stay.
 * Other kinds (Namespaces, Leases) are kept whole: keyward reads their labels.
 */
export function slim(obj: KubeObject, kind?: KindRef): KubeObject {
  const parsed = obj.metadata as KubeObject["metadata"] & { managedFields?: unknown };
  // A copy without managedFields rather than a delete: deleting a property that is not the last
  // one added turns an object into a dictionary (an out-of-line hash table, ~480 bytes here, and
  // slower reads) for as long as it lives in the cache.
  let meta: KubeObject["metadata"] = parsed;
  if (parsed.managedFields !== undefined) {
    const { managedFields: _dropped, ...rest } = parsed;
    meta = obj.metadata = rest;
  }
  if (meta.annotations?.[LAST_APPLIED] !== undefined) {
    const { [LAST_APPLIED]: _dropped, ...rest } = meta.annotations;
    meta.annotations = rest;
  }
  if (kind?.group === "keyward.dev") {
    const annotations = ownOnly(meta.annotations);
    if (annotations) meta.annotations = annotations;
    shareConditionStrings(obj);
  } else if (kind?.group === "" && kind.kind === "Secret") {
    const annotations = ownOnly(meta.annotations);
    if (annotations) meta.annotations = annotations;
    const labels = ownOnly(meta.labels);
    if (labels) meta.labels = labels;
    slimSecretData(obj);
  }
  return obj;
}

/** Condition strings shared at most, and the longest shared: a bound on the table whatever a status holds. */
export const SHARED_CONDITION_STRINGS = 4096;
const SHARED_STRING_LENGTH = 256;
const sharedStrings = new Map<string, string>();

function shared(value: unknown): unknown {
  if (typeof value !== "string") return value;
  const copy = sharedStrings.get(value);
  if (copy !== undefined) return copy;
  if (sharedStrings.size < SHARED_CONDITION_STRINGS && value.length <= SHARED_STRING_LENGTH) sharedStrings.set(value, value);
  return value;
}

/**
 * The strings of a keyward object's conditions are few and the same in every object (types,
 * statuses, reasons, keyward's messages), yet each parsed object holds a copy of its own of every
 * one longer than JSON.parse shares (about 10 characters): one copy of each instead, from a
 * bounded table, and one transition time per object where its conditions changed at once. About
 * 200 bytes less per cached object of keyward's kinds (test/unit/kube/informer-memory.test.ts).
 */
function shareConditionStrings(obj: KubeObject): void {
  const conditions = (obj.status as { conditions?: unknown } | undefined)?.conditions;
  if (!Array.isArray(conditions)) return;
  let time: unknown;
  for (const c of conditions as Record<string, unknown>[]) {
    if (typeof c !== "object" || c === null) continue;
    for (const field of ["type", "status", "reason", "message"] as const) if (field in c) c[field] = shared(c[field]);
    if (c["lastTransitionTime"] === time) c["lastTransitionTime"] = time;
    else time = c["lastTransitionTime"];
  }
}

function slimSecretData(secret: KubeObject & { data?: Record<string, string>; stringData?: unknown }): void {
  if (secret.stringData !== undefined) Reflect.deleteProperty(secret, "stringData");
  if (!secret.data) return;
  let total = 0;
  const kept: Record<string, string> = {};
  let omitted = false;
  for (const [key, value] of Object.entries(secret.data)) {
    total += key.length + value.length;
    if (total > CACHED_SECRET_DATA_BYTES) omitted = true;
    else kept[key] = value;
  }
  if (!omitted) return;
  secret.data = kept;
  Object.defineProperty(secret, OMITTED, { value: true, enumerable: false });
}

/**
 * The objects of one cache by namespace, then name. No key string per object ("namespace/name",
 * a string of its own for each), and one namespace string for all of a namespace's objects where
 * each parsed object carried a copy of its own: some 40–100 bytes less per object in every cache,
 * and the sharder and claim views hold one per object of the whole cluster.
 */
export interface ObjectTable {
  get(namespace: string | undefined, name: string): KubeObject | undefined;
  /** Stores `obj` under its namespace and name (its namespace string replaced by the table's own). */
  set(obj: KubeObject): void;
  delete(namespace: string | undefined, name: string): boolean;
  values(): IterableIterator<KubeObject>;
  /** The objects of one namespace ("" or undefined: the cluster-scoped ones). */
  valuesIn(namespace: string | undefined): IterableIterator<KubeObject>;
  readonly size: number;
}

export function createObjectTable(): ObjectTable {
  const namespaces = new Map<string, { namespace: string | undefined; names: Map<string, KubeObject> }>();
  let size = 0;
  return {
    get: (namespace, name) => namespaces.get(namespace ?? "")?.names.get(name),
    set(obj) {
      const meta = obj.metadata;
      let entry = namespaces.get(meta.namespace ?? "");
      if (!entry) {
        entry = { namespace: meta.namespace, names: new Map() };
        namespaces.set(meta.namespace ?? "", entry);
      } else if (entry.namespace !== undefined) {
        meta.namespace = entry.namespace;
      }
      const before = entry.names.size;
      entry.names.set(meta.name, obj);
      size += entry.names.size - before;
    },
    delete(namespace, name) {
      const entry = namespaces.get(namespace ?? "");
      if (!entry?.names.delete(name)) return false;
      size -= 1;
      if (entry.names.size === 0) namespaces.delete(namespace ?? "");
      return true;
    },
    *values() {
      for (const { names } of namespaces.values()) yield* names.values();
    },
    *valuesIn(namespace) {
      const entry = namespaces.get(namespace ?? "");
      if (entry) yield* entry.names.values();
    },
    get size() {
      return size;
    },
  };
}

/**
 * The informer's cache (exported for tests): applies list results and watch events, keeps what
 * `slim` and `transform` leave of each object, and reports each real change.
 */
export function createStore(kind: KindRef, emit: Emit, transform?: (obj: KubeObject) => KubeObject) {
  const cache = createObjectTable();
  const apiVersion = apiVersionOf(kind);
  const withKind = (obj: KubeObject): KubeObject => {
    // Items of core lists carry no apiVersion/kind; the controller and events need them. Those
    // that do carry the kind's own, each parsed into a string of its own (JSON.parse shares only
    // the shortest): one shared copy instead, ~40 bytes less per cached object in every cache.
    if (!obj.apiVersion || obj.apiVersion === apiVersion) obj.apiVersion = apiVersion;
    if (!obj.kind || obj.kind === kind.kind) obj.kind = kind.kind;
    return obj;
  };
  const upsert = (obj: KubeObject): void => {
    const old = cache.get(obj.metadata.namespace, obj.metadata.name);
    if (old && old.metadata.resourceVersion === obj.metadata.resourceVersion) return;
    const kept = withKind(transform ? transform(slim(obj, kind)) : slim(obj, kind));
    cache.set(kept);
    emit(old ? "update" : "add", kept, old);
  };
  const remove = (obj: KubeObject): void => {
    if (cache.delete(obj.metadata.namespace, obj.metadata.name)) emit("delete", withKind(transform ? transform(slim(obj, kind)) : obj));
  };
  return {
    cache,
    onWatchEvent(type: WatchEventType, obj: KubeObject): void {
      if (type === "ADDED" || type === "MODIFIED") upsert(obj);
      else if (type === "DELETED") remove(obj);
    },
    /** A fresh list of one scope (a namespace, or undefined for all): report what vanished. */
    replaceScope(scope: string | undefined, items: KubeObject[]): void {
      const fresh = new Set(items.map((o) => keyString(o.metadata)));
      // Deleting from a Map while iterating it is safe: the iteration goes on with what is left.
      for (const obj of scope === undefined ? cache.values() : cache.valuesIn(scope)) {
        if (!fresh.has(keyString(obj.metadata))) {
          cache.delete(obj.metadata.namespace, obj.metadata.name);
          emit("delete", obj);
        }
      }
      for (const obj of items) upsert(obj);
    },
  };
}

interface ScopeDeps {
  kube: Kube;
  kind: KindRef;
  path: string;
  opts: WatchKindOptions;
  store: ReturnType<typeof createStore>;
  signal: AbortSignal;
  backoff: BackoffPolicy;
  log: Logger;
  onListed: () => void;
}

/**
 * Apiservers known to refuse a watch's initial events (isWatchListRefusal): their informers list.
 * Per connection settings, so one refusal spares every other informer of the process the request.
 */
const listsOnly = new WeakSet<Kube["access"]>();

/** From now on every informer on this connection lists; said once, at info (it is no failure). */
function listInstead(d: ScopeDeps, reason: string): void {
  if (listsOnly.has(d.kube.access)) return;
  listsOnly.add(d.kube.access);
  d.log.info({ reason }, "the apiserver does not stream a watch's initial state: listing instead");
}

/** A watch that streams the scope's current state: its objects so far, until the end bookmark. */
interface InitialState {
  items: Map<string, KubeObject>;
  done: boolean;
}

/** How a scope is read: its selector, its list page size and what the cache keeps of an object. */
function readingOf(d: ScopeDeps) {
  return {
    selector: {
      ...(d.opts.labelSelector ? { labelSelector: d.opts.labelSelector } : {}),
      ...(d.opts.metadataOnly ? { metadataOnly: true } : {}),
    },
    // A page of big objects is held whole while it is parsed: Secrets come a few at a time.
    pageSize: d.kind.group === "" && d.kind.kind === "Secret" ? { pageSize: SECRET_LIST_PAGE } : {},
    transform: (obj: KubeObject): KubeObject => (d.opts.transform ? d.opts.transform(slim(obj, d.kind)) : slim(obj, d.kind)),
  };
}

/** The scope's state by a paged list; the resourceVersion to watch from. */
async function listScope(d: ScopeDeps, scope: string | undefined, reading: ReturnType<typeof readingOf>): Promise<string> {
  const listed = await listAll(d.kube, d.path, {
    ...reading.selector,
    ...reading.pageSize,
    transform: reading.transform,
    signal: d.signal,
  });
  d.store.replaceScope(scope, listed.items);
  d.onListed();
  return listed.resourceVersion;
}

/**
 * Takes a streaming watch's initial events, object by object, until the end bookmark; then the
 * cache takes the state whole (what vanished while keyward was not watching is reported deleted,
 * as after a list) and `synced` gets the bookmark's resourceVersion. False once the state is in.
 */
function takeInitialEvent(
  d: ScopeDeps,
  scope: string | undefined,
  state: InitialState,
  transform: (obj: KubeObject) => KubeObject,
  synced: (resourceVersion: string | undefined) => void,
): (type: WatchEventType, obj: KubeObject) => boolean {
  return (type, obj) => {
    if (state.done) return false;
    if (endsInitialEvents(type, obj)) {
      state.done = true;
      d.store.replaceScope(scope, [...state.items.values()]);
      state.items.clear();
      d.onListed();
      synced(obj.metadata.resourceVersion);
    } else if (type === "ADDED" || type === "MODIFIED") {
      state.items.set(keyString(obj.metadata), transform(obj));
    } else if (type === "DELETED") {
      state.items.delete(keyString(obj.metadata));
    }
    return true;
  };
}

/**
 * A streaming watch ended before its end bookmark. A 410 to a watch from no resourceVersion, or
 * a server that ended the watch cleanly after objects but without the bookmark (an aggregated
 * API or a proxy that takes sendInitialEvents and does not implement it), cannot stream the
 * state: its informers list from now on. A watch that ended with nothing is a failure (thrown:
 * the informer backs off and streams again); a cut stream rejects before it gets here.
 */
function unstreamed(d: ScopeDeps, ended: WatchEnd): void {
  if (ended.end === "gone" && ended.events === 0) listInstead(d, "410 Gone to a watch of the current state");
  else if (ended.end === "closed" && ended.events > 0) listInstead(d, "the watch ended without the bookmark that ends its initial events");
  else throw new Error("the watch ended before it had streamed the current state");
}

/**
 * A streamed start that goes quiet before its end bookmark: a server (a proxy, an aggregated API)
 * that passed sendInitialEvents on without implementing it, whose watch would otherwise hold the
 * informer's start until its timeout, 5–10 minutes later. Armed when the watch opens, re-armed by
 * every initial event, off once the state is in; `signal` aborts the watch when it runs out.
 */
interface QuietLimit {
  ms: number;
  signal: AbortSignal;
  touch: () => void;
  clear: () => void;
}
function quietLimit(ms: number, state: InitialState): QuietLimit {
  const limit = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const clear = (): void => clearTimeout(timer);
  const touch = (): void => {
    if (state.done) clear();
    else if (timer) timer.refresh();
    else timer = setTimeout(() => limit.abort(), ms);
  };
  return { ms, signal: limit.signal, touch, clear };
}

/** A watch that streams the current state first: what it has taken, and how it is watched. */
interface StreamedStart {
  state: InitialState;
  quiet: QuietLimit;
  /** Takes an initial event (true) until the state is in; false for a change after it. */
  take: (type: WatchEventType, obj: KubeObject) => boolean;
  watch: { sendInitialEvents: true; signal: AbortSignal; onOpen: () => void };
}

function streamedStart(
  d: ScopeDeps,
  scope: string | undefined,
  reading: ReturnType<typeof readingOf>,
  synced: (resourceVersion: string | undefined) => void,
): StreamedStart {
  const state: InitialState = { items: new Map(), done: false };
  const quiet = quietLimit(d.opts.initialEventsQuietMs ?? INITIAL_EVENTS_QUIET_MS, state);
  const takeInitial = takeInitialEvent(d, scope, state, reading.transform, synced);
  const take = (type: WatchEventType, obj: KubeObject): boolean => {
    if (!takeInitial(type, obj)) return false;
    // Only objects count: an apiserver streams nothing but ADDED before the end bookmark, so a
    // server sending changes or plain bookmarks meanwhile is watching from now, never ending.
    if (state.done || type === "ADDED") quiet.touch();
    return true;
  };
  return { state, quiet, take, watch: { sendInitialEvents: true, signal: AbortSignal.any([d.signal, quiet.signal]), onOpen: quiet.touch } };
}

/**
 * A streamed start that failed before the state was in. "lists": the server cannot stream — it
 * refused (1.33 or older than 1.32, or the WatchList feature off) or went quiet before its end
 * bookmark — so, no failure, the informers list from now on. "listOnce": the server answered with
 * an error of its own (a 5xx, an ERROR event), so the next try lists, as client-go's reflector
 * falls back: a stream that may never work must not keep the informer from syncing.
 */
function cannotStream(d: ScopeDeps, err: unknown, start: StreamedStart | undefined): "lists" | "listOnce" | undefined {
  if (!start || start.state.done) return undefined;
  const quiet = start.quiet;
  if (isWatchListRefusal(err)) listInstead(d, errorSummary(err));
  else if (quiet.signal.aborted)
    listInstead(d, `no bookmark ending the watch's initial events within ${quiet.ms / 1000} s of the stream's opening or its last object`);
  else return err instanceof KubeApiError && err.code >= 500 ? "listOnce" : undefined;
  return "lists";
}

// The scope's state, then changes, forever (until the signal aborts): one watch that streams the
// current state first (sendInitialEvents) or, where the apiserver refuses that, a paged list and
// a watch from the list's resourceVersion. Either way a watch the server ends resumes from the
// last resourceVersion seen.
async function runScope(d: ScopeDeps, scope: string | undefined): Promise<void> {
  const reading = readingOf(d);
  const at: ScopePosition = {
    resourceVersion: undefined,
    failures: 0,
    listOnce: false,
    restart: (reason, resumeFrom) => {
      d.log.warn(
        { namespace: scope ?? "*", reason, attempt: at.failures, ...(resumeFrom ? { resumeFrom } : {}) },
        "informer restarting its list/watch",
      );
      d.opts.onRestart?.(reason);
    },
  };
  while (!d.signal.aborted) {
    let start: StreamedStart | undefined;
    let began = Date.now();
    let delivered = 0;
    const healthy = (): boolean => delivered > 0 || Date.now() - began >= MIN_HEALTHY_WATCH_MS;
    try {
      if (at.resourceVersion === undefined && (at.listOnce || listsOnly.has(d.kube.access))) {
        at.resourceVersion = await listScope(d, scope, reading);
        at.listOnce = false;
      } else if (at.resourceVersion === undefined) {
        start = streamedStart(d, scope, reading, (rv) => (at.resourceVersion = rv));
      }
      began = Date.now();
      const ended = await watchOnce(d.kube, d.path, {
        ...reading.selector,
        timeoutSeconds: d.opts.watchTimeoutSeconds ?? randomWatchTimeoutSeconds(),
        ...(start ? start.watch : { resourceVersion: at.resourceVersion, signal: d.signal }),
        onEvent: (type, obj) => {
          delivered += 1;
          if (start?.take(type, obj)) return;
          at.resourceVersion = obj.metadata.resourceVersion ?? at.resourceVersion;
          d.store.onWatchEvent(type, obj);
        },
      });
      if (d.signal.aborted) return;
      if (start && !start.state.done) unstreamed(d, ended);
      else await watchEnded(d, at, ended, healthy());
    } catch (err) {
      if (d.signal.aborted) return;
      await watchFailed(d, at, err, start, healthy());
    } finally {
      start?.quiet.clear();
    }
  }
}

/** Where a scope's list/watch stands between rounds: what to resume from, and its failures in a row. */
interface ScopePosition {
  resourceVersion: string | undefined;
  failures: number;
  listOnce: boolean;
  restart: (reason: string, resumeFrom?: string) => void;
}

/** The server ended a watch of changes: resume from the last resourceVersion, or relist on 410. */
async function watchEnded(d: ScopeDeps, at: ScopePosition, ended: WatchEnd, healthy: boolean): Promise<void> {
  if (ended.end === "gone") {
    at.resourceVersion = undefined;
    at.restart("resourceVersion expired (410 Gone): relisting");
    // A watch that is gone before delivering anything, again and again, would be a relist
    // storm (a whole list per round trip): it backs off like a failure. One that delivered
    // events first relists at once, as client-go's reflector does.
    if (ended.events === 0) {
      await interruptibleSleep(backoffDelay(at.failures, d.backoff), d.signal);
      at.failures += 1;
    }
  } else if (healthy) {
    at.failures = 0;
  } else {
    throw new Error("watch closed at once without delivering anything");
  }
}

/**
 * A list or watch failed. A lost connection resumes from the last resourceVersion (only a state
 * fully in has one); an answer of the apiserver's own may mean the resource itself changed (a CRD
 * deleted), which a relist sees. The backoff's count starts again after a healthy watch.
 */
async function watchFailed(
  d: ScopeDeps,
  at: ScopePosition,
  err: unknown,
  start: StreamedStart | undefined,
  healthy: boolean,
): Promise<void> {
  if (healthy) at.failures = 0;
  if (err instanceof KubeApiError) at.resourceVersion = undefined;
  const fallback = cannotStream(d, err, start);
  if (fallback === "lists") return;
  at.listOnce = fallback === "listOnce";
  at.restart(errorSummary(err), at.resourceVersion);
  await interruptibleSleep(backoffDelay(at.failures, d.backoff), d.signal);
  at.failures += 1;
}

export function watchKind(kube: Kube, kind: KindRef, opts: WatchKindOptions): Informer {
  // A cluster-scoped kind has no namespaces to narrow to: one cluster-wide list+watch.
  const scopes = !kind.clusterScoped && opts.namespaces && opts.namespaces.length > 0 ? [...new Set(opts.namespaces)] : [undefined];
  const log = opts.logger.child({ informer: kind.kind });
  const store = createStore(
    kind,
    (type, obj, old) => {
      try {
        opts.onEvent(type, obj, old);
      } catch (err) {
        log.error({ err: errorSummary(err), event: type, name: obj.metadata.name }, "informer event handler threw");
      }
    },
    opts.transform,
  );
  const stopController = new AbortController();
  const synced = new Set<string | undefined>();
  const backoff: BackoffPolicy = { ...(opts.restartBackoff ?? DEFAULT_RESTART_BACKOFF), jitter: "full" };
  let started: Promise<void> | undefined;
  let abandonSync: ((err: Error) => void) | undefined;

  const start = (): Promise<void> => {
    started ??= new Promise<void>((resolve, reject) => {
      abandonSync = reject;
      for (const scope of scopes) {
        const onListed = (): void => {
          synced.add(scope);
          if (synced.size === scopes.length) resolve();
        };
        const deps = { kube, kind, path: resourcePath(kind, scope), opts, store, signal: stopController.signal, backoff, log, onListed };
        void runScope(deps, scope);
      }
    });
    return started;
  };

  return {
    start,
    stop: () => {
      stopController.abort();
      if (synced.size < scopes.length) abandonSync?.(new Error(`informer for ${kind.kind} stopped before it synced`));
    },
    list: () => [...store.cache.values()],
    size: () => store.cache.size,
    get: (key) => store.cache.get(key.namespace, key.name),
    hasSynced: () => synced.size === scopes.length,
  };
}

export type InformerHandler = (type: InformerEventType, obj: KubeObject, old?: KubeObject) => void;

/** An informer several controllers share: one list+watch and one cache per kind and selector. */
export interface SharedInformer extends Informer {
  /** Made with a label selector (a selection, or this replica's shard): a miss is not proof of absence. */
  partial?: boolean;
  /** Adds a handler of every event from now on; returns its removal. */
  subscribe(handler: InformerHandler): () => void;
}

export interface InformerFactory extends CacheReader {
  /** The one informer of `kind` (and `labelSelector`), made on first use; start() it to sync. */
  get(kind: KindRef, labelSelector?: string): SharedInformer;
  /** The informer of `kind` (and `labelSelector`) if one was made. */
  peek(kind: KindRef, labelSelector?: string): SharedInformer | undefined;
  stop(): void;
}

export interface InformerFactoryOptions {
  namespaces?: string[];
  /**
   * The kinds for which `selector` is added to every informer, so the cache, every lookup and
   * every watch of those kinds see only that selection (sharding: this replica's share).
   */
  selection?: { selector: string; selects: (kind: KindRef) => boolean };
  /** Every informer caches metadata only (PartialObjectMetadata). */
  metadataOnly?: boolean;
  /** What every informer's cache keeps of an object (WatchKindOptions.transform), given its kind. */
  transform?: (obj: KubeObject, kind: KindRef) => KubeObject;
  logger: Logger;
  restartBackoff?: { baseMs: number; maxMs: number };
  onRestart?: (kind: KindRef, reason: string) => void;
}

export function createInformerFactory(kube: Kube, opts: InformerFactoryOptions): InformerFactory {
  const informers = new Map<string, SharedInformer>();
  const transform = opts.transform;
  const selectorOf = (kind: KindRef, labelSelector?: string): string | undefined => {
    const selected = opts.selection?.selects(kind) ? opts.selection.selector : undefined;
    return [selected, labelSelector].filter((s) => s !== undefined && s !== "").join(",") || undefined;
  };
  const idOf = (kind: KindRef, labelSelector?: string): string =>
    `${kind.group}/${kind.version}/${kind.plural}?${selectorOf(kind, labelSelector) ?? ""}`;
  return {
    peek: (kind, labelSelector) => informers.get(idOf(kind, labelSelector)),
    get(kind, requested) {
      const id = idOf(kind, requested);
      const labelSelector = selectorOf(kind, requested);
      let shared = informers.get(id);
      if (!shared) {
        const handlers = new Set<InformerHandler>();
        const informer = watchKind(kube, kind, {
          ...(opts.namespaces && opts.namespaces.length > 0 ? { namespaces: opts.namespaces } : {}),
          ...(labelSelector ? { labelSelector } : {}),
          ...(opts.restartBackoff ? { restartBackoff: opts.restartBackoff } : {}),
          ...(opts.metadataOnly ? { metadataOnly: true } : {}),
          ...(transform ? { transform: (obj: KubeObject) => transform(obj, kind) } : {}),
          logger: opts.logger,
          onEvent: (type, obj, old) => {
            for (const handler of handlers) handler(type, obj, old);
          },
          onRestart: (reason) => opts.onRestart?.(kind, reason),
        });
        shared = {
          ...informer,
          ...(labelSelector === undefined ? {} : { partial: true }),
          subscribe: (handler) => {
            handlers.add(handler);
            return () => handlers.delete(handler);
          },
        };
        informers.set(id, shared);
      }
      return shared;
    },
    stop() {
      for (const informer of informers.values()) informer.stop();
    },
  };
}
