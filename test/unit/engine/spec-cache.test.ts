import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createSpecCache } from "../../../src/engine/spec-cache.ts";

const schema = z.object({ size: z.number().int().max(3) }).strict();

function counted() {
  let calls = 0;
  const cache = createSpecCache((raw) => {
    calls += 1;
    return schema.parse(raw);
  });
  return { cache, calls: () => calls };
}

// uid null: an object without one.
const obj = (generation: number | undefined, spec: unknown, uid: string | null = "uid-1") => ({
  metadata: { namespace: "ns", name: "w", ...(uid === null ? {} : { uid }), ...(generation === undefined ? {} : { generation }) },
  spec,
});

describe("createSpecCache", () => {
  it("parses a spec once per UID and generation, and shares the result between passes", () => {
    const { cache, calls } = counted();
    const first = cache.parse(obj(1, { size: 2 }));
    expect(cache.parse(obj(1, { size: 2 }))).toBe(first);
    expect(calls()).toBe(1);
  });

  it("parses again on a new generation, and refuses a bad spec there", () => {
    const { cache, calls } = counted();
    expect(cache.parse(obj(1, { size: 2 }))).toEqual({ size: 2 });
    expect(() => cache.parse(obj(2, { size: 5 }))).toThrow(z.ZodError);
    expect(calls()).toBe(2);
    // The refusal is kept for its generation: the same error, no second parse.
    let again: unknown;
    try {
      cache.parse(obj(2, { size: 5 }));
    } catch (err) {
      again = err;
    }
    expect(again).toBeInstanceOf(z.ZodError);
    expect(calls()).toBe(2);
    // Fixed in the next generation: accepted.
    expect(cache.parse(obj(3, { size: 1 }))).toEqual({ size: 1 });
    expect(calls()).toBe(3);
  });

  it("parses again for another object of the same name (a new UID), even at the same generation", () => {
    const { cache, calls } = counted();
    cache.parse(obj(1, { size: 2 }, "uid-1"));
    expect(() => cache.parse(obj(1, { size: 9 }, "uid-2"))).toThrow(z.ZodError);
    expect(calls()).toBe(2);
  });

  it("never caches an object without a UID or a generation", () => {
    const { cache, calls } = counted();
    cache.parse(obj(undefined, { size: 2 }));
    cache.parse(obj(undefined, { size: 2 }));
    cache.parse(obj(1, { size: 2 }, null));
    cache.parse(obj(1, { size: 2 }, null));
    expect(calls()).toBe(4);
    expect(cache.size()).toBe(0);
  });

  it("forgets an object", () => {
    const { cache, calls } = counted();
    cache.parse(obj(1, { size: 2 }));
    expect(cache.size()).toBe(1);
    cache.forget({ namespace: "ns", name: "w" });
    expect(cache.size()).toBe(0);
    cache.parse(obj(1, { size: 2 }));
    expect(calls()).toBe(2);
  });
});
