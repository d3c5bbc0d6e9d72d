// The claim rule's pure parts (src/engine/holder.ts): the lock's states and what counts as
// announcing an id or a natural key. The protocol around them is driven by holder-model.test.ts.
import { describe, expect, it } from "vitest";
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
  rivalry,
} from "../../../src/engine/holder.ts";
import { createStartedMark } from "../../../src/engine/create-rule.ts";
import type { KubeObject } from "../../../src/engine/types.ts";

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
