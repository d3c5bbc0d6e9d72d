// The claim rule's pure parts (src/engine/holder.ts): the lock's states and what counts as
// announcing an id or a natural key, and the sweep's schedule. The protocol around them is driven by
// holder-model.test.ts.
import { describe, expect, it, vi } from "vitest";
import {
  ANNOUNCEMENT_MS,
  EXTERNAL_ID_LABEL,
  claimFieldSelector,
  foundByClaimRead,
  holderIdentity,
  idDigest,
  KEY_CONFIRM_MS,
  keyAnnounced,
  keyConfirms,
  keyDigest,
  lockName,
  lockState,
  NATURAL_KEY_LABEL,
  releaseOnDelete,
  RELEASE_BATCH,
  rivalry,
  sweepLocksEvery,
  type HolderLocks,
} from "../../../src/engine/holder.ts";
import { createStartedMark } from "../../../src/engine/create-rule.ts";
import type { KubeObject } from "../../../src/engine/types.ts";
import type { KindRef } from "../../../src/kube/client.ts";
import { createLogger } from "../../../src/log.ts";
import { Writable } from "node:stream";

const obj = (
  uid: string,
  o: { status?: string; announced?: string; key?: string; markUid?: string; markAt?: number } = {},
): KubeObject => ({
  apiVersion: "keyward.dev/v1alpha1",
  kind: "Project",
  metadata: {
    name: "shop",
    namespace: "a",
    uid,
    annotations: {
      ...(o.announced ? { "keyward.dev/external-id": o.announced } : {}),
      ...(o.markUid ? { "keyward.dev/create-started": createStartedMark(new Date(o.markAt ?? 0), o.markUid) } : {}),
    },
    labels: {
      ...(o.announced ? { [EXTERNAL_ID_LABEL]: idDigest(o.announced) } : {}),
      ...(o.key ? { [NATURAL_KEY_LABEL]: keyDigest(o.key) } : {}),
    },
  },
  spec: {},
  ...(o.status ? { status: { projectId: o.status } } : {}),
});

describe("lockState", () => {
  const self = obj("u-self");
  it("is Free without a holder, Held by self, HeldBy a live other, Stale for one gone", () => {
    expect(lockState(undefined, self, true)).toEqual({ state: "Free" });
    expect(lockState(holderIdentity(self), self, true)).toEqual({ state: "Held" });
    expect(lockState("b/other/u-2", self, true)).toEqual({ state: "HeldBy", holder: { namespace: "b", name: "other" } });
    expect(lockState("b/other/u-2", self, false)).toEqual({ state: "Stale" });
    expect(lockState("garbage", self, true)).toEqual({ state: "Stale" });
  });

  it("names a lock by kind and a digest of the id, within a Lease name's length", () => {
    const name = lockName({ group: "keyward.dev", version: "v1alpha1", plural: "projects", kind: "Project" }, "x".repeat(500));
    expect(name).toMatch(/^keyward-holds-project-[0-9a-f]{32}$/);
  });
});

describe("rivalry", () => {
  const now = Date.parse("2026-11-29T00:00:00Z");
  const claim = { idField: "projectId", id: "p-1", key: "shop" };
  it("a holder: a status record, or a fresh announcement of the id by a pending create of the object's own", () => {
    expect(rivalry(obj("u-1", { status: "p-1" }), claim, now)).toBe("holder");
    expect(rivalry(obj("u-1", { announced: "p-1", markUid: "u-1", markAt: now - 1000 }), claim, now)).toBe("holder");
  });

  it("creating: a fresh announcement of the natural key by a pending create of the object's own", () => {
    expect(rivalry(obj("u-1", { key: "shop", markUid: "u-1", markAt: now - 1000 }), claim, now)).toBe("creating");
    // Recording the id, it holds it; recording another (gone) id, it cannot be creating this one.
    expect(rivalry(obj("u-1", { key: "shop", markUid: "u-1", markAt: now - 1000, status: "p-1" }), claim, now)).toBe("holder");
    expect(rivalry(obj("u-1", { key: "shop", markUid: "u-1", markAt: now - 1000, status: "p-0" }), claim, now)).toBeUndefined();
  });

  it("never an annotation or a label alone, a copy's mark, a stale announcement, another id or key", () => {
    expect(rivalry(obj("u-1", { announced: "p-1" }), claim, now)).toBeUndefined();
    expect(rivalry(obj("u-1", { key: "shop" }), claim, now)).toBeUndefined();
    expect(rivalry(obj("u-1", { announced: "p-1", markUid: "u-copy", markAt: now - 1000 }), claim, now)).toBeUndefined();
    expect(rivalry(obj("u-1", { key: "shop", markUid: "u-copy", markAt: now - 1000 }), claim, now)).toBeUndefined();
    expect(rivalry(obj("u-1", { announced: "p-1", markUid: "u-1", markAt: now - ANNOUNCEMENT_MS - 1 }), claim, now)).toBeUndefined();
    expect(rivalry(obj("u-1", { key: "shop", markUid: "u-1", markAt: now - ANNOUNCEMENT_MS - 1 }), claim, now)).toBeUndefined();
    expect(rivalry(obj("u-1", { status: "p-2", announced: "p-2", markUid: "u-1", markAt: now }), claim, now)).toBeUndefined();
    expect(rivalry(obj("u-1", { key: "other", markUid: "u-1", markAt: now }), claim, now)).toBeUndefined();
    // A kind without a natural key asks of the id alone.
    expect(rivalry(obj("u-1", { key: "shop", markUid: "u-1", markAt: now }), { idField: "projectId", id: "p-1" }, now)).toBeUndefined();
  });
});

describe("a create announced by its natural key", () => {
  const now = Date.parse("2026-11-29T00:00:00Z");
  it("confirms on the announcement alone while the mark is younger than KEY_CONFIRM_MS, with the label of the key", () => {
    expect(keyConfirms(obj("u-1", { key: "shop", markUid: "u-1", markAt: now - 1000 }), "projectId", "shop", now)).toBe(true);
    expect(keyConfirms(obj("u-1", { key: "shop", markUid: "u-1", markAt: now - KEY_CONFIRM_MS }), "projectId", "shop", now)).toBe(false);
    expect(keyConfirms(obj("u-1", { key: "other", markUid: "u-1", markAt: now - 1000 }), "projectId", "shop", now)).toBe(false);
    expect(keyConfirms(obj("u-1", { markUid: "u-1", markAt: now - 1000 }), "projectId", "shop", now)).toBe(false);
    expect(KEY_CONFIRM_MS).toBeLessThan(ANNOUNCEMENT_MS);
  });

  it("names the object alone while the key announced is the one it has and the spec wants; else the id goes into metadata", () => {
    const o = obj("u-1", { key: "shop" });
    expect(keyAnnounced(o, "shop", "shop")).toBe(true);
    expect(keyAnnounced(o, "shop", "shop-2"), "a rename in the spec").toBe(false);
    expect(keyAnnounced(o, "renamed", "shop"), "a rename at the service").toBe(false);
    expect(keyAnnounced(obj("u-1"), "shop", "shop"), "adopted: no key announced").toBe(false);
  });

  it("is found by the fresh read by its status record or either label: the id's, or (a kind with one) the natural key's", () => {
    const found = (o: KubeObject, id: string, key: string | undefined): boolean => foundByClaimRead(o, { idField: "projectId", id, key });
    expect(found(obj("u-1", { announced: "p-1" }), "p-1", undefined)).toBe(true);
    expect(found(obj("u-1", { key: "shop" }), "p-1", "shop")).toBe(true);
    expect(found(obj("u-1", { key: "shop" }), "p-1", undefined), "no key asked of").toBe(false);
    expect(found(obj("u-1", { key: "other", announced: "p-2" }), "p-1", "shop")).toBe(false);
    // A holder created under a key since renamed: its labels name nothing of p-1, its record does.
    expect(found(obj("u-1", { key: "other", status: "p-1" }), "p-1", "shop")).toBe(true);
    expect(found(obj("u-1", { status: "p-2" }), "p-1", "shop")).toBe(false);
  });

  it("selects the status record by a field selector, its value escaped as the apiserver parses it", () => {
    expect(claimFieldSelector("projectId", "p-1")).toBe("status.projectId=p-1");
    expect(claimFieldSelector("syncId", String.raw`a,b=c\d`)).toBe(String.raw`status.syncId=a\,b\=c\\d`);
  });

  it("digests a key apart from an id of the same text", () => {
    expect(keyDigest("shop")).toMatch(/^[0-9a-f]{40}$/);
    expect(keyDigest("shop")).not.toBe(idDigest("shop"));
  });
});

describe("sweepLocksEvery", () => {
  it("stops a sweep under way when it is stopped: its signal aborts, nothing is logged, none follows", async () => {
    const lines: string[] = [];
    const log = createLogger({ level: "info" }, new Writable({ write: (chunk: Buffer, _enc, cb) => (lines.push(chunk.toString()), cb()) }));
    const signals: AbortSignal[] = [];
    let release: (() => void) | undefined;
    const locks = {
      sweep: (_kinds: readonly KindRef[], signal?: AbortSignal) => {
        if (signal) signals.push(signal);
        // A sweep that waits on the apiserver until its signal aborts (as listAll's request does).
        return new Promise<number>((_resolve, reject) => {
          release = () => reject(signal?.reason as Error);
          signal?.addEventListener("abort", () => release?.());
        });
      },
    } as unknown as HolderLocks;
    const sweeps = sweepLocksEvery({ locks, kinds: [], intervalMs: 1, leads: () => true, log });
    await vi.waitFor(() => expect(signals).toHaveLength(1));
    expect(signals[0]?.aborted).toBe(false);
    sweeps.stop();
    expect(signals[0]?.aborted).toBe(true);
    await new Promise((r) => setTimeout(r, 20));
    expect(signals).toHaveLength(1);
    expect(lines.filter((l) => l.includes("could not sweep"))).toEqual([]);
  });
});

describe("releaseOnDelete", () => {
  const gone = (uid: string): KubeObject => obj(uid);
  const stubLocks = (answer: (batch: readonly KubeObject[]) => Promise<number>) => {
    const batches: string[][] = [];
    const locks = {
      releaseGone: (_ref: KindRef, batch: readonly KubeObject[]) => {
        batches.push(batch.map((o) => o.metadata.uid ?? ""));
        return answer(batch);
      },
    } as unknown as HolderLocks;
    return { locks, batches };
  };
  const ref = { group: "keyward.dev", version: "v1alpha1", kind: "Project", plural: "projects" } as KindRef;

  it("lists the locks of the deletions seen while a list is under way in one batch, not one list each", async () => {
    const { locks, batches } = stubLocks((batch) => new Promise((r) => setTimeout(() => r(batch.length), 5)));
    const release = releaseOnDelete(locks, ref, createLogger({ level: "silent" }));
    for (const uid of ["u-1", "u-2", "u-3", "u-4", "u-5"]) release(gone(uid));
    await vi.waitFor(() => expect(batches.flat()).toHaveLength(5));
    expect(batches).toEqual([["u-1"], ["u-2", "u-3", "u-4", "u-5"]]);
    // Drained: the next deletion starts a list of its own.
    await new Promise((r) => setTimeout(r, 10));
    release(gone("u-6"));
    await vi.waitFor(() => expect(batches).toEqual([["u-1"], ["u-2", "u-3", "u-4", "u-5"], ["u-6"]]));
  });

  it("goes on after a failed list (the sweep takes what it left), and caps a batch", async () => {
    let calls = 0;
    const { locks, batches } = stubLocks((batch) => (calls++ === 0 ? Promise.reject(new Error("refused")) : Promise.resolve(batch.length)));
    const release = releaseOnDelete(locks, ref, createLogger({ level: "silent" }));
    for (let i = 0; i < RELEASE_BATCH + 3; i++) release(gone(`u-${String(i)}`));
    await vi.waitFor(() => expect(batches.flat()).toHaveLength(RELEASE_BATCH + 3));
    expect(batches.map((b) => b.length)).toEqual([1, RELEASE_BATCH, 2]);
  });
});
