// The generic controller against a real apiserver with a test CRD.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Counter, Gauge } from "prom-client";
import { createKube, type KindRef, type Kube } from "../../../src/kube/client.ts";
import { createController, type Controller, type ControllerOptions, type SecondaryWatch } from "../../../src/engine/controller.ts";
import { createMetrics } from "../../../src/engine/metrics.ts";
import { createLogger } from "../../../src/log.ts";
import { KubeApiError } from "../../../src/kube/rest.ts";
import { done, retryable, terminal, type ObjectKey, type Outcome } from "../../../src/engine/types.ts";
import { createTestNamespace, testKubeConfig, waitFor, type TestNamespace, testApis } from "../../controlplane/testenv.ts";
import { createWidget, widgetCrd, type WidgetCrd } from "../support/throwaway-crd.ts";

let kube: Kube;
const apis = (): ReturnType<typeof testApis> => testApis();
let crd!: WidgetCrd;
const namespaces: TestNamespace[] = [];
const controllers: Controller[] = [];
const logger = createLogger({ level: "silent" });

beforeAll(async () => {
  kube = createKube(testKubeConfig());
  crd = widgetCrd(apis());
  await crd.create();
});

afterAll(async () => {
  await Promise.all(controllers.map((c) => c.stop()));
  for (const ns of namespaces) await ns.cleanup();
  await crd?.delete();
});

async function namespace(prefix: string): Promise<string> {
  const ns = await createTestNamespace(prefix);
  namespaces.push(ns);
  return ns.name;
}

type Reconcile = (key: ObjectKey, signal: AbortSignal) => Outcome | Promise<Outcome>;

async function startController(ns: string, reconcile: Reconcile, extra: Partial<ControllerOptions> = {}) {
  const metrics = createMetrics();
  const name = `widgets-${String(controllers.length)}`;
  const controller = createController({
    name,
    kube,
    kind: crd.kind,
    reconcile: async (key, signal) => await reconcile(key, signal),
    concurrency: 2,
    resyncIntervalMs: 3_600_000,
    namespaces: [ns],
    logger,
    metrics,
    retryBackoff: { baseMs: 20, maxMs: 200, jitter: "equal" },
    ...extra,
  });
  controllers.push(controller);
  await controller.start();
  return { controller, metrics, name };
}

/** A controller of the namespace's widgets that records the name of each one it reconciles, with one secondary watch of ConfigMaps. */
async function recordingController(ns: string, watch: Omit<SecondaryWatch, "kind">) {
  const calls: string[] = [];
  const started = await startController(
    ns,
    (key) => {
      calls.push(key.name);
      return done();
    },
    { watches: [{ kind: { group: "", version: "v1", plural: "configmaps", kind: "ConfigMap" }, ...watch }] },
  );
  return { ...started, calls };
}

async function metricValue(counter: Counter | Gauge, labels: Record<string, string>): Promise<number> {
  const { values } = await counter.get();
  const match = values.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x));
  return match?.value ?? 0;
}

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

async function patchSpec(kind: KindRef, ns: string, name: string, spec: Record<string, unknown>): Promise<string> {
  const patched = (await apis().custom.patchNamespacedCustomObject({
    group: kind.group,
    version: kind.version,
    namespace: ns,
    plural: kind.plural,
    name,
    body: [{ op: "replace", path: "/spec", value: spec }],
  })) as { metadata: { resourceVersion: string } };
  return patched.metadata.resourceVersion;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("controller", () => {
  it("runs one more reconcile, not one per event, for a burst of updates while a key is in flight", async () => {
    const ns = await namespace("ctl-burst");
    const first = gate();
    const started: number[] = [];
    let finished = 0;
    const { controller } = await startController(ns, async (key) => {
      if (key.name !== "burst") return done();
      started.push(Date.now());
      if (started.length === 1) await first.opened;
      finished += 1;
      return done();
    });
    await createWidget(apis(), crd.kind, ns, "burst", { n: 0 });
    await waitFor(() => Promise.resolve(started.length === 1 ? true : undefined), { timeoutMs: 30_000, description: "first reconcile" });

    let lastRv = "";
    for (let n = 1; n <= 10; n++) lastRv = await patchSpec(crd.kind, ns, "burst", { n });
    // Every update has reached the controller (its cache holds the last one) while the first
    // reconcile is still running: ten adds, all collapsed into one dirty mark.
    await waitFor(
      () => Promise.resolve(controller.cached({ namespace: ns, name: "burst" })?.metadata.resourceVersion === lastRv ? true : undefined),
      {
        timeoutMs: 30_000,
        description: "the informer to see the last update",
      },
    );
    expect(started).toHaveLength(1);
    first.open();
    await waitFor(() => Promise.resolve(finished === 2 ? true : undefined), { timeoutMs: 30_000, description: "the re-run" });
    expect(controller.queueLength()).toBe(0);
    await controller.stop();
    expect(started).toHaveLength(2);
  });

  it("retries a retryable outcome with growing backoff, and honours retryAfterMs", async () => {
    const ns = await namespace("ctl-retry");
    const flaky: number[] = [];
    const polite: number[] = [];
    const { metrics, name } = await startController(ns, (key) => {
      if (key.name === "flaky") {
        flaky.push(performance.now());
        return flaky.length <= 3 ? retryable(new Error("service unavailable")) : done();
      }
      if (key.name === "polite") {
        polite.push(performance.now());
        return polite.length === 1 ? retryable(new Error("rate limited"), 300) : done();
      }
      return done();
    });
    await createWidget(apis(), crd.kind, ns, "flaky");
    await createWidget(apis(), crd.kind, ns, "polite");
    await waitFor(() => Promise.resolve(flaky.length === 4 && polite.length === 2 ? true : undefined), {
      timeoutMs: 30_000,
      description: "retries",
    });

    // Equal jitter never waits less than half of base * 2^attempt (20, 40, 80 ms ceilings).
    const gaps = flaky.slice(1).map((t, i) => t - (flaky[i] as number));
    gaps.forEach((gap, attempt) => expect(gap).toBeGreaterThanOrEqual((20 * 2 ** attempt) / 2 - 2));
    expect((polite[1] as number) - (polite[0] as number)).toBeGreaterThanOrEqual(298);

    expect(await metricValue(metrics.reconcileTotal, { controller: name, result: "error" })).toBe(4);
    expect(await metricValue(metrics.reconcileTotal, { controller: name, result: "success" })).toBe(2);
    expect(await metricValue(metrics.reconcileErrors, { controller: name })).toBe(4);
    expect(await metricValue(metrics.terminalReconcileErrors, { controller: name })).toBe(0);
    // The Retry-After one is a retry too: Retry-After is a floor on the key's backoff, not a plain delay.
    expect(await metricValue(metrics.workqueueRetries, { name })).toBe(4);
  });

  it("treats a throwing reconcile as retryable", async () => {
    const ns = await namespace("ctl-throw");
    let calls = 0;
    const { metrics, name } = await startController(ns, (key) => {
      if (key.name !== "thrower") return done();
      calls += 1;
      if (calls === 1) throw new Error("bug");
      return done();
    });
    await createWidget(apis(), crd.kind, ns, "thrower");
    await waitFor(() => Promise.resolve(calls === 2 ? true : undefined), { timeoutMs: 30_000, description: "retry after a throw" });
    expect(await metricValue(metrics.reconcileErrors, { controller: name })).toBe(1);
  });

  it("logs a throw as an error, and a 409 (a write that lost a race) as information; both are retried", async () => {
    const ns = await namespace("ctl-conflict");
    const lines: { level: number; msg: string; key?: string }[] = [];
    const capture = createLogger(
      { level: "info" },
      { write: (line: string) => void lines.push(JSON.parse(line) as (typeof lines)[number]) },
    );
    const calls = new Map<string, number>();
    await startController(
      ns,
      (key) => {
        const n = (calls.get(key.name) ?? 0) + 1;
        calls.set(key.name, n);
        if (n === 1 && key.name === "racer") throw new KubeApiError(409, 'Operation cannot be fulfilled on widgets "racer"', "Conflict");
        if (n === 1 && key.name === "broken") throw new Error("bug");
        return done();
      },
      { logger: capture },
    );
    await createWidget(apis(), crd.kind, ns, "racer");
    await createWidget(apis(), crd.kind, ns, "broken");
    await waitFor(() => Promise.resolve(calls.get("racer") === 2 && calls.get("broken") === 2 ? true : undefined), {
      timeoutMs: 30_000,
      description: "both retried",
    });
    const about = (name: string) => lines.filter((l) => l.key === `${ns}/${name}`);
    expect(about("racer").map((l) => [l.level, l.msg])).toEqual([[30, "the object changed while it was reconciled; looking again"]]);
    expect(about("broken").map((l) => [l.level, l.msg])).toEqual([
      [50, "reconcile threw; retrying with backoff"],
      [40, "reconcile failed; retrying"],
    ]);
  });

  it("does not retry a terminal outcome until the spec changes", async () => {
    const ns = await namespace("ctl-terminal");
    const generations: number[] = [];
    const ref: { controller?: Controller } = {};
    const { controller, metrics, name } = await startController(
      ns,
      (key) => {
        if (key.name !== "doomed") return done();
        const generation = ref.controller?.cached(key)?.metadata.generation ?? 0;
        generations.push(generation);
        return generation === 1 ? terminal(new Error("invalid spec")) : done();
      },
      // Were a terminal outcome requeued, a 1 ms backoff would show it many times over below.
      { retryBackoff: { baseMs: 1, maxMs: 1, jitter: "none" } },
    );
    ref.controller = controller;
    await createWidget(apis(), crd.kind, ns, "doomed", { valid: false });
    await waitFor(() => Promise.resolve(generations.length === 1 ? true : undefined), {
      timeoutMs: 30_000,
      description: "first reconcile",
    });
    await sleep(500);
    expect(generations).toEqual([1]);
    expect(await metricValue(metrics.terminalReconcileErrors, { controller: name })).toBe(1);

    await patchSpec(crd.kind, ns, "doomed", { valid: true });
    await waitFor(() => Promise.resolve(generations.includes(2) ? true : undefined), {
      timeoutMs: 30_000,
      description: "reconcile of the new spec",
    });
    expect(generations).toEqual([1, 2]);
  });

  it("stop() waits for the reconcile in flight, without aborting it, and takes no new work", async () => {
    const ns = await namespace("ctl-stop");
    const release = gate();
    const order: string[] = [];
    let aborted: boolean | undefined;
    const { controller } = await startController(ns, async (key, signal) => {
      if (key.name !== "slow") return done();
      order.push("reconcile started");
      await release.opened;
      aborted = signal.aborted;
      order.push("reconcile finished");
      return done();
    });
    await createWidget(apis(), crd.kind, ns, "slow");
    await waitFor(() => Promise.resolve(order.length === 1 ? true : undefined), { timeoutMs: 30_000, description: "reconcile to start" });

    const stopped = controller.stop().then(() => order.push("stop resolved"));
    await sleep(200);
    expect(order).toEqual(["reconcile started"]);
    release.open();
    await stopped;
    expect(order).toEqual(["reconcile started", "reconcile finished", "stop resolved"]);
    expect(aborted).toBe(false);
    controller.enqueue({ namespace: ns, name: "slow" });
    expect(controller.queueLength()).toBe(0);
  });

  it("maps changes of a watched kind to keys of the primary kind", async () => {
    const ns = await namespace("ctl-watches");
    const { calls } = await recordingController(ns, {
      labelSelector: "widget",
      mapToKeys: (obj) => {
        const widget = obj.metadata.labels?.["widget"];
        return widget ? [{ namespace: obj.metadata.namespace, name: widget }] : [];
      },
    });
    await createWidget(apis(), crd.kind, ns, "primary");
    await waitFor(() => Promise.resolve(calls.includes("primary") ? true : undefined), {
      timeoutMs: 30_000,
      description: "first reconcile",
    });
    const before = calls.filter((c) => c === "primary").length;
    await apis().core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "settings", labels: { widget: "primary" } } } });
    await waitFor(() => Promise.resolve(calls.filter((c) => c === "primary").length > before ? true : undefined), {
      timeoutMs: 30_000,
      description: "reconcile caused by the ConfigMap",
    });
  });

  it("wakes a primary by what its spec refers to now: a metadata write keeps the index, a spec change moves it", async () => {
    const ns = await namespace("ctl-refers");
    const seen: string[] = [];
    const { calls, metrics, name } = await recordingController(ns, {
      refersTo: (o) => {
        const configMap = (o.spec as { configMap?: string } | undefined)?.configMap;
        return configMap === undefined ? undefined : `${o.metadata.namespace ?? ""}/${configMap}`;
      },
      predicate: (_type, obj) => {
        seen.push(obj.metadata.name);
        return true;
      },
      mapToKeys: () => [],
    });
    const reconciles = (): number => calls.filter((c) => c === "referrer").length;
    const idle = async (): Promise<void> => {
      await waitFor(
        async () =>
          (await metricValue(metrics.workqueueDepth, { name })) === 0 &&
          (await metricValue(metrics.activeWorkers, { controller: name })) === 0
            ? true
            : undefined,
        { timeoutMs: 30_000, description: "the queue drained" },
      );
    };
    const configMap = async (name: string): Promise<void> => {
      await apis().core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name } } });
      await waitFor(() => Promise.resolve(seen.includes(name) ? true : undefined), { timeoutMs: 30_000, description: `${name} seen` });
    };

    await createWidget(apis(), crd.kind, ns, "referrer", { configMap: "first" });
    await waitFor(() => Promise.resolve(reconciles() >= 1 ? true : undefined), { timeoutMs: 30_000, description: "first reconcile" });
    // Each write below wakes the referrer itself (a label change, a new generation): waiting for
    // that pass means the informer has taken the write in before the ConfigMaps change.
    const passAfter = async (write: () => Promise<unknown>, description: string): Promise<void> => {
      const count = reconciles();
      await write();
      await waitFor(() => Promise.resolve(reconciles() > count ? true : undefined), { timeoutMs: 30_000, description });
      await idle();
    };
    // A metadata-only write (no new generation) is the same reference: "first" still wakes it.
    await passAfter(
      () =>
        apis().custom.patchNamespacedCustomObject({
          group: crd.kind.group,
          version: crd.kind.version,
          namespace: ns,
          plural: crd.kind.plural,
          name: "referrer",
          body: [{ op: "add", path: "/metadata/labels", value: { touched: "yes" } }],
        }),
      "the label write's pass",
    );
    let before = reconciles();
    await configMap("first");
    await waitFor(() => Promise.resolve(reconciles() > before ? true : undefined), { timeoutMs: 30_000, description: "woken by first" });

    // The spec now names "second": "first" no longer wakes it, "second" does.
    await passAfter(() => patchSpec(crd.kind, ns, "referrer", { configMap: "second" }), "the new generation's pass");
    before = reconciles();
    await apis().core.patchNamespacedConfigMap({ namespace: ns, name: "first", body: [{ op: "add", path: "/data", value: { v: "1" } }] });
    await waitFor(() => Promise.resolve(seen.filter((n) => n === "first").length >= 2 ? true : undefined), {
      timeoutMs: 30_000,
      description: "the change of first seen",
    });
    await idle();
    expect(reconciles()).toBe(before);
    await configMap("second");
    await waitFor(() => Promise.resolve(reconciles() > before ? true : undefined), { timeoutMs: 30_000, description: "woken by second" });
  });

  it("resyncs every cached key periodically without any change", async () => {
    const ns = await namespace("ctl-resync");
    let calls = 0;
    await startController(
      ns,
      (key) => {
        if (key.name === "steady") calls += 1;
        return done();
      },
      { resyncIntervalMs: 300 },
    );
    await createWidget(apis(), crd.kind, ns, "steady");
    await waitFor(() => Promise.resolve(calls >= 3 ? true : undefined), { timeoutMs: 30_000, description: "two resyncs" });
  });

  it("exports its metrics under controller-runtime's names", async () => {
    const ns = await namespace("ctl-metrics");
    const { metrics } = await startController(ns, () => done());
    await createWidget(apis(), crd.kind, ns, "counted");
    await waitFor(async () => ((await metrics.registry.metrics()).includes('result="success"') ? true : undefined), {
      timeoutMs: 30_000,
      description: "a counted reconcile",
    });
    const text = await metrics.registry.metrics();
    for (const metric of [
      "controller_runtime_reconcile_total",
      "controller_runtime_reconcile_time_seconds_bucket",
      "controller_runtime_active_workers",
      "controller_runtime_max_concurrent_reconciles",
      "workqueue_depth",
      "workqueue_adds_total",
      "workqueue_queue_duration_seconds_bucket",
      "workqueue_work_duration_seconds_bucket",
    ]) {
      expect(text).toContain(metric);
    }
  });
});
