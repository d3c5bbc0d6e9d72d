// getObject / patchStatus / patchMetadata against a real apiserver.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { createKube, type Kube } from "../../../src/kube/client.ts";
import { getObject, patchMetadata, patchStatus, isConflict, isKubeNotFound } from "../../../src/kube/objects.ts";
import { statusEqual } from "../../../src/engine/conditions.ts";
import { createTestNamespace, testKubeConfig, type TestNamespace, testApis } from "../../controlplane/testenv.ts";
import { createWidget, widgetCrd, type WidgetCrd } from "../support/throwaway-crd.ts";

let kube: Kube;
const apis = (): ReturnType<typeof testApis> => testApis();
let crd!: WidgetCrd;
let ns!: TestNamespace;

beforeAll(async () => {
  kube = createKube(testKubeConfig());
  crd = widgetCrd(apis());
  await crd.create();
  ns = await createTestNamespace("engine-objects");
});

afterAll(async () => {
  await ns?.cleanup();
  await crd?.delete();
});

const keyOf = (name: string) => ({ namespace: ns.name, name });

describe("getObject", () => {
  it("returns the object, and undefined for one that does not exist", async () => {
    await createWidget(apis(), crd.kind, ns.name, "got", { size: 1 });
    const obj = await getObject(kube, crd.kind, keyOf("got"));
    expect(obj?.spec).toEqual({ size: 1 });
    expect(await getObject(kube, crd.kind, keyOf("missing"))).toBeUndefined();
  });

  it("reads core kinds too", async () => {
    await apis().core.createNamespacedConfigMap({ namespace: ns.name, body: { metadata: { name: "cm" }, data: { a: "1" } } });
    const cm = await getObject(kube, { group: "", version: "v1", plural: "configmaps", kind: "ConfigMap" }, keyOf("cm"));
    expect(cm?.metadata.name).toBe("cm");
    expect(await getObject(kube, { group: "", version: "v1", plural: "configmaps", kind: "ConfigMap" }, keyOf("nope"))).toBeUndefined();
  });
});

describe("patchStatus", () => {
  it("writes the whole status through /status: nested keys dropped, conditions replaced, spec untouched", async () => {
    const created = await createWidget(apis(), crd.kind, ns.name, "status", { size: 2 });
    const first = {
      observedGeneration: 1,
      projectId: "p-1",
      details: { a: 1, b: 2 },
      conditions: [
        { type: "Ready", status: "True", reason: "Ok", message: "", observedGeneration: 1, lastTransitionTime: "2025-01-01T00:00:00Z" },
        { type: "Synced", status: "True", reason: "Ok", message: "", observedGeneration: 1, lastTransitionTime: "2025-01-01T00:00:00Z" },
      ],
    };
    const afterFirst = await patchStatus(kube, crd.kind, created, first);
    expect(afterFirst.status).toEqual(first);
    expect(afterFirst.metadata.generation).toBe(created.metadata.generation);

    const second = {
      observedGeneration: 1,
      details: { b: 3 },
      conditions: [
        { type: "Ready", status: "False", reason: "Down", message: "x", observedGeneration: 1, lastTransitionTime: "2025-01-02T00:00:00Z" },
      ],
    };
    const afterSecond = await patchStatus(kube, crd.kind, afterFirst, second);
    expect(afterSecond.status).toEqual(second);
    const stored = await getObject(kube, crd.kind, keyOf("status"));
    expect(stored?.status).toEqual(second);
    expect(stored?.spec).toEqual({ size: 2 });
  });

  it("writes status only: a status sent with the main resource is ignored, and a status patch leaves spec alone", async () => {
    const created = await createWidget(apis(), crd.kind, ns.name, "subresource", { size: 1 });
    await apis().custom.patchNamespacedCustomObject(
      {
        group: crd.kind.group,
        version: crd.kind.version,
        namespace: ns.name,
        plural: crd.kind.plural,
        name: "subresource",
        body: { status: { sneaky: true } },
      },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    expect((await getObject(kube, crd.kind, keyOf("subresource")))?.status).toBeUndefined();
    const patched = await patchStatus(kube, crd.kind, created, { seen: true });
    expect(patched.status).toEqual({ seen: true });
    expect(patched.spec).toEqual({ size: 1 });
  });

  it("an unchanged status is recognised, and writing it anyway changes nothing on the server", async () => {
    const created = await createWidget(apis(), crd.kind, ns.name, "same");
    const status = { observedGeneration: 1, projectId: "p" };
    const written = await patchStatus(kube, crd.kind, created, status);
    const fresh = await getObject(kube, crd.kind, keyOf("same"));
    expect(statusEqual(fresh?.status, { projectId: "p", observedGeneration: 1 })).toBe(true);
    const again = await patchStatus(kube, crd.kind, written, status);
    expect(again.metadata.resourceVersion).toBe(written.metadata.resourceVersion);
  });

  it("is a merge patch, not a JSON patch: the content type reaches the apiserver", async () => {
    // A JSON patch body must be an array; the apiserver would reject this object with 400
    // if client-node sent its default application/json-patch+json.
    const created = await createWidget(apis(), crd.kind, ns.name, "content-type");
    await expect(patchStatus(kube, crd.kind, created, { ok: 1 })).resolves.toBeDefined();
  });
});

describe("patchMetadata", () => {
  it("sets and removes annotations (null removes)", async () => {
    await createWidget(apis(), crd.kind, ns.name, "annotated");
    const set = await patchMetadata(kube, crd.kind, keyOf("annotated"), { annotations: { "keyward.dev/a": "1", "keyward.dev/b": "2" } });
    expect(set?.metadata.annotations).toMatchObject({ "keyward.dev/a": "1", "keyward.dev/b": "2" });
    const removed = await patchMetadata(kube, crd.kind, keyOf("annotated"), { annotations: { "keyward.dev/a": null } });
    expect(removed?.metadata.annotations?.["keyward.dev/a"]).toBeUndefined();
    expect(removed?.metadata.annotations?.["keyward.dev/b"]).toBe("2");
  });

  it("adds and removes a finalizer idempotently; undefined for a missing object", async () => {
    await createWidget(apis(), crd.kind, ns.name, "finalized");
    const added = await patchMetadata(kube, crd.kind, keyOf("finalized"), { finalizers: { add: "keyward.dev/finalizer" } });
    expect(added?.metadata.finalizers).toEqual(["keyward.dev/finalizer"]);
    const again = await patchMetadata(kube, crd.kind, keyOf("finalized"), { finalizers: { add: "keyward.dev/finalizer" } });
    expect(again?.metadata.resourceVersion).toBe(added?.metadata.resourceVersion);
    const removed = await patchMetadata(kube, crd.kind, keyOf("finalized"), { finalizers: { remove: "keyward.dev/finalizer" } });
    expect(removed?.metadata.finalizers ?? []).toEqual([]);
    expect(await patchMetadata(kube, crd.kind, keyOf("never"), { finalizers: { add: "x.dev/f" } })).toBeUndefined();
  });

  it("retries from a fresh read when another writer changes the object between its read and its write", async () => {
    await createWidget(apis(), crd.kind, ns.name, "contended");
    await patchMetadata(kube, crd.kind, keyOf("contended"), { finalizers: { add: "keyward.dev/finalizer" } });
    // A second writer slips in right before our first PATCH reaches the apiserver: it adds its
    // own finalizer, so our precondition (the resourceVersion we read) is stale for real.
    // keyward asks its access for the credential once per request: the second ask is the PATCH
    // (the first, the read), and that is when the other writer slips in.
    let asked = 0;
    const contended: Kube = {
      ...kube,
      access: {
        ...kube.access,
        authorization: async () => {
          asked += 1;
          if (asked === 2) await patchMetadata(kube, crd.kind, keyOf("contended"), { finalizers: { add: "other.dev/finalizer" } });
          return kube.access.authorization();
        },
      },
    };
    const result = await patchMetadata(contended, crd.kind, keyOf("contended"), { finalizers: { remove: "keyward.dev/finalizer" } });
    // read, PATCH (409), read again, PATCH
    expect(asked).toBe(4);
    expect(result?.metadata.finalizers).toEqual(["other.dev/finalizer"]);
    expect((await getObject(kube, crd.kind, keyOf("contended")))?.metadata.finalizers).toEqual(["other.dev/finalizer"]);
    await patchMetadata(kube, crd.kind, keyOf("contended"), { finalizers: { remove: "other.dev/finalizer" } });
  });

  it("many concurrent writers each add their finalizer and none is lost", async () => {
    await createWidget(apis(), crd.kind, ns.name, "crowded");
    const names = ["a", "b", "c", "d"].map((x) => `${x}.dev/finalizer`);
    await Promise.all(names.map((f) => patchMetadata(kube, crd.kind, keyOf("crowded"), { finalizers: { add: f } })));
    const stored = await getObject(kube, crd.kind, keyOf("crowded"));
    expect([...(stored?.metadata.finalizers ?? [])].sort()).toEqual(names);
    for (const f of names) await patchMetadata(kube, crd.kind, keyOf("crowded"), { finalizers: { remove: f } });
  });

  it("works on core kinds", async () => {
    const cmKind = { group: "", version: "v1", plural: "configmaps", kind: "ConfigMap" };
    await apis().core.createNamespacedConfigMap({ namespace: ns.name, body: { metadata: { name: "cm-meta" } } });
    const patched = await patchMetadata(kube, cmKind, keyOf("cm-meta"), {
      annotations: { "keyward.dev/x": "y" },
      finalizers: { add: "keyward.dev/finalizer" },
    });
    expect(patched?.metadata.annotations?.["keyward.dev/x"]).toBe("y");
    expect(patched?.metadata.finalizers).toEqual(["keyward.dev/finalizer"]);
    await patchMetadata(kube, cmKind, keyOf("cm-meta"), { finalizers: { remove: "keyward.dev/finalizer" } });
  });
});

describe("error predicates", () => {
  it("recognise client-node 2.x ApiExceptions", async () => {
    const err = await apis()
      .custom.getNamespacedCustomObject({
        group: crd.kind.group,
        version: crd.kind.version,
        namespace: ns.name,
        plural: crd.kind.plural,
        name: "absent",
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(isKubeNotFound(err)).toBe(true);
    expect(isConflict(err)).toBe(false);
  });
});
