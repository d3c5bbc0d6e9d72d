// /metrics with metrics.auth kubernetes, against the real apiserver: the chart's roles are
// applied for real, keyward reviews callers as its own ServiceAccount (a TokenRequest token), and
// callers are ServiceAccounts with and without the chart's metrics-reader role.
import { randomBytes } from "node:crypto";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthenticationV1TokenRequest, CoreV1Api, KubeConfig, V1ServiceAccount, V1TokenRequestSpec } from "@kubernetes/client-node";
import { Counter, Registry } from "prom-client";
import { startEndpoints } from "../../src/endpoints.ts";
import { createKube } from "../../src/kube/client.ts";
import { createMetricsAuthorizer, type MetricsAuthorizer } from "../../src/kube/metrics-auth.ts";
import { createTestNamespace, kubectl, testKubeConfig, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import { parseYamlDocuments, renderChart } from "../unit/chart/helm.ts";

let ns: TestNamespace;
let release: string;
let clusterScoped: string[] = [];
const admin = testKubeConfig();

async function serviceAccountToken(namespace: string, name: string): Promise<string> {
  const core = admin.makeApiClient(CoreV1Api);
  const request = await core.createNamespacedServiceAccountToken({
    name,
    namespace,
    body: Object.assign(new AuthenticationV1TokenRequest(), {
      spec: Object.assign(new V1TokenRequestSpec(), { audiences: [], expirationSeconds: 3600 }),
    }),
  });
  const token = request.status?.token;
  if (!token) throw new Error("TokenRequest returned no token");
  return token;
}

function tokenKubeConfig(token: string): KubeConfig {
  const cluster = admin.getCurrentCluster();
  if (!cluster) throw new Error("admin kubeconfig has no cluster");
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ ...cluster, name: "test" }],
    users: [{ name: "sa", token }],
    contexts: [{ name: "sa", cluster: "test", user: "sa" }],
    currentContext: "sa",
  });
  return kc;
}

async function serve(authorizer: MetricsAuthorizer): Promise<{ url: string; close: () => Promise<void> }> {
  const registry = new Registry();
  new Counter({ name: "keyward_auth_test_total", help: "a series only this registry has", registers: [registry] }).inc();
  const servers: Server[] = await startEndpoints({
    metricsPort: 0,
    healthPort: 0,
    bindAddress: "127.0.0.1",
    registry,
    health: { ready: true },
    authorizer,
  });
  const port = (servers[0]?.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve)))).then(() => undefined),
  };
}

async function get(url: string, token?: string): Promise<{ status: number; body: string }> {
  const response = await fetch(url, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });
  return { status: response.status, body: await response.text() };
}

let keywardToken: string;
let readerToken: string;
let strangerToken: string;

beforeAll(async () => {
  ns = await createTestNamespace("metrics-auth");
  release = `kw-${randomBytes(3).toString("hex")}`;
  const core = admin.makeApiClient(CoreV1Api);
  for (const name of ["scraper", "stranger"]) {
    await core.createNamespacedServiceAccount({ namespace: ns.name, body: Object.assign(new V1ServiceAccount(), { metadata: { name } }) });
  }
  // The chart's own objects: keyward's ServiceAccount and its review roles, the reader role bound
  // to `scraper` through metrics.readers. The rest of the release is not needed here.
  const docs = parseYamlDocuments(
    await renderChart({
      release,
      namespace: ns.name,
      setJson: { rbac: { aggregateToDefaultRoles: false }, metrics: { readers: [{ kind: "ServiceAccount", name: "scraper" }] } },
    }),
  ).filter((d) => (d.kind === "ServiceAccount" && d.metadata.name === `${release}-keyward`) || d.metadata.name.includes("-metrics-"));
  expect(docs.map((d) => `${d.kind}/${d.metadata.name}`).sort()).toEqual([
    `ClusterRole/${release}-keyward-metrics-auth`,
    `ClusterRole/${release}-keyward-metrics-reader`,
    `ClusterRoleBinding/${release}-keyward-metrics-auth`,
    `ClusterRoleBinding/${release}-keyward-metrics-reader`,
    `ServiceAccount/${release}-keyward`,
  ]);
  clusterScoped = docs.filter((d) => d.kind.startsWith("Cluster")).map((d) => `${d.kind.toLowerCase()}/${d.metadata.name}`);
  const applied = await kubectl(["apply", "-f", "-"], { input: docs.map((d) => JSON.stringify(d)).join("\n---\n") });
  expect(applied.code, applied.stderr).toBe(0);
  [keywardToken, readerToken, strangerToken] = await Promise.all([
    serviceAccountToken(ns.name, `${release}-keyward`),
    serviceAccountToken(ns.name, "scraper"),
    serviceAccountToken(ns.name, "stranger"),
  ]);
});

afterAll(async () => {
  if (clusterScoped.length > 0) await kubectl(["delete", "--ignore-not-found", ...clusterScoped]);
  await ns?.cleanup();
});

describe("/metrics reviewed by the apiserver", () => {
  let endpoint: { url: string; close: () => Promise<void> };
  beforeAll(async () => {
    endpoint = await serve(createMetricsAuthorizer({ access: createKube(tokenKubeConfig(keywardToken)).access }));
  });
  afterAll(() => endpoint.close());

  it("answers 401 without a token and with a token the apiserver does not know", async () => {
    expect((await get(`${endpoint.url}/metrics`)).status).toBe(401);
    expect((await get(`${endpoint.url}/metrics`, "not-a-token")).status).toBe(401);
  });

  it("answers 403 to a ServiceAccount without the metrics-reader role", async () => {
    const answer = await get(`${endpoint.url}/metrics`, strangerToken);
    expect(answer.status).toBe(403);
    expect(answer.body).toContain(`system:serviceaccount:${ns.name}:stranger`);
    expect(answer.body).not.toContain("keyward_auth_test_total");
  });

  it("serves the metrics to a ServiceAccount bound to the metrics-reader role", async () => {
    // RBAC reaches the apiserver's authorizer through its informers: the first answer may lag.
    const answer = await waitFor(
      async () => {
        const a = await get(`${endpoint.url}/metrics`, readerToken);
        return a.status === 200 ? a : undefined;
      },
      { timeoutMs: 30_000, description: "scraper allowed" },
    );
    expect(answer.body).toContain("keyward_auth_test_total 1");
  });

  it("serves the probes without a token", async () => {
    expect((await get(`${endpoint.url}/healthz`)).status).toBe(200);
    expect((await get(`${endpoint.url}/readyz`)).status).toBe(200);
  });
});

describe("the chart's ServiceMonitor credentials", () => {
  let endpoint: { url: string; close: () => Promise<void> };
  beforeAll(async () => {
    endpoint = await serve(createMetricsAuthorizer({ access: createKube(tokenKubeConfig(keywardToken)).access }));
  });
  afterAll(() => endpoint.close());

  it("a token from the scraper Secret the ServiceMonitor names is accepted by /metrics", async () => {
    // The release's scraper identity, as the chart renders it with serviceMonitor.enabled: a
    // ServiceAccount, its kubernetes.io/service-account-token Secret, the binding to metrics-reader
    // (applied above). Applied in the chart's order: the ServiceAccount before its Secret.
    const docs = parseYamlDocuments(
      await renderChart({
        release,
        namespace: ns.name,
        setJson: { rbac: { aggregateToDefaultRoles: false }, serviceMonitor: { enabled: true } },
      }),
    );
    const monitor = docs.find((d) => d.kind === "ServiceMonitor") as unknown as {
      spec: { endpoints: { authorization: { type: string; credentials: { name: string; key: string } } }[] };
    };
    const credentials = monitor.spec.endpoints[0]?.authorization.credentials;
    expect(credentials).toEqual({ name: `${release}-keyward-scraper-token`, key: "token" });
    const scraper = docs.filter((d) => d.metadata.name.includes("-scraper"));
    expect(scraper.map((d) => `${d.kind}/${d.metadata.name}`)).toEqual([
      `ServiceAccount/${release}-keyward-scraper`,
      `Secret/${release}-keyward-scraper-token`,
      `ClusterRoleBinding/${release}-keyward-metrics-scraper`,
    ]);
    clusterScoped.push(`clusterrolebinding/${release}-keyward-metrics-scraper`);
    const applied = await kubectl(["apply", "-f", "-"], { input: scraper.map((d) => JSON.stringify(d)).join("\n---\n") });
    expect(applied.code, applied.stderr).toBe(0);

    // Kubernetes' token controller fills the Secret; the test reads it as prometheus-operator does.
    const core = admin.makeApiClient(CoreV1Api);
    const token = await waitFor(
      async () => {
        const secret = await core.readNamespacedSecret({ name: credentials?.name ?? "", namespace: ns.name });
        const data = secret.data?.[credentials?.key ?? ""];
        return data ? Buffer.from(data, "base64").toString("utf8") : undefined;
      },
      { timeoutMs: 30_000, description: "the scraper token Secret filled" },
    );
    const answer = await waitFor(
      async () => {
        const a = await get(`${endpoint.url}/metrics`, token);
        return a.status === 200 ? a : undefined;
      },
      { timeoutMs: 30_000, description: "the scraper allowed" },
    );
    expect(answer.body).toContain("keyward_auth_test_total 1");
  });
});

describe("the decision cache", () => {
  it("keeps an allow for its TTL only, on its own clock", async () => {
    let clock = 0;
    const access = createKube(tokenKubeConfig(keywardToken)).access;
    const authorizer = createMetricsAuthorizer({ access, allowTtlMs: 60_000, now: () => clock });
    const reader = await serviceAccountToken(ns.name, "scraper");
    await waitFor(async () => ((await authorizer.check(`Bearer ${reader}`)).status === 200 ? true : undefined), {
      timeoutMs: 30_000,
      description: "allowed",
    });
    // The grant goes; the cached allow stands until the TTL has passed on the authorizer's clock.
    const removed = await kubectl(["delete", `clusterrolebinding/${release}-keyward-metrics-reader`]);
    expect(removed.code, removed.stderr).toBe(0);
    clock += 59_000;
    expect((await authorizer.check(`Bearer ${reader}`)).status).toBe(200);
    clock += 2_000;
    await waitFor(
      async () => {
        clock += 60_001;
        return (await authorizer.check(`Bearer ${reader}`)).status === 403 ? true : undefined;
      },
      { timeoutMs: 30_000, description: "the expired allow re-reviewed and refused" },
    );
  });

  it("reviews fresh tokens at a bounded rate: a flood of garbage tokens costs the apiserver its burst, the rest get 429", async () => {
    let clock = 0;
    const access = createKube(tokenKubeConfig(keywardToken)).access;
    const authorizer = createMetricsAuthorizer({ access, now: () => clock, reviewsPerSecond: 1, reviewBurst: 5 });
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => authorizer.check(`Bearer garbage-${i}-${ns.name}`)));
    const count = (status: number): number => answers.filter((a) => a.status === status).length;
    // Reviewed (and refused as unauthenticated) only as many as the burst.
    expect(count(401)).toBe(5);
    expect(count(429)).toBe(45);
    // A refused token is cached: asking again costs no review, even with the bucket empty.
    expect((await authorizer.check(`Bearer garbage-0-${ns.name}`)).status).toBe(401);
    expect((await authorizer.check(`Bearer garbage-49-${ns.name}`)).status).toBe(429);
    clock += 1_000;
    expect((await authorizer.check(`Bearer garbage-49-${ns.name}`)).status).toBe(401);
  });

  it("answers 500, and keeps nothing, when keyward itself cannot review", async () => {
    // keyward's own credential is refused by the apiserver: the review fails, which is neither
    // the caller's 401 nor a 403.
    const authorizer = createMetricsAuthorizer({ access: createKube(tokenKubeConfig("not-keywards-token")).access });
    const first = await authorizer.check(`Bearer ${strangerToken}`);
    expect(first).toMatchObject({ status: 500 });
    expect(JSON.stringify(first)).not.toContain(strangerToken);
    expect((await authorizer.check(`Bearer ${strangerToken}`)).status).toBe(500);
  });
});
