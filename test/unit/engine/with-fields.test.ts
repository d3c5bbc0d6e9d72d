import { describe, expect, it } from "vitest";
import { withFields } from "../../../src/engine/managed.ts";

describe("withFields", () => {
  it("replaces the fields given, keeps the rest, and never calls a getter (the pass's lazy logger)", () => {
    let made = 0;
    const c = {
      key: { namespace: "a", name: "b" },
      status: { id: "old" } as Record<string, unknown>,
      createPending: true,
      get log(): { made: number } {
        made += 1;
        return { made };
      },
    };
    const next = withFields(c, { status: { id: "new" }, createPending: false });
    expect(made).toBe(0);
    expect(next.status).toEqual({ id: "new" });
    expect(next.createPending).toBe(false);
    expect(next.key).toBe(c.key);
    expect(c.status).toEqual({ id: "old" });
    expect(c.createPending).toBe(true);
    // The getter still works, once asked for.
    expect(next.log.made).toBe(1);
    expect(Object.keys(next).sort()).toEqual(["createPending", "key", "log", "status"]);
  });
});
