// The claim rule's pure parts (src/engine/holder.ts): the lock's states and what counts as
// announcing an id. The protocol around them is driven by holder-model.test.ts.
import { describe, expect, it } from "vitest";
import {
  ANNOUNCEMENT_MS,
  announces,
  EXTERNAL_ID_LABEL,
  holderIdentity,
  idDigest,
  lockName,
  lockState,
} from "../../../src/engine/holder.ts";
import { createStartedMark } from "../../../src/engine/create-rule.ts";
import type { KubeObject } from "../../../src/engine/types.ts";

const obj = (uid: string, o: { status?: string; announced?: string; markUid?: string; markAt?: number } = {}): KubeObject => ({
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
    labels: o.announced ? { [EXTERNAL_ID_LABEL]: idDigest(o.announced) } : {},
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

describe("announces", () => {
  const now = Date.parse("2026-11-29T00:00:00Z");
  it("counts a status record, and a fresh announcement of a pending create of the object's own", () => {
    expect(announces(obj("u-1", { status: "p-1" }), "projectId", "p-1", now)).toBe(true);
    expect(announces(obj("u-1", { announced: "p-1", markUid: "u-1", markAt: now - 1000 }), "projectId", "p-1", now)).toBe(true);
  });

  it("never an annotation alone, a copy's mark, a stale announcement, or another id", () => {
    expect(announces(obj("u-1", { announced: "p-1" }), "projectId", "p-1", now)).toBe(false);
    expect(announces(obj("u-1", { announced: "p-1", markUid: "u-copy", markAt: now - 1000 }), "projectId", "p-1", now)).toBe(false);
    expect(announces(obj("u-1", { announced: "p-1", markUid: "u-1", markAt: now - ANNOUNCEMENT_MS - 1 }), "projectId", "p-1", now)).toBe(
      false,
    );
    expect(announces(obj("u-1", { status: "p-2", announced: "p-2", markUid: "u-1", markAt: now }), "projectId", "p-1", now)).toBe(false);
  });
});
