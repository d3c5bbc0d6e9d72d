// An object's key and its one text form, shared by the work queue, the caches and the messages.
import { describe, expect, it } from "vitest";
import { keyOf, keyString, parseKeyString } from "../../../src/kube/keys.ts";

describe("object keys", () => {
  it('take namespace and name from an object, namespace "" for a cluster-scoped one', () => {
    expect(keyOf({ metadata: { namespace: "ns", name: "a" } })).toEqual({ namespace: "ns", name: "a" });
    expect(keyOf({ metadata: { name: "cluster-wide" } })).toEqual({ namespace: "", name: "cluster-wide" });
  });

  it("write namespace/name, /name for a cluster-scoped object", () => {
    expect(keyString({ namespace: "ns", name: "a" })).toBe("ns/a");
    expect(keyString({ namespace: "", name: "a" })).toBe("/a");
    expect(keyString({ name: "a" })).toBe("/a");
    expect(keyString({ namespace: undefined, name: "a" })).toBe("/a");
  });

  it("read back what they wrote", () => {
    for (const key of [
      { namespace: "ns", name: "a" },
      { namespace: "", name: "a" },
    ])
      expect(parseKeyString(keyString(key))).toEqual(key);
    expect(parseKeyString("ns/a")).toEqual({ namespace: "ns", name: "a" });
    expect(parseKeyString("a")).toEqual({ namespace: "", name: "a" });
  });
});
