// The chart with sharding on (issue 18, docs/sharding.md): two replicas each reconcile their own
// share of eight namespaces; one pod is deleted while Projects are being created, its
// replacement joins, and every Project is created once and ends Ready on a live replica.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  apply,
  countBy,
  createNamespace,
  deployEmulator,
  emulatorRequests,
  helm,
  installCrds,
  installKeyward,
  keywardObjects,
  keywardPods,
  kubectl,
  kubectlJson,
  providerResources,
  waitAllReady,
  waitFor,
  type Emulator,
  type KubeObject,
} from "./support.ts";

const release = "kw-shard";
const systemNs = "kw-e2e-shard-system";
const namespaces = Array.from({ length: 8 }, (_, i) => `kw-e2e-shard-${String(i)}`);
const SHARD_LABEL = "shard.keyward.dev/owner";
const DRAIN_LABEL = "shard.keyward.dev/drain";
const PROJECTS_PER_NAMESPACE = 4;

let emulator: Emulator;

const project = (slug: string): unknown => ({
  apiVersion: "keyward.dev/v1alpha1",
  kind: "Project",
  metadata: { name: slug },
  spec: { name: slug, slug, type: "secret-manager" },
});

async function createProjects(round: number): Promise<void> {
  for (const [i, ns] of namespaces.entries()) {
    const slugs = Array.from({ length: PROJECTS_PER_NAMESPACE / 2 }, (_, j) => `shard-${String(i)}-${String(round)}-${String(j)}`);
    await apply(slugs.map(project), ns);
  }
}

async function livePods(): Promise<string[]> {
  return (await keywardPods(systemNs, release))
    .filter((p) => p.metadata.deletionTimestamp === undefined && (p as { status?: { phase?: string } }).status?.phase === "Running")
    .map((p) => p.metadata.name);
}

describe("sharding on: two replicas, each on its share", () => {
  beforeAll(async () => {
    emulator = await deployEmulator(await createNamespace("kw-e2e-shard-emulator"));
    await installCrds();
    await createNamespace(systemNs);
    for (const ns of namespaces) {
      await createNamespace(ns);
      await apply(providerResources(emulator.baseUrl), ns);
    }
    await installKeyward(release, systemNs, [
      "--set",
      "replicas=2",
      "--set",
      "sharding.enabled=true",
      "--set-json",
      `watchNamespaces=${JSON.stringify(namespaces)}`,
    ]);
  }, 600_000);

  afterAll(async () => {
    await helm(["uninstall", release, "-n", systemNs, "--wait", "--ignore-not-found"]);
  }, 300_000);

  test("a pod deleted mid-run: every Project created once, Ready, on a live replica", async () => {
    await createProjects(0);
    // Delete a pod while the first Projects are being created; its replacement joins the ring.
    const [victim] = await livePods();
    expect(victim).toBeDefined();
    await kubectl(["-n", systemNs, "delete", "pod", victim ?? "", "--wait=false"]);
    await createProjects(1);
    await kubectl(["-n", systemNs, "rollout", "status", `deployment/${release}-keyward`, "--timeout=300s"]);
    for (const ns of namespaces) await waitAllReady(ns, 1 + PROJECTS_PER_NAMESPACE, 300_000);

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
    for (const ns of namespaces) {
      expect(new Set(settled.filter((o) => o.metadata.namespace === ns).map((o) => o.metadata.labels?.[SHARD_LABEL])).size).toBe(1);
    }
    // Each replica holds its shard Lease; the leader holds the leader Lease too.
    const leases = await kubectlJson<{ items: { metadata: { name: string }; spec: { holderIdentity?: string } }[] }>([
      "-n",
      systemNs,
      "get",
      "leases",
    ]);
    const holders = leases.items.filter((l) => l.metadata.name.includes("-shard-")).map((l) => l.spec.holderIdentity ?? "");
    for (const pod of live) expect(holders).toContain(pod);
  }, 900_000);
});
