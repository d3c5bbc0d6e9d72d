// The wake-ups each kind gets from what it refers to, derived from what the watched kinds declare
// (Kind.wakesReferrers, referrerWatches) instead of the hand-wired list the operator kept before:
// the same watches for every kind of the registry, with ClusterProviderConfigs served or not, and
// nothing from a kind whose controller is off.
import { describe, expect, it } from "vitest";
import type { SecondaryWatch } from "../../../src/engine/controller.ts";
import { referrerWatches, type Kind } from "../../../src/resources/kind.ts";
import { kinds } from "../../../src/resources/registry.ts";
import * as providerConfig from "../../../src/resources/providerconfig.ts";
import * as clusterProviderConfig from "../../../src/resources/clusterproviderconfig.ts";
import * as project from "../../../src/resources/project.ts";

/** The operator's hand-wired list before the kinds declared their wake-ups (kept here as the reference). */
function handWired(kind: Kind, clusterServed: boolean): SecondaryWatch[] {
  return [
    ...(kind.refers.providerConfig ? [providerConfig.dependentsWatch] : []),
    ...(kind.refers.project ? [project.dependentsWatch] : []),
    ...(kind.refers.providerConfig && clusterServed ? [clusterProviderConfig.usersWatch, clusterProviderConfig.namespaceWatch] : []),
  ];
}

const names = new Map<SecondaryWatch, string>([
  [providerConfig.dependentsWatch, "ProviderConfig changed"],
  [clusterProviderConfig.usersWatch, "ClusterProviderConfig changed"],
  [clusterProviderConfig.namespaceWatch, "Namespace labels changed"],
  [project.dependentsWatch, "Project changed"],
]);
const named = (watches: readonly SecondaryWatch[]): string[] => watches.map((w) => names.get(w) ?? `unknown watch of ${w.kind.kind}`);

/** Each kind's derived wake-ups, by kind name, with `on` the kinds whose controller is on. */
const derived = (on: readonly Kind[]): Record<string, string[]> =>
  Object.fromEntries(kinds.map((k) => [k.ref.kind, named(referrerWatches(k, on))]));

const withoutCluster = kinds.filter((k) => k !== clusterProviderConfig.kind);

describe("the wake-ups derived from what the kinds declare", () => {
  it("lists each kind's wake-ups with ClusterProviderConfigs served", () => {
    const pcUser = ["ProviderConfig changed", "ClusterProviderConfig changed", "Namespace labels changed"];
    expect(derived(kinds)).toEqual({
      ProviderConfig: [],
      ClusterProviderConfig: [],
      Project: pcUser,
      ProjectMembership: [...pcUser, "Project changed"],
      AccessToken: pcUser,
      CertificateProfile: [...pcUser, "Project changed"],
      SecretSync: [...pcUser, "Project changed"],
    });
  });

  it("gives none of a kind whose controller is off (ClusterProviderConfig without --cluster-provider-configs)", () => {
    for (const k of kinds) expect(named(referrerWatches(k, withoutCluster)), k.ref.kind).not.toContain("ClusterProviderConfig changed");
    expect(derived(withoutCluster)["SecretSync"]).toEqual(["ProviderConfig changed", "Project changed"]);
  });

  it("agrees with the hand-wired list for every kind of the registry, served with and without ClusterProviderConfigs", () => {
    for (const [on, clusterServed] of [
      [kinds, true],
      [withoutCluster, false],
    ] as const) {
      for (const k of kinds)
        expect(new Set(referrerWatches(k, on)), `${k.ref.kind}, cluster ${String(clusterServed)}`).toEqual(
          new Set(handWired(k, clusterServed)),
        );
    }
  });

  it("is declared by the kind watched, naming a reference a referrer can declare", () => {
    const declaring = kinds.filter((k) => k.wakesReferrers).map((k) => [k.ref.kind, k.wakesReferrers?.as]);
    expect(declaring).toEqual([
      ["ProviderConfig", "providerConfig"],
      ["ClusterProviderConfig", "providerConfig"],
      ["Project", "project"],
    ]);
  });
});
