// Upgrade from the previous release, and back. The previous release is the newest one below
// [Unreleased] in CHANGELOG.md; hack/e2e/previous-release.sh rebuilt its image and chart from the
// commit recorded there. It is installed with a user's values, runs objects of every kind until
// they are Ready and steady; then, with a sync request pending on every SecretSync and new
// Projects being created, the CRDs are handed to the release (the chart README's "Upgrading")
// and `helm upgrade` moves to this tree's chart and image; then `helm rollback` goes back to
// revision 1. Between the two, the storage switch a later release makes: with objects written in
// both versions, `helm upgrade --reuse-values --set crds.storageVersion=v1beta1`, the stored
// objects rewritten and storedVersions set as docs/compatibility.md says (its shell block, run
// as written), then `helm rollback` one step and the same with v1alpha1; what etcd holds is read
// from etcd itself. After each step, from the emulator's request log and from a watch of every object:
// nothing created twice, each request value called exactly once, everything Ready with the same
// service ids, and at most one write per steady object (no reconcile storm).
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { loadAll } from "js-yaml";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { clusterName } from "../../bench/soak/kind.ts";
import { keyDigest, NATURAL_KEY_LABEL } from "../../src/engine/holder.ts";
import type { PreviousRelease } from "./global-setup.ts";
import {
  apply,
  chartDir,
  context,
  countBy,
  createNamespace,
  deployEmulator,
  describeReadiness,
  emulatorRequests,
  helm,
  imageValues,
  keywardObjects,
  keywardPods,
  kubectl,
  kubectlJson,
  keywardKinds,
  ready,
  repoRoot,
  samples,
  waitFor,
  type Condition,
  type Emulator,
  type KubeObject,
  type List,
  type RecordedRequest,
  uninstallKeyward,
} from "./support.ts";
import { changedFields, objectKey, recordWrites, type Versioned, type WriteRecorder } from "./writes.ts";

const release = "kw-upgrade";
const systemNs = "kw-e2e-upgrade-system";
const emulatorNs = "kw-e2e-upgrade-emulator";
const ns = "kw-e2e-upgrade";
const SYNC_REQUESTED = "keyward.dev/sync-requested-at";
const EXTERNAL_ID = "keyward.dev/external-id";
/** Created just before `helm upgrade`: creates in flight while the pods change. */
const inflight = ["upgrade-inflight-1", "upgrade-inflight-2", "upgrade-inflight-3"];
/** Objects that write on their own schedule (a one-minute token renewed every 40 s): never steady. */
const rotating = new Set(["AccessToken/short-lived", "ProviderConfig/rotating"]);
/** Settled: the expected pods lead, every object is steady, and no object was written for this long. */
const QUIET_MS = 15_000;
/** The status fields naming each kind's external object (the kinds' serviceIdFields). */
const idFields: Record<string, readonly string[]> = {
  Project: ["projectId"],
  SecretSync: ["syncId"],
  ProjectMembership: ["membershipId", "groupMembershipId"],
  AccessToken: ["tokenId"],
  CertificateProfile: ["profileId"],
};
/** The kinds whose id keyward mirrors into keyward.dev/external-id (the kinds' externalId). */
const externalIdField: Record<string, string> = { Project: "projectId", SecretSync: "syncId" };

interface Pod extends KubeObject {
  spec: { containers: { name: string; image: string }[] };
  status: { containerStatuses?: { ready: boolean }[] };
}

let previous: PreviousRelease;
let emulator: Emulator;
let expectedObjects = 0;
/** Between the switch to v1beta1 storage and the rewrite back in v1alpha1. */
let storageSwitched = false;
/** The keyward CRDs as this file found them, put back at the end (other files' releases may own them). */
let crdsFound: KubeObject[] = [];

const run = promisify(execFile);

/** What a user sets (besides the image): the service's URL as the only one tokens may go to. */
const userValues = (): string[] => ["--set-json", `allowedBaseUrls=${JSON.stringify([emulator.baseUrl])}`];

const project = (slug: string): unknown => ({
  apiVersion: "keyward.dev/v1alpha1",
  kind: "Project",
  metadata: { name: slug },
  spec: { name: slug, slug, type: "secret-manager" },
});

async function keywardCrds(): Promise<KubeObject[]> {
  return (await kubectlJson<List>(["get", "crd"])).items.filter((c) => c.metadata.name.endsWith(".keyward.dev"));
}

/** The documented shell block whose text includes `marker`, from `file` (a Markdown file of the repository). */
function documentedBlock(file: string, marker: string): string {
  const text = readFileSync(join(repoRoot, file), "utf8");
  const block = [...text.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1] ?? "").find((b) => b.includes(marker));
  if (block === undefined) throw new Error(`${file} has no shell block with ${marker}: update this test with the documented step`);
  return block;
}

/** Runs a documented shell block against the e2e cluster, as a user's shell would. */
async function runDocumented(script: string): Promise<void> {
  await run("bash", ["-euo", "pipefail", "-c", script], {
    env: { ...process.env, KUBECONFIG: context().kubeconfig, PATH: `${dirname(context().kubectl)}:${process.env["PATH"] ?? ""}` },
  });
}

/**
 * docs/compatibility.md's rewrite of the stored objects in `version` (its block setting VERSION=),
 * run as written. The doc says to run it again after a conflict (keyward wrote an object between
 * the read and the replace): so does this, a few times, and says how many runs it took.
 */
async function migrateStorage(version: string): Promise<number> {
  const block = documentedBlock("docs/compatibility.md", "storedVersions");
  const assignment = /^VERSION=\S+$/m;
  expect(block, "docs/compatibility.md's storage migration sets VERSION=").toMatch(assignment);
  const script = block.replace(assignment, `VERSION=${version}`);
  for (let runs = 1; ; runs++) {
    try {
      await runDocumented(script);
      return runs;
    } catch (err) {
      if (runs >= 5) throw err;
      console.log(`[upgrade.test] storage migration run ${runs} failed, run again: ${String(err).slice(0, 500)}`);
    }
  }
}

/** docs/compatibility.md's `helm upgrade ... --set crds.storageVersion=v1beta1`: its flags after the release's namespace. */
function documentedSwitchFlags(): string[] {
  const line = documentedBlock("docs/compatibility.md", "crds.storageVersion=v1beta1")
    .split("\n")
    .find((l) => l.startsWith("helm upgrade "));
  const flags = line?.split(" -n keyward-system ")[1]?.split(" ");
  if (!flags) throw new Error("docs/compatibility.md's storage switch is not `helm upgrade keyward <chart> ... -n keyward-system <flags>`");
  return flags;
}

/**
 * The version (apiVersion) each keyward object of the namespace is stored in, read from etcd
 * itself: its JSON gateway, with the apiserver's etcd client certificate, on the kind node (the
 * etcd image has no etcdctl).
 */
async function storedVersions(): Promise<Record<string, string>> {
  const b64 = (s: string): string => Buffer.from(s).toString("base64");
  const range = JSON.stringify({ key: b64("/registry/keyward.dev/"), range_end: b64("/registry/keyward.dev0") });
  const pki = "/etc/kubernetes/pki";
  const script = [
    `curl -sSf --cacert ${pki}/etcd/ca.crt --cert ${pki}/apiserver-etcd-client.crt --key ${pki}/apiserver-etcd-client.key`,
    `-X POST https://127.0.0.1:2379/v3/kv/range -d '${range}'`,
  ].join(" ");
  const docker = existsSync("/usr/bin/docker") ? "/usr/bin/docker" : "docker";
  const out = (await run(docker, ["exec", `${clusterName()}-control-plane`, "bash", "-c", script], { maxBuffer: 64 * 1024 * 1024 })).stdout;
  const stored = ((JSON.parse(out) as { kvs?: { value: string }[] }).kvs ?? [])
    .map((kv) => JSON.parse(Buffer.from(kv.value, "base64").toString("utf8")) as KubeObject)
    .filter((o) => o.metadata.namespace === ns);
  return Object.fromEntries(stored.map((o) => [objectKey(o), o.apiVersion]));
}

interface StorageCrd extends KubeObject {
  spec: { versions: { name: string; storage: boolean }[] };
  status?: { storedVersions?: string[] };
}

/** Each keyward CRD's storage version (spec) and storedVersions (status). */
async function crdStorage(): Promise<Record<string, { storage: string[]; stored: string[] }>> {
  return Object.fromEntries(
    ((await keywardCrds()) as StorageCrd[]).map((c) => [
      c.metadata.name,
      { storage: c.spec.versions.filter((v) => v.storage).map((v) => v.name), stored: c.status?.storedVersions ?? [] },
    ]),
  );
}

/** Kind → each spec field's default in the v1beta1 schema of its CRD. */
async function betaSpecDefaults(): Promise<Record<string, Record<string, unknown>>> {
  type Schema = { properties?: Record<string, Schema>; default?: unknown };
  const crds = (await keywardCrds()) as (KubeObject & {
    spec: { names: { kind: string }; versions: { name: string; schema: { openAPIV3Schema: Schema } }[] };
  })[];
  return Object.fromEntries(
    crds.map((crd) => {
      const beta = crd.spec.versions.find((v) => v.name === "v1beta1");
      const fields = beta?.schema.openAPIV3Schema.properties?.["spec"]?.properties ?? {};
      return [crd.spec.names.kind, Object.fromEntries(Object.entries(fields).map(([f, schema]) => [f, schema.default]))];
    }),
  );
}

/** What a conversion must keep, of every keyward object of the namespace read in `version`. */
async function contents(version: string): Promise<Record<string, unknown>> {
  const list = await kubectlJson<List>(["-n", ns, "get", keywardKinds.map((k) => `${k}.${version}.keyward.dev`).join(","), "-o", "json"]);
  return Object.fromEntries(
    list.items
      .filter((o) => !rotating.has(objectKey(o)))
      .map((o) => {
        const { uid, labels, annotations, finalizers } = o.metadata as KubeObject["metadata"] & { uid: string; finalizers?: string[] };
        return [`${o.apiVersion} ${objectKey(o)}`, { uid, labels, annotations, finalizers, spec: o.spec }];
      }),
  );
}

/** `kubectl replace` of CRDs (a PUT: spec, labels and annotations become exactly these). */
async function replaceCrds(crds: KubeObject[]): Promise<void> {
  for (const crd of crds) {
    const { name, labels, annotations } = crd.metadata;
    const body = { apiVersion: crd.apiVersion, kind: crd.kind, metadata: { name, labels, annotations }, spec: crd.spec };
    await kubectl(["replace", "-f", "-"], { input: JSON.stringify(body) });
  }
}

/**
 * The previous release's CRDs, as its `helm install` leaves them on a cluster that had none:
 * helm creates what its crds/ folder holds and skips CRDs that exist, so existing ones (an
 * earlier file's) are replaced by the previous release's here.
 */
async function previousCrds(): Promise<void> {
  // Each file of the packaged chart's crds/ folder (`helm show crds` joins them without `---`).
  const files = (await run("tar", ["-tzf", previous.chart])).stdout.split("\n").filter((f) => /^[^/]+\/crds\/[^/]+\.ya?ml$/.test(f));
  const docs: KubeObject[] = [];
  for (const file of files) {
    const text = (await run("tar", ["-xzOf", previous.chart, file])).stdout;
    docs.push(...(loadAll(text) as (KubeObject | null)[]).filter((d): d is KubeObject => d?.kind === "CustomResourceDefinition"));
  }
  expect(docs.length).toBeGreaterThanOrEqual(6);
  const existing = new Set(crdsFound.map((c) => c.metadata.name));
  await replaceCrds(docs.filter((d) => existing.has(d.metadata.name)));
}

/**
 * The chart README's "Upgrading" step for CRDs installed from the chart's former crds/ folder,
 * run as written there (its shell block, with this release's name and namespace): hand each
 * keyward CRD to the release so that `helm upgrade` may manage it from templates.
 */
async function migrateCrds(): Promise<void> {
  const readme = readFileSync(join(chartDir, "README.md"), "utf8");
  const section = readme.split(/^## /m).find((s) => s.startsWith("Upgrading"));
  const block = [...(section ?? "").matchAll(/^```sh\n([\s\S]*?)^```$/gm)]
    .map((m) => m[1] ?? "")
    .find((b) => b.includes("meta.helm.sh/release-name"));
  const assignment = /^RELEASE=\S+ NAMESPACE=\S+$/m;
  if (block === undefined || !assignment.test(block)) {
    throw new Error(
      'charts/keyward/README.md has no "Upgrading" shell block setting RELEASE=... NAMESPACE=... and annotating the CRDs: update this test with the documented step',
    );
  }
  const script = block.replace(assignment, `RELEASE=${release} NAMESPACE=${systemNs}`);
  await run("bash", ["-euo", "pipefail", "-c", script], {
    env: { ...process.env, KUBECONFIG: context().kubeconfig, PATH: `${dirname(context().kubectl)}:${process.env["PATH"] ?? ""}` },
  });
  for (const crd of await keywardCrds()) {
    expect(crd.metadata.labels?.["app.kubernetes.io/managed-by"], crd.metadata.name).toBe("Helm");
    expect(crd.metadata.annotations?.["meta.helm.sh/release-name"], crd.metadata.name).toBe(release);
    expect(crd.metadata.annotations?.["meta.helm.sh/release-namespace"], crd.metadata.name).toBe(systemNs);
  }
}

async function leaseHolders(): Promise<string[]> {
  const leases = await kubectlJson<List<KubeObject & { spec: { holderIdentity?: string } }>>(["-n", systemNs, "get", "leases"]);
  return leases.items.map((l) => l.spec.holderIdentity ?? "");
}

const activeJob = (o: KubeObject): boolean =>
  ["syncStatus", "importStatus", "removeStatus"].some((f) => o.status?.[f] === "pending" || o.status?.[f] === "running");

/** Ready for its current generation, and for a SecretSync no request or job under way. */
function steady(o: KubeObject): boolean {
  const c: (Condition & { observedGeneration?: number }) | undefined = ready(o);
  if (c?.status !== "True" || c.observedGeneration !== (o as Versioned).metadata.generation) return false;
  if (o.kind !== "SecretSync") return true;
  const requested = o.metadata.annotations?.[SYNC_REQUESTED];
  const pending = o.status?.["pendingRequest"];
  return (
    (requested === undefined || o.status?.["lastHandledSyncRequest"] === requested) &&
    (pending === undefined || pending === null) &&
    !activeJob(o)
  );
}

/**
 * Waits until keyward runs `image` only (no other pod left), one of its pods holds the lease,
 * every object is steady, and no object (the rotating ones aside) was written for QUIET_MS since
 * both the last write and the moment that pod was first seen leading.
 */
async function settle(image: string, recorder: WriteRecorder): Promise<Versioned[]> {
  let leader = "";
  let leaderSeenAt = 0;
  let state = "";
  return waitFor(
    `keyward ${image} leading, ${expectedObjects} objects steady, no write for ${QUIET_MS / 1000}s`,
    async () => {
      const pods = (await keywardPods(systemNs, release)) as Pod[];
      state = `pods: ${pods.map((p) => `${p.metadata.name} ${p.spec.containers[0]?.image ?? "?"} ready=${String(p.status.containerStatuses?.[0]?.ready)}${p.metadata.deletionTimestamp ? " terminating" : ""}`).join(", ")}`;
      if (
        pods.length === 0 ||
        !pods.every((p) => !p.metadata.deletionTimestamp && p.spec.containers[0]?.image === image && p.status.containerStatuses?.[0]?.ready)
      ) {
        return undefined;
      }
      const holder = (await leaseHolders()).find((h) => pods.some((p) => p.metadata.name === h));
      state += `; lease holder ${holder ?? "none of them"}`;
      if (holder === undefined) return undefined;
      if (holder !== leader) [leader, leaderSeenAt] = [holder, Date.now()];
      const objects = (await keywardObjects(ns)) as Versioned[];
      state += `\n${describeReadiness(objects.filter((o) => !steady(o)))}`;
      if (objects.length !== expectedObjects || !objects.every(steady)) return undefined;
      return Date.now() - Math.max(leaderSeenAt, recorder.lastWriteAt()) >= QUIET_MS ? objects : undefined;
    },
    300_000,
    () => Promise.resolve(state),
  );
}

function serviceIds(objects: KubeObject[]): Map<string, string> {
  return new Map(
    objects
      .filter((o) => idFields[o.kind] !== undefined && !rotating.has(objectKey(o)))
      .map((o) => [objectKey(o), JSON.stringify((idFields[o.kind] ?? []).map((f) => o.status?.[f] ?? null))]),
  );
}

/** Every Project and SecretSync created exactly once at the service, over the whole request log. */
function expectCreatedOnce(requests: RecordedRequest[], objects: KubeObject[]): void {
  expect(requests[0]?.seq, "the emulator's log starts at its first request (nothing dropped)").toBe(1);
  const projectCreates = countBy(requests, "createProject", (r) => (r.body as { slug?: string }).slug ?? "?");
  const slugs = objects.filter((o) => o.kind === "Project").map((o) => String(o.spec?.["slug"]));
  expect(Object.fromEntries(slugs.map((s) => [s, projectCreates.get(s) ?? 0]))).toEqual(Object.fromEntries(slugs.map((s) => [s, 1])));
  expect([...projectCreates].filter(([, n]) => n !== 1)).toEqual([]);
  const syncCreates = countBy(requests, "createSecretSync", (r) => `${r.path} ${(r.body as { name?: string }).name ?? "?"}`);
  expect(syncCreates.size).toBe(objects.filter((o) => o.kind === "SecretSync").length);
  expect([...syncCreates].filter(([, n]) => n !== 1)).toEqual([]);
}

/** Triggers of each SecretSync's sync at the service, by its object's key. */
function triggersBySync(requests: RecordedRequest[], objects: KubeObject[]): Record<string, number> {
  const byPath = countBy(requests, "triggerSecretSync", (r) => r.path);
  return Object.fromEntries(
    objects
      .filter((o) => o.kind === "SecretSync")
      .map((o) => {
        const syncId = String(o.status?.["syncId"]);
        return [objectKey(o), [...byPath].filter(([p]) => p.endsWith(`/${syncId}/sync-secrets`)).reduce((n, [, c]) => n + c, 0)];
      }),
  );
}

/**
 * The writes each object got while `recorder` ran, counted from `from(key, versions)` (an index
 * into the versions: 0 = the version the recording began with), and what each one changed.
 */
function writesPerObject(
  recorder: WriteRecorder,
  from: (key: string, versions: Versioned[]) => number | undefined,
): { counts: Record<string, number>; changes: Record<string, string[][]>; conditions: Record<string, string[]> } {
  const counts: Record<string, number> = {};
  const changes: Record<string, string[][]> = {};
  // Each counted version's conditions, to tell a storm from a real change (a transient failure).
  const conditions: Record<string, string[]> = {};
  for (const [key, { initial, writes }] of recorder.history()) {
    if (rotating.has(key) || initial === undefined) continue;
    const versions = [initial, ...writes];
    const start = from(key, versions);
    if (start === undefined) continue;
    const counted = versions.slice(Math.max(start, 0));
    // The service's 429 shown and cleared again (a condition with reason RateLimited, then without)
    // is the service throttling the new keyward's first pass — the emulator limits reads per token
    // per minute, as the real service limits them — not keyward writing by itself: those writes
    // are printed with the conditions but not counted.
    const throttled = (v: Versioned | undefined): boolean => conditionsOf(v).some((c) => c.reason === "RateLimited");
    counts[key] = counted.slice(1).filter((v, i) => !throttled(v) && !throttled(counted[i])).length;
    changes[key] = counted.slice(1).map((v, i) => changedFields(counted[i], v));
    conditions[key] = counted.map((v) => conditionsLine(v));
  }
  return { counts, changes, conditions };
}

const conditionsOf = (v: Versioned | undefined): Condition[] => v?.status?.["conditions"] ?? [];

function conditionsLine(v: Versioned): string {
  return conditionsOf(v)
    .map(
      (c) =>
        `${c.type ?? ""}=${c.status ?? ""}/${c.reason ?? ""} g${String(c.observedGeneration ?? "")} ${JSON.stringify(c.message ?? "")}`,
    )
    .join("; ");
}

function expectAtMostOneWrite(what: string, recorder: WriteRecorder, counted: ReturnType<typeof writesPerObject>): void {
  const written = Object.entries(counted.changes).filter(([, writes]) => writes.length > 0);
  console.log(
    `[upgrade.test] writes ${what} (any other object: none): ${written.map(([key, writes]) => `${key} ${JSON.stringify(writes)}`).join("; ") || "none"}` +
      (recorder.gaps().length > 0 ? ` (watch gaps: ${recorder.gaps().join("; ")})` : ""),
  );
  const storm = Object.entries(counted.counts).filter(([, n]) => n > 1);
  const detail = storm
    .map(
      ([key]) =>
        `${key}: ${JSON.stringify(counted.changes[key])}\n  conditions by version:\n    ${(counted.conditions[key] ?? []).join("\n    ")}`,
    )
    .join("\n");
  const gaps = recorder.gaps().length > 0 ? `\n(watch gaps, counted as one write each: ${recorder.gaps().join("; ")})` : "";
  expect(
    storm.map(([key, n]) => `${key}: ${n} writes`),
    `${what}: the fields each write changed:\n${detail}${gaps}`,
  ).toEqual([]);
}

/**
 * Every Project and SecretSync names its external object in metadata: the id in
 * keyward.dev/external-id, equal to status; or, a Project created by a keyward that announces
 * slugs, its slug's label (the id then stays out of metadata) — both releases' objects meet here.
 */
function expectExternalIds(objects: KubeObject[]): void {
  const namedBySlug = (o: KubeObject): boolean =>
    o.kind === "Project" &&
    o.metadata.annotations?.[EXTERNAL_ID] === undefined &&
    typeof o.status?.["slug"] === "string" &&
    o.metadata.labels?.[NATURAL_KEY_LABEL] === keyDigest(o.status["slug"]);
  const wrong = objects
    .filter((o) => externalIdField[o.kind] !== undefined && !namedBySlug(o))
    .map((o) => ({
      key: objectKey(o),
      annotation: o.metadata.annotations?.[EXTERNAL_ID],
      status: o.status?.[externalIdField[o.kind] ?? ""],
    }))
    .filter((x) => x.annotation !== x.status || typeof x.status !== "string");
  expect(wrong, `${EXTERNAL_ID} must equal the status id on every Project and SecretSync (or a Project's slug label name it)`).toEqual([]);
}

async function expectPodsRun(image: string): Promise<void> {
  const pods = (await keywardPods(systemNs, release)) as Pod[];
  expect(pods.length).toBeGreaterThan(0);
  expect(pods.map((p) => p.spec.containers.find((c) => c.name === "keyward")?.image)).toEqual(pods.map(() => image));
}

describe("upgrade from the previous release and rollback", () => {
  let recorder: WriteRecorder | undefined;
  let idsInstalled = new Map<string, string>();
  let upgraded: Versioned[] = [];

  beforeAll(async () => {
    const found = context().previousRelease;
    if ("error" in found) throw new Error(`the previous release could not be built: ${found.error}`);
    previous = found;
    crdsFound = await keywardCrds();
    await previousCrds();
    await createNamespace(emulatorNs);
    emulator = await deployEmulator(emulatorNs);
    await createNamespace(systemNs);
    await uninstallKeyward(release, systemNs);
    await helm([
      "install",
      release,
      previous.chart,
      "-n",
      systemNs,
      "--wait",
      "--timeout",
      "5m",
      ...imageValues(previous.image),
      ...userValues(),
    ]);
    await createNamespace(ns);
    // v1alpha1: the previous release serves nothing else.
    const docs = samples(emulator.baseUrl, "v1alpha1");
    expectedObjects = docs.filter((d) => d.apiVersion.startsWith("keyward.dev/")).length;
    recorder = await recordWrites(ns, (key) => !rotating.has(key));
    await apply(docs, ns);
    await settle(previous.image, recorder);
    recorder.stop();
  }, 900_000);

  afterAll(async () => {
    recorder?.stop();
    // A failure between the storage switch and its rollback: v1alpha1 stored again, and the
    // objects rewritten in it, so the CRDs below can go back to serving v1alpha1 alone.
    if (storageSwitched) {
      await helm([
        ...["upgrade", release, context().keywardChart, "-n", systemNs, "--reuse-values", "--set", "crds.storageVersion=v1alpha1"],
        ...["--wait", "--timeout", "5m"],
      ]);
      await migrateStorage("v1alpha1");
    }
    await uninstallKeyward(release, systemNs);
    // The CRDs as they were before this file (their spec, and which release owned them).
    if (crdsFound.length > 0) await replaceCrds(crdsFound);
  }, 300_000);

  test("the previous release runs objects of every kind, Ready", async () => {
    expect(previous.version).toMatch(/^\d+\.\d+\.\d+/);
    await expectPodsRun(previous.image);
    const chart = (JSON.parse(await helm(["list", "-n", systemNs, "-o", "json"])) as { name: string; chart: string }[]).find(
      (r) => r.name === release,
    );
    expect(chart?.chart).toBe(`keyward-${previous.version}`);
    const objects = await keywardObjects(ns);
    expect(new Set(objects.map((o) => o.kind))).toEqual(
      new Set(["ProviderConfig", "Project", "ProjectMembership", "SecretSync", "AccessToken", "CertificateProfile"]),
    );
    expect(objects.filter((o) => ready(o)?.status !== "True")).toEqual([]);
    idsInstalled = serviceIds(objects);
    // Every external object has its id (a membership has one of its two).
    expect([...idsInstalled].filter(([, ids]) => !(JSON.parse(ids) as unknown[]).some((id) => typeof id === "string"))).toEqual([]);
    expectCreatedOnce(await emulatorRequests(emulator), objects);
  });

  test("helm upgrade with sync requests pending and creates in flight: each runs once, one write per object at most", async () => {
    const requestsBefore = await emulatorRequests(emulator);
    const objectsBefore = await keywardObjects(ns);
    const triggersBefore = triggersBySync(requestsBefore, objectsBefore);
    recorder = await recordWrites(ns, (key) => !rotating.has(key));
    const request = `upgrade-${randomUUID()}`;
    await kubectl(["-n", ns, "annotate", "secretsyncs.keyward.dev", "--all", `${SYNC_REQUESTED}=${request}`, "--overwrite"]);
    await apply(inflight.map(project), ns);
    expectedObjects += inflight.length;
    await migrateCrds();
    await helm([
      "upgrade",
      release,
      // The release's packaged chart, its default image: what a user upgrades to.
      context().keywardChart,
      "-n",
      systemNs,
      "--wait",
      "--timeout",
      "5m",
      ...userValues(),
    ]);
    upgraded = await settle(context().keywardImage, recorder);
    recorder.stop();
    await expectPodsRun(context().keywardImage);
    const releases = JSON.parse(await helm(["list", "-n", systemNs, "-o", "json"])) as {
      name: string;
      chart: string;
      app_version: string;
    }[];
    expect(releases.find((r) => r.name === release)).toMatchObject({
      chart: `keyward-${context().keywardVersion}`,
      app_version: context().keywardVersion,
    });

    const requests = await emulatorRequests(emulator);
    expectCreatedOnce(requests, upgraded);
    expect(
      upgraded.filter((o) => o.kind === "Project" && inflight.includes(o.metadata.name)).map((o) => typeof o.status?.["projectId"]),
    ).toEqual(inflight.map(() => "string"));
    // The request value: one trigger per SecretSync, whichever keyward handled it.
    const triggers = triggersBySync(requests, upgraded);
    expect(Object.keys(triggers).length).toBe(7);
    expect(triggers).toEqual(Object.fromEntries(Object.entries(triggersBefore).map(([k, n]) => [k, n + 1])));
    expect(upgraded.filter((o) => o.kind === "SecretSync").map((o) => o.status?.["lastHandledSyncRequest"])).toEqual(
      new Array<string>(7).fill(request),
    );
    // The same external objects.
    const ids = serviceIds(upgraded);
    expect(Object.fromEntries([...idsInstalled].map(([k]) => [k, ids.get(k)]))).toEqual(Object.fromEntries(idsInstalled));
    // At most one write per object that was steady before: counted from the start of the
    // recording, and for a SecretSync (its annotation changed here) from the version where its
    // request was handled and its job settled.
    const counted = writesPerObject(recorder, (key, versions) => {
      if (!key.startsWith("SecretSync/")) return 0;
      const handled = versions.findIndex((v) => v.status?.["lastHandledSyncRequest"] === request && steady(v));
      expect(handled, `${key}: a version with ${request} handled`).toBeGreaterThanOrEqual(0);
      return handled;
    });
    expect(Object.keys(counted.counts).length).toBe(expectedObjects - inflight.length - rotating.size);
    expectAtMostOneWrite("after the upgrade", recorder, counted);
    // The upgraded keyward's one write: the external id, in metadata.
    expectExternalIds(upgraded);
  }, 900_000);

  test("storage switched to v1beta1 and the objects rewritten, rolled back one step and rewritten in v1alpha1: nothing repeated or lost, keyward writes status once at most", async () => {
    expect(upgraded.length).toBe(expectedObjects);
    // Objects written in both versions before the switch: one Project created as v1beta1.
    const beta = await kubectlJson(["-n", ns, "get", "projects.v1beta1.keyward.dev", inflight[0] ?? "", "-o", "json"]);
    const betaSpec = { ...beta.spec, name: "storage-beta", slug: "storage-beta" };
    await apply([{ apiVersion: "keyward.dev/v1beta1", kind: "Project", metadata: { name: "storage-beta" }, spec: betaSpec }], ns);
    expectedObjects += 1;
    recorder = await recordWrites(ns, (key) => !rotating.has(key));
    let objects = await settle(context().keywardImage, recorder);
    recorder.stop();
    expect(await crdStorage()).toEqual(
      Object.fromEntries(Object.keys(await crdStorage()).map((n) => [n, { storage: ["v1alpha1"], stored: ["v1alpha1"] }])),
    );
    const stored = await storedVersions();
    expect(Object.keys(stored).length, "every object of the namespace found in etcd").toBe(expectedObjects);
    expect(new Set(Object.values(stored))).toEqual(new Set(["keyward.dev/v1alpha1"]));

    const requestsBefore = await emulatorRequests(emulator);
    const triggersBefore = triggersBySync(requestsBefore, objects);
    const idsBefore = serviceIds(objects);
    const alphaBefore = await contents("v1alpha1");
    const betaBefore = await contents("v1beta1");

    // The switch, with the documented flags, then the rewrite.
    recorder = await recordWrites(ns, (key) => !rotating.has(key));
    const flags = documentedSwitchFlags();
    expect(flags).toEqual(["--reuse-values", "--set", "crds.storageVersion=v1beta1"]);
    storageSwitched = true;
    await helm(["upgrade", release, context().keywardChart, "-n", systemNs, ...flags, "--wait", "--timeout", "5m"]);
    const switched = await crdStorage();
    for (const [name, s] of Object.entries(switched)) {
      expect(s, name).toEqual({ storage: ["v1beta1"], stored: ["v1alpha1", "v1beta1"] });
    }
    // One Project created as v1alpha1 after the switch: stored as v1beta1 from the start.
    await apply([project("storage-alpha")], ns);
    expectedObjects += 1;
    const runs = await migrateStorage("v1beta1");
    console.log(`[upgrade.test] storage migration to v1beta1: ${runs} run(s) of the documented commands`);
    objects = await settle(context().keywardImage, recorder);
    recorder.stop();
    expect(await crdStorage()).toEqual(
      Object.fromEntries(Object.keys(switched).map((n) => [n, { storage: ["v1beta1"], stored: ["v1beta1"] }])),
    );
    const rewritten = await storedVersions();
    expect(Object.keys(rewritten).length).toBe(expectedObjects);
    expect(new Set(Object.values(rewritten))).toEqual(new Set(["keyward.dev/v1beta1"]));
    // Read in both versions as before the switch (the new Project aside). v1beta1 exactly; v1alpha1
    // with every field it had, and any field it had not at its default: the rewrite is a write in
    // v1beta1, whose schema states the defaults keyward applied in code (creationPolicy, ...).
    const without = (c: Record<string, unknown>): Record<string, unknown> =>
      Object.fromEntries(Object.entries(c).filter(([k]) => !k.endsWith("Project/storage-alpha")));
    const alphaAfter = without(await contents("v1alpha1"));
    expect(Object.keys(alphaAfter).sort()).toEqual(Object.keys(alphaBefore).sort());
    expect(alphaAfter).toMatchObject(alphaBefore);
    const specOf = (c: unknown): unknown => (c as { spec?: unknown } | undefined)?.spec;
    const explicit = Object.entries(alphaAfter).map(([k, v]) => [k, changedFields(specOf(alphaBefore[k]), specOf(v))]);
    console.log(`[upgrade.test] v1alpha1 fields the rewrite made explicit: ${JSON.stringify(Object.fromEntries(explicit))}`);
    // v1beta1 likewise, and each field it gained is at its default in v1beta1's schema.
    const betaAfter = without(await contents("v1beta1"));
    expect(Object.keys(betaAfter).sort()).toEqual(Object.keys(betaBefore).sort());
    expect(betaAfter).toMatchObject(betaBefore);
    const defaults = await betaSpecDefaults();
    const notDefault = Object.entries(betaAfter).flatMap(([key, after]) => {
      const kind = key.split(" ")[1]?.split("/")[0] ?? "";
      const spec = (specOf(after) ?? {}) as Record<string, unknown>;
      return changedFields(specOf(betaBefore[key]), spec)
        .filter((field) => JSON.stringify(spec[field]) !== JSON.stringify(defaults[kind]?.[field]))
        .map((field) => `${key} spec.${field}=${JSON.stringify(spec[field])}`);
    });
    expect(notDefault, "fields the rewrite added to v1beta1 reads, other than at their schema default").toEqual([]);

    let requests = await emulatorRequests(emulator);
    expectCreatedOnce(requests, objects);
    expect(triggersBySync(requests, objects)).toEqual(triggersBefore);
    let ids = serviceIds(objects);
    expect(Object.fromEntries([...idsBefore].map(([k]) => [k, ids.get(k)]))).toEqual(Object.fromEntries(idsBefore));
    expect(objects.filter((o) => ready(o)?.status !== "True")).toEqual([]);
    // The rewrite writes every object once; keyward then writes at most its status once (the
    // status of the new generation, where the rewrite made a default explicit), nothing else.
    let counted = writesPerObject(recorder, (key) => (key === "Project/storage-alpha" ? undefined : 0));
    expect(Object.keys(counted.counts).length).toBe(expectedObjects - 1 - rotating.size);
    console.log(`[upgrade.test] writes after the storage switch and the rewrite: ${JSON.stringify(counted.changes)}`);
    expect(Object.entries(counted.counts).filter(([, n]) => n < 1 || n > 2)).toEqual([]);
    const beyondStatus = Object.entries(counted.changes).flatMap(([key, writes]) =>
      writes.slice(1).flatMap((w) => w.filter((f) => !f.startsWith("status.")).map((f) => `${key} ${f}`)),
    );
    expect(beyondStatus, "keyward's writes after the rewrite change status only").toEqual([]);

    // Rolled back one step: v1alpha1 stored again, and every object rewritten in it.
    const rolledBackBefore = await contents("v1alpha1");
    recorder = await recordWrites(ns, (key) => !rotating.has(key));
    const rollback = documentedBlock("docs/compatibility.md", "helm rollback keyward -n keyward-system").trim();
    expect(rollback).toBe("helm rollback keyward -n keyward-system");
    await helm(["rollback", release, "-n", systemNs, "--wait", "--timeout", "5m"]);
    for (const [name, s] of Object.entries(await crdStorage()))
      expect(s, name).toEqual({ storage: ["v1alpha1"], stored: ["v1beta1", "v1alpha1"] });
    console.log(`[upgrade.test] storage migration to v1alpha1: ${await migrateStorage("v1alpha1")} run(s) of the documented commands`);
    objects = await settle(context().keywardImage, recorder);
    recorder.stop();
    expect(await crdStorage()).toEqual(
      Object.fromEntries(Object.keys(switched).map((n) => [n, { storage: ["v1alpha1"], stored: ["v1alpha1"] }])),
    );
    storageSwitched = false;
    expect(new Set(Object.values(await storedVersions()))).toEqual(new Set(["keyward.dev/v1alpha1"]));
    expect(await contents("v1alpha1")).toEqual(rolledBackBefore);
    requests = await emulatorRequests(emulator);
    expectCreatedOnce(requests, objects);
    expect(triggersBySync(requests, objects)).toEqual(triggersBefore);
    ids = serviceIds(objects);
    expect(Object.fromEntries([...idsBefore].map(([k]) => [k, ids.get(k)]))).toEqual(Object.fromEntries(idsBefore));
    expect(objects.filter((o) => ready(o)?.status !== "True")).toEqual([]);
    counted = writesPerObject(recorder, () => 0);
    expect(Object.keys(counted.counts).length).toBe(expectedObjects - rotating.size);
    expectAtMostOneWrite("after the rollback of the storage switch and the rewrite", recorder, counted);
    upgraded = objects;
  }, 1_200_000);

  test("helm rollback to revision 1: the previous release again, nothing repeated, one write per object at most", async () => {
    expect(upgraded.length).toBe(expectedObjects);
    const requestsBefore = await emulatorRequests(emulator);
    const objectsBefore = await keywardObjects(ns);
    const triggersBefore = triggersBySync(requestsBefore, objectsBefore);
    const idsBefore = serviceIds(objectsBefore);
    recorder = await recordWrites(ns, (key) => !rotating.has(key));
    // The documented step before a rollback to a release without the conversion webhook
    // (docs/compatibility.md, "Rolling back"): the CRDs, which a rollback keeps, stop serving
    // v1beta1 through it, so nothing reads through a webhook the rollback removes.
    await helm([
      ...["upgrade", release, context().keywardChart, "-n", systemNs, "--reuse-values", "--set", "webhook.enabled=false"],
      ...["--wait", "--timeout", "5m"],
    ]);
    await helm(["rollback", release, "1", "-n", systemNs, "--wait", "--timeout", "5m"]);
    const rolledBack = await settle(previous.image, recorder);
    recorder.stop();
    await expectPodsRun(previous.image);

    // The CRDs stayed (the new chart's carry helm.sh/resource-policy: keep), and with them every object.
    const crds = await keywardCrds();
    expect(crds.length).toBeGreaterThanOrEqual(6);
    // Reads naming no version work with no webhook anywhere (they failed after a bare rollback).
    expect((await kubectl(["-n", ns, "get", "projects.keyward.dev", "-o", "name"])).split("\n").filter(Boolean).length).toBeGreaterThan(0);
    expect(rolledBack.map((o) => o.metadata.uid).sort()).toEqual(objectsBefore.map((o) => o.metadata.uid).sort());
    const requests = await emulatorRequests(emulator);
    expectCreatedOnce(requests, rolledBack);
    expect(triggersBySync(requests, rolledBack)).toEqual(triggersBefore);
    const ids = serviceIds(rolledBack);
    expect(Object.fromEntries(ids)).toEqual(Object.fromEntries(idsBefore));
    expect(Object.fromEntries([...idsInstalled].map(([k]) => [k, ids.get(k)]))).toEqual(Object.fromEntries(idsInstalled));
    const counted = writesPerObject(recorder, () => 0);
    expect(Object.keys(counted.counts).length).toBe(expectedObjects - rotating.size);
    expectAtMostOneWrite("after the rollback", recorder, counted);
  }, 900_000);
});
