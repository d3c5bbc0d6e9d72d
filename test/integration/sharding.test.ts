// Active-active sharding (issue 18) on the real apiserver: keyward processes (src/main.ts with
// --sharding) share 300 Projects and 12 SecretSyncs over 12 namespaces. One replica is SIGKILLed
// and another added while Projects are created and sync requests are annotated; the service's
// request log must show one create per Project and one sync-secrets call per request.
import { spawn } from "node:child_process";
import { dirname } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CoordinationV1Api, CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import type { Emulator } from "../emulator/server.ts";
import { loadDefaultSeed } from "../emulator/default-seed.ts";
import { createTestNamespace, testKubeconfigPath, testKubectlPath, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import { alive, shares, startReplica as startShardReplica, type Replica } from "./support/shard-replicas.ts";
import { shardKey } from "../../src/shard/sharder.ts";
import { DRAIN_LABEL, SHARD_LABEL } from "../../src/shard/plan.ts";
import { GROUP, VERSION, type KubeObject } from "../../src/engine/types.ts";
import {
  condition,
  createCustom,
  getCustom,
  dataPlatformSync,
  exposedTexts,
  installProvider,
  isReady,
  mergePatchCustom,
  projectObject,
  startTestEnv,
  type TestEnv,
} from "./support/keyward.ts";

const TOKEN = "kw-sharding-token-5e1f0a";
const NAMESPACES = 12;
const PROJECTS_PER_NAMESPACE = 25;
let env: TestEnv | undefined;
let kc: KubeConfig;
let emulator: Emulator;
let leaseNs: TestNamespace;
const namespaces: TestNamespace[] = [];
const replicas: Replica[] = [];

async function startReplica(identity: string): Promise<Replica> {
  const replica = await startShardReplica(identity, { namespaces: namespaceNames(), leaseNamespace: leaseNs.name, anyBaseUrl: false });
  replicas.push(replica);
  return replica;
}

/** The test's namespaces: every one holds objects, so the sharder's shares are over all of them. */
const namespaceNames = (): string[] => namespaces.map((n) => n.name);

/** An identity (from a fixed list) the sharder gives at least one of the namespaces, next to `others`. */
function identityOwningSome(prefix: string, others: readonly string[]): string {
  for (let i = 0; i < 100; i++) {
    const candidate = `${prefix}-${String(i)}`;
    const ring = shares([...others, candidate], namespaceNames());
    if (namespaces.some((n) => ring.ownerOf(shardKey({ metadata: { namespace: n.name, name: "x" } })) === candidate)) return candidate;
  }
  throw new Error("no identity owns a namespace");
}

async function listAll(plural: string): Promise<KubeObject[]> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const lists = await Promise.all(
    namespaces.map(
      async (n) =>
        (await custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: n.name, plural })) as { items: KubeObject[] },
    ),
  );
  return lists.flatMap((l) => l.items);
}

async function createProjects(from: number, to: number): Promise<void> {
  const jobs: Promise<unknown>[] = [];
  for (let i = from; i < to; i++) {
    const ns = namespaces[i % NAMESPACES];
    if (ns)
      jobs.push(
        createCustom(
          kc,
          ns.name,
          "projects",
          projectObject(`p-${String(i)}`, { name: `sharded ${String(i)}`, slug: `sharded-${String(i)}` }),
        ),
      );
  }
  await Promise.all(jobs);
}

async function requestSync(value: string): Promise<void> {
  await Promise.all(
    namespaces.map((n, i) =>
      mergePatchCustom(kc, n.name, "secretsyncs", `sync-${String(i)}`, {
        metadata: { annotations: { "keyward.dev/sync-requested-at": value } },
      }),
    ),
  );
}

async function syncsHandled(value: string): Promise<KubeObject[]> {
  return waitFor(
    async () => {
      const syncs = await listAll("secretsyncs");
      return syncs.length === NAMESPACES && syncs.every((s) => s.status?.["lastHandledSyncRequest"] === value) ? syncs : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 500, description: `every SecretSync handled sync request ${value}` },
  );
}

beforeAll(async () => {
  env = await startTestEnv({ prefix: "sharding", token: TOKEN, emulator: { seed: loadDefaultSeed(), jobDelayMs: 50 }, keyward: false });
  ({ kc, emulator } = env);
  leaseNs = env.ns;
  for (let i = 0; i < NAMESPACES; i++) {
    const ns = await createTestNamespace(`sharding-${String(i)}`);
    namespaces.push(ns);
    env.onStop(() => ns.cleanup());
    await installProvider(kc, ns.name, emulator.url, TOKEN);
  }
  env.onStop(async () => {
    for (const r of replicas.filter(alive)) {
      r.child.kill("SIGTERM");
      await r.exited;
    }
  });
}, 120_000);

afterAll(() => env?.stop());

describe("three replicas, one killed and one added mid-run", () => {
  let final: string[] = [];

  it("reconciles every object once, on the replica its shares name, through a kill and a join", { timeout: 420_000 }, async () => {
    const a = "kw-a";
    const c = "kw-c";
    const b = identityOwningSome("kw-b", [a, c]);
    const [ra, rb, rc] = [await startReplica(a), await startReplica(b), await startReplica(c)];
    await Promise.all([ra.started, rb.started, rc.started]);

    const total = NAMESPACES * PROJECTS_PER_NAMESPACE;
    await Promise.all(namespaces.map((n, i) => createCustom(kc, n.name, "secretsyncs", dataPlatformSync(`sync-${String(i)}`))));
    await createProjects(0, total / 2);

    // B dies with work of its own in flight; its namespaces move once its Lease has expired.
    rb.child.kill("SIGKILL");
    await rb.exited;
    await createProjects(total / 2, (total * 3) / 4);
    await requestSync("first");
    await syncsHandled("first");

    // D joins: namespaces move to it from live owners, by way of the drain label.
    const d = identityOwningSome("kw-d", [a, c]);
    const rd = await startReplica(d);
    await requestSync("second");
    await createProjects((total * 3) / 4, total);
    await rd.started;
    await syncsHandled("second");

    final = [a, c, d];
    const projects = await waitFor(
      async () => {
        const all = await listAll("projects");
        return all.length === total && all.every(isReady) ? all : undefined;
      },
      { timeoutMs: 240_000, intervalMs: 1_000, description: "every Project Ready" },
    );

    // The service saw one create per Project and one sync-secrets call per request and sync.
    // Every attempt counts, refused or not: a second replica's create of a taken slug would be a 400.
    const creates = emulator.requests().filter((r) => r.operation === "createProject");
    expect(creates.filter((r) => r.status === 200)).toHaveLength(total);
    expect(creates).toHaveLength(total);
    const syncIds = (await listAll("secretsyncs")).map((s) => String(s.status?.["syncId"]));
    for (const id of syncIds) {
      expect(emulator.requests().filter((r) => r.operation === "triggerSecretSync" && r.path.includes(id))).toHaveLength(2);
    }

    // Every object ends on its owner among the live replicas (the ring with bounded loads), none left draining.
    const ring = shares(final, namespaceNames());
    const everything = [...projects, ...(await listAll("secretsyncs")), ...(await listAll("providerconfigs"))];
    await waitFor(
      async () => {
        const now = [...(await listAll("projects")), ...(await listAll("secretsyncs")), ...(await listAll("providerconfigs"))];
        return now.every(
          (o) => o.metadata.labels?.[SHARD_LABEL] === ring.ownerOf(shardKey(o)) && o.metadata.labels?.[DRAIN_LABEL] === undefined,
        )
          ? true
          : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500, description: "every object labelled for its owner" },
    );
    expect(new Set(everything.map((o) => ring.ownerOf(shardKey(o)))).has(d)).toBe(true);
    // Bounded loads, read from the labels: no replica holds more than 4 of the 12 namespaces (the
    // fair share; 10% above it rounds down to 4 too), where a plain ring over these random
    // namespace names puts 5 or more on one replica in about 15 runs of 16.
    const labelled = [...(await listAll("projects")), ...(await listAll("secretsyncs")), ...(await listAll("providerconfigs"))];
    const namespacesOf = new Map<string, Set<string>>();
    for (const o of labelled) {
      const owner = o.metadata.labels?.[SHARD_LABEL] ?? "";
      namespacesOf.set(owner, (namespacesOf.get(owner) ?? new Set()).add(o.metadata.namespace ?? ""));
    }
    expect([...namespacesOf.keys()].sort()).toEqual([...final].sort());
    expect(Math.max(...[...namespacesOf.values()].map((set) => set.size))).toBeLessThanOrEqual(4);
    // Each replica caches its own share only: the memory per replica falls as replicas are added.
    for (const r of [ra, rc, rd]) {
      const text = await (await fetch(`http://127.0.0.1:${String(r.metricsPort)}/metrics`)).text();
      const cached = Number(/^keyward_informer_cached_objects\{kind="Project"\} (\d+)$/m.exec(text)?.[1]);
      expect(cached).toBe(projects.filter((p) => ring.ownerOf(shardKey(p)) === r.identity).length);
    }
    // The join moved objects from live owners: they let go themselves.
    expect([ra, rc].some((r) => r.logs.some((l) => l.includes("let go of a drained object")))).toBe(true);
  });

  it("reports each replica's share on the leader's /metrics", async () => {
    const texts = await Promise.all(
      replicas.filter(alive).map(async (r) => (await fetch(`http://127.0.0.1:${String(r.metricsPort)}/metrics`)).text()),
    );
    const withShards = texts.filter((t) => t.includes("keyward_shard_members"));
    expect(withShards).toHaveLength(1);
    const text = withShards[0] ?? "";
    expect(text).toMatch(/^keyward_shard_members 3$/m);
    const owned = [...text.matchAll(/^keyward_shard_objects\{shard="([^"]+)"\} (\d+)$/gm)].map((m) => [m[1], Number(m[2])] as const);
    expect(owned.length).toBeGreaterThan(0);
    for (const [shard] of owned) expect(final).toContain(shard);
    expect(owned.reduce((sum, [, n]) => sum + n, 0)).toBe(NAMESPACES * PROJECTS_PER_NAMESPACE + 2 * NAMESPACES);
  });

  it("wakes a ProviderConfig's users on the replica that owns them when it is fixed (no resync within the test)", async () => {
    const n = namespaces[1];
    if (!n) throw new Error("no namespace");
    await installProvider(kc, n.name, emulator.url, "kw-sharding-wrong-token", "broken");
    await createCustom(
      kc,
      n.name,
      "projects",
      projectObject("waiting", { name: "waiting", slug: "sharded-waiting", providerConfigRef: { name: "broken" } }),
    );
    await waitFor(
      async () => (condition(await getCustom(kc, n.name, "projects", "waiting"), "Synced")?.reason === "Forbidden" ? true : undefined),
      { timeoutMs: 60_000, description: "Forbidden first" },
    );
    await mergePatchCustom(kc, n.name, "providerconfigs", "broken", { spec: { credentialsSecretRef: { name: "default-token" } } });
    const ready = await waitFor(
      async () => {
        const o = await getCustom(kc, n.name, "projects", "waiting");
        return o && isReady(o) ? o : undefined;
      },
      { timeoutMs: 60_000, description: "Project Ready after its ProviderConfig is fixed" },
    );
    expect(ready.metadata.labels?.[SHARD_LABEL]).toBe(shares(final, namespaceNames()).ownerOf(shardKey(ready)));
  });

  it("shows each object's replica in kubectl keyward status (a SHARD column)", async () => {
    const n = namespaces[0];
    if (!n) throw new Error("no namespace");
    const out = await new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, ["bin/kubectl-keyward.cjs", "status", "-n", n.name], {
        env: { ...process.env, KUBECONFIG: testKubeconfigPath(), PATH: `${dirname(testKubectlPath())}:${process.env["PATH"] ?? ""}` },
        stdio: ["ignore", "pipe", "inherit"],
      });
      let text = "";
      child.stdout.setEncoding("utf8").on("data", (c: string) => (text += c));
      child.on("error", reject);
      child.on("close", (code) => (code === 0 ? resolve(text) : reject(new Error(`status exited ${String(code)}: ${text}`))));
    });
    const [header, ...rows] = out.trimEnd().split("\n");
    expect(header).toMatch(/^KIND\s+NAMESPACE\s+NAME\s+READY\s+REASON\s+SERVICE-ID\s+SHARD\s+LAST-SYNC$/);
    const owner = shares(final, namespaceNames()).ownerOf(shardKey({ metadata: { namespace: n.name, name: "any" } })) ?? "";
    expect(rows.length).toBe(PROJECTS_PER_NAMESPACE + 2);
    for (const row of rows) expect(row.split(/\s{2,}/)[6]).toBe(owner);
  });

  it("a replica that leaves gracefully: its share moves at once and the leader deletes its Lease", async () => {
    const leaving = replicas.find((r) => alive(r) && r.identity === final[2]);
    if (!leaving) throw new Error("no replica to stop");
    leaving.child.kill("SIGTERM");
    expect(await leaving.exited).toBe("0");
    const staying = final.filter((id) => id !== leaving.identity);
    const ring = shares(staying, namespaceNames());
    await waitFor(
      async () => {
        const all = [...(await listAll("projects")), ...(await listAll("secretsyncs"))];
        return all.every((o) => o.metadata.labels?.[SHARD_LABEL] === ring.ownerOf(shardKey(o))) ? true : undefined;
      },
      // Released, so no Lease expiry to wait for: well within one lease duration of 6 s plus a poll.
      { timeoutMs: 60_000, intervalMs: 250, description: "the leaver's share on the others" },
    );
    const custom = kc.makeApiClient(CoordinationV1Api);
    await waitFor(
      async () => {
        const names = (await custom.listNamespacedLease({ namespace: leaseNs.name })).items.map((l) => l.metadata?.name ?? "");
        return names.some((n) => n.endsWith(`-shard-${leaving.identity}`)) ? undefined : names;
      },
      { timeoutMs: 30_000, description: "the leaver's shard Lease deleted" },
    );
    final = staying;
  });

  it("never writes the token into any replica's logs, events or status", async () => {
    const logs = replicas.flatMap((r) => r.logs);
    expect(logs.join("\n")).toContain("keyward started");
    for (const n of namespaces.slice(0, 3)) {
      for (const text of (await exposedTexts(n.name, logs, "projects,secretsyncs,providerconfigs")).all) expect(text).not.toContain(TOKEN);
    }
  });
});
