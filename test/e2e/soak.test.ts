// The soak (bench/soak) on the e2e's cluster, as `npm run soak -- --on kind` runs it: the
// release's chart with two sharded replicas, the emulator in the cluster, three minutes of the
// seeded workload and fault schedule (service faults, keyward pods killed and evicted, the leader
// among them, the kube-apiserver's container killed twice), a quiet tail, and the invariants
// judged from outside. The soak installs, and at its end removes, its own release and namespaces
// (soak-*). A build that breaks an invariant is caught by test/integration/soak.test.ts.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { clusterName } from "../../bench/soak/kind.ts";
import { runSoak, type SoakReport } from "../../bench/soak/soak.ts";
import { context, repoRoot } from "./support.ts";

// The faults run on the kind node (docker exec): a cluster of KEYWARD_E2E_KUBECONFIG without a
// kind cluster name to reach it by gives none.
const noKindNode = Boolean(process.env["KEYWARD_E2E_KUBECONFIG"]) && !process.env["KEYWARD_E2E_CLUSTER"];
const broken = (report: SoakReport): string[] => report.invariants.filter((v) => v.violations > 0).map((v) => v.name);

describe.skipIf(noKindNode)("the soak on kind", () => {
  it(
    "keeps every invariant through churn, pod kills and evictions and apiserver restarts (seed 7, 3 minutes, 2 sharded replicas)",
    { timeout: 25 * 60_000 },
    async () => {
      const e2e = context();
      const report = await runSoak({
        seed: 7,
        minutes: 3,
        namespaces: 6,
        replicas: 2,
        tailMinutes: 6,
        objectsPerNamespace: 12,
        outDir: join(repoRoot, "bench", "soak", "out"),
        on: "kind",
        kind: {
          kubeconfig: e2e.kubeconfig,
          kubectl: e2e.kubectl,
          helm: e2e.helm,
          chart: e2e.keywardChart,
          emulatorImage: e2e.emulatorImage,
          cluster: clusterName(),
        },
        log: (line) => process.stderr.write(`[soak] ${line}\n`),
      });
      // The run did what a soak is for: churn of every kind, faults that shaped requests, pods
      // killed (the leader among them) and evicted, the apiserver restarted.
      for (const kind of ["Project", "SecretSync", "ProjectMembership", "AccessToken", "CertificateProfile"]) {
        expect(report.objects.created[kind] ?? 0, kind).toBeGreaterThan(0);
      }
      expect(Object.keys(report.objects.deleted).length).toBeGreaterThan(3);
      expect(report.operations["sync request"] ?? 0).toBeGreaterThan(0);
      expect(Object.values(report.faults.shapedRequests).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
      expect(report.keywardKills).toBeGreaterThan(0);
      expect(report.evictions.evicted + report.evictions.refused).toBeGreaterThan(0);
      expect(report.apiserverRestarts).toBe(2);
      expect(Object.values(report.providerChanges).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
      expect(report.settledAfterSeconds).toBeDefined();
      // Every invariant held, each having checked something; health read from the pods.
      expect(broken(report), JSON.stringify(report.invariants, null, 1)).toEqual([]);
      expect(report.invariants.filter((v) => v.checked === 0)).toEqual([]);
      expect(report.health.samples).toBeGreaterThan(0);
      expect(report.health.queueDepthAtEnd).toBe(0);
    },
  );
});
