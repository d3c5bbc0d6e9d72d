// The state a kind keeps in metadata as well as status (src/engine/managed.ts): what a pass
// starts from, and what it writes back before a status write.
import { describe, expect, it } from "vitest";
import { durableAnnotations, withDurableFields, type DurableFields } from "../../../src/engine/meta.ts";
import { externalIdHolder } from "../../../src/engine/holder.ts";
import type { KubeObject } from "../../../src/engine/types.ts";

const fields: DurableFields = {
  "keyward.dev/external-id": "syncId",
  "handled.keyward.dev/sync-requested-at": "lastHandledSyncRequest",
  "keyward.dev/pending-action": { field: "pendingRequest", json: true },
};

describe("withDurableFields", () => {
  it("takes what status lacks from metadata, and names it", () => {
    const r = withDurableFields(
      fields,
      { "keyward.dev/external-id": "s-1", "keyward.dev/pending-action": '{"action":"sync","value":"v"}' },
      {},
    );
    expect(r.status).toEqual({ syncId: "s-1", pendingRequest: { action: "sync", value: "v" } });
    expect(r.restored.sort()).toEqual(["pendingRequest", "syncId"]);
  });

  it("lets status win where it has a value", () => {
    const r = withDurableFields(
      fields,
      { "keyward.dev/external-id": "forged", "handled.keyward.dev/sync-requested-at": "old" },
      {
        syncId: "s-1",
        lastHandledSyncRequest: "new",
      },
    );
    expect(r.status).toEqual({ syncId: "s-1", lastHandledSyncRequest: "new" });
    expect(r.restored).toEqual([]);
  });

  it("ignores an empty annotation and a mark that is not a JSON object", () => {
    for (const mark of ["", "not json", "[1,2]", "null", '"text"']) {
      const r = withDurableFields(fields, { "keyward.dev/external-id": "", "keyward.dev/pending-action": mark }, {});
      expect(r.status, mark).toEqual({});
    }
  });
});

describe("durableAnnotations", () => {
  it("records values, leaves a missing id alone, and removes a mark status dropped", () => {
    expect(durableAnnotations(fields, { syncId: "s-1", lastHandledSyncRequest: "v1" })).toEqual({
      "keyward.dev/external-id": "s-1",
      "handled.keyward.dev/sync-requested-at": "v1",
      "keyward.dev/pending-action": null,
    });
    expect(durableAnnotations(fields, { pendingRequest: { action: "remove", value: "r" } })).toEqual({
      "keyward.dev/pending-action": '{"action":"remove","value":"r"}',
    });
  });

  it("reads back what it writes", () => {
    const status = { syncId: "s-2", lastHandledSyncRequest: "v2", pendingRequest: { action: "sync", value: "v3", lastJobId: "j" } };
    const written = durableAnnotations(fields, status) as Record<string, string>;
    expect(withDurableFields(fields, written, {}).status).toEqual(status);
  });
});

describe("externalIdHolder", () => {
  const obj = (name: string, created: string, opts: { status?: string; annotation?: string } = {}): KubeObject => ({
    apiVersion: "keyward.dev/v1alpha1",
    kind: "SecretSync",
    spec: {},
    metadata: {
      name,
      namespace: "ns",
      uid: `uid-${name}`,
      creationTimestamp: created,
      ...(opts.annotation ? { annotations: { "keyward.dev/external-id": opts.annotation } } : {}),
    },
    ...(opts.status ? { status: { syncId: opts.status } } : {}),
  });

  it("gives the id to the resource holding it in status, however young", () => {
    const self = obj("restored", "2020-01-01T00:00:00Z", { annotation: "s-1" });
    const holder = obj("live", "2026-01-01T00:00:00Z", { status: "s-1" });
    expect(externalIdHolder(self, [self, holder], "syncId", "s-1")?.metadata.name).toBe("live");
  });

  it("to none for an id named in metadata alone, however old the resource naming it", () => {
    const self = obj("b", "2026-01-02T00:00:00Z", { annotation: "s-1" });
    const older = obj("a", "2026-01-01T00:00:00Z", { annotation: "s-1" });
    expect(externalIdHolder(self, [older, self], "syncId", "s-1")).toBeUndefined();
    expect(externalIdHolder(older, [older, self], "syncId", "s-1")).toBeUndefined();
  });

  it("to the oldest of several recording it, and to none recording another id", () => {
    const self = obj("self", "2026-01-03T00:00:00Z");
    const young = obj("young", "2026-01-02T00:00:00Z", { status: "s-1" });
    const old = obj("old", "2026-01-01T00:00:00Z", { status: "s-1" });
    expect(externalIdHolder(self, [young, self, old], "syncId", "s-1")?.metadata.name).toBe("old");
    expect(externalIdHolder(self, [self, obj("c", "2020-01-01T00:00:00Z", { status: "s-2" })], "syncId", "s-1")).toBeUndefined();
  });
});
