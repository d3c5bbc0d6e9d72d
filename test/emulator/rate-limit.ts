// Per-token fixed one-minute windows, one counter per class: reads, writes, project creations.
import type { LimitClass } from "./router.ts";
import type { RateLimitOptions } from "./types.ts";

export interface RateLimiter {
  /** Counts the request; returns the seconds to wait when it is over the limit. */
  take(key: string, limitClass: LimitClass, now: number): number | undefined;
  reset(): void;
}

const windowMs = 60_000;

export function createRateLimiter(options: RateLimitOptions | false): RateLimiter {
  const windows = new Map<string, { start: number; count: number }>();
  const limits: Record<LimitClass, number> | undefined = options
    ? { read: options.readsPerMinute, write: options.writesPerMinute, projectCreate: options.projectCreatesPerMinute }
    : undefined;
  return {
    take(key, limitClass, now) {
      if (!limits) return undefined;
      const id = `${limitClass}\u0000${key}`;
      let window = windows.get(id);
      if (!window || now - window.start >= windowMs) {
        window = { start: now, count: 0 };
        windows.set(id, window);
      }
      if (window.count >= limits[limitClass]) return Math.max(1, Math.ceil((window.start + windowMs - now) / 1000));
      window.count += 1;
      return undefined;
    },
    reset: () => windows.clear(),
  };
}
