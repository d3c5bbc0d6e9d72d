// A short soak (bench/soak): keyward as a process under a seeded workload and fault schedule,
// SIGKILLed and restarted, its apiserver connections cut, the kube-apiserver restarted under it,
// one namespace on a ClusterProviderConfig, then a quiet tail and the
// invariants judged from the emulator's call log and state and the apiserver's objects. And the
// same soak against a build that breaks an invariant on purpose, which it must catch.
//
// This file runs a control plane of its own per soak (an apiserver restart must not reach the
// shared one of global-setup); the fixed seed makes the schedule the same on every run.
import { rmSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { repoRoot } from "../controlplane/binaries.ts";
import { brokenBuild } from "../../bench/soak/broken.ts";
import { runSoak, type SoakReport } from "../../bench/soak/soak.ts";

// Restarting an apiserver needs one of our own; an existing cluster (KEYWARD_E2E_KUBECONFIG) gives none.
const existingCluster = Boolean(process.env.KEYWARD_E2E_KUBECONFIG);
const outDir = join(repoRoot, "bench", "soak", "out");
const quiet = (): void => undefined;

const broken = (report: SoakReport): string[] => report.invariants.filter((v) => v.violations > 0).map((v) => v.name);

describe.skipIf(existingCluster)("the soak", () => {
  it(
    "keeps every invariant through churn, faults, kills and apiserver restarts (seed 7, 3 minutes)",
    { timeout: 20 * 60_000 },
    async () => {
      const report = await runSoak({
        seed: 7,
        minutes: 3,
        namespaces: 6,
        replicas: 1,
        tailMinutes: 6,
        objectsPerNamespace: 15,
        outDir,
        log: quiet,
      });
      // The run did what a soak is for: churn of every kind, faults that shaped requests, kills, restarts.
      for (const kind of ["Project", "SecretSync", "ProjectMembership", "AccessToken", "CertificateProfile"]) {
        expect(report.objects.created[kind] ?? 0, kind).toBeGreaterThan(0);
      }
      expect(Object.keys(report.objects.deleted).length).toBeGreaterThan(3);
      expect(report.operations["sync request"] ?? 0).toBeGreaterThan(0);
      expect(Object.values(report.faults.shapedRequests).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
      expect(report.keywardKills).toBeGreaterThan(0);
      expect(report.apiserverRestarts).toBe(2);
      // soak-03 on the ClusterProviderConfig (its resources among those judged Ready), providers
      // changed and rotated, temporary roles that ended within the run, connections cut.
      expect(Object.values(report.providerChanges).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
      expect(report.temporaryRoles.endedAtService).toBeGreaterThan(0);
      expect(report.connectionCuts.times).toBeGreaterThan(0);
      expect(report.settledAfterSeconds).toBeDefined();
      // And every invariant held, each having checked something.
      expect(broken(report), JSON.stringify(report.invariants, null, 1)).toEqual([]);
      expect(report.invariants.filter((v) => v.checked === 0)).toEqual([]);
      expect(report.health.samples).toBeGreaterThan(0);
      expect(report.health.queueDepthAtEnd).toBe(0);
    },
  );

  it("catches a build that runs an action value again", { timeout: 15 * 60_000 }, async () => {
    const patched = brokenBuild("repeat-actions");
    onTestFinished(() => rmSync(patched.dir, { recursive: true, force: true }));
    const report = await runSoak({
      seed: 7,
      minutes: 1.5,
      namespaces: 3,
      replicas: 1,
      tailMinutes: 1,
      objectsPerNamespace: 10,
      outDir,
      keywardScript: patched.script,
      log: quiet,
    });
    expect(report.passed).toBe(false);
    expect(broken(report)).toContain(patched.breaks);
  });
});
