// A work queue keyed by "namespace/name", with client-go's workqueue semantics:
// - a key waiting in the queue is there once, however often it is added (adds collapse);
// - a key being processed is never handed to a second worker: adding it while in flight
//   marks it dirty, and done() puts it back so it runs again after;
// - addAfter delays an add; addRateLimited delays it by a per-key exponential backoff that
//   forget() resets;
// - shutDown stops accepting adds; keys already queued are still handed out (drain), then
//   get() resolves undefined.
import type { ObjectKey } from "./types.ts";
import { backoffDelay, type BackoffPolicy } from "./backoff.ts";

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
}

export interface WorkQueue {
  add(key: string): void;
  addAfter(key: string, delayMs: number): void;
  addRateLimited(key: string): void;
  forget(key: string): void;
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

export const DEFAULT_QUEUE_BACKOFF: BackoffPolicy = { baseMs: 5, maxMs: 5 * 60_000, jitter: "equal" };

export function formatKey(key: ObjectKey): string {
  return `${key.namespace}/${key.name}`;
}

export function parseKey(key: string): ObjectKey {
  const slash = key.indexOf("/");
  return slash < 0 ? { namespace: "", name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

interface Waiting {
  readyAt: number;
  timer: NodeJS.Timeout;
}

export function createWorkQueue(options: WorkQueueOptions = {}): WorkQueue {
  const now = options.now ?? (() => performance.now());
  const random = options.random ?? Math.random;
  const backoff = options.backoff ?? DEFAULT_QUEUE_BACKOFF;
  const observer = options.observer;

  const queue: string[] = [];
  const dirty = new Set<string>();
  const processing = new Set<string>();
  const waiting = new Map<string, Waiting>();
  const failures = new Map<string, number>();
  const enqueuedAt = new Map<string, number>();
  const startedAt = new Map<string, number>();
  const getters: Array<(key: string | undefined) => void> = [];
  let shuttingDown = false;

  const push = (key: string): void => {
    queue.push(key);
    enqueuedAt.set(key, now());
    observer?.depth(queue.length);
  };

  // Hand queued keys to waiting workers; once shut down and empty, release every waiter.
  const dispatch = (): void => {
    while (getters.length > 0 && queue.length > 0) {
      const key = queue.shift() as string;
      const resolve = getters.shift() as (key: string | undefined) => void;
      resolve(take(key));
    }
    if (shuttingDown && queue.length === 0) {
      for (const resolve of getters.splice(0)) resolve(undefined);
    }
  };

  const take = (key: string): string => {
    observer?.depth(queue.length);
    processing.add(key);
    dirty.delete(key);
    const added = enqueuedAt.get(key);
    enqueuedAt.delete(key);
    if (added !== undefined) observer?.queueDuration((now() - added) / 1000);
    startedAt.set(key, now());
    return key;
  };

  const add = (key: string): void => {
    if (shuttingDown || dirty.has(key)) return;
    observer?.added();
    dirty.add(key);
    if (processing.has(key)) return;
    push(key);
    dispatch();
  };

  const addAfter = (key: string, delayMs: number): void => {
    if (shuttingDown) return;
    if (delayMs <= 0) {
      add(key);
      return;
    }
    const readyAt = now() + delayMs;
    const existing = waiting.get(key);
    // The earlier of two pending delays wins, as in client-go's delaying queue.
    if (existing && existing.readyAt <= readyAt) return;
    if (existing) clearTimeout(existing.timer);
    const timer = setTimeout(() => {
      waiting.delete(key);
      add(key);
    }, delayMs);
    timer.unref();
    waiting.set(key, { readyAt, timer });
  };

  const addRateLimited = (key: string): void => {
    const attempt = failures.get(key) ?? 0;
    failures.set(key, attempt + 1);
    observer?.retried();
    addAfter(key, backoffDelay(attempt, backoff, random));
  };

  const done = (key: string): void => {
    if (!processing.delete(key)) return;
    const started = startedAt.get(key);
    startedAt.delete(key);
    if (started !== undefined) observer?.workDuration((now() - started) / 1000);
    if (dirty.has(key)) {
      push(key);
    }
    dispatch();
  };

  const shutDown = (): void => {
    shuttingDown = true;
    for (const { timer } of waiting.values()) clearTimeout(timer);
    waiting.clear();
    dispatch();
  };

  return {
    add,
    addAfter,
    addRateLimited,
    forget: (key) => void failures.delete(key),
    numRequeues: (key) => failures.get(key) ?? 0,
    get: () =>
      new Promise<string | undefined>((resolve) => {
        getters.push(resolve);
        dispatch();
      }),
    done,
    len: () => queue.length,
    inFlight: () => processing.size,
    shutDown,
    isShuttingDown: () => shuttingDown,
  };
}
