// keyward under the chart's own ServiceAccount and roles, against the real apiserver: the chart
// is applied for real, keyward runs in-process with a token the TokenRequest API minted for
// that ServiceAccount, and its resources reach Ready; a namespaced install cannot touch
// another namespace.
import { randomBytes } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AuthenticationV1TokenRequest,
  CoreV1Api,
  CoreV1Event,
  CustomObjectsApi,
  KubeConfig,
  V1ObjectMeta,
  V1ObjectReference,
  V1TokenRequestSpec,
} from "@kubernetes/client-node";
import { createLogger } from "../../../src/log.ts";
import { createKube } from "../../../src/kube/client.ts";
import { runLeaderElection } from "../../../src/kube/lease.ts";
import { createTestNamespace, kubectl, testKubeConfig, waitFor, type TestNamespace } from "../../controlplane/testenv.ts";
import { loadDefaultSeed } from "../../emulator/default-seed.ts";
import { startEmulator, type Emulator } from "../../emulator/server.ts";
import { keywardPlurals, parseYamlDocuments, renderChart, repoRoot } from "../../unit/chart/helm.ts";
import { condition, createCustom, getCustom, installProvider, isReady, startKeyward, type RunningKeyward } from "../support/keyward.ts";

const TOKEN = "kw-rbac-service-token-51d0e2";

interface Install {
  release: string;
  namespace: string;
  serviceAccount: string;
  leaseName: string;
  /** Cluster-scoped objects the install created, to delete afterwards. */
  clusterScoped: string[];
}

/** Renders the chart and applies it for real (kubectl apply), as `helm install` would. */
async function installChart(namespace: string, watchNamespaces: string[], values: Record<string, unknown> = {}): Promise<Install> {
  const release = `kw-${randomBytes(3).toString("hex")}`;
  // A cluster-wide install leaves out the aggregated ClusterRoles (shared by the whole control
  // plane); a namespaced one keeps the default, which must render nothing cluster-scoped.
  const rbac = watchNamespaces.length === 0 ? { aggregateToDefaultRoles: false } : {};
  // The suite's CRDs are shared by every test file: the chart's are left out.
  const yaml = await renderChart({ release, namespace, setJson: { watchNamespaces, rbac, crds: { enabled: false }, ...values } });
  const applied = await kubectl(["apply", "-f", "-"], { input: yaml });
  expect(applied.code, applied.stderr).toBe(0);
  const docs = parseYamlDocuments(yaml);
  const fullname = `${release}-keyward`;
  return {
    release,
    namespace,
    serviceAccount: fullname,
    leaseName: `${fullname}-leader`,
    clusterScoped: docs.filter((d) => d.kind.startsWith("Cluster")).map((d) => `${d.kind.toLowerCase()}/${d.metadata.name}`),
  };
}

/** A kubeconfig that authenticates as the ServiceAccount with a token from the TokenRequest API. */
async function serviceAccountKubeConfig(install: Install): Promise<KubeConfig> {
  const admin = testKubeConfig();
  const request = await admin.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
    name: install.serviceAccount,
    namespace: install.namespace,
    body: Object.assign(new AuthenticationV1TokenRequest(), {
      spec: Object.assign(new V1TokenRequestSpec(), { audiences: [], expirationSeconds: 3600 }),
    }),
  });
  const token = request.status?.token;
  if (!token) throw new Error("TokenRequest returned no token");
  const cluster = admin.getCurrentCluster();
  if (!cluster) throw new Error("admin kubeconfig has no cluster");
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ ...cluster, name: "test" }],
    users: [{ name: install.serviceAccount, token }],
    contexts: [{ name: "sa", cluster: "test", user: install.serviceAccount }],
    currentContext: "sa",
  });
  return kc;
}

async function canI(install: Install, verb: string, resource: string, namespace?: string, subresource?: string): Promise<boolean> {
  const args = ["auth", "can-i", verb, resource, `--as=system:serviceaccount:${install.namespace}:${install.serviceAccount}`];
  if (subresource) args.push(`--subresource=${subresource}`);
  args.push(...(namespace ? ["--namespace", namespace] : ["--all-namespaces"]));
  const result = await kubectl(args);
  if (result.stdout.trim() !== "yes" && result.stdout.trim() !== "no") throw new Error(`kubectl auth can-i: ${result.stderr}`);
  return result.stdout.trim() === "yes";
}

const statusCode = async (call: () => Promise<unknown>): Promise<number> => {
  try {
    await call();
    return 200;
  } catch (err) {
    return (err as { code?: number }).code ?? -1;
  }
};

const project = (name: string, slug: string): object => ({
  apiVersion: "keyward.dev/v1alpha1",
  kind: "Project",
  metadata: { name },
  spec: { name, slug },
});

async function expectReady(kc: KubeConfig, namespace: string, plural: string, name: string): Promise<void> {
  const obj = await waitFor(
    async () => {
      const o = await getCustom(kc, namespace, plural, name);
      return isReady(o) ? o : undefined;
    },
    { timeoutMs: 60_000, description: `${plural} ${namespace}/${name} Ready` },
  );
  expect(condition(obj, "Ready")?.status).toBe("True");
}

function expectNoForbidden(keyward: RunningKeyward): void {
  // 403 as a status, not as digits of a decimal such as "durationMs":21.403.
  expect(keyward.logs.filter((line) => /forbidden|(?<![.\d])\b403\b(?!\.\d)/i.test(line) && !line.includes(TOKEN))).toEqual([]);
  expect(keyward.logs.join("\n")).not.toContain(TOKEN);
}

let emulator: Emulator;
const admin = (): KubeConfig => testKubeConfig();

beforeAll(async () => {
  // The default seed holds what the samples refer to (machine identity, PKI project, members).
  emulator = await startEmulator({ tokens: [TOKEN], seed: loadDefaultSeed(), jobDelayMs: 50 });
});
afterAll(async () => {
  await emulator.close();
});

describe("a cluster-wide install (ClusterRole)", () => {
  let releaseNs: TestNamespace;
  let watched: TestNamespace;
  let install: Install;
  let keyward: RunningKeyward | undefined;

  beforeAll(async () => {
    [releaseNs, watched] = await Promise.all([createTestNamespace("rbac-release"), createTestNamespace("rbac-watched")]);
    install = await installChart(releaseNs.name, []);
  });
  afterAll(async () => {
    await keyward?.stop();
    if (install.clusterScoped.length > 0) await kubectl(["delete", "--ignore-not-found", ...install.clusterScoped]);
    await Promise.all([releaseNs.cleanup(), watched.cleanup()]);
  });

  it("lets keyward, as its ServiceAccount, bring a ProviderConfig and a Project to Ready", async () => {
    const kc = await serviceAccountKubeConfig(install);
    await installProvider(admin(), watched.name, emulator.url, TOKEN);
    await createCustom(admin(), watched.name, "projects", project("rbac-cluster", "rbac-cluster-wide"));
    // One namespace only: the shared control plane holds other tests' objects, which this
    // keyward must not reconcile. The ClusterRole is what lets it list and watch there.
    keyward = await startKeyward(kc, { namespaces: [watched.name], resyncIntervalMs: 60_000, holderNamespace: install.namespace });
    await expectReady(admin(), watched.name, "providerconfigs", "default");
    await expectReady(admin(), watched.name, "projects", "rbac-cluster");
    // The Events keyward recorded went through the role's core/v1 events grant.
    const events = await admin().makeApiClient(CoreV1Api).listNamespacedEvent({ namespace: watched.name });
    expect(events.items.some((e) => e.involvedObject.kind === "Project" && e.source?.component === "keyward")).toBe(true);
    expectNoForbidden(keyward);
  });

  it("can list keyward's kinds in every namespace, and nothing it does not use", async () => {
    const kc = await serviceAccountKubeConfig(install);
    const custom = kc.makeApiClient(CustomObjectsApi);
    expect(await statusCode(() => custom.listClusterCustomObject({ group: "keyward.dev", version: "v1alpha1", plural: "projects" }))).toBe(
      200,
    );
    expect(await canI(install, "watch", "secrets")).toBe(true);
    expect(await canI(install, "delete", "projects.keyward.dev")).toBe(false);
    expect(await canI(install, "create", "projects.keyward.dev")).toBe(false);
    expect(await canI(install, "get", "configmaps")).toBe(false);
    expect(await canI(install, "list", "namespaces")).toBe(false);
    expect(await canI(install, "create", "events.events.k8s.io", watched.name)).toBe(false);
    expect(await canI(install, "get", "customresourcedefinitions.apiextensions.k8s.io")).toBe(false);
  });

  it("holds the leader-election Lease in its namespace, and Leases in no other namespace", async () => {
    const kc = await serviceAccountKubeConfig(install);
    const log = createLogger({ level: "warn" });
    const election = runLeaderElection({
      kube: createKube(kc),
      namespace: install.namespace,
      name: install.leaseName,
      identity: "rbac-test",
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 500,
      logger: log,
      onStartedLeading: () => undefined,
      onStoppedLeading: () => undefined,
    });
    try {
      await waitFor(() => Promise.resolve(election.isLeader() ? true : undefined), {
        timeoutMs: 30_000,
        description: "the ServiceAccount to take the lease",
      });
    } finally {
      await election.stop();
    }
    expect(await canI(install, "update", `leases.coordination.k8s.io/${install.leaseName}`, install.namespace)).toBe(true);
    // The claim rule's Leases (keyward-holds-*, named by a digest of an id) reach every Lease of
    // the release namespace (hence: a namespace of keyward's own), and no Lease anywhere else.
    expect(await canI(install, "update", "leases.coordination.k8s.io/keyward-holds-project-0f1e", install.namespace)).toBe(true);
    expect(await canI(install, "create", "leases.coordination.k8s.io", watched.name)).toBe(false);
    expect(await canI(install, "update", "leases.coordination.k8s.io/someone-elses-lease", watched.name)).toBe(false);
  });
});

describe("a cluster-wide install serving ClusterProviderConfigs", () => {
  let releaseNs: TestNamespace;
  let creds: TestNamespace;
  let watched: TestNamespace;
  let install: Install;
  let keyward: RunningKeyward | undefined;
  const cpc = `rbac-${randomBytes(3).toString("hex")}`;
  const cpcApi = { group: "keyward.dev", version: "v1alpha1", plural: "clusterproviderconfigs" };

  beforeAll(async () => {
    [releaseNs, creds, watched] = await Promise.all([
      createTestNamespace("rbaccpc-release"),
      createTestNamespace("rbaccpc-creds"),
      createTestNamespace("rbaccpc-watched"),
    ]);
    install = await installChart(releaseNs.name, [], {
      clusterProviderConfig: { enabled: true, create: false, credentialsNamespace: creds.name },
    });
  });
  afterAll(async () => {
    await keyward?.stop();
    await admin()
      .makeApiClient(CustomObjectsApi)
      .deleteClusterCustomObject({ ...cpcApi, name: cpc })
      .catch(() => undefined);
    if (install.clusterScoped.length > 0) await kubectl(["delete", "--ignore-not-found", ...install.clusterScoped]);
    await Promise.all([releaseNs.cleanup(), creds.cleanup(), watched.cleanup()]);
  });

  it("lets keyward, as its ServiceAccount, bring a ClusterProviderConfig and a Project using it to Ready", async () => {
    const kc = await serviceAccountKubeConfig(install);
    await admin()
      .makeApiClient(CoreV1Api)
      .createNamespacedSecret({
        namespace: creds.name,
        body: { metadata: { name: "service-token", labels: { "keyward.dev/credentials": "true" } }, stringData: { token: TOKEN } },
      });
    await admin()
      .makeApiClient(CustomObjectsApi)
      .createClusterCustomObject({
        ...cpcApi,
        body: {
          apiVersion: "keyward.dev/v1alpha1",
          kind: "ClusterProviderConfig",
          metadata: { name: cpc },
          spec: { baseUrl: emulator.url, credentialsSecretRef: { name: "service-token" }, namespaces: [watched.name] },
        },
      });
    await createCustom(admin(), watched.name, "projects", {
      ...(project("rbac-cpc", "rbac-cluster-config") as { spec: object }),
      spec: { name: "rbac-cpc", slug: "rbac-cluster-config", providerConfigRef: { kind: "ClusterProviderConfig", name: cpc } },
    });
    keyward = await startKeyward(kc, {
      namespaces: [watched.name],
      resyncIntervalMs: 60_000,
      clusterProviderConfigs: { credentialsNamespace: creds.name },
      holderNamespace: install.namespace,
    });
    await expectReady(admin(), watched.name, "projects", "rbac-cpc");
    const status = (
      (await admin()
        .makeApiClient(CustomObjectsApi)
        .getClusterCustomObject({ ...cpcApi, name: cpc })) as { status?: { conditions?: { type: string; status: string }[] } }
    ).status;
    expect(status?.conditions?.find((c) => c.type === "Ready")?.status).toBe("True");
    expectNoForbidden(keyward);
  });

  it("can read ClusterProviderConfigs and Namespaces, change neither, and read Secrets in the credentials namespace", async () => {
    expect(await canI(install, "watch", "clusterproviderconfigs.keyward.dev")).toBe(true);
    expect(await canI(install, "patch", "clusterproviderconfigs.keyward.dev", undefined, "status")).toBe(true);
    expect(await canI(install, "patch", "clusterproviderconfigs.keyward.dev")).toBe(false);
    expect(await canI(install, "delete", "clusterproviderconfigs.keyward.dev")).toBe(false);
    expect(await canI(install, "list", "namespaces")).toBe(true);
    expect(await canI(install, "patch", "namespaces")).toBe(false);
    expect(await canI(install, "list", "secrets", creds.name)).toBe(true);
  });
});

describe("a namespaced install (Role in one namespace)", () => {
  let releaseNs: TestNamespace;
  let inside: TestNamespace;
  let outside: TestNamespace;
  let install: Install;
  let keyward: RunningKeyward | undefined;

  beforeAll(async () => {
    [releaseNs, inside, outside] = await Promise.all([
      createTestNamespace("rbacns-release"),
      createTestNamespace("rbacns-in"),
      createTestNamespace("rbacns-out"),
    ]);
    install = await installChart(releaseNs.name, [inside.name]);
  });
  afterAll(async () => {
    await keyward?.stop();
    if (install.clusterScoped.length > 0) await kubectl(["delete", "--ignore-not-found", ...install.clusterScoped]);
    await Promise.all([releaseNs.cleanup(), inside.cleanup(), outside.cleanup()]);
  });

  it("installs no ClusterRole or ClusterRoleBinding, with rbac.aggregateToDefaultRoles at its default", () => {
    expect(install.clusterScoped).toEqual([]);
  });

  it("may update the finalizers of AccessTokens only (their Secrets block owner deletion)", async () => {
    expect(await canI(install, "update", "accesstokens.keyward.dev", inside.name, "finalizers")).toBe(true);
    for (const plural of keywardPlurals.filter((p) => p !== "accesstokens")) {
      expect(await canI(install, "update", `${plural}.keyward.dev`, inside.name, "finalizers"), plural).toBe(false);
    }
  });

  it("lets keyward reconcile in its namespace", async () => {
    const kc = await serviceAccountKubeConfig(install);
    await installProvider(admin(), inside.name, emulator.url, TOKEN);
    await createCustom(admin(), inside.name, "projects", project("rbac-inside", "rbac-namespaced"));
    keyward = await startKeyward(kc, { namespaces: [inside.name], resyncIntervalMs: 60_000, holderNamespace: install.namespace });
    await expectReady(admin(), inside.name, "projects", "rbac-inside");
    expectNoForbidden(keyward);
  });

  it("cannot touch another namespace or the whole cluster", async () => {
    const kc = await serviceAccountKubeConfig(install);
    await installProvider(admin(), outside.name, emulator.url, TOKEN);
    await createCustom(admin(), outside.name, "projects", project("rbac-outside", "rbac-outside"));
    const custom = kc.makeApiClient(CustomObjectsApi);
    const core = kc.makeApiClient(CoreV1Api);
    const projects = { group: "keyward.dev", version: "v1alpha1", plural: "projects" };
    expect(await statusCode(() => custom.listNamespacedCustomObject({ ...projects, namespace: inside.name }))).toBe(200);
    expect(await statusCode(() => custom.listNamespacedCustomObject({ ...projects, namespace: outside.name }))).toBe(403);
    expect(await statusCode(() => custom.listClusterCustomObject(projects))).toBe(403);
    expect(
      await statusCode(() =>
        custom.patchNamespacedCustomObjectStatus({
          ...projects,
          namespace: outside.name,
          name: "rbac-outside",
          body: [{ op: "add", path: "/status", value: {} }],
        }),
      ),
    ).toBe(403);
    expect(await statusCode(() => core.readNamespacedSecret({ namespace: outside.name, name: "default-token" }))).toBe(403);
    expect(
      await statusCode(() =>
        core.createNamespacedEvent({
          namespace: outside.name,
          body: Object.assign(new CoreV1Event(), {
            metadata: Object.assign(new V1ObjectMeta(), { name: "probe" }),
            involvedObject: new V1ObjectReference(),
          }),
        }),
      ),
    ).toBe(403);
    // And the object there was never reconciled.
    const untouched = await getCustom(admin(), outside.name, "projects", "rbac-outside");
    expect(untouched?.status).toBeUndefined();
  });
});

describe("every sample under the chart's namespaced Role", () => {
  let releaseNs: TestNamespace;
  let inside: TestNamespace;
  let install: Install;
  let keyward: RunningKeyward | undefined;
  const samplesDir = join(repoRoot, "config", "samples");
  // The samples' own ProviderConfigs (and ClusterProviderConfig) point at a local dev emulator; the test installs its own.
  const samples = readdirSync(samplesDir).filter(
    (f) => f.endsWith(".yaml") && !/^(cluster)?providerconfig/.test(f) && !f.startsWith("kustomization"),
  );
  const objects = samples
    .flatMap((f) => parseYamlDocuments(readFileSync(join(samplesDir, f), "utf8")))
    .filter((d) => d.apiVersion.startsWith("keyward.dev/"));

  beforeAll(async () => {
    [releaseNs, inside] = await Promise.all([createTestNamespace("rbacsamples-release"), createTestNamespace("rbacsamples")]);
    install = await installChart(releaseNs.name, [inside.name]);
  });
  afterAll(async () => {
    await keyward?.stop();
    await Promise.all([releaseNs.cleanup(), inside.cleanup()]);
  });

  it("brings every kind to Ready", async () => {
    const kc = await serviceAccountKubeConfig(install);
    await installProvider(admin(), inside.name, emulator.url, TOKEN);
    for (const file of samples) {
      const applied = await kubectl(["apply", "--namespace", inside.name, "-f", join(samplesDir, file)]);
      expect(applied.code, `${file}: ${applied.stderr}`).toBe(0);
    }
    keyward = await startKeyward(kc, { namespaces: [inside.name], resyncIntervalMs: 60_000, holderNamespace: install.namespace });
    const pluralOf = (kind: string): string => {
      const plural = keywardPlurals.find((p) => p === `${kind.toLowerCase()}s`);
      if (!plural) throw new Error(`no plural for ${kind}`);
      return plural;
    };
    for (const obj of objects) await expectReady(admin(), inside.name, pluralOf(obj.kind), obj.metadata.name);
    const kinds = new Set(objects.map((o) => o.kind));
    expect(kinds.size).toBeGreaterThanOrEqual(4);
    expectNoForbidden(keyward);
  });
});
