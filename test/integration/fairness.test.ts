// No namespace can stall the others (issue 16 §3): a real apiserver, the emulator over HTTP and
// keyward in-process with ONE worker per controller. Namespace A's ProviderConfig allows one
// request per 100 s; namespace B's, at the same base URL with another token, 200 a second. A's
// keys are turned away by A's bucket and requeued for their turn, so the one worker stays free
// and B's Project is reconciled; B's generous limit, seen after A's, does not loosen A's bucket.
// (Before: the worker slept in A's bucket for 100 s, and the newest ProviderConfig's limit
// reconfigured the one bucket of the base URL.)
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { startEmulator, type Emulator } from "../emulator/server.ts";
import { createTestNamespace, testKubeConfig, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import {
  condition,
  createCustom,
  credentialsLabels,
  getCustom,
  isReady,
  projectObject,
  startKeyward,
  waitForObject,
  type RunningKeyward,
} from "./support/keyward.ts";

const TOKEN_A = "kw-fair-token-namespace-a-51c0";
const TOKEN_B = "kw-fair-token-namespace-b-9e2d";

let kc: KubeConfig;
let emulator: Emulator;
let a: TestNamespace;
let b: TestNamespace;
let keyward: RunningKeyward;

async function provider(namespace: string, token: string, rateLimit: { requestsPerSecond: number; burst: number }): Promise<void> {
  await kc
    .makeApiClient(CoreV1Api)
    .createNamespacedSecret({ namespace, body: { metadata: { name: "default-token", labels: credentialsLabels }, stringData: { token } } });
  await createCustom(kc, namespace, "providerconfigs", {
    apiVersion: "keyward.dev/v1alpha1",
    kind: "ProviderConfig",
    metadata: { name: "default" },
    spec: { baseUrl: emulator.url, credentialsSecretRef: { name: "default-token" }, rateLimit, timeoutSeconds: 5 },
  });
}

beforeAll(async () => {
  kc = testKubeConfig();
  emulator = await startEmulator({ tokens: [TOKEN_A, TOKEN_B] });
  a = await createTestNamespace("fair-a");
  b = await createTestNamespace("fair-b");
  keyward = await startKeyward(kc, { namespaces: [a.name, b.name], concurrency: 1, resyncIntervalMs: 600_000 });
});

afterAll(async () => {
  await keyward?.stop();
  await emulator?.close();
  await a?.cleanup();
  await b?.cleanup();
});

describe("a credential out of budget", () => {
  it("holds no worker: another namespace's Project is reconciled while A's wait their turn, and A keeps its own limit", async () => {
    await provider(a.name, TOKEN_A, { requestsPerSecond: 0.01, burst: 1 });
    for (const name of ["a-one", "a-two", "a-three"]) {
      await createCustom(kc, a.name, "projects", projectObject(name, { name, slug: `fair-${name}` }));
    }
    // A's one token is spent as soon as A's first call goes out; then B's ProviderConfig arrives, the last one seen.
    await waitFor(() => Promise.resolve(emulator.requests().length > 0 ? true : undefined), {
      timeoutMs: 60_000,
      description: "A's first call",
    });
    await provider(b.name, TOKEN_B, { requestsPerSecond: 200, burst: 200 });
    await createCustom(kc, b.name, "projects", projectObject("b-one", { name: "b-one", slug: "fair-b-one" }));
    const ready = await waitForObject(kc, b.name, "projects", "b-one", {
      until: isReady,
      timeoutMs: 60_000,
      description: "B's Project Ready",
    });
    expect(condition(ready, "Synced")?.status).toBe("True");

    // A's budget (one request per 100 s) admitted one pass at most — its lookup and its create —
    // and B's limit did not loosen it: no second A project was created.
    const aCalls = emulator.requests().filter((r) => JSON.stringify(r.body ?? "").includes("fair-a-") || r.path.includes("fair-a-"));
    expect(aCalls.length).toBeLessThanOrEqual(2);
    expect(aCalls.filter((r) => r.operation === "createProject").length).toBeLessThanOrEqual(1);
    const aReady = await Promise.all(["a-one", "a-two", "a-three"].map(async (n) => isReady(await getCustom(kc, a.name, "projects", n))));
    expect(aReady.filter(Boolean).length).toBeLessThanOrEqual(1);
    // Being turned away is a wait, not a failure: no RateLimited condition, no Event storm.
    for (const n of ["a-one", "a-two", "a-three"]) {
      const obj = await getCustom(kc, a.name, "projects", n);
      expect(condition(obj, "Synced")?.reason).not.toBe("RateLimited");
    }
    expect(condition(await getCustom(kc, a.name, "providerconfigs", "default"), "Ready")?.reason).not.toBe("RateLimited");
    expect(keyward.logs.some((l) => l.includes("held back by the rate limit"))).toBe(true);
  });
});

describe("a tight budget", () => {
  it("still lets every pass that got its turn finish: creates of a burst-1 credential are not starved", async () => {
    // One token at a time, five a second: a create pass makes two calls (the lookup by slug, the
    // create). Were its second call turned away like a newcomer, the pass would come back for
    // one token, spend it on the lookup and be turned away again, for ever.
    const c = await createTestNamespace("fair-tight");
    try {
      await provider(c.name, TOKEN_A, { requestsPerSecond: 5, burst: 1 });
      const tight = await startKeyward(kc, { namespaces: [c.name], concurrency: 2, resyncIntervalMs: 600_000 });
      try {
        const names = ["tight-one", "tight-two", "tight-three"];
        for (const name of names) await createCustom(kc, c.name, "projects", projectObject(name, { name, slug: `fair-${name}` }));
        for (const name of names)
          await waitForObject(kc, c.name, "projects", name, { until: isReady, timeoutMs: 60_000, description: `${name} Ready` });
        // Each created once, and a pending mark was never written and taken back for a turned-away create.
        for (const name of names) {
          expect(
            emulator.requests().filter((r) => r.operation === "createProject" && JSON.stringify(r.body).includes(`fair-${name}`)),
          ).toHaveLength(1);
        }
      } finally {
        await tight.stop();
      }
    } finally {
      await c.cleanup();
    }
  });
});
