// The chart's roles against what src/ actually calls: every Kubernetes API call keyward makes
// must be granted, and every grant must be used or be listed below with its reason. A new call
// (say a `replaceNamespacedConfigMap`) fails here before it fails with 403 in a cluster.
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { clusterProviderConfigGrants, credentialsGrants, expectedWorkloadGrants, keywardClusterPlurals, keywardPlurals, leaseGrants, repoRoot } from "./helm.ts";

const srcDir = join(repoRoot, "src");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : [],
  );
}

const verbs: [RegExp, string][] = [
  [/^read/, "get"],
  [/^get/, "get"],
  [/^list/, "list"],
  [/^create/, "create"],
  [/^replace/, "update"],
  [/^patch/, "patch"],
  [/^deleteCollection/, "deletecollection"],
  [/^delete/, "delete"],
];

/** "group/resource: verb" grants one generated-client call needs; throws for a method it cannot map. */
function grantsFor(api: string, method: string): string[] {
  const verb = verbs.find(([re]) => re.test(method))?.[1];
  const target = method.replace(/^(read|get|list|create|replace|patch|deleteCollection|delete)/, "").replace(/^Namespaced/, "");
  if (!verb) throw new Error(`cannot map ${api}.${method} to a verb: extend rbac-audit.test.ts`);
  if (api === "custom") {
    if (target === "CustomObject") return keywardPlurals.map((p) => `keyward.dev/${p}: ${verb}`);
    if (target === "CustomObjectStatus") return keywardPlurals.map((p) => `keyward.dev/${p}/status: ${verb}`);
  }
  const core: Record<string, string> = { Secret: "core/secrets", Event: "core/events", ConfigMap: "core/configmaps", ServiceAccountToken: "core/serviceaccounts/token" };
  if (api === "core" && core[target]) return [`${core[target]}: ${verb}`];
  if (api === "events" && target === "Event") return [`events.k8s.io/events: ${verb}`];
  if (api === "coordination" && target === "Lease") return [`coordination.k8s.io/leases: ${verb}`];
  throw new Error(`cannot map ${api}.${method} to a resource: extend rbac-audit.test.ts`);
}

const httpVerbs: Record<string, string> = { GET: "get", POST: "create", PUT: "update", PATCH: "patch", DELETE: "delete" };

/** Core kinds named by a KindRef constant anywhere in src/: constant name → plural. */
function coreKindRefs(texts: string[]): Map<string, string> {
  const refs = new Map<string, string>();
  for (const text of texts) {
    for (const m of text.matchAll(/(\w+)(?::\s*KindRef)?\s*=\s*\{\s*group:\s*"",\s*version:\s*"v1",\s*plural:\s*"(\w+)"/g)) {
      refs.set(m[1] ?? "", m[2] ?? "");
    }
  }
  return refs;
}

/** Every grant the code needs, with where it is needed. */
function neededGrants(): Map<string, string> {
  const needed = new Map<string, string>();
  const add = (grant: string, where: string): void => {
    if (!needed.has(grant)) needed.set(grant, where);
  };
  const files = sourceFiles(srcDir).map((file) => ({ where: file.slice(repoRoot.length + 1), text: readFileSync(file, "utf8") }));
  const refs = coreKindRefs(files.map((f) => f.text));
  for (const { where, text } of files) {
    // The generated clients: kube.core.readNamespacedSecret(...), kube.custom.patchNamespacedCustomObjectStatus(...)
    for (const m of text.matchAll(/\bkube\.(core|custom|coordination|events)\.(\w+)\(/g)) {
      for (const grant of grantsFor(m[1] ?? "", m[2] ?? "")) add(grant, `${where}: ${m[1] ?? ""}.${m[2] ?? ""}`);
    }
    // Requests by path to a core kind: { method: "PUT", path: resourcePath(secretRef, ...) }
    for (const m of text.matchAll(/\{\s*(?:method:\s*"(\w+)",\s*)?path:\s*resourcePath\((\w+)/g)) {
      const plural = refs.get(m[2] ?? "");
      if (plural) add(`core/${plural}: ${httpVerbs[m[1] ?? "GET"] ?? "?"}`, `${where}: ${m[1] ?? "GET"} ${plural}`);
    }
    // The generic object helpers used with a core kind (readCached reads the apiserver until its cache has synced).
    for (const m of text.matchAll(/\b(getObject|readCached|patchMetadata|patchStatus)\(\s*[\w.]+,\s*(\w+)/g)) {
      const plural = refs.get(m[2] ?? "");
      if (!plural) continue;
      add(`core/${plural}: get`, `${where}: ${m[1] ?? ""}(${plural})`);
      if (m[1] !== "getObject" && m[1] !== "readCached") add(`core/${plural}${m[1] === "patchStatus" ? "/status" : ""}: patch`, `${where}: ${m[1] ?? ""}(${plural})`);
    }
  }
  // An owner reference with blockOwnerDeletion: true needs update on the owner's /finalizers
  // (the OwnerReferencesPermissionEnforcement admission plugin). The owner is the kind whose
  // file sets it: the file's kindRef("Kind", "plural").
  for (const { where, text } of files) {
    const blocking = [...text.matchAll(/\bblockOwnerDeletion\s*:\s*([\w.]+)/g)].some((m) => m[1] !== "false" && m[1] !== "boolean");
    if (!blocking) continue;
    const owners = [...text.matchAll(/\bkindRef\(\s*"\w+",\s*"(\w+)"/g)].map((m) => m[1] ?? "");
    if (owners.length !== 1 || !keywardPlurals.includes(owners[0] ?? "")) {
      throw new Error(`${where} sets blockOwnerDeletion but names no single keyward kind with kindRef: extend rbac-audit.test.ts`);
    }
    add(`keyward.dev/${owners[0] ?? ""}/finalizers: update`, `${where}: owner reference with blockOwnerDeletion`);
  }
  // Informers list and watch every keyward kind, and every core kind a KindRef names (secondary watches).
  for (const plural of keywardPlurals) {
    for (const verb of ["list", "watch"]) add(`keyward.dev/${plural}: ${verb}`, "src/kube/informer.ts: informers of every kind");
  }
  for (const plural of refs.values()) {
    for (const verb of ["list", "watch"]) add(`core/${plural}: ${verb}`, `src/kube/informer.ts: watch of ${plural}`);
  }
  // Cluster-scoped kinds (clusterScoped: true in their KindRef): informers list and watch them,
  // readCached falls back to get, status is a patch of /status.
  for (const { where, text } of files) {
    for (const m of text.matchAll(/kindRef\(\s*"\w+",\s*"(\w+)"\s*\),\s*clusterScoped:\s*true/g)) {
      const plural = m[1] ?? "";
      for (const verb of ["list", "watch"]) add(`keyward.dev/${plural}: ${verb}`, `${where}: informer of ${plural}`);
      if (/\breadCached\(\s*[\w.]+,\s*ref\b/.test(text)) add(`keyward.dev/${plural}: get`, `${where}: readCached(${plural})`);
      if (/\bpatchStatus\(\s*[\w.]+,\s*ref\b/.test(text)) add(`keyward.dev/${plural}/status: patch`, `${where}: patchStatus(${plural})`);
    }
  }
  return needed;
}

/**
 * Granted but not called today, each with its reason: patch and update carry the same power, so
 * granting both widens nothing. A /finalizers grant has no entry here: it must be needed (an
 * owner reference with blockOwnerDeletion), never merely tolerated.
 */
const grantedBeyondCalls: Record<string, string> = {
  update: "same power as patch, which keyward uses",
  "status get": "read access to status it already has through the kind",
  "status update": "same power as status patch, which keyward uses",
  "secrets patch": "same power as secrets update, which AccessToken uses",
};

function reasonFor(grant: string): string | undefined {
  if (/^keyward\.dev\/\w+: update$/.test(grant)) return grantedBeyondCalls["update"];
  if (/^keyward\.dev\/\w+\/status: get$/.test(grant)) return grantedBeyondCalls["status get"];
  if (/^keyward\.dev\/\w+\/status: update$/.test(grant)) return grantedBeyondCalls["status update"];
  if (grant === "core/secrets: patch") return grantedBeyondCalls["secrets patch"];
  return undefined;
}

describe("the chart's roles against src/", () => {
  const needed = neededGrants();
  const granted = new Set([...expectedWorkloadGrants, ...clusterProviderConfigGrants, ...credentialsGrants, ...leaseGrants("x").map((g) => g.replace(/#x(?=:)/, ""))]);

  it("grant every call keyward makes", () => {
    expect(needed.size).toBeGreaterThan(10);
    const missing = [...needed].filter(([grant]) => !granted.has(grant)).map(([grant, where]) => `${grant} (${where})`);
    expect(missing).toEqual([]);
  });

  it("grant nothing keyward does not use, except the listed equivalents", () => {
    const unused = [...granted].filter((g) => !needed.has(g) && reasonFor(g) === undefined);
    expect(unused).toEqual([]);
  });

  it("grant /finalizers update only for AccessToken, the one kind whose owner references block deletion", () => {
    const finalizers = (grants: Iterable<string>): string[] => [...grants].filter((g) => g.includes("/finalizers:")).sort();
    expect(finalizers(needed.keys())).toEqual(["keyward.dev/accesstokens/finalizers: update"]);
    expect(finalizers(granted)).toEqual(["keyward.dev/accesstokens/finalizers: update"]);
  });

  it("grant the cluster-scoped kinds' calls, which the source names", () => {
    expect(keywardClusterPlurals.every((p) => needed.has(`keyward.dev/${p}: watch`) && needed.has(`keyward.dev/${p}/status: patch`))).toBe(true);
    expect(needed.has("core/namespaces: watch")).toBe(true);
  });

  it("write Events through core/v1 only", () => {
    expect(needed.has("core/events: create")).toBe(true);
    expect([...needed.keys()].filter((g) => g.startsWith("events.k8s.io/"))).toEqual([]);
  });
});
