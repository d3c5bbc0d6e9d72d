// Injected faults, restricted to /api requests that match `match`. Counted faults (rateLimit,
// drop) are consumed as matching requests arrive.
import { sleep } from "./http.ts";
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
  /** Holds one request for its latency, counted by held() meanwhile. */
  hold(ms: number): Promise<void>;
  /** Requests being held by a latency fault right now (before or after handling). */
  held(): number;
}

export function createFaultState(): FaultState {
  let faults: Faults = {};
  let pattern: RegExp | undefined;
  let holding = 0;

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
    async hold(ms) {
      holding += 1;
      try {
        await sleep(ms);
      } finally {
        holding -= 1;
      }
    },
    held: () => holding,
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
