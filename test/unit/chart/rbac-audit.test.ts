// The chart's roles against what src/ actually calls: every Kubernetes API call keyward makes
// must be granted, and every grant must be used or be listed below with its reason. A new call
// (say a `replaceNamespacedConfigMap`) fails here before it fails with 403 in a cluster.
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  clusterProviderConfigGrants,
  credentialsGrants,
  expectedWorkloadGrants,
  keywardClusterPlurals,
  keywardPlurals,
  leaseGrants,
  metricsAuthGrants,
  shardingLeaseGrants,
  repoRoot,
  secretWriterGrants,
  uninstallGrants,
} from "./helm.ts";
import { shardedKinds } from "../../../src/shard/sharder.ts";
import { shardingMarkerName } from "../../../src/shard/leases.ts";
import { kinds } from "../../../src/resources/registry.ts";

const srcDir = join(repoRoot, "src");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : [],
  );
}

const httpVerbs: Record<string, string> = { GET: "get", POST: "create", PUT: "update", PATCH: "patch", DELETE: "delete" };

/** Built-in kinds named by a KindRef constant anywhere in src/: constant name → "group/plural" ("core" for the core group). */
function builtinKindRefs(texts: string[]): Map<string, string> {
  const refs = new Map<string, string>();
  for (const text of texts) {
    for (const m of text.matchAll(/(\w+)(?::\s*KindRef)?\s*=\s*\{\s*group:\s*"([\w.]*)",\s*version:\s*"v1",\s*plural:\s*"(\w+)"/g)) {
      refs.set(m[1] ?? "", `${m[2] || "core"}/${m[3] ?? ""}`);
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
  const refs = builtinKindRefs(files.map((f) => f.text));
  for (const { where, text } of files) {
    // Every request goes by path: { method: "PUT", path: resourcePath(secretKind, namespace, name) };
    // a GET of a collection (namespace only) is a list.
    for (const m of text.matchAll(/\{\s*(?:method:\s*"(\w+)",\s*)?path:\s*resourcePath\((\w+)((?:,\s*[\w.]+)*)(?:,\s*"(\w+)")?\)/g)) {
      const kind = refs.get(m[2] ?? "");
      if (!kind) continue;
      const resource = m[4] ? `${kind}/${m[4]}` : kind;
      const method = m[1] ?? "GET";
      const collection = (m[3] ?? "").split(",").filter((a) => a.trim() !== "").length < 2;
      const verb = method === "GET" && collection ? "list" : (httpVerbs[method] ?? "?");
      add(`${resource}: ${verb}`, `${where}: ${method} ${resource}`);
    }
    // A paged list: listAll(kube, resourcePath(kind, namespace)).
    for (const m of text.matchAll(/\blistAll\(\s*[\w.]+,\s*resourcePath\((\w+)/g)) {
      const resource = refs.get(m[1] ?? "");
      if (resource) add(`${resource}: list`, `${where}: listAll(${resource})`);
    }
    // The generic object helpers used with a built-in kind.
    for (const m of text.matchAll(/\b(getObject|readCached|patchMetadata|patchStatus)\(\s*[\w.]+,\s*(\w+)/g)) {
      const resource = refs.get(m[2] ?? "");
      if (!resource) continue;
      add(`${resource}: get`, `${where}: ${m[1] ?? ""}(${resource})`);
      if (m[1] === "patchMetadata" || m[1] === "patchStatus")
        add(`${resource}${m[1] === "patchStatus" ? "/status" : ""}: patch`, `${where}: ${m[1]}(${resource})`);
    }
  }
  // The engine reads, patches (metadata) and writes the status of every keyward kind through the
  // generic helpers of src/kube/objects.ts, and the ProviderConfig lists its users on deletion.
  for (const plural of keywardPlurals) {
    add(`keyward.dev/${plural}: get`, "src/kube/objects.ts: getObject");
    add(`keyward.dev/${plural}: patch`, "src/kube/objects.ts: patchMetadata");
    add(`keyward.dev/${plural}/status: patch`, "src/kube/objects.ts: patchStatus");
  }
  // With sharding, the sharder labels every object of the kinds it assigns and a replica removes
  // the labels to let one go (patchMetadata with the kind a variable: the regexes above cannot
  // see it), so every such kind needs patch, a cluster-scoped one too if it were sharded.
  for (const ref of shardedKinds(kinds.map((k) => k.ref))) {
    add(`keyward.dev/${ref.plural}: patch`, `src/shard/sharder.ts: shard labels of ${ref.plural} (shardedKinds)`);
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
  // Built-in kinds a secondary watch names ({ kind: secretKind, ... }) are listed and watched.
  for (const { where, text } of files) {
    for (const m of text.matchAll(/\bkind:\s*(\w+)\s*,/g)) {
      const resource = refs.get(m[1] ?? "");
      if (!resource) continue;
      for (const verb of ["list", "watch"]) add(`${resource}: ${verb}`, `${where}: watch of ${resource}`);
    }
  }
  // Cluster-scoped kinds (clusterScoped: true in their KindRef): informers list and watch them,
  // readCached falls back to get, status is a patch of /status.
  for (const { where, text } of files) {
    for (const m of text.matchAll(/kindRef\(\s*"\w+",\s*"(\w+)"\s*\),\s*clusterScoped:\s*true/g)) {
      const plural = m[1] ?? "";
      for (const verb of ["list", "watch"]) add(`keyward.dev/${plural}: ${verb}`, `${where}: informer of ${plural}`);
      if (/\breadCached\(\s*[\w.]+,\s*ref\b/.test(text)) add(`keyward.dev/${plural}: get`, `${where}: readCached(${plural})`);
      // Its status is written here (patchStatus, writeStatus) or through the provider plumbing's
      // connection check, which writes the status of the config it is given.
      if (/\bpatchStatus\(\s*[\w.]+,\s*ref\b|\bwriteStatus\(\{[^}]*\bref\b|\bcheckConnection\([\s\S]{0,200}?\bref\b/.test(text))
        add(`keyward.dev/${plural}/status: patch`, `${where}: status of ${plural}`);
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
  const granted = new Set([
    ...expectedWorkloadGrants,
    ...clusterProviderConfigGrants,
    ...credentialsGrants,
    ...metricsAuthGrants,
    ...secretWriterGrants,
    ...leaseGrants("x").map((g) => g.replace(/#x(-sharded)?(?=:)/, "")),
    ...shardingLeaseGrants,
    ...uninstallGrants("x").map((g) => g.replace(/#x(?=:)/, "")),
    // keyward's own CRDs, by name (chart.test.ts checks those rules): the conversion webhook
    // writes its CA bundle into them, the uninstall hook takes the webhook out of them.
    ...["get", "patch", "update"].map((verb) => `apiextensions.k8s.io/customresourcedefinitions: ${verb}`),
  ]);

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
    expect(keywardClusterPlurals.every((p) => needed.has(`keyward.dev/${p}: watch`) && needed.has(`keyward.dev/${p}/status: patch`))).toBe(
      true,
    );
    expect(needed.has("core/namespaces: watch")).toBe(true);
  });

  it("shard the namespaced kinds only: a cluster-scoped kind is the leader's, and the chart grants no write on it but its status", () => {
    const sharded = shardedKinds(kinds.map((k) => k.ref)).map((r) => r.plural);
    expect(sharded.sort()).toEqual([...keywardPlurals].sort());
    expect(keywardClusterPlurals.some((p) => granted.has(`keyward.dev/${p}: patch`))).toBe(false);
  });

  it("let a leader without sharding read and delete the sharding marker by its name, with no list of Leases", () => {
    const unsharded = leaseGrants("x");
    const marker = shardingMarkerName("x");
    expect(unsharded).toContain(`coordination.k8s.io/leases#${marker}: get`);
    expect(unsharded).toContain(`coordination.k8s.io/leases#${marker}: delete`);
    expect(unsharded.filter((g) => g.endsWith(": list"))).toEqual([]);
    expect(needed.has("coordination.k8s.io/leases: delete")).toBe(true);
  });

  it("review /metrics callers through TokenReview and SubjectAccessReview, which the source calls", () => {
    expect(metricsAuthGrants.every((g) => needed.has(g))).toBe(true);
  });

  it("write Events through core/v1 only", () => {
    expect(needed.has("core/events: create")).toBe(true);
    expect([...needed.keys()].filter((g) => g.startsWith("events.k8s.io/"))).toEqual([]);
  });
});
