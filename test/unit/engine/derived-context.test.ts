import { describe, expect, it } from "vitest";
import { derivedContext, type ManagedContext } from "../../../src/engine/module.ts";
import type { Logger } from "../../../src/log.ts";

type Status = { id?: string };

function passContext(): { c: ManagedContext<{ slug: string }, Status, string>; made: () => number } {
  let made = 0;
  const c: ManagedContext<{ slug: string }, Status, string> = {
    key: { namespace: "a", name: "b" },
    obj: { apiVersion: "v1", kind: "Widget", metadata: { name: "b", namespace: "a" }, spec: { slug: "b" } },
    spec: { slug: "b" },
    status: { id: "old" },
    conn: "conn",
    kube: {} as ManagedContext<unknown, Status, string>["kube"],
    get log(): Logger {
      made += 1;
      return { made } as unknown as Logger;
    },
    createPending: true,
    createCopied: false,
    idFromMetadata: false,
    observeOnly: false,
    event: () => undefined,
    peers: () => [],
    saveStatus: () => Promise.resolve(),
    requeueAfter: () => undefined,
    hold: () => Promise.resolve(undefined),
    recording: () => Promise.resolve([]),
  };
  return { c, made: () => made };
}

describe("derivedContext", () => {
  it("replaces status and createPending, keeps every other field, and asks for the logger only when it is used", () => {
    const { c, made } = passContext();
    const next = derivedContext(c, { status: { id: "new" }, createPending: false });
    expect(made()).toBe(0);
    expect(next.status).toEqual({ id: "new" });
    expect(next.createPending).toBe(false);
    for (const field of [
      "key",
      "obj",
      "spec",
      "conn",
      "kube",
      "idFromMetadata",
      "observeOnly",
      "event",
      "peers",
      "saveStatus",
      "requeueAfter",
      "hold",
      "recording",
    ] as const) {
      expect(next[field]).toBe(c[field]);
    }
    expect(Object.keys(next).sort()).toEqual(Object.keys(c).sort());
    expect(c.status).toEqual({ id: "old" });
    expect(c.createPending).toBe(true);
    expect((next.log as unknown as { made: number }).made).toBe(1);
  });

  it("keeps createPending when it is not given", () => {
    const { c } = passContext();
    expect(derivedContext(c, { status: {} }).createPending).toBe(true);
  });
});
