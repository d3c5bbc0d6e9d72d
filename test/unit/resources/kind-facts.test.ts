// A kind declares its external id, its actions and the status fields it keeps in annotations once,
// on its Kind record; the engine's module, the plugin's constants, the operator's own-annotation
// list and the docs derive from that. These are plain strings there, so what the compiler no
// longer checks is checked here: each names a field of the kind's status in its CRD.
import { describe, expect, it } from "vitest";
import { crdFromSources } from "../../../src/crd/crd.ts";
import { ANNOTATION_EXTERNAL_ID } from "../../../src/engine/holder.ts";
import { kindDurableFields, managedModuleOf, type Kind, type KindModule } from "../../../src/resources/kind.ts";
import { kinds } from "../../../src/resources/registry.ts";

function statusFields(k: Kind): string[] {
  const version = crdFromSources(k.crd).spec.versions[0];
  return Object.keys(version?.schema?.openAPIV3Schema?.properties?.["status"]?.properties ?? {});
}

const byName = (name: string): Kind => {
  const k = kinds.find((x) => x.ref.kind === name);
  if (!k) throw new Error(`no kind ${name}`);
  return k;
};

const bare: KindModule<unknown, unknown, unknown> = {
  ref: byName("Project").ref,
  parseSpec: (raw) => raw,
  needsFinalizer: () => false,
  connect: () => Promise.resolve(undefined),
  observe: () => Promise.resolve({ exists: false, upToDate: false, status: {} }),
};

describe("each fact of a kind, declared once on its Kind record", () => {
  it("names status fields the kind's CRD has: its external id, its actions' handled values, the fields its annotations mirror or record", () => {
    for (const k of kinds) {
      const fields = statusFields(k);
      const named = [
        ...(k.externalId === undefined ? [] : [k.externalId]),
        ...Object.values(kindDurableFields(k)).map((d) => (typeof d === "string" ? d : d.field)),
        ...(k.metadata ?? []).flatMap((m) => (m.scope === undefined ? [] : [m.scope])),
      ];
      for (const field of named) expect(fields, `${k.ref.kind}: status.${field}`).toContain(field);
    }
  });

  it("gives the engine's module the create guard on the external id, and the durable fields, of the Kind", () => {
    const project = managedModuleOf(byName("Project"), bare);
    expect(project.guardCreate).toMatchObject({ idField: "projectId", naturalKey: { field: "slug" } });
    // The slug is the natural key its creates announce: the one a create is sent with.
    const key = project.guardCreate ? project.guardCreate.naturalKey : undefined;
    expect(key?.of({ slug: "shop-eu" }, { name: "shop" })).toBe("shop-eu");
    expect(key?.of({}, { name: "payments-api" })).toBe("payments-api");
    const sync = managedModuleOf(byName("SecretSync"), bare);
    expect(sync.guardCreate).toEqual({ idField: "syncId" });
    expect(sync.durable).toEqual({
      "handled.keyward.dev/sync-requested-at": "lastHandledSyncRequest",
      "handled.keyward.dev/remove-secrets-requested-at": "lastHandledRemoveSecretsRequest",
      "keyward.dev/pending-action": { field: "pendingRequest", json: true },
      "handled.keyward.dev/recent": { field: "recentRequests", json: true },
    });
    const membership = managedModuleOf(byName("ProjectMembership"), bare);
    expect(membership.guardCreate).toBe(false);
    expect(membership.durable).toBeUndefined();
    // The project a member or a sync lives in is recorded, never mirrored back into status.
    for (const m of [membership, sync]) expect(m.scope).toEqual({ annotation: "keyward.dev/project-id", field: "projectId" });
    expect(Object.keys(sync.durable ?? {})).not.toContain("keyward.dev/project-id");
    expect(project.scope).toBeUndefined();
  });

  it("refuses a module that declares one of them again (it could disagree with the Kind)", () => {
    const twice = { ...bare, guardCreate: { idField: "projectId" } } as KindModule<unknown, unknown, unknown>;
    expect(() => managedModuleOf(byName("Project"), twice)).toThrow(/guardCreate is declared on the Kind record/);
  });

  it("keeps keyward.dev/external-id to the engine: no kind mirrors it by hand", () => {
    for (const k of kinds) expect(Object.keys(kindDurableFields(k))).not.toContain(ANNOTATION_EXTERNAL_ID);
  });
});
