import { describe, expect, it } from "vitest";
import { onlyOwnChanges } from "../../../src/engine/controller.ts";
import type { KubeObject } from "../../../src/engine/types.ts";

const own = ["keyward.dev/create-started", "keyward.dev/external-id"];
const obj = (meta: Partial<KubeObject["metadata"]>, status?: Record<string, unknown>): KubeObject => ({
  apiVersion: "keyward.dev/v1alpha1",
  kind: "Project",
  metadata: { namespace: "ns", name: "p", generation: 1, ...meta },
  spec: {},
  ...(status ? { status } : {}),
});

describe("onlyOwnChanges", () => {
  it("is true for keyward's own writes: status, finalizers, its own annotations", () => {
    const base = obj({ annotations: { team: "a" } });
    expect(onlyOwnChanges(base, obj({ annotations: { team: "a" } }, { projectId: "p-1" }), own)).toBe(true);
    expect(onlyOwnChanges(base, obj({ annotations: { team: "a" }, finalizers: ["keyward.dev/finalizer"] }), own)).toBe(true);
    expect(onlyOwnChanges(base, obj({ annotations: { team: "a", "keyward.dev/create-started": "t uid" } }), own)).toBe(true);
    expect(onlyOwnChanges(obj({}), obj({ annotations: { "keyward.dev/external-id": "p-1" } }), own)).toBe(true);
    expect(onlyOwnChanges(obj({ annotations: { "keyward.dev/external-id": "p-1" } }), obj({}), own)).toBe(true);
    expect(onlyOwnChanges(obj({ labels: { a: "1" } }), obj({ labels: { a: "1" } }), own)).toBe(true);
    const digest = { "keyward.dev/external-id-digest": "0f" };
    expect(onlyOwnChanges(obj({ labels: { a: "1" } }), obj({ labels: { a: "1", ...digest } }), own, Object.keys(digest))).toBe(true);
    expect(onlyOwnChanges(obj({ labels: { a: "1" } }), obj({ labels: { a: "1", ...digest } }), own)).toBe(false);
  });

  it("is false for anything else: generation, deletion, labels, other annotations", () => {
    const base = obj({ annotations: { team: "a" }, labels: { a: "1" } });
    expect(onlyOwnChanges(base, obj({ annotations: { team: "a" }, labels: { a: "1" }, generation: 2 }), own)).toBe(false);
    expect(
      onlyOwnChanges(base, obj({ annotations: { team: "a" }, labels: { a: "1" }, deletionTimestamp: "2026-11-26T00:00:00Z" }), own),
    ).toBe(false);
    expect(onlyOwnChanges(base, obj({ annotations: { team: "a" }, labels: { a: "2" } }), own)).toBe(false);
    expect(onlyOwnChanges(base, obj({ annotations: { team: "a" }, labels: {} }), own)).toBe(false);
    expect(onlyOwnChanges(base, obj({ annotations: { team: "b" }, labels: { a: "1" } }), own)).toBe(false);
    expect(onlyOwnChanges(base, obj({ annotations: { team: "a", other: "x" }, labels: { a: "1" } }), own)).toBe(false);
    expect(onlyOwnChanges(base, obj({ labels: { a: "1" } }), own)).toBe(false);
    expect(onlyOwnChanges(obj({}), obj({ annotations: { "keyward.dev/paused": "true" } }), own)).toBe(false);
    // Without the list, keyward's annotations count like any other.
    expect(onlyOwnChanges(obj({}), obj({ annotations: { "keyward.dev/external-id": "p-1" } }))).toBe(false);
  });
});
