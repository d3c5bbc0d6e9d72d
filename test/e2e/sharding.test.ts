// The chart with sharding on, installed the way a platform team runs it (docs/sharding.md):
// cluster-wide (no watchNamespaces), two replicas, and a ClusterProviderConfig created by the
// chart (clusterProviderConfig.create) that half of the eight namespaces use while the other half
// keep their own ProviderConfig. The replicas share the namespaces; the ClusterProviderConfig is
// the leader's. The leader pod is deleted while Projects are being created: the other replica
// takes the leader Lease (and with it the ClusterProviderConfig), the replacement pod joins, and
// every Project is created once and ends Ready on a live replica, under the chart's RBAC only.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  apply,
  countBy,
  createNamespace,
  deployEmulator,
  emulatorRequests,
  installCrds,
  installKeyward,
  keywardObjects,
  keywardPods,
  kubectl,
  kubectlJson,
  kubectlResult,
  providerResources,
  ready,
  waitAllReady,
  waitFor,
  type Emulator,
  type KubeObject,
  uninstallKeyward,
} from "./support.ts";

const release = "kw-shard";
const systemNs = "kw-e2e-shard-system";
const namespaces = Array.from({ length: 8 }, (_, i) => `kw-e2e-shard-${String(i)}`);
// The second half uses the ClusterProviderConfig; the first half its own ProviderConfig `default`.
const sharedNamespaces = new Set(namespaces.slice(namespaces.length / 2));
const SHARD_LABEL = "shard.keyward.dev/owner";
const DRAIN_LABEL = "shard.keyward.dev/drain";
const SHARED_CREDENTIALS_LABEL = "keyward.dev/shared-credentials";
const CLUSTER_PROVIDER_CONFIG = "shared";
// The chart's leader Lease: leaderElection.id, by default <fullname>-leader.
const LEADER_LEASE = `${release}-keyward-leader`;
const PROJECTS_PER_NAMESPACE = 4;

let emulator: Emulator;

const project = (slug: string, ns: string): unknown => ({
  apiVersion: "keyward.dev/v1alpha1",
  kind: "Project",
  metadata: { name: slug },
  spec: {
    name: slug,
    slug,
    type: "secret-manager",
    ...(sharedNamespaces.has(ns) ? { providerConfigRef: { kind: "ClusterProviderConfig", name: CLUSTER_PROVIDER_CONFIG } } : {}),
  },
});

async function createProjects(round: number): Promise<void> {
  for (const [i, ns] of namespaces.entries()) {
    const slugs = Array.from({ length: PROJECTS_PER_NAMESPACE / 2 }, (_, j) => `shard-${String(i)}-${String(round)}-${String(j)}`);
    await apply(
      slugs.map((slug) => project(slug, ns)),
      ns,
    );
  }
}

async function livePods(): Promise<string[]> {
  return (await keywardPods(systemNs, release))
    .filter((p) => p.metadata.deletionTimestamp === undefined && (p as { status?: { phase?: string } }).status?.phase === "Running")
    .map((p) => p.metadata.name);
}

interface Lease {
  metadata: { name: string };
  spec: { holderIdentity?: string };
}

async function leases(): Promise<Lease[]> {
  return (await kubectlJson<{ items: Lease[] }>(["-n", systemNs, "get", "leases"])).items;
}

async function leaderPod(): Promise<string | undefined> {
  return (await leases()).find((l) => l.metadata.name === LEADER_LEASE)?.spec.holderIdentity || undefined;
}

function clusterProviderConfig(): Promise<KubeObject> {
  return kubectlJson(["get", "clusterproviderconfigs.v1alpha1.keyward.dev", CLUSTER_PROVIDER_CONFIG]);
}

/** The ClusterProviderConfig once its status describes its current spec and says Ready. */
function waitClusterProviderConfigReady(timeoutMs: number): Promise<KubeObject> {
  let last: KubeObject | undefined;
  return waitFor(
    `ClusterProviderConfig ${CLUSTER_PROVIDER_CONFIG} Ready`,
    async () => {
      last = await clusterProviderConfig();
      const generation = (last.metadata as { generation?: number }).generation;
      return last.status?.["observedGeneration"] === generation && ready(last)?.status === "True" ? last : undefined;
    },
    timeoutMs,
    () => Promise.resolve(JSON.stringify(last?.status ?? "no status")),
  );
}

/**
 * The lines of a pod's log that speak of a refusal (403 Forbidden). A cluster-wide keyward also
 * reconciles what the e2e files before this one left in their own `kw-e2e-*` namespaces (their
 * uninstalls leave the resources); a line about those namespaces only is theirs, not this
 * install's. Every other line counts: this file's namespaces, the ClusterProviderConfig, Leases,
 * lists and watches.
 */
async function forbiddenLines(pod: string): Promise<string[]> {
  return forbiddenIn(await kubectl(["-n", systemNs, "logs", pod, "--all-containers"]));
}

function forbiddenIn(log: string): string[] {
  const ours = new Set([...namespaces, systemNs, emulator.namespace]);
  return log.split("\n").filter((line) => {
    if (!/forbidden/i.test(line)) return false;
    const mentioned = line.match(/kw-e2e-[a-z0-9-]*[a-z0-9]/g) ?? [];
    return mentioned.length === 0 || mentioned.some((ns) => ours.has(ns));
  });
}

describe("sharding on, cluster-wide, with a ClusterProviderConfig: two replicas, each on its share", () => {
  beforeAll(async () => {
    emulator = await deployEmulator(await createNamespace("kw-e2e-shard-emulator"));
    await installCrds();
    await createNamespace(systemNs);
    // The ClusterProviderConfig's credentials Secret lives in keyward's own namespace (the
    // chart's default clusterProviderConfig.credentialsNamespace).
    await apply(
      providerResources(emulator.baseUrl).filter((o) => (o as { kind: string }).kind === "Secret"),
      systemNs,
    );
    for (const ns of namespaces) {
      await createNamespace(ns);
      if (sharedNamespaces.has(ns)) await kubectl(["label", "namespace", ns, `${SHARED_CREDENTIALS_LABEL}=true`]);
      else await apply(providerResources(emulator.baseUrl), ns);
    }
    await installKeyward(release, systemNs, [
      "--set",
      "replicas=2",
      "--set",
      "sharding.enabled=true",
      "--set",
      "clusterProviderConfig.enabled=true",
      "--set",
      "clusterProviderConfig.create=true",
      "--set",
      `clusterProviderConfig.name=${CLUSTER_PROVIDER_CONFIG}`,
      "--set",
      `clusterProviderConfig.baseUrl=${emulator.baseUrl}`,
      "--set",
      "clusterProviderConfig.secretName=keyward-token",
      "--set-json",
      `clusterProviderConfig.namespaceSelector=${JSON.stringify({ matchLabels: { [SHARED_CREDENTIALS_LABEL]: "true" } })}`,
    ]);
  }, 600_000);

  afterAll(async () => {
    await uninstallKeyward(release, systemNs);
  }, 300_000);

  test("the leader pod deleted mid-run: the ClusterProviderConfig Ready, every Project created once, Ready, on a live replica, nothing refused", async () => {
    // The ClusterProviderConfig is the leader's: no ring, no shard label (the chart grants no
    // patch on it), its status written under the chart's RBAC.
    const before = await waitClusterProviderConfigReady(180_000);
    expect(before.metadata.labels?.[SHARD_LABEL]).toBeUndefined();

    await createProjects(0);
    // Delete the leader while the first Projects are being created: the other replica takes the
    // leader Lease and the ClusterProviderConfig, the replacement pod joins the ring.
    const victim = await leaderPod();
    expect(victim).toBeDefined();
    expect(await livePods()).toContain(victim);
    // The victim's log: read before its deletion and again while it stops (its graceful stop
    // releases its Leases), as long as the pod is there to read.
    let victimLog = await kubectl(["-n", systemNs, "logs", victim ?? "", "--all-containers"]);
    await kubectl(["-n", systemNs, "delete", "pod", victim ?? "", "--wait=false"]);
    await createProjects(1);
    const later = await kubectlResult(["-n", systemNs, "logs", victim ?? "", "--all-containers"]);
    if (later.code === 0 && later.stdout.length > victimLog.length) victimLog = later.stdout;
    const victimForbidden = forbiddenIn(victimLog);
    await kubectl(["-n", systemNs, "rollout", "status", `deployment/${release}-keyward`, "--timeout=300s"]);
    for (const ns of namespaces) await waitAllReady(ns, (sharedNamespaces.has(ns) ? 0 : 1) + PROJECTS_PER_NAMESPACE, 300_000);

    const creates = countBy(await emulatorRequests(emulator), "createProject", (r) => (r.body as { slug?: string }).slug ?? "?");
    expect(creates.size).toBe(namespaces.length * PROJECTS_PER_NAMESPACE);
    expect(
      [...creates.values()].every((n) => n === 1),
      JSON.stringify([...creates]),
    ).toBe(true);

    // Every object settles on a live replica, none left draining, each namespace on one replica.
    const live = await livePods();
    expect(live).toHaveLength(2);
    expect(live).not.toContain(victim);
    const settled = await waitFor(
      "every object labelled for a live replica",
      async () => {
        const objects: KubeObject[] = (await Promise.all(namespaces.map((ns) => keywardObjects(ns)))).flat();
        return objects.every((o) => live.includes(o.metadata.labels?.[SHARD_LABEL] ?? "") && o.metadata.labels?.[DRAIN_LABEL] === undefined)
          ? objects
          : undefined;
      },
      120_000,
    );
    expect(settled.filter((o) => o.kind === "Project")).toHaveLength(namespaces.length * PROJECTS_PER_NAMESPACE);
    for (const ns of namespaces) {
      expect(new Set(settled.filter((o) => o.metadata.namespace === ns).map((o) => o.metadata.labels?.[SHARD_LABEL])).size).toBe(1);
    }
    // Projects of both kinds of provider are Ready: the ClusterProviderConfig's users and the
    // namespaced ProviderConfig's.
    for (const shared of [true, false]) {
      const projects = settled.filter((o) => o.kind === "Project" && sharedNamespaces.has(o.metadata.namespace ?? "") === shared);
      expect(projects).toHaveLength((namespaces.length / 2) * PROJECTS_PER_NAMESPACE);
      expect(projects.every((o) => ready(o)?.status === "True")).toBe(true);
    }

    // Each replica holds its shard Lease; a live replica holds the leader Lease.
    const all = await leases();
    const holders = all.filter((l) => l.metadata.name.includes("-shard-")).map((l) => l.spec.holderIdentity ?? "");
    for (const pod of live) expect(holders).toContain(pod);
    const leader = await waitFor(
      "the leader Lease held by a live replica",
      async () => {
        const holder = await leaderPod();
        return holder !== undefined && live.includes(holder) ? holder : undefined;
      },
      120_000,
    );
    expect(leader).not.toBe(victim);

    // The new leader reconciles the ClusterProviderConfig: a change of its spec after the
    // leader change is observed, and it is Ready again, still without a shard label.
    await kubectl([
      "patch",
      "clusterproviderconfigs.keyward.dev",
      CLUSTER_PROVIDER_CONFIG,
      "--type",
      "merge",
      "-p",
      JSON.stringify({ spec: { namespaces: ["kw-e2e-shard-unused"] } }),
    ]);
    const after = await waitClusterProviderConfigReady(120_000);
    expect((after.metadata as { generation?: number }).generation).toBeGreaterThan(
      (before.metadata as { generation?: number }).generation ?? 0,
    );
    expect(after.metadata.labels?.[SHARD_LABEL]).toBeUndefined();

    // Nothing keyward asked of the apiserver was refused under the chart's RBAC, on any pod.
    const forbidden = [...victimForbidden, ...(await Promise.all(live.map(forbiddenLines))).flat()];
    expect(forbidden).toEqual([]);
  }, 900_000);
});
