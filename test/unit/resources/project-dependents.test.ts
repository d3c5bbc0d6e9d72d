// A Project whose deletion waits for its dependents: woken by a dependent letting go, and its
// recheck (the safety net) backed off with how long it has waited.
import { describe, expect, it } from "vitest";
import { dependentGoneWatch, dependentsRecheckMs } from "../../../src/resources/project.ts";
import { ref as secretSyncRef } from "../../../src/resources/secretsync-schema.ts";
import { FINALIZER } from "../../../src/engine/meta.ts";
import type { KubeObject } from "../../../src/engine/types.ts";

const sync = (spec: Record<string, unknown>, finalizers: string[] = [FINALIZER]): KubeObject => ({
  apiVersion: "keyward.dev/v1alpha1",
  kind: "SecretSync",
  metadata: { namespace: "a", name: "s", finalizers },
  spec,
});

const project = (name: string, projectId: string, namespace = "a"): KubeObject => ({
  apiVersion: "keyward.dev/v1alpha1",
  kind: "Project",
  metadata: { namespace, name },
  spec: {},
  status: { projectId },
});

describe("dependentGoneWatch", () => {
  const watch = dependentGoneWatch(secretSyncRef);
  const predicate = watch.predicate ?? (() => true);

  it("lets through a dependent's deletion and its finalizer's removal only", () => {
    const held = sync({ projectRef: { name: "p" } });
    const released = sync({ projectRef: { name: "p" } }, []);
    expect(predicate("delete", held)).toBe(true);
    expect(predicate("update", released, held)).toBe(true);
    expect(predicate("update", held, held)).toBe(false);
    expect(predicate("add", held)).toBe(false);
  });

  it("maps a dependent to its Project by projectRef, or by projectId through the Projects' status", () => {
    expect(watch.mapToKeys(sync({ projectRef: { name: "p" } }))).toEqual([{ namespace: "a", name: "p" }]);
    const primaries = (): KubeObject[] => [project("p1", "id-1"), project("p2", "id-2"), project("p3", "id-1", "b")];
    expect(watch.mapToKeys(sync({ projectId: "id-1" }), primaries)).toEqual([{ namespace: "a", name: "p1" }]);
    expect(watch.mapToKeys(sync({}), primaries)).toEqual([]);
  });
});

describe("dependentsRecheckMs", () => {
  const now = Date.parse("2026-01-01T00:10:00Z");
  it("starts at 5 s, grows with the wait, and stops at a minute", () => {
    expect(dependentsRecheckMs(undefined, now)).toBe(5_000);
    expect(dependentsRecheckMs("2026-01-01T00:10:00Z", now)).toBe(5_000);
    expect(dependentsRecheckMs("2026-01-01T00:09:00Z", now)).toBe(30_000);
    expect(dependentsRecheckMs("2026-01-01T00:00:00Z", now)).toBe(60_000);
    expect(dependentsRecheckMs("garbage", now)).toBe(5_000);
  });
});
