import { describe, expect, it } from "vitest";
import {
  ANNOTATION_CREATE_STARTED,
  createStartedMark,
  createUnconfirmed as unconfirmedOf,
  LEGACY_CREATE_PENDING,
  LEGACY_CREATE_SUCCEEDED,
} from "../../../src/engine/create-rule.ts";
import {
  copiedCreate,
  createScope,
  createState,
  duplicateAnswer,
  LATE_COMMIT_WINDOW_MS,
  markAfterFailure,
  releaseWhileStarted,
} from "../../../src/engine/create-rule.ts";

const at = "2026-11-25T12:00:00Z";
const uid = "0b7e6f2a-1c3d-4e5f-8a9b-0c1d2e3f4a5b";
const mark = createStartedMark(new Date(at), uid);
const createUnconfirmed = (annotations: Record<string, string>, id: unknown): boolean => unconfirmedOf(annotations, id, uid);

describe("createUnconfirmed", () => {
  it("is true from the started mark until the id is in status", () => {
    expect(createUnconfirmed({ [ANNOTATION_CREATE_STARTED]: mark }, undefined)).toBe(true);
    expect(createUnconfirmed({ [ANNOTATION_CREATE_STARTED]: mark }, null)).toBe(true);
    expect(createUnconfirmed({ [ANNOTATION_CREATE_STARTED]: mark }, "")).toBe(true);
    expect(createUnconfirmed({ [ANNOTATION_CREATE_STARTED]: mark }, "p-1")).toBe(false);
  });

  it("counts only a mark written on this object: a copy (another UID) or a mark without a UID created nothing", () => {
    expect(mark).toBe(`${new Date(at).toISOString()} ${uid}`);
    expect(unconfirmedOf({ [ANNOTATION_CREATE_STARTED]: createStartedMark(new Date(at), "another-uid") }, undefined, uid)).toBe(false);
    expect(unconfirmedOf({ [ANNOTATION_CREATE_STARTED]: at }, undefined, uid)).toBe(false);
    expect(unconfirmedOf({ [ANNOTATION_CREATE_STARTED]: mark }, undefined, undefined)).toBe(false);
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

describe("copiedCreate", () => {
  it("is a mark of another UID on an object with no id: a copy of one that created, or was creating", () => {
    const copied = { [ANNOTATION_CREATE_STARTED]: createStartedMark(new Date(at), "another-uid") };
    expect(copiedCreate(copied, undefined, uid)).toBe(true);
    expect(copiedCreate(copied, "p-1", uid), "an id recorded").toBe(false);
    expect(copiedCreate({ [ANNOTATION_CREATE_STARTED]: mark }, undefined, uid), "its own mark").toBe(false);
    expect(copiedCreate({ [ANNOTATION_CREATE_STARTED]: at }, undefined, uid), "a mark without a UID").toBe(false);
    expect(copiedCreate({}, undefined, uid)).toBe(false);
  });
});

describe("createScope", () => {
  const scoped = createStartedMark(new Date(at), uid, "proj 1/é");

  it("reads back the scope this object's mark records, however the id is spelled", () => {
    expect(createScope({ [ANNOTATION_CREATE_STARTED]: scoped }, uid)).toBe("proj 1/é");
    // the mark's time and UID read as before: a keyward without scopes sees the same state
    expect(createState({ [ANNOTATION_CREATE_STARTED]: scoped }, undefined, uid)).toBe("Started");
    expect(releaseWhileStarted(scoped, Date.parse(at))).toEqual({ wait: LATE_COMMIT_WINDOW_MS });
  });

  it("is undefined for a mark without a scope, of another UID, or that does not decode", () => {
    expect(createScope({ [ANNOTATION_CREATE_STARTED]: mark }, uid)).toBeUndefined();
    expect(createScope({ [ANNOTATION_CREATE_STARTED]: createStartedMark(new Date(at), "another-uid", "p-1") }, uid)).toBeUndefined();
    expect(createScope({ [ANNOTATION_CREATE_STARTED]: scoped }, undefined)).toBeUndefined();
    expect(createScope({ [ANNOTATION_CREATE_STARTED]: `${at} ${uid} %E0%A4%A` }, uid)).toBeUndefined();
    expect(createScope({ [LEGACY_CREATE_PENDING]: at }, uid)).toBeUndefined();
  });
});

describe("the create rule's transitions", () => {
  it("names the state from the mark, the id and the UID", () => {
    expect(createState({}, undefined, uid)).toBe("NotStarted");
    expect(createState({ [ANNOTATION_CREATE_STARTED]: mark }, undefined, uid)).toBe("Started");
    expect(createState({ [ANNOTATION_CREATE_STARTED]: mark }, "p-1", uid)).toBe("Confirmed");
    expect(createState({ [ANNOTATION_CREATE_STARTED]: createStartedMark(new Date(at), "another-uid") }, undefined, uid)).toBe("NotStarted");
  });

  it("drops the mark only when no attempt's outcome is unknown", () => {
    expect(markAfterFailure("NotStarted", false)).toBe("remove");
    expect(markAfterFailure("NotStarted", true)).toBe("keep");
    // An earlier attempt may still commit: a refusal of this one settles nothing about it.
    expect(markAfterFailure("Started", false)).toBe("keep");
    expect(markAfterFailure("Started", true)).toBe("keep");
  });

  it("looks a duplicate answer up again only while an earlier attempt is pending", () => {
    expect(duplicateAnswer("Started")).toBe("look-again");
    expect(duplicateAnswer("NotStarted")).toBe("another's");
  });
});

describe("releaseWhileStarted", () => {
  const started = Date.parse(at);
  it("waits out the rest of the late-commit window after the mark, then releases", () => {
    expect(releaseWhileStarted(mark, started + 1_000)).toEqual({ wait: LATE_COMMIT_WINDOW_MS - 1_000 });
    expect(releaseWhileStarted(mark, started + LATE_COMMIT_WINDOW_MS)).toBe("release");
  });

  it("releases a mark whose time cannot be read", () => {
    expect(releaseWhileStarted(undefined, started)).toBe("release");
    expect(releaseWhileStarted("not-a-time uid", started)).toBe("release");
  });
});
