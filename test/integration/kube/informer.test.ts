// The informer against a real apiserver: list, watch, and recovery when the watch breaks.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKube, resourcePath, type KindRef, type Kube } from "../../../src/kube/client.ts";
import { watchKind, type Informer, type InformerEventType } from "../../../src/kube/informer.ts";
import { watchOnce } from "../../../src/kube/watch.ts";
import { createLogger } from "../../../src/log.ts";
import type { KubeObject } from "../../../src/engine/types.ts";
import { createTestNamespace, testKubeConfig, waitFor, type TestNamespace, testApis } from "../../controlplane/testenv.ts";
import { createWidget, deleteWidget, widgetCrd, type WidgetCrd } from "../support/throwaway-crd.ts";

let kube: Kube;
const apis = (): ReturnType<typeof testApis> => testApis();
let crd!: WidgetCrd;
let ns!: TestNamespace;
let other!: TestNamespace;
const logger = createLogger({ level: "silent" });
const informers: Informer[] = [];

beforeAll(async () => {
  kube = createKube(testKubeConfig());
  crd = widgetCrd(apis());
  await crd.create();
  ns = await createTestNamespace("engine-informer");
  other = await createTestNamespace("engine-informer-other");
});

afterAll(async () => {
  for (const i of informers) i.stop();
  await ns?.cleanup();
  await other?.cleanup();
  await crd?.delete();
});

interface Recorded {
  type: InformerEventType;
  name: string;
  rv: string | undefined;
}

function recordingInformer(kind: KindRef, namespaces: string[], extra: { labelSelector?: string } = {}) {
  const events: Recorded[] = [];
  const restarts: string[] = [];
  const informer = watchKind(kube, kind, {
    namespaces,
    logger,
    restartBackoff: { baseMs: 50, maxMs: 500 },
    onEvent: (type, obj) => events.push({ type, name: obj.metadata.name, rv: obj.metadata.resourceVersion }),
    onRestart: (reason) => restarts.push(reason),
    ...extra,
  });
  informers.push(informer);
  return { informer, events, restarts };
}

const seen = (events: Recorded[], type: InformerEventType, name: string): Promise<true | undefined> =>
  Promise.resolve(events.some((e) => e.type === type && e.name === name) ? true : undefined);

describe("informer", () => {
  it("lists what exists, then delivers adds, updates and deletes, keeping its cache in step", async () => {
    await createWidget(apis(), crd.kind, ns.name, "before");
    await createWidget(apis(), crd.kind, other.name, "elsewhere");
    const { informer, events } = recordingInformer(crd.kind, [ns.name]);
    expect(informer.hasSynced()).toBe(false);
    await informer.start();
    expect(informer.hasSynced()).toBe(true);
    expect(informer.list().map((o) => o.metadata.name)).toEqual(["before"]);
    expect(events).toEqual([expect.objectContaining({ type: "add", name: "before" })]);

    await createWidget(apis(), crd.kind, ns.name, "after", { size: 1 });
    await waitFor(() => seen(events, "add", "after"), { timeoutMs: 30_000, description: "add of after" });
    const updated = (await apis().custom.patchNamespacedCustomObject({
      group: crd.kind.group,
      version: crd.kind.version,
      namespace: ns.name,
      plural: crd.kind.plural,
      name: "after",
      body: [{ op: "replace", path: "/spec/size", value: 2 }],
    })) as KubeObject;
    await waitFor(() => seen(events, "update", "after"), { timeoutMs: 30_000, description: "update of after" });
    expect(informer.get({ namespace: ns.name, name: "after" })?.metadata.resourceVersion).toBe(updated.metadata.resourceVersion);
    expect(informer.get({ namespace: ns.name, name: "after" })?.spec).toEqual({ size: 2 });

    await deleteWidget(apis(), crd.kind, ns.name, "before");
    await waitFor(() => seen(events, "delete", "before"), { timeoutMs: 30_000, description: "delete of before" });
    expect(informer.get({ namespace: ns.name, name: "before" })).toBeUndefined();
    expect(informer.list().map((o) => o.metadata.name)).toEqual(["after"]);
    expect(events.some((e) => e.name === "elsewhere")).toBe(false);
    informer.stop();
  });

  it("restarts after its watch breaks (CRD deleted and recreated) and delivers later changes", async () => {
    const kind = widgetCrd(apis());
    await kind.create();
    await createWidget(apis(), kind.kind, ns.name, "old");
    const { informer, events, restarts } = recordingInformer(kind.kind, []);
    await informer.start();
    expect(informer.list().map((o) => o.metadata.name)).toEqual(["old"]);

    await kind.delete();
    // While the kind is gone every list/watch fails (404): the informer keeps retrying.
    await waitFor(() => Promise.resolve(restarts.length > 0 ? true : undefined), { timeoutMs: 60_000, description: "an informer restart" });
    await waitFor(() => seen(events, "delete", "old"), { timeoutMs: 60_000, description: "old to be reported deleted" });

    await kind.create();
    await createWidget(apis(), kind.kind, ns.name, "new");
    await waitFor(() => seen(events, "add", "new"), { timeoutMs: 60_000, description: "add of new after the restart" });
    expect(informer.list().map((o) => o.metadata.name)).toEqual(["new"]);
    expect(informer.get({ namespace: ns.name, name: "old" })).toBeUndefined();

    // And it keeps watching after the restart.
    await deleteWidget(apis(), kind.kind, ns.name, "new");
    await waitFor(() => seen(events, "delete", "new"), { timeoutMs: 60_000, description: "delete of new" });
    informer.stop();
    await kind.delete();
  });

  it("watches core kinds, with a label selector", async () => {
    const secrets: KindRef = { group: "", version: "v1", plural: "secrets", kind: "Secret" };
    const { informer, events } = recordingInformer(secrets, [ns.name], { labelSelector: "keyward.dev/owned=true" });
    await informer.start();
    await apis().core.createNamespacedSecret({ namespace: ns.name, body: { metadata: { name: "ignored" }, stringData: { a: "b" } } });
    await apis().core.createNamespacedSecret({
      namespace: ns.name,
      body: { metadata: { name: "owned", labels: { "keyward.dev/owned": "true" } }, stringData: { a: "b" } },
    });
    await waitFor(() => seen(events, "add", "owned"), { timeoutMs: 30_000, description: "add of the owned Secret" });
    expect(events.some((e) => e.name === "ignored")).toBe(false);
    const cached = informer.get({ namespace: ns.name, name: "owned" });
    expect(cached?.kind).toBe("Secret");
    expect(cached?.apiVersion).toBe("v1");
    informer.stop();
  });

  it("stop() before the first list ends start() with an error instead of leaving it pending", async () => {
    const missing: KindRef = { group: "missing.test.keyward.dev", version: "v1", plural: "nothings", kind: "Nothing" };
    const { informer, restarts } = recordingInformer(missing, []);
    const started = informer.start();
    await waitFor(() => Promise.resolve(restarts.length > 0 ? true : undefined), { timeoutMs: 30_000, description: "a failed list" });
    informer.stop();
    await expect(started).rejects.toThrow(/stopped before it synced/);
  });
});

describe("watchOnce", () => {
  it("reports 410 Gone for a resourceVersion older than the server keeps", async () => {
    const stop = new AbortController();
    const ended = await watchOnce(kube, resourcePath(crd.kind, ns.name), {
      resourceVersion: "1",
      timeoutSeconds: 30,
      signal: stop.signal,
      onEvent: () => undefined,
    });
    expect(ended.end).toBe("gone");
  });
});
