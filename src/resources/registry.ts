// Every kind keyward serves, in the order `kubectl keyward status` lists them. The operator's
// controllers, the CRDs (npm run generate), the Argo CD health check's reason tables, the kubectl
// plugin's constants and docs/kinds.md are derived from this list; a test fails when a derived
// file is stale. Adding a kind: one new unit (its descriptor, src/resources/kind.ts) and one line here.
import type { KindRef } from "../kube/client.ts";
import type { ReasonInfo, ReasonTable } from "../engine/kind.ts";
import { engineReasons } from "../engine/reasons.ts";
import type { Kind } from "./kind.ts";
import { sharedReasons } from "./reasons.ts";
import * as providerConfig from "./providerconfig.ts";
import * as clusterProviderConfig from "./clusterproviderconfig.ts";
import * as project from "./project.ts";
import * as projectMembership from "./projectmembership.ts";
import * as accessToken from "./accesstoken.ts";
import * as certificateProfile from "./certificateprofile.ts";
import * as secretSync from "./secretsync.ts";

export const kinds: readonly Kind[] = [
  providerConfig.kind,
  clusterProviderConfig.kind,
  project.kind,
  projectMembership.kind,
  accessToken.kind,
  certificateProfile.kind,
  secretSync.kind,
];

/** The kinds that name a ProviderConfig (and ClusterProviderConfig) in spec.providerConfigRef. */
export function providerConfigUsers(all: readonly Kind[] = kinds): KindRef[] {
  return all.filter((k) => k.refers.providerConfig === true).map((k) => k.ref);
}

/** The kinds that name a Project in spec.projectRef or spec.projectId. */
export function projectDependents(all: readonly Kind[] = kinds): KindRef[] {
  return all.filter((k) => k.refers.project === true).map((k) => k.ref);
}

/**
 * Every reason keyward writes, by name: the engine's, the shared plumbing's and each kind's. A
 * name two tables declare must mean the same in both (a reason reads the same on every kind).
 */
export function reasonRegistry(all: readonly Kind[] = kinds): ReadonlyMap<string, ReasonInfo & { kinds: string[] }> {
  const registry = new Map<string, ReasonInfo & { kinds: string[] }>();
  const add = (table: ReasonTable, owner: string): void => {
    for (const [name, info] of Object.entries(table)) {
      const known = registry.get(name);
      if (known && known.means !== info.means) {
        throw new Error(`reason ${name}: ${owner} says ${info.means}, ${known.kinds.join(", ")} say ${known.means}`);
      }
      if (known) known.kinds.push(owner);
      else registry.set(name, { ...info, kinds: [owner] });
    }
  };
  add(engineReasons, "all kinds");
  add(sharedReasons, "kinds with a provider config");
  for (const k of all) add(k.reasons, k.ref.kind);
  return registry;
}
