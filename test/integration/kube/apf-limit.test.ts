// keyward's client-side apiserver limit against real kube-apiservers: with the default (auto) it
// holds nothing back while the apiserver shows API Priority and Fairness, applies its fallback
// rate on an apiserver without it, and whatever the setting honours the apiserver's own 429s:
// a PriorityLevelConfiguration that rejects makes the apiserver answer 429 with Retry-After, and
// every create still lands, once. Counts of the limiter's waits and of requests sent, no time.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KubeConfig } from "@kubernetes/client-node";
import { loadConfig } from "../../../src/config.ts";
import { createKube, type Kube } from "../../../src/kube/client.ts";
import { createRequestLimiter, kubeJson, limitRequests, type RequestLimiter } from "../../../src/kube/rest.ts";
import type { KubeAccess } from "../../../src/kube/kubeconfig.ts";
import { ensureBinaries } from "../../controlplane/binaries.ts";
import { startControlPlane, type ControlPlane } from "../../controlplane/controlplane.ts";
import { createTestNamespace, testKubeConfig, waitFor, type TestNamespace } from "../../controlplane/testenv.ts";
import { startEmulator } from "../../emulator/server.ts";
import { createReadyProjects, installProvider, startKeyward, type RunningKeyward } from "../support/keyward.ts";

const existingCluster = Boolean(process.env.KEYWARD_E2E_KUBECONFIG);

/** More than the fallback's burst of 600: a fixed cap must hold some back. */
const BURST = 700;

/** keyward's limiter as `flags` configure it (none: the defaults), on an access of its own that counts what it sends. */
function limitedAccess(kube: Kube, flags: string[] = []): { access: KubeAccess; limiter: RequestLimiter; sent: () => number } {
  const config = loadConfig(flags, {});
  const limiter = createRequestLimiter({ qps: config.kubeApiQps, burst: config.kubeApiBurst });
  let sent = 0;
  const access: KubeAccess = { ...kube.access, beforeSend: () => void (sent += 1) };
  limitRequests(access, limiter);
  return { access, limiter, sent: () => sent };
}

/** One request first (keyward's informers list before anything else), then BURST at once. */
async function burstOfReads(access: KubeAccess, namespace: string): Promise<void> {
  const path = `/api/v1/namespaces/${namespace}/configmaps`;
  await kubeJson(access, { path, query: { limit: 1 } });
  await Promise.all(Array.from({ length: BURST }, () => kubeJson(access, { path, query: { limit: 1 } })));
}

describe("the client-side limit on an apiserver with API Priority and Fairness", () => {
  let ns!: TestNamespace;
  beforeAll(async () => {
    ns = await createTestNamespace("apf-limit");
  });
  afterAll(async () => {
    await ns?.cleanup();
  });

  it("by default holds a burst above the fallback's back not at all: the answers show APF", async () => {
    const { access, limiter, sent } = limitedAccess(createKube(testKubeConfig()));
    await burstOfReads(access, ns.name);
    expect(sent()).toBe(BURST + 1);
    expect(limiter.stats()).toMatchObject({ priorityAndFairness: true, limitWaits: 0, throttled: 0 });
  });

  it("a rate given explicitly is applied all the same", async () => {
    const { access, limiter } = limitedAccess(createKube(testKubeConfig()), ["--kube-api-qps", "300", "--kube-api-burst", "600"]);
    await burstOfReads(access, ns.name);
    expect(limiter.stats().limitWaits).toBeGreaterThan(0);
  });
});

describe.skipIf(existingCluster)("the client-side limit on an apiserver without API Priority and Fairness", () => {
  let plane!: ControlPlane;
  let kube!: Kube;
  beforeAll(async () => {
    plane = await startControlPlane({
      binaries: await ensureBinaries(),
      withControllerManager: false,
      extraApiserverArgs: ["--enable-priority-and-fairness=false"],
    });
    const kc = new KubeConfig();
    kc.loadFromFile(plane.kubeconfigPath);
    kube = createKube(kc);
  });
  afterAll(async () => {
    await plane?.stop();
  });

  it("by default applies 300 a second, bursts of 600: a burst above it waits", async () => {
    const { access, limiter, sent } = limitedAccess(kube);
    await burstOfReads(access, "default");
    expect(sent()).toBe(BURST + 1);
    expect(limiter.stats().priorityAndFairness).toBe(false);
    expect(limiter.stats().limitWaits).toBeGreaterThan(0);
  });
});

describe("the apiserver's 429s (a priority level that rejects)", () => {
  let ns!: TestNamespace;
  const admin = createKube(testKubeConfig());
  const account = "creator";
  let names!: { level: string; schema: string; binding: string };
  let creatorKc!: KubeConfig;
  let schemaUid = "";
  let creator!: Kube;

  beforeAll(async () => {
    ns = await createTestNamespace("apf-429");
    names = { level: `keyward-test-${ns.name}`, schema: `keyward-test-${ns.name}`, binding: `keyward-test-${ns.name}` };
    const post = (path: string, body: unknown): Promise<{ metadata: { uid: string } }> =>
      kubeJson(admin.access, { method: "POST", path, body });
    // A ServiceAccount may create ConfigMaps here; its requests go to a level of about 3 seats that rejects what does not fit.
    await post(`/api/v1/namespaces/${ns.name}/serviceaccounts`, { metadata: { name: account } });
    // All of keyward's rights (its Leases in "default" too); not system:masters, so not exempt from APF.
    await post("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
      metadata: { name: names.binding },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
      subjects: [{ kind: "ServiceAccount", name: account, namespace: ns.name }],
    });
    await post("/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations", {
      metadata: { name: names.level },
      spec: {
        type: "Limited",
        limited: { nominalConcurrencyShares: 1, lendablePercent: 0, borrowingLimitPercent: 0, limitResponse: { type: "Reject" } },
      },
    });
    const schema = await post("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", {
      metadata: { name: names.schema },
      spec: {
        priorityLevelConfiguration: { name: names.level },
        matchingPrecedence: 100,
        distinguisherMethod: { type: "ByUser" },
        rules: [
          {
            subjects: [{ kind: "ServiceAccount", serviceAccount: { name: account, namespace: ns.name } }],
            resourceRules: [{ verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true }],
          },
        ],
      },
    });
    schemaUid = schema.metadata.uid;
    const token = await kubeJson<{ status: { token: string } }>(admin.access, {
      method: "POST",
      path: `/api/v1/namespaces/${ns.name}/serviceaccounts/${account}/token`,
      body: { spec: { audiences: [], expirationSeconds: 3600 } },
    });
    const cluster = testKubeConfig().getCurrentCluster();
    if (!cluster) throw new Error("no cluster in the test kubeconfig");
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ ...cluster, name: "test" }],
      users: [{ name: account, token: token.status.token }],
      contexts: [{ name: account, cluster: "test", user: account }],
      currentContext: account,
    });
    creatorKc = kc;
    creator = createKube(kc);
  });

  afterAll(async () => {
    for (const path of [
      `/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/${names.schema}`,
      `/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations/${names.level}`,
      `/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${names.binding}`,
    ])
      await kubeJson(admin.access, { method: "DELETE", path }).catch(() => undefined);
    await ns?.cleanup();
  });

  /** The apiserver applies a new FlowSchema a moment later: wait until its answers name it. */
  const classified = (path: string): Promise<true> =>
    waitFor(
      async () => {
        const response = await creator.access.dispatcher.request({
          origin: new URL(creator.access.server).origin,
          path,
          method: "GET",
          headers: { authorization: (await creator.access.authorization()) ?? "" },
        });
        await response.body.dump();
        return response.headers["x-kubernetes-pf-flowschema-uid"] === schemaUid ? true : undefined;
      },
      { timeoutMs: 60_000, description: "the apiserver classifies the account's requests with the test's FlowSchema" },
    );

  it("every create lands exactly once; the Retry-After held the requests back, counted", async () => {
    const path = `/api/v1/namespaces/${ns.name}/configmaps`;
    await classified(path);

    const { access, limiter, sent } = limitedAccess(creator);
    const creates = 100;
    const created = await Promise.all(
      Array.from({ length: creates }, (_, i) =>
        kubeJson<{ metadata: { name: string } }>(access, {
          method: "POST",
          path,
          body: { metadata: { generateName: "burst-", labels: { burst: "apf" } }, data: { i: String(i) } },
        }),
      ),
    );
    const stats = limiter.stats();
    // The apiserver refused some (429 with Retry-After); each was sent again after the hold and landed.
    expect(stats.throttled).toBeGreaterThan(0);
    expect(stats.retryAfterWaits).toBeGreaterThan(0);
    expect(stats.priorityAndFairness).toBe(true);
    expect(sent()).toBe(creates + stats.throttled);
    // generateName: a create sent twice and served twice would be two objects.
    const listed = await kubeJson<{ items: { metadata: { name: string } }[] }>(admin.access, {
      path,
      query: { labelSelector: "burst=apf" },
    });
    const names = created.map((c) => c.metadata.name).sort();
    expect(new Set(names).size).toBe(creates);
    expect(listed.items.map((c) => c.metadata.name).sort()).toEqual(names);
  });

  it("keyward under that level: every Project Ready and created once at the service, the 429s in its metrics", async () => {
    const token = "apf-429-token";
    const emulator = await startEmulator({ tokens: [token] });
    let keyward: RunningKeyward | undefined;
    try {
      await installProvider(testKubeConfig(), ns.name, emulator.url, token);
      await classified(`/apis/keyward.dev/v1alpha1/namespaces/${ns.name}/projects`);
      keyward = await startKeyward(creatorKc, { namespaces: [ns.name], concurrency: 16 });
      const names = Array.from({ length: 40 }, (_, i) => `p${String(i)}`);
      await createReadyProjects(testKubeConfig(), ns.name, names, (name) => ({
        slug: `${name}-apf`,
        description: "created under a full priority level",
      }));
      const creates = emulator.requests().filter((r) => r.operation === "createProject" && r.status === 200);
      expect(creates).toHaveLength(names.length);
      const metric = async (
        counter: { get(): Promise<{ values: { value: number; labels: object }[] }> },
        labels: object = {},
      ): Promise<number> =>
        (await counter.get()).values
          .filter((v) => Object.entries(labels).every(([k, x]) => (v.labels as Record<string, unknown>)[k] === x))
          .reduce((n, v) => n + v.value, 0);
      expect(await metric(keyward.operator.metrics.kubeApiThrottled)).toBeGreaterThan(0);
      expect(await metric(keyward.operator.metrics.kubeApiWaits, { reason: "retry_after" })).toBeGreaterThan(0);
      expect(await metric(keyward.operator.metrics.kubeApiWaits, { reason: "client_limit" })).toBe(0);
    } finally {
      await keyward?.stop();
      await emulator.close();
    }
  });
});
