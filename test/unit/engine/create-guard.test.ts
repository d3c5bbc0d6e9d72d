import { describe, expect, it } from "vitest";
import {
  ANNOTATION_CREATE_STARTED,
  createUnconfirmed,
  LEGACY_CREATE_PENDING,
  LEGACY_CREATE_SUCCEEDED,
} from "../../../src/engine/managed.ts";

const at = "2026-11-25T12:00:00Z";

describe("createUnconfirmed", () => {
  it("is true from the started mark until the id is in status", () => {
    expect(createUnconfirmed({ [ANNOTATION_CREATE_STARTED]: at }, undefined)).toBe(true);
    expect(createUnconfirmed({ [ANNOTATION_CREATE_STARTED]: at }, null)).toBe(true);
    expect(createUnconfirmed({ [ANNOTATION_CREATE_STARTED]: at }, "")).toBe(true);
    expect(createUnconfirmed({ [ANNOTATION_CREATE_STARTED]: at }, "p-1")).toBe(false);
  });

  it("is false without a mark, whatever status holds", () => {
    expect(createUnconfirmed({}, undefined)).toBe(false);
    expect(createUnconfirmed({ "keyward.dev/sync-requested-at": at }, undefined)).toBe(false);
  });

  it("reads the marks of earlier keywards: pending until their succeeded mark or an id", () => {
    expect(createUnconfirmed({ [LEGACY_CREATE_PENDING]: at }, undefined)).toBe(true);
    expect(createUnconfirmed({ [LEGACY_CREATE_PENDING]: at, [LEGACY_CREATE_SUCCEEDED]: at }, undefined)).toBe(false);
    expect(createUnconfirmed({ [LEGACY_CREATE_SUCCEEDED]: at }, undefined)).toBe(false);
    expect(createUnconfirmed({ [LEGACY_CREATE_PENDING]: at }, "p-1")).toBe(false);
  });
});
