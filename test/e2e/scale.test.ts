// 1000 Projects under the chart's default memory limit: no restart, no OOM kill; the peak memory
// the kubelet reports (cAdvisor's container_memory_max_usage_bytes, else the highest working set
// seen while polling) is printed.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  apply,
  createNamespace,
  deployEmulator,
  providerResources,
  installKeyward,
  keywardPods,
  kubectl,
  kubectlJson,
  ready,
  repoRoot,
  waitFor,
  type Emulator,
  type KubeObject,
  type List,
  uninstallKeyward,
} from "./support.ts";

const release = "kw-scale";
const systemNs = "kw-e2e-scale-system";
const projectsNs = "kw-e2e-scale";
const count = 1000;

interface Pod extends KubeObject {
  spec: { nodeName: string; containers: { name: string; resources?: { limits?: Record<string, string> } }[] };
  status: { containerStatuses?: { name: string; restartCount: number; lastState?: { terminated?: { reason?: string } } }[] };
}

let emulator: Emulator;

function chartDefaultMemoryLimit(): string {
  const values = readFileSync(join(repoRoot, "charts", "keyward", "values.yaml"), "utf8");
  const m = /^resources:\n(?: {2}.*\n)*? {2}limits:\n {4}memory: (\S+)/m.exec(values);
  if (!m?.[1]) throw new Error("no resources.limits.memory in charts/keyward/values.yaml");
  return m[1];
}

function bytes(quantity: string): number {
  const m = /^(\d+)(Ki|Mi|Gi)?$/.exec(quantity);
  if (!m?.[1]) throw new Error(`unexpected quantity ${quantity}`);
  return Number(m[1]) * ({ Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3 }[m[2] ?? ""] ?? 1);
}

/** The kubelet's view of the keyward container's memory: [peak (cAdvisor, cgroup v1), working set]. */
async function kubeletMemory(pod: Pod): Promise<{ peak: number | undefined; workingSet: number | undefined }> {
  const metric = (text: string, name: string) => {
    const line = text
      .split("\n")
      .find((l) => l.startsWith(`${name}{`) && l.includes(`pod="${pod.metadata.name}"`) && l.includes('container="keyward"'));
    return line === undefined ? undefined : Number(line.split(/\s+/)[1]);
  };
  const cadvisor = await kubectl(["get", "--raw", `/api/v1/nodes/${pod.spec.nodeName}/proxy/metrics/cadvisor`]);
  return { peak: metric(cadvisor, "container_memory_max_usage_bytes"), workingSet: metric(cadvisor, "container_memory_working_set_bytes") };
}

describe(`${count} Projects`, () => {
  beforeAll(async () => {
    emulator = await deployEmulator(await createNamespace("kw-e2e-scale-emulator"), ["--no-rate-limit"]);
    await createNamespace(systemNs);
    await createNamespace(projectsNs);
    await installKeyward(release, systemNs);
  }, 600_000);

  afterAll(async () => {
    // keyward, still running, lets the 1000 Projects go (their finalizers) before it is uninstalled.
    await kubectl(["delete", "namespace", projectsNs, "--wait=true", "--timeout=600s"], { allowFailure: true });
    await uninstallKeyward(release, systemNs);
  }, 900_000);

  test("all Ready under the chart's default memory limit, restartCount 0", async () => {
    const [pod] = (await keywardPods(systemNs, release)) as Pod[];
    if (pod === undefined) throw new Error("no keyward pod");
    const limit = chartDefaultMemoryLimit();
    expect(pod.spec.containers[0]?.resources?.limits?.["memory"]).toBe(limit);

    const objects: unknown[] = providerResources(emulator.baseUrl, { rateLimit: { requestsPerSecond: 1000, burst: 1000 } });
    for (let i = 0; i < count; i++) {
      const slug = `scale-${String(i).padStart(4, "0")}`;
      objects.push({
        apiVersion: "keyward.dev/v1alpha1",
        kind: "Project",
        metadata: { name: slug },
        spec: { name: slug, slug, type: "secret-manager" },
      });
    }
    await apply(objects, projectsNs);

    let workingSetMax = 0;
    let readyCount = 0;
    await waitFor(
      `${count} Projects Ready`,
      async () => {
        const memory = await kubeletMemory(pod).catch(() => ({ peak: undefined, workingSet: undefined }));
        workingSetMax = Math.max(workingSetMax, memory.workingSet ?? 0);
        const projects = await kubectlJson<List>(["-n", projectsNs, "get", "projects.v1alpha1.keyward.dev"]);
        readyCount = projects.items.filter((p) => ready(p)?.status === "True").length;
        return readyCount === count ? true : undefined;
      },
      1_500_000,
      () => Promise.resolve(`${readyCount} of ${count} Ready`),
    );

    const after = (await kubectlJson<Pod>(["-n", systemNs, "get", "pod", pod.metadata.name])).status.containerStatuses?.find(
      (c) => c.name === "keyward",
    );
    expect(after?.restartCount).toBe(0);
    expect(after?.lastState?.terminated?.reason).toBeUndefined();
    const memory = await kubeletMemory(pod);
    const peak = memory.peak ?? workingSetMax;
    process.stdout.write(
      `[e2e] ${count} Projects: keyward peak memory ${(peak / 1024 ** 2).toFixed(1)} MiB (${memory.peak === undefined ? "highest working set seen" : "kubelet/cAdvisor container_memory_max_usage_bytes"}), highest working set seen ${(workingSetMax / 1024 ** 2).toFixed(1)} MiB, limit ${limit}\n`,
    );
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThan(bytes(limit));
  }, 1_800_000);
});
