// A work queue keyed by "namespace/name", with client-go's workqueue semantics:
// - a key waiting in the queue is there once, however often it is added (adds collapse);
// - a key being processed is never handed to a second worker: adding it while in flight
//   marks it dirty, and done() puts it back so it runs again after;
// - addAfter delays an add; addRateLimited delays it by a per-key exponential backoff that
//   forget() resets, a Retry-After being a floor on it (retryDelay), never a replacement;
// - shutDown stops accepting adds; keys already queued are still handed out (drain), then
//   get() resolves undefined.
// - fair across namespaces: ready keys are handed out one namespace at a time, in turn (round
//   robin over the namespaces that have ready keys; FIFO within one), so a change in namespace B
//   waits for at most one key of each other namespace, never behind A's backlog of thousands.
// - a cap per namespace (maxInFlightPerNamespace, API Priority and Fairness' seats per flow): a
//   namespace with that many keys in flight gets no further worker until one of them is done,
//   however many it has waiting, so keys stuck on a slow service of one namespace leave the other
//   workers to the other namespaces. The cap holds even while no other namespace waits: a
//   worker cannot be taken back from a call that hangs, so the share must be kept free before
//   the other namespace's change arrives, not after.
import { parseKeyString } from "../kube/keys.ts";
import { backoffDelay, retryAfterFloor, timerDelay, type BackoffPolicy } from "../lib/backoff.ts";

export interface QueueObserver {
  depth(n: number): void;
  added(): void;
  retried(): void;
  queueDuration(seconds: number): void;
  workDuration(seconds: number): void;
}

export interface WorkQueueOptions {
  /** Per-key backoff for addRateLimited. Default: 5ms base (client-go), 5 min max, equal jitter. */
  backoff?: BackoffPolicy;
  observer?: QueueObserver;
  now?: () => number;
  random?: () => number;
  /** "fair" (default): namespaces in turn; "fifo": plain arrival order (the benchmark's "before"). */
  order?: "fair" | "fifo";
  /**
   * With "fair": the most keys of one namespace in flight at once; undefined, 0 or Infinity: no
   * cap. A cap at or above the worker count changes nothing.
   */
  maxInFlightPerNamespace?: number;
}

export interface WorkQueue {
  add(key: string): void;
  addAfter(key: string, delayMs: number): void;
  /** Requeues a failed key after retryDelay: its backoff, at least `retryAfterMs` when the service gave one. */
  addRateLimited(key: string, retryAfterMs?: number): void;
  forget(key: string): void;
  /** Drops the key's delayed add, if one waits (a key this replica let go: its requeue timer must not bring it back). */
  cancelDelayed(key: string): void;
  numRequeues(key: string): number;
  /** The next key to work on (marked in flight until done), or undefined once shut down and empty. */
  get(): Promise<string | undefined>;
  done(key: string): void;
  /** Keys waiting to be handed out (not counting delayed or in-flight ones). */
  len(): number;
  inFlight(): number;
  shutDown(): void;
  isShuttingDown(): boolean;
}

/**
 * The default cap of keys one namespace has in flight: half the workers, rounded up, so with the
 * default 4 workers a namespace whose service hangs holds 2 and the other namespaces keep 2. When
 * keyward watches exactly one namespace there is no other to keep workers for: no cap.
 */
export function defaultMaxInFlightPerNamespace(workers: number, watchedNamespaces: readonly string[] = []): number {
  return watchedNamespaces.length === 1 ? Math.max(1, workers) : Math.max(1, Math.ceil(workers / 2));
}

export const DEFAULT_QUEUE_BACKOFF: BackoffPolicy = { baseMs: 5, maxMs: 5 * 60_000, jitter: "equal" };

/**
 * How long a key waits before retry number `attempt` (0-based): the backoff, or the service's
 * Retry-After when that is longer. Never less than the backoff — a Retry-After of 0, a date in the
 * past or garbage would otherwise requeue a failing key at once, again and again — and never more
 * than MAX_RETRY_AFTER_MS for the Retry-After part.
 */
export function retryDelay(attempt: number, policy: BackoffPolicy, retryAfterMs: number | undefined, random?: () => number): number {
  return Math.max(backoffDelay(attempt, policy, random), retryAfterFloor(retryAfterMs));
}

/** A FIFO with O(1) push and shift (Array.prototype.shift is O(n): 10,000 keys would cost 10^8). */
function createFifo<T>() {
  let items: T[] = [];
  let head = 0;
  return {
    push(item: T): void {
      items.push(item);
    },
    shift(): T | undefined {
      if (head >= items.length) return undefined;
      const item = items[head] as T;
      head += 1;
      // Drop the consumed prefix once it is most of the array.
      if (head > 1024 && head * 2 > items.length) {
        items = items.slice(head);
        head = 0;
      }
      return item;
    },
    get length(): number {
      return items.length - head;
    },
  };
}

/** The ready keys, in the order they are handed out. */
interface ReadyKeys {
  push(key: string): void;
  shift(): string | undefined;
  readonly length: number;
  /** A namespace may have its turn again (it fell below its cap). */
  unblock?(namespace: string): void;
}

const namespaceOf = (key: string): string => parseKeyString(key).namespace;

/**
 * One FIFO per namespace and a turn order of the namespaces that have ready keys: each shift
 * takes the head of the namespace whose turn it is, and puts that namespace at the back of the
 * turns if it has more. Empty namespaces are dropped, so nothing stays behind per namespace.
 * A namespace that is `blocked` (at its cap of keys in flight) when its turn comes is parked
 * instead, its keys kept, until unblock() gives it a turn again; at most workers/cap namespaces
 * can be at their cap at once, so the skips cost no scan.
 */
function fairByNamespace(blocked: (namespace: string) => boolean = () => false): ReadyKeys {
  const byNamespace = new Map<string, ReturnType<typeof createFifo<string>>>();
  const turns = createFifo<string>();
  const parked = new Set<string>();
  let length = 0;
  return {
    push(key) {
      const ns = namespaceOf(key);
      let keys = byNamespace.get(ns);
      if (!keys) {
        keys = createFifo<string>();
        byNamespace.set(ns, keys);
        turns.push(ns);
      }
      keys.push(key);
      length += 1;
    },
    shift() {
      for (;;) {
        const ns = turns.shift();
        if (ns === undefined) return undefined;
        if (blocked(ns)) {
          parked.add(ns);
          continue;
        }
        const keys = byNamespace.get(ns) as ReturnType<typeof createFifo<string>>;
        const key = keys.shift() as string;
        length -= 1;
        if (keys.length > 0) turns.push(ns);
        else byNamespace.delete(ns);
        return key;
      }
    },
    unblock(ns) {
      if (parked.delete(ns)) turns.push(ns);
    },
    get length() {
      return length;
    },
  };
}

interface Waiting {
  readyAt: number;
  timer: NodeJS.Timeout;
}

// Keys waiting for their delay to pass (client-go's delaying queue): one timer per key; of two
// pending delays for one key the earlier wins.
function createDelays(add: (key: string) => void, now: () => number) {
  const waiting = new Map<string, Waiting>();
  return {
    schedule(key: string, delay: number): void {
      // A timer longer than MAX_TIMER_MS fires at once: clamp, so a long Retry-After or requeue waits.
      const delayMs = timerDelay(delay);
      const readyAt = now() + delayMs;
      const existing = waiting.get(key);
      if (existing && existing.readyAt <= readyAt) return;
      if (existing) clearTimeout(existing.timer);
      const timer = setTimeout(() => {
        waiting.delete(key);
        add(key);
      }, delayMs);
      timer.unref();
      waiting.set(key, { readyAt, timer });
    },
    cancel(key: string): void {
      const existing = waiting.get(key);
      if (existing) clearTimeout(existing.timer);
      waiting.delete(key);
    },
    clear(): void {
      for (const { timer } of waiting.values()) clearTimeout(timer);
      waiting.clear();
    },
  };
}

// Times each key from add to get and from get to done, for the workqueue_* histograms.
function createTimings(now: () => number, observer: QueueObserver | undefined) {
  const enqueuedAt = new Map<string, number>();
  const startedAt = new Map<string, number>();
  const since = (map: Map<string, number>, key: string): number | undefined => {
    const at = map.get(key);
    map.delete(key);
    return at === undefined ? undefined : (now() - at) / 1000;
  };
  return {
    queued: (key: string) => enqueuedAt.set(key, now()),
    taken(key: string): void {
      const waited = since(enqueuedAt, key);
      if (waited !== undefined) observer?.queueDuration(waited);
      startedAt.set(key, now());
    },
    finished(key: string): void {
      const worked = since(startedAt, key);
      if (worked !== undefined) observer?.workDuration(worked);
    },
  };
}

/** Failures in a row per key, and the delay before the next retry of one (retryDelay). */
function createFailures(options: WorkQueueOptions) {
  const failures = new Map<string, number>();
  return {
    next(key: string, retryAfterMs: number | undefined): number {
      const attempt = failures.get(key) ?? 0;
      failures.set(key, attempt + 1);
      options.observer?.retried();
      return retryDelay(attempt, options.backoff ?? DEFAULT_QUEUE_BACKOFF, retryAfterMs, options.random);
    },
    forget: (key: string): void => void failures.delete(key),
    count: (key: string): number => failures.get(key) ?? 0,
  };
}

/**
 * The keys in flight per namespace under a cap (none when `cap` is undefined, 0 or Infinity): a
 * namespace is full at the cap; free() names the namespace a done key leaves below it.
 */
function namespaceSeats(cap: number | undefined) {
  const limit = cap !== undefined && cap > 0 && Number.isFinite(cap) ? cap : undefined;
  const taken = new Map<string, number>();
  return {
    full: (ns: string): boolean => limit !== undefined && (taken.get(ns) ?? 0) >= limit,
    take(key: string): void {
      if (limit === undefined) return;
      const ns = namespaceOf(key);
      taken.set(ns, (taken.get(ns) ?? 0) + 1);
    },
    free(key: string): string | undefined {
      if (limit === undefined) return undefined;
      const ns = namespaceOf(key);
      const left = (taken.get(ns) ?? 1) - 1;
      if (left > 0) taken.set(ns, left);
      else taken.delete(ns);
      return left < limit ? ns : undefined;
    },
  };
}

export function createWorkQueue(options: WorkQueueOptions = {}): WorkQueue {
  const now = options.now ?? (() => performance.now());
  const observer = options.observer;
  const timings = createTimings(now, observer);

  const seats = namespaceSeats(options.maxInFlightPerNamespace);
  const queue: ReadyKeys = options.order === "fifo" ? createFifo<string>() : fairByNamespace(seats.full);
  const dirty = new Set<string>();
  const processing = new Set<string>();
  const failures = createFailures(options);
  const getters: Array<(key: string | undefined) => void> = [];
  let shuttingDown = false;

  const push = (key: string): void => {
    queue.push(key);
    timings.queued(key);
    observer?.depth(queue.length);
  };

  const take = (key: string): string => {
    observer?.depth(queue.length);
    processing.add(key);
    dirty.delete(key);
    timings.taken(key);
    seats.take(key);
    return key;
  };

  // Hand queued keys to waiting workers; once shut down and empty, release every waiter.
  const dispatch = (): void => {
    while (getters.length > 0 && queue.length > 0) {
      const key = queue.shift();
      // Only keys of namespaces at their cap are left: they wait for a done().
      if (key === undefined) break;
      const resolve = getters.shift() as (key: string | undefined) => void;
      resolve(take(key));
    }
    if (shuttingDown && queue.length === 0) {
      for (const resolve of getters.splice(0)) resolve(undefined);
    }
  };

  const add = (key: string): void => {
    if (shuttingDown || dirty.has(key)) return;
    observer?.added();
    dirty.add(key);
    if (processing.has(key)) return;
    push(key);
    dispatch();
  };

  const delays = createDelays(add, now);
  const addAfter = (key: string, delayMs: number): void => {
    if (shuttingDown) return;
    if (delayMs <= 0) add(key);
    else delays.schedule(key, delayMs);
  };

  const done = (key: string): void => {
    if (!processing.delete(key)) return;
    timings.finished(key);
    const freed = seats.free(key);
    if (freed !== undefined) queue.unblock?.(freed);
    if (dirty.has(key)) push(key);
    dispatch();
  };

  return {
    add,
    addAfter,
    addRateLimited: (key, retryAfterMs) => addAfter(key, failures.next(key, retryAfterMs)),
    forget: failures.forget,
    cancelDelayed: (key) => delays.cancel(key),
    numRequeues: failures.count,
    get: () =>
      new Promise<string | undefined>((resolve) => {
        getters.push(resolve);
        dispatch();
      }),
    done,
    len: () => queue.length,
    inFlight: () => processing.size,
    shutDown: () => {
      shuttingDown = true;
      delays.clear();
      dispatch();
    },
    isShuttingDown: () => shuttingDown,
  };
}
