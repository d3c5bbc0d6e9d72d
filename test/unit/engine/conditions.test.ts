import { describe, expect, it } from "vitest";
import { ApiError } from "../../../src/api/errors.ts";
import {
  clipMessage,
  conditionsEqual,
  getCondition,
  MAX_CONDITION_MESSAGE,
  setCondition,
  statusEqual,
} from "../../../src/engine/conditions.ts";
import { classifyError, MAX_SPEC_MESSAGE, specErrorMessage } from "../../../src/engine/errors.ts";
import { specSchema as projectSpecSchema } from "../../../src/resources/project.ts";
import type { Condition } from "../../../src/engine/types.ts";

const t0 = "2025-01-01T00:00:00.000Z";
const t1 = "2025-01-01T01:00:00.000Z";

const ready = (status: Condition["status"], reason = "Available", message = "ok", observedGeneration = 1) => ({
  type: "Ready",
  status,
  reason,
  message,
  observedGeneration,
});

describe("setCondition", () => {
  it("appends a new condition with the given time", () => {
    const list = setCondition(undefined, ready("True"), t0);
    expect(list).toEqual([{ ...ready("True"), lastTransitionTime: t0 }]);
  });

  it("keeps lastTransitionTime when the status is unchanged, even if reason and message change", () => {
    const first = setCondition([], ready("True"), t0);
    const second = setCondition(first, ready("True", "StillAvailable", "still ok", 2), t1);
    expect(second).toEqual([{ ...ready("True", "StillAvailable", "still ok", 2), lastTransitionTime: t0 }]);
  });

  it("moves lastTransitionTime when the status changes", () => {
    const first = setCondition([], ready("True"), t0);
    const second = setCondition(first, ready("False", "Unavailable", "down"), t1);
    expect(getCondition(second, "Ready")?.lastTransitionTime).toBe(t1);
    expect(getCondition(second, "Ready")?.status).toBe("False");
  });

  it("replaces in place, leaves other types alone and does not mutate its input", () => {
    const synced = { type: "Synced", status: "True" as const, reason: "Ok", message: "", observedGeneration: 1 };
    const first = setCondition(setCondition([], ready("True"), t0), synced, t0);
    const snapshot = structuredClone(first);
    const second = setCondition(first, ready("False"), t1);
    expect(first).toEqual(snapshot);
    expect(second.map((c) => c.type)).toEqual(["Ready", "Synced"]);
    expect(getCondition(second, "Synced")).toEqual({ ...synced, lastTransitionTime: t0 });
  });

  it("accepts a Date for now", () => {
    const list = setCondition([], ready("True"), new Date(t1));
    expect(list[0]?.lastTransitionTime).toBe(t1);
  });
});

// Found by client-decoding.property.test.ts: a service error message (up to the 16 MiB response
// limit) became the Synced message whole, and the apiserver refuses a status whose condition
// message is past the CRDs' maxLength of 32768, so the failure was never recorded.
describe("condition messages are bounded", () => {
  it("clipMessage keeps short messages and cuts long ones to the limit, ending in …", () => {
    expect(clipMessage("short")).toBe("short");
    expect(clipMessage("x".repeat(MAX_CONDITION_MESSAGE))).toHaveLength(MAX_CONDITION_MESSAGE);
    const cut = clipMessage("x".repeat(MAX_CONDITION_MESSAGE + 1));
    expect(cut).toHaveLength(MAX_CONDITION_MESSAGE);
    expect(cut.endsWith("…")).toBe(true);
  });

  it("never splits a surrogate pair", () => {
    const cut = clipMessage("😀".repeat(10), 6);
    expect(cut).toBe("😀😀…");
    expect(cut.isWellFormed()).toBe(true);
  });

  it("setCondition stores a clipped message, so re-asserting the same long message writes nothing new", () => {
    const long = "m".repeat(100_000);
    const list = setCondition([], ready("False", "ServiceError", long), t0);
    expect(list[0]?.message.length).toBe(MAX_CONDITION_MESSAGE);
    expect(conditionsEqual(list, setCondition(list, ready("False", "ServiceError", long), t1))).toBe(true);
  });

  it("classifyError clips a service's long error message", () => {
    const err = new ApiError({ operation: "getProject", status: 400, error: "BadRequest", message: "y".repeat(1_000_000) });
    const c = classifyError(err);
    expect(c.message.length).toBeLessThanOrEqual(MAX_CONDITION_MESSAGE);
    expect(c.message.startsWith("getProject: 400 BadRequest: yyy")).toBe(true);
  });
});

// Found by spec-schemas.property.test.ts: one issue of a strict object names every unknown key
// (50 long keys gave an InvalidSpec message of 10,914 characters), and a list of 1000 bad items
// gives 1000 issues; the message named them all.
describe("specErrorMessage", () => {
  it("names the first issues as spec.path: message", () => {
    const r = projectSpecSchema.safeParse({ pitVersionLimit: 0, slug: 5 });
    expect(r.success).toBe(false);
    expect(specErrorMessage(r.error)).toMatch(/^spec\.slug: .+; spec\.pitVersionLimit: .+$/);
  });

  it("stays within MAX_SPEC_MESSAGE however many issues, counting the ones it leaves out", () => {
    const r = projectSpecSchema.safeParse({ secretDetectionIgnoreValues: Array.from({ length: 1000 }, (_, i) => i) });
    expect(r.error?.issues).toHaveLength(1000);
    const message = specErrorMessage(r.error);
    expect(message.length).toBeLessThanOrEqual(MAX_SPEC_MESSAGE);
    expect(message).toContain("spec.secretDetectionIgnoreValues.0: ");
    expect(message).toMatch(/; and 992 more$/);
  });

  it("clips one issue that names hundreds of unknown keys", () => {
    const spec = Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`unknownField${i}${"x".repeat(200)}`, 1]));
    const message = specErrorMessage(projectSpecSchema.safeParse(spec).error);
    expect(message.length).toBeLessThanOrEqual(MAX_SPEC_MESSAGE);
    expect(message.startsWith("spec.: Unrecognized keys")).toBe(true);
  });

  it("never throws on odd thrown values", () => {
    expect(specErrorMessage(Object.create(null))).toBe("[object Object]");
    expect(specErrorMessage({ issues: [null, { path: [Symbol("s")], message: 1 }] })).toBe("spec.: invalid; spec.Symbol(s): invalid");
    expect(specErrorMessage(new Error("e".repeat(10_000))).length).toBe(MAX_SPEC_MESSAGE);
  });
});

describe("conditionsEqual", () => {
  it("ignores lastTransitionTime and order", () => {
    const a = setCondition(setCondition([], ready("True"), t0), { ...ready("True"), type: "Synced" }, t0);
    const b = [...setCondition(setCondition([], ready("True"), t1), { ...ready("True"), type: "Synced" }, t1)].reverse();
    expect(conditionsEqual(a, b)).toBe(true);
  });

  it("sees a different status, reason, message, generation or count", () => {
    const base = setCondition([], ready("True"), t0);
    expect(conditionsEqual(base, setCondition([], ready("False"), t0))).toBe(false);
    expect(conditionsEqual(base, setCondition([], ready("True", "Other"), t0))).toBe(false);
    expect(conditionsEqual(base, setCondition([], ready("True", "Available", "other"), t0))).toBe(false);
    expect(conditionsEqual(base, setCondition([], ready("True", "Available", "ok", 2), t0))).toBe(false);
    expect(conditionsEqual(base, [])).toBe(false);
    expect(conditionsEqual(undefined, [])).toBe(true);
  });
});

describe("statusEqual", () => {
  it("compares deeply, ignoring key order and undefined properties", () => {
    expect(statusEqual({ a: 1, b: { c: [1, 2], d: "x" } }, { b: { d: "x", c: [1, 2] }, a: 1 })).toBe(true);
    expect(statusEqual({ a: 1, b: undefined }, { a: 1 })).toBe(true);
    expect(statusEqual(null, null)).toBe(true);
  });

  it("sees differences in values, array order, types and missing keys", () => {
    expect(statusEqual({ a: 1 }, { a: 2 })).toBe(false);
    expect(statusEqual({ a: [1, 2] }, { a: [2, 1] })).toBe(false);
    expect(statusEqual({ a: "1" }, { a: 1 })).toBe(false);
    expect(statusEqual({ a: 1 }, { a: 1, b: null })).toBe(false);
    expect(statusEqual({ a: [] }, { a: {} })).toBe(false);
    expect(statusEqual({ a: { b: 1 } }, { a: { b: 1, c: 2 } })).toBe(false);
  });
});
