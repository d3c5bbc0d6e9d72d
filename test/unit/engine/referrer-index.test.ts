// The controller's index of referrers (src/engine/controller.ts referrerIndex): referenced key ->
// the keys of the objects that refer to it, kept from the primary informer's events.
import { describe, expect, it } from "vitest";
import { referrerIndex } from "../../../src/engine/controller.ts";
import type { KubeObject } from "../../../src/engine/types.ts";

const project = (name: string, pc: string | undefined, namespace = "a"): KubeObject => ({
  apiVersion: "keyward.dev/v1alpha1",
  kind: "Project",
  metadata: { namespace, name },
  spec: pc === undefined ? {} : { providerConfigRef: { name: pc } },
});

const refersTo = (o: KubeObject): string | undefined => {
  const name = (o.spec as { providerConfigRef?: { name?: string } } | undefined)?.providerConfigRef?.name;
  return name === undefined ? undefined : `${o.metadata.namespace ?? ""}/${name}`;
};

describe("referrer index", () => {
  it("finds the referrers of a key, per namespace", () => {
    const index = referrerIndex(refersTo);
    index.set(project("p1", "default"));
    index.set(project("p2", "default"));
    index.set(project("p3", "other"));
    index.set(project("p4", "default", "b"));
    index.set(project("p5", undefined));
    expect(index.referrers("a/default").sort()).toEqual(["a/p1", "a/p2"]);
    expect(index.referrers("a/other")).toEqual(["a/p3"]);
    expect(index.referrers("b/default")).toEqual(["b/p4"]);
    expect(index.referrers("a/none")).toEqual([]);
    expect(index.size()).toBe(4);
  });

  it("moves a referrer whose reference changed, and drops a deleted one", () => {
    const index = referrerIndex(refersTo);
    index.set(project("p1", "default"));
    index.set(project("p1", "other"));
    expect(index.referrers("a/default")).toEqual([]);
    expect(index.referrers("a/other")).toEqual(["a/p1"]);
    index.set(project("p1", undefined));
    expect(index.referrers("a/other")).toEqual([]);
    index.set(project("p1", "default"));
    index.remove(project("p1", "default"));
    expect(index.referrers("a/default")).toEqual([]);
    expect(index.size()).toBe(0);
  });

  it("a lookup costs the referrers, not the objects indexed", () => {
    let calls = 0;
    const index = referrerIndex((o) => {
      calls += 1;
      return refersTo(o);
    });
    for (let i = 0; i < 2000; i++) index.set(project(`p${String(i)}`, i < 3 ? "hot" : `pc${String(i)}`));
    calls = 0;
    expect(index.referrers("a/hot")).toHaveLength(3);
    expect(calls).toBe(0);
  });
});
