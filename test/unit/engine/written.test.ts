import { describe, expect, it } from "vitest";
import { createWrittenObjects } from "../../../src/engine/written.ts";
import type { KubeObject } from "../../../src/engine/types.ts";

const at = (resourceVersion: string, name = "w"): KubeObject => ({
  apiVersion: "keyward.dev/v1alpha1",
  kind: "Widget",
  metadata: { namespace: "ns", name, resourceVersion },
  spec: {},
});
const key = { namespace: "ns", name: "w" };

describe("createWrittenObjects: read-your-writes over the cache", () => {
  it("keeps a write the cache has not seen, and reads it over the older cached copy", () => {
    const written = createWrittenObjects();
    const mine = at("12");
    written.remember(mine, at("11"));
    expect(written.size()).toBe(1);
    expect(written.latest(key, at("11"))).toBe(mine);
  });

  it("forgets it once the cache's watch event brings that version or a newer one", () => {
    const written = createWrittenObjects();
    written.remember(at("12"), at("11"));
    written.seen(at("12"));
    expect(written.size()).toBe(0);
    written.remember(at("14"), at("12"));
    const cached = at("15");
    expect(written.latest(key, cached)).toBe(cached);
    expect(written.size()).toBe(0);
  });

  it("does not keep a write whose watch event arrived before its response: the cache already holds it", () => {
    const written = createWrittenObjects();
    written.remember(at("12"), at("12"));
    written.remember(at("13", "v"), at("14", "v"));
    expect(written.size()).toBe(0);
  });

  it("drops an earlier write of the key when the cache has caught up with a later one", () => {
    const written = createWrittenObjects();
    written.remember(at("12"), at("11"));
    // The event of 12 was missed by this copy (say, coalesced); 13 is already cached when its write returns.
    written.remember(at("13"), at("13"));
    expect(written.size()).toBe(0);
    const cached = at("13");
    expect(written.latest(key, cached)).toBe(cached);
  });

  it("keeps a write of an object not cached yet (a create), and returns it", () => {
    const written = createWrittenObjects();
    const mine = at("5");
    written.remember(mine, undefined);
    expect(written.latest(key, undefined)).toBe(mine);
  });

  it("versions that are not numbers: the same one is the cache's, another one cannot be ordered", () => {
    const written = createWrittenObjects();
    written.remember(at("b"), at("b"));
    expect(written.size()).toBe(0);
    written.remember(at("c"), at("b"));
    expect(written.size()).toBe(1);
    expect(written.latest(key, at("b"))).toBe("stale");
  });
});
