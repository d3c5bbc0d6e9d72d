import { describe, expect, it } from "vitest";
import { Writable } from "node:stream";
import { RELEASE_RETRY_MAX_MS, releaseSchedule, releaseShare } from "../../../src/shard/reconcile.ts";
import type { KubeObject } from "../../../src/engine/types.ts";
import { createLogger } from "../../../src/log.ts";

const quiet = createLogger({ level: "silent" }, new Writable({ write: (_c, _e, cb) => cb() }));
const draining: KubeObject = {
  apiVersion: "keyward.dev/v1alpha1",
  kind: "Project",
  spec: {},
  metadata: {
    namespace: "team-a",
    name: "p",
    resourceVersion: "7",
    labels: { "shard.keyward.dev/owner": "r1", "shard.keyward.dev/drain": "true" },
  },
};
const conflict = (): Error => Object.assign(new Error("the object has been modified"), { statusCode: 409 });

describe("letting go of a drained object", () => {
  it("tries a release that got a 409 again on its own short schedule, never with the object's backoff", async () => {
    const releases = releaseSchedule();
    let calls = 0;
    const failing = (): Promise<void> => {
      calls++;
      return Promise.reject(conflict());
    };
    const waits: number[] = [];
    for (let i = 0; i < 12; i++) {
      const outcome = await releaseShare(failing, draining, releases, quiet);
      // retryable would put the key on the object's own backoff (up to 5 minutes after failures).
      expect(outcome.type).toBe("requeueAfter");
      if (outcome.type === "requeueAfter") waits.push(outcome.afterMs);
    }
    expect(calls).toBe(12);
    expect(Math.max(...waits)).toBeLessThanOrEqual(RELEASE_RETRY_MAX_MS);
    expect(RELEASE_RETRY_MAX_MS).toBeLessThanOrEqual(5_000);
    expect(waits[0]).toBeLessThan(waits[3] ?? 0);

    // Let go at last: done, and a later drain of the same key starts its schedule afresh.
    expect(await releaseShare(() => Promise.resolve(), draining, releases, quiet)).toEqual({ type: "done" });
    const again = await releaseShare(failing, draining, releases, quiet);
    expect(again).toEqual({ type: "requeueAfter", afterMs: waits[0] });
  });

  it("keeps each key's schedule apart, and forgets a key no longer draining", () => {
    const releases = releaseSchedule();
    const first = releases.next("a");
    releases.next("a");
    releases.next("a");
    expect(releases.next("b")).toBe(first);
    releases.forget("a");
    expect(releases.next("a")).toBe(first);
  });
});
