// The e2e files run in one declared order, the same on a cold machine as on a warm one.
// vitest's default order comes from its results cache (slowest first) and, for files it has
// never run, from their size: a fresh clone ran argocd.test.ts first, on a cluster where no
// earlier file had installed anything, while warm runs ran it last. Each file sets up what it
// needs (argocd.test.ts applies keyward's CRDs itself); the fixed order keeps the shared
// cluster's history the same from run to run.
import { basename } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

// soak.test.ts before it: the soak removes its release and namespaces at its end.
// upgrade.test.ts last: it puts the previous release's CRDs in place (and back at its end), and
// no other file's keyward may run while it counts the writes to its objects.
// first-hour.test.ts first: it starts from a cluster without keyward's CRDs (and removes them).
// conversion.test.ts after argocd.test.ts: it scales its operator to 0 and deletes webhook pods,
// with no other file's release installed.
// check.test.ts next: it deletes the ClusterProviderConfig CRD (and its release puts it back)
// before any file has made a ClusterProviderConfig.
export const e2eFileOrder = [
  "first-hour.test.ts",
  "check.test.ts",
  "install.test.ts",
  "namespaced.test.ts",
  "sharding.test.ts",
  "scale.test.ts",
  "argocd.test.ts",
  "conversion.test.ts",
  "soak.test.ts",
  "upgrade.test.ts",
];

function rank(spec: Pick<TestSpecification, "moduleId">): number {
  const at = e2eFileOrder.indexOf(basename(spec.moduleId));
  return at === -1 ? e2eFileOrder.length : at;
}

export function declaredOrder<T extends Pick<TestSpecification, "moduleId">>(files: readonly T[]): T[] {
  return [...files].sort((a, b) => rank(a) - rank(b) || a.moduleId.localeCompare(b.moduleId));
}

export class DeclaredOrderSequencer extends BaseSequencer {
  override sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    return Promise.resolve(declaredOrder(files));
  }
}
