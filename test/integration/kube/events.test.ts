// Events recorded through the recorder, aggregated, and shown by `kubectl describe`.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKube, type Kube } from "../../../src/kube/client.ts";
import { createEventRecorder, MAX_EVENT_MESSAGE } from "../../../src/kube/events.ts";
import { createLogger } from "../../../src/log.ts";
import type { KubeObject } from "../../../src/engine/types.ts";
import { createTestNamespace, kubectl, testKubeConfig, type TestNamespace, testApis } from "../../controlplane/testenv.ts";
import { createWidget, widgetCrd, type WidgetCrd } from "../support/throwaway-crd.ts";

let kube: Kube;
const apis = (): ReturnType<typeof testApis> => testApis();
let crd!: WidgetCrd;
let ns!: TestNamespace;
const logger = createLogger({ level: "silent" });

beforeAll(async () => {
  kube = createKube(testKubeConfig());
  crd = widgetCrd(apis());
  await crd.create();
  ns = await createTestNamespace("engine-events");
});

afterAll(async () => {
  await ns?.cleanup();
  await crd?.delete();
});

async function eventsOf(obj: KubeObject) {
  const list = await apis().core.listNamespacedEvent({
    namespace: obj.metadata.namespace,
    fieldSelector: `involvedObject.uid=${obj.metadata.uid ?? ""}`,
  });
  return list.items;
}

describe("event recorder", () => {
  it("creates one Event per (object, reason, message) and counts repeats on it", async () => {
    const widget = await createWidget(apis(), crd.kind, ns.name, "noisy");
    const recorder = createEventRecorder(kube, { component: "keyward", logger });
    for (let i = 0; i < 3; i++) recorder.record(widget, "Warning", "ReconcileError", "the service said no");
    recorder.record(widget, "Normal", "Created", "created in the service");
    await recorder.flush();

    const events = await eventsOf(widget);
    expect(events).toHaveLength(2);
    const errors = events.find((e) => e.reason === "ReconcileError");
    expect(errors?.count).toBe(3);
    expect(errors?.type).toBe("Warning");
    expect(errors?.message).toBe("the service said no");
    expect(errors?.source?.component).toBe("keyward");
    expect(errors?.involvedObject).toMatchObject({ kind: "Widget", name: "noisy", namespace: ns.name, uid: widget.metadata.uid });
    expect(events.find((e) => e.reason === "Created")?.count).toBe(1);
  });

  it("truncates long messages to 1024 characters", async () => {
    const widget = await createWidget(apis(), crd.kind, ns.name, "verbose");
    const recorder = createEventRecorder(kube, { component: "keyward", logger });
    recorder.record(widget, "Warning", "TooLong", "x".repeat(5000));
    await recorder.flush();
    const [event] = await eventsOf(widget);
    expect(event?.message?.length).toBe(MAX_EVENT_MESSAGE);
  });

  it("never throws, even when the write fails (no such namespace)", async () => {
    const recorder = createEventRecorder(kube, { component: "keyward", logger });
    const ghost: KubeObject = {
      apiVersion: `${crd.kind.group}/${crd.kind.version}`,
      kind: "Widget",
      metadata: { name: "ghost", namespace: "no-such-namespace-xyz", uid: "00000000-0000-0000-0000-000000000000" },
      spec: {},
    };
    expect(() => recorder.record(ghost, "Normal", "Whatever", "m")).not.toThrow();
    await expect(recorder.flush()).resolves.toBeUndefined();
  });

  it("shows in kubectl describe with the aggregated count", async () => {
    const widget = await createWidget(apis(), crd.kind, ns.name, "described");
    const recorder = createEventRecorder(kube, { component: "keyward", logger });
    for (let i = 0; i < 4; i++) recorder.record(widget, "Normal", "Synced", "in sync with the service");
    await recorder.flush();
    const described = await kubectl(["describe", "--namespace", ns.name, `widgets.${crd.kind.group}`, "described"]);
    expect(described.code).toBe(0);
    const eventsSection = described.stdout.slice(described.stdout.indexOf("Events:"));
    expect(eventsSection).toContain("Synced");
    expect(eventsSection).toContain("keyward");
    expect(eventsSection).toContain("in sync with the service");
    expect(eventsSection).toMatch(/x4 over/);
  });
});
