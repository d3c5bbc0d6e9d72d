// How the informer takes a scope's current state, against real apiservers:
// - where the apiserver streams a watch's initial events (on by default in kube-apiserver 1.32 and 1.34+), one
//   watch brings the state and then the changes: the apiserver serves no LIST for the resource;
// - where it refuses that (1.33 or older than 1.32, or the WatchList feature off: this file's own control plane runs
//   with --feature-gates=WatchList=false), the informer lists instead, says so once at info, and
//   counts no restart for it.
// The requests keyward's client sent (recorded at its dispatcher) tell which it did, and the
// apiserver's own metrics (by the throwaway CRD's group) agree.
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KubeConfig, VersionApi } from "@kubernetes/client-node";
import type { Dispatcher } from "undici";
import { createKube, type KindRef, type Kube } from "../../../src/kube/client.ts";
import { watchKind, type Informer, type InformerEventType } from "../../../src/kube/informer.ts";
import { createLogger } from "../../../src/log.ts";
import { ensureBinaries } from "../../controlplane/binaries.ts";
import { startControlPlane, type ControlPlane } from "../../controlplane/controlplane.ts";
import { kubectlStdout, testApis, testKubeConfig, testKubeconfigPath, waitFor, type TestApis } from "../../controlplane/testenv.ts";
import { createWidget, widgetCrd, type WidgetCrd } from "../support/throwaway-crd.ts";

/**
 * A counter of the apiserver's for the kind's resource (its group only) and `verb`:
 * apiserver_request_total counts a request when it ends, apiserver_longrunning_requests the
 * watches open now.
 */
async function apiserverMetric(kubeconfig: string, metric: string, kind: KindRef, verb: string): Promise<number> {
  const text = await kubectlStdout(["--kubeconfig", kubeconfig, "get", "--raw", "/metrics"]);
  let total = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${metric}{`)) continue;
    if (!line.includes(`group="${kind.group}"`) || !line.includes(`resource="${kind.plural}"`) || !line.includes(`verb="${verb}"`))
      continue;
    total += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return total;
}

/**
 * The Kube of `kc` with every request it sends recorded (method, path and query): which requests
 * keyward's client made, whatever else (kube-controller-manager's informers of every resource)
 * the apiserver serves meanwhile.
 */
function recordingKube(kc: KubeConfig): { kube: Kube; sent: string[] } {
  const sent: string[] = [];
  const { access } = createKube(kc);
  const record: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (opts, handler) => {
    sent.push(`${opts.method} ${opts.path}`);
    return dispatch(opts, handler);
  };
  return { kube: { access: { ...access, dispatcher: access.dispatcher.compose(record) } }, sent };
}

interface Run {
  informer: Informer;
  events: string[];
  restarts: string[];
  logs: { msg: string; level: number }[];
}

function start(kube: Kube, kind: KindRef, namespace: string): Run {
  const events: string[] = [];
  const restarts: string[] = [];
  const logs: { msg: string; level: number }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString("utf8").split("\n").filter(Boolean)) logs.push(JSON.parse(line) as { msg: string; level: number });
      done();
    },
  });
  const informer = watchKind(kube, kind, {
    namespaces: [namespace],
    logger: createLogger({ level: "info" }, sink),
    restartBackoff: { baseMs: 50, maxMs: 500 },
    onEvent: (type: InformerEventType, obj) => events.push(`${type} ${obj.metadata.name}`),
    onRestart: (reason) => restarts.push(reason),
  });
  return { informer, events, restarts, logs };
}

const REFUSED = "the apiserver does not stream a watch's initial state: listing instead";

/**
 * Whether a kube-apiserver of this version streams a watch's initial events unless told not to:
 * its WatchList feature gate is on by default in 1.32, off in 1.33 and on again from 1.34.
 */
export function streamsByDefault(version: { major?: string; minor?: string }): boolean {
  const minor = Number.parseInt(version.minor ?? "", 10);
  return version.major === "1" && (minor === 32 || minor >= 34);
}

async function seesLiveChanges(apis: TestApis, run: Run, crd: WidgetCrd, namespace: string): Promise<void> {
  await createWidget(apis, crd.kind, namespace, "later", { size: 2 });
  await waitFor(() => Promise.resolve(run.events.includes("add later") ? true : undefined), {
    timeoutMs: 30_000,
    description: "the add of a widget made after the sync",
  });
}

describe("informer: the current state as a watch's initial events", () => {
  const informers: Informer[] = [];
  let apis!: TestApis;
  let crd!: WidgetCrd;
  let streams = true;
  const namespace = `watchlist-${process.pid}`;

  beforeAll(async () => {
    streams = streamsByDefault(await testKubeConfig().makeApiClient(VersionApi).getCode());
    apis = testApis();
    crd = widgetCrd(apis);
    await crd.create();
    await apis.core.createNamespace({ body: { metadata: { name: namespace, labels: { "keyward.dev/test": "true" } } } });
    for (const name of ["a", "b", "c"]) await createWidget(apis, crd.kind, namespace, name, { size: 1 });
  });

  afterAll(async () => {
    for (const i of informers) i.stop();
    await apis?.core.deleteNamespace({ name: namespace }).catch(() => undefined);
    await crd?.delete();
  });

  // One test whose branch is this apiserver's default (npm run test:matrix runs the other):
  // a skipped twin would count as a test that proves nothing here.
  it("syncs from one watch where the apiserver streams initial events, lists where it does not (1.33), then follows changes", async () => {
    const kubeconfig = testKubeconfigPath();
    const { kube, sent } = recordingKube(testKubeConfig());
    const run = start(kube, crd.kind, namespace);
    informers.push(run.informer);
    await run.informer.start();
    expect([...run.events].sort()).toEqual(["add a", "add b", "add c"]);
    expect(run.informer.size()).toBe(3);
    await seesLiveChanges(apis, run, crd, namespace);
    const widgets = sent.filter((r) => r.includes(`/${crd.kind.plural}`));
    if (streams) {
      // One request: the watch that brought the state and then the change. (A brand-new CRD's
      // watch cache may still be starting under load: a retried watch is allowed, a list is not.)
      expect(widgets.length).toBeGreaterThanOrEqual(1);
      expect(widgets.every((r) => r.startsWith("GET ") && r.includes("watch=true") && r.includes("sendInitialEvents=true"))).toBe(true);
      expect(widgets).toHaveLength(run.restarts.length + 1);
      expect(await apiserverMetric(kubeconfig, "apiserver_longrunning_requests", crd.kind, "WATCH")).toBeGreaterThanOrEqual(1);
      expect(run.logs.map((l) => l.msg)).not.toContain(REFUSED);
    } else {
      expect(widgets[0]).toContain("sendInitialEvents=true");
      expect(widgets[1]).not.toContain("watch=true");
      expect(run.restarts).toEqual([]);
      expect(run.logs.filter((l) => l.msg === REFUSED)).toHaveLength(1);
    }
  });
});

describe("streamsByDefault", () => {
  it("follows kube-apiserver's WatchList default: on in 1.32, off in 1.33, on from 1.34", () => {
    const on = ["31", "32", "33", "34", "37"].map((minor) => streamsByDefault({ major: "1", minor }));
    expect(on).toEqual([false, true, false, true, true]);
    expect(streamsByDefault({ major: "1", minor: "34+" })).toBe(true);
  });
});

// A real control plane needs its binaries at hand; an existing cluster (KEYWARD_E2E_KUBECONFIG) gives none.
const existingCluster = Boolean(process.env.KEYWARD_E2E_KUBECONFIG);

describe.skipIf(existingCluster)("informer: an apiserver that does not stream initial events (WatchList off)", () => {
  let plane!: ControlPlane;
  let apis!: TestApis;
  let crd!: WidgetCrd;
  const informers: Informer[] = [];
  const namespace = "watchlist-off";

  beforeAll(async () => {
    const binaries = await ensureBinaries();
    plane = await startControlPlane({ binaries, withControllerManager: false, extraApiserverArgs: ["--feature-gates=WatchList=false"] });
    const kc = new KubeConfig();
    kc.loadFromFile(plane.kubeconfigPath);
    apis = testApis(kc);
    crd = widgetCrd(apis);
    await crd.create();
    await apis.core.createNamespace({ body: { metadata: { name: namespace } } });
    for (const name of ["a", "b", "c"]) await createWidget(apis, crd.kind, namespace, name, { size: 1 });
  }, 300_000);

  afterAll(async () => {
    // The apiserver goes first, while the informers' watches are open: undici 8.12–8.13 leaves a
    // stream it let go of (a stopped informer's watch) without an 'error' listener, and the
    // connection's end is then thrown out of the event loop (src/process-guard.ts).
    await plane?.stop();
    for (const i of informers) i.stop();
  });

  it("lists instead, says so once at info, counts no restart, and follows changes", { timeout: 120_000 }, async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(plane.kubeconfigPath);
    const { kube, sent } = recordingKube(kc);
    const kubeconfig = plane.kubeconfigPath;
    const lists = await apiserverMetric(kubeconfig, "apiserver_request_total", crd.kind, "LIST");
    const run = start(kube, crd.kind, namespace);
    informers.push(run.informer);
    await run.informer.start();
    expect([...run.events].sort()).toEqual(["add a", "add b", "add c"]);
    await seesLiveChanges(apis, run, crd, namespace);

    expect(await apiserverMetric(kubeconfig, "apiserver_request_total", crd.kind, "LIST")).toBeGreaterThan(lists);
    // The refused watch, then the list and the watch from its resourceVersion.
    const widgets = sent.filter((r) => r.includes(`/${crd.kind.plural}`));
    expect(widgets[0]).toContain("sendInitialEvents=true");
    expect(widgets[1]).not.toContain("watch=true");
    expect(widgets[2]).toContain("watch=true");
    expect(widgets[2]).not.toContain("sendInitialEvents");
    expect(run.restarts).toEqual([]);
    const refused = run.logs.filter((l) => l.msg === REFUSED);
    expect(refused).toHaveLength(1);
    expect(refused[0]?.level).toBe(30);

    // A second informer on the same connection lists at once: no refused request first.
    const second = start(kube, crd.kind, namespace);
    informers.push(second.informer);
    await second.informer.start();
    expect(second.informer.size()).toBe(4);
    expect(second.logs.map((l) => l.msg)).not.toContain(REFUSED);
  });
});
