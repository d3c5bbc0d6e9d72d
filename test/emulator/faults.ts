// Injected faults, restricted to /api requests that match `match`. Counted faults (rateLimit,
// drop) are consumed as matching requests arrive.
import type { Socket } from "node:net";
import type { Faults } from "./types.ts";

export type FaultDecision =
  | { kind: "none" }
  | { kind: "drop"; when: "before-handling" | "after-handling" }
  | { kind: "rateLimit"; retryAfterSeconds: number }
  | { kind: "error"; status: number };

export interface FaultState {
  set(faults: Faults): void;
  get(): Faults;
  /** The delay for a matching request in that phase (latencyWhen; default before-handling). */
  latencyFor(method: string, path: string, phase?: "before-handling" | "after-handling"): number;
  /** Decides (and consumes) the fault for one request. */
  decide(method: string, path: string): FaultDecision;
  /** Holds one request for its latency (or until release()), counted by held() meanwhile. */
  hold(ms: number, client?: Socket): Promise<void>;
  /**
   * Requests being held by a latency fault right now (before or after handling); `clientGone`:
   * only those whose client has closed its connection meanwhile (a timeout, a crash).
   */
  held(filter?: { clientGone?: boolean }): number;
  /**
   * Ends every hold now (or the `count` oldest); returns how many. A test that needs a held
   * request to land after some other event (a retry refused, a deletion's lookup) releases it when
   * it has seen that event, instead of betting on a latency outlasting it on a slow machine.
   */
  release(count?: number): number;
}

export function createFaultState(): FaultState {
  let faults: Faults = {};
  let pattern: RegExp | undefined;
  const holds = new Map<() => void, { clientGone: boolean }>();

  const matches = (method: string, path: string): boolean => {
    const match = faults.match;
    if (match?.method !== undefined && match.method.toUpperCase() !== method) return false;
    return pattern === undefined || pattern.test(path);
  };

  return {
    set(next) {
      faults = structuredClone(next);
      pattern = next.match?.pathPattern === undefined ? undefined : new RegExp(next.match.pathPattern);
    },
    get: () => structuredClone(faults),
    async hold(ms, client) {
      let release = (): void => undefined;
      const ended = new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        timer.unref();
        release = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      const state = { clientGone: client?.destroyed === true };
      const gone = (): void => {
        state.clientGone = true;
      };
      client?.once("close", gone);
      holds.set(release, state);
      try {
        await ended;
      } finally {
        holds.delete(release);
        client?.off("close", gone);
      }
    },
    held: (filter) =>
      filter?.clientGone === undefined ? holds.size : [...holds.values()].filter((h) => h.clientGone === filter.clientGone).length,
    release(count) {
      const now = [...holds.keys()].slice(0, count ?? holds.size);
      for (const release of now) release();
      return now.length;
    },
    latencyFor: (method, path, phase = "before-handling") =>
      matches(method, path) && (faults.latencyWhen ?? "before-handling") === phase ? (faults.latencyMs ?? 0) : 0,
    decide(method, path) {
      if (!matches(method, path)) return { kind: "none" };
      if (faults.drop && faults.drop.count > 0) {
        faults.drop.count -= 1;
        return { kind: "drop", when: faults.drop.when };
      }
      if (faults.rateLimit && faults.rateLimit.count > 0) {
        faults.rateLimit.count -= 1;
        return { kind: "rateLimit", retryAfterSeconds: faults.rateLimit.retryAfterSeconds };
      }
      if (faults.errorRate !== undefined && faults.errorRate > 0 && Math.random() < faults.errorRate) {
        return { kind: "error", status: faults.errorStatus ?? 500 };
      }
      return { kind: "none" };
    },
  };
}
