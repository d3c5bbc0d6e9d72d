// A failed service call never sleeps in the worker: the generic controller with ONE worker
// against a real apiserver (a test CRD), its reconcile calling the emulator over HTTP with the
// API client. Widget "a" looks up a slug the service answers 503 for; the pass fails at once
// with a retryable error, and its retry waits in the work queue (a backoff of an hour), not in
// the worker: widget "b", created after, is reconciled while "a" waits, and "a"'s slug was asked
// once. (Before: the client slept 200 ms, then 400 ms, inside the worker between three
// attempts; "b" waited behind them.)
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeConnections, createApiClient, isApiError } from "../../../src/api/index.ts";
import { createKube } from "../../../src/kube/client.ts";
import { createController, type Controller } from "../../../src/engine/controller.ts";
import { createMetrics } from "../../../src/engine/metrics.ts";
import { createLogger } from "../../../src/log.ts";
import { done, retryable, type Outcome } from "../../../src/engine/types.ts";
import { startEmulator, type Emulator } from "../../emulator/server.ts";
import { createTestNamespace, testApis, testKubeConfig, waitFor, type TestNamespace } from "../../controlplane/testenv.ts";
import { createWidget, widgetCrd, type WidgetCrd } from "../support/throwaway-crd.ts";

const TOKEN = "kw-no-sleep-token-4b7d";
let crd!: WidgetCrd;
let emulator: Emulator;
let ns: TestNamespace;
let controller: Controller | undefined;

beforeAll(async () => {
  crd = widgetCrd(testApis());
  await crd.create();
  emulator = await startEmulator({ tokens: [TOKEN] });
  ns = await createTestNamespace("no-sleep");
});

afterAll(async () => {
  await controller?.stop();
  await emulator?.close();
  await closeConnections();
  await ns?.cleanup();
  await crd?.delete();
});

describe("a retryable service failure", () => {
  it("frees the worker: the key waits its retry in the queue, another key is reconciled meanwhile, and the failed call was sent once", async () => {
    emulator.setFaults({ match: { pathPattern: "/slug/no-sleep-a$" }, errorRate: 1, errorStatus: 503 });
    const client = createApiClient({ baseUrl: emulator.url, token: TOKEN });
    const outcomes: Array<[string, Outcome["type"]]> = [];
    controller = createController({
      name: "no-sleep",
      kube: createKube(testKubeConfig()),
      kind: crd.kind,
      concurrency: 1,
      resyncIntervalMs: 3_600_000,
      namespaces: [ns.name],
      logger: createLogger({ level: "silent" }),
      metrics: createMetrics(),
      // A retry an hour away: within this test it can only be waiting in the queue.
      retryBackoff: { baseMs: 3_600_000, maxMs: 3_600_000, jitter: "none" },
      reconcile: async (key, signal) => {
        let outcome: Outcome;
        try {
          await client.withSignal(signal).findProjectBySlug(`no-sleep-${key.name}`);
          outcome = done();
        } catch (err) {
          outcome = isApiError(err) && err.retryable ? retryable(err, err.retryAfterMs) : done();
        }
        outcomes.push([key.name, outcome.type]);
        return outcome;
      },
    });
    await controller.start();

    await createWidget(testApis(), crd.kind, ns.name, "a");
    await waitFor(() => Promise.resolve(outcomes.some(([k]) => k === "a") ? true : undefined), {
      timeoutMs: 30_000,
      description: "a's first pass",
    });
    await createWidget(testApis(), crd.kind, ns.name, "b");
    await waitFor(() => Promise.resolve(outcomes.some(([k]) => k === "b") ? true : undefined), {
      timeoutMs: 30_000,
      description: "b reconciled by the one worker",
    });

    expect(outcomes).toEqual([
      ["a", "retryable"],
      ["b", "done"],
    ]);
    const slugLookups = (slug: string) => emulator.requests().filter((r) => r.operation === "getProjectBySlug" && r.path.endsWith(slug));
    expect(slugLookups("no-sleep-a").map((r) => r.status)).toEqual([503]);
    expect(slugLookups("no-sleep-b").map((r) => r.status)).toEqual([404]);
  });
});
