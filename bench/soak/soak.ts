// npm run soak: keyward under churn and faults for --minutes, then a quiet tail, then the
// invariants judged from outside (judge.ts) and health over time (health.ts). See
// docs/contributing/benchmarks.md, "The soak".
//
//   npm run soak -- --minutes 5 --seed 7 [--namespaces 20] [--replicas 3] [--tail-minutes 5] [--on kind]
//
// Where keyward runs is a site (site.ts): by default processes of src/main.ts (one, or --replicas
// N with sharding) against a control plane of the soak's own and the emulator in this process
// (local.ts); with --on kind, the packaged chart in a kind cluster with the emulator in it
// (kind.ts). Exit status: 0 when every invariant holds, 1 otherwise.
import { execFile } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs, promisify } from "node:util";
import { setTimeout as sleep } from "node:timers/promises";
import { CoordinationV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { repoRoot } from "../../test/controlplane/binaries.ts";
import { principalOf } from "../../test/emulator/pipeline.ts";
import type { Faults, RecordedRequest } from "../../test/emulator/server.ts";
import { ALLOWED_BASE_URLS_ANNOTATION, CREDENTIALS_LABEL } from "../../src/resources/provider/credentials.ts";
import { FINALIZER } from "../../src/engine/meta.ts";
import { parseRequestCounts } from "../support/apiserver-metrics.ts";
import { judge, type Call, type FinalObject, type Lineage, type ServiceState, type Verdict } from "./judge.ts";
import { brokenBuild, patches, type BrokenBuild } from "./broken.ts";
import { laterSlopes, metricSum, plotSvg, seriesCount, type Sample } from "./health.ts";
import { kindContextFromUp, kindSite, type KindContext } from "./kind.ts";
import { localSite } from "./local.ts";
import type { Site } from "./site.ts";
import {
  accessTokenManifest,
  createRandom,
  deletionPolicies,
  destinations,
  memberRoles,
  membershipManifest,
  membershipRoles,
  membershipUser,
  plurals,
  profileManifest,
  profileSlugs,
  projectManifest,
  syncManifest,
  type Kind,
  type Provider,
} from "./workload.ts";

const execFileAsync = promisify(execFile);
const GROUP = "keyward.dev";
const VERSION = "v1alpha1";
const SYNC_REQUESTED = "keyward.dev/sync-requested-at";
const REMOVE_REQUESTED = "keyward.dev/remove-secrets-requested-at";
/** The ClusterProviderConfig every fourth namespace's resources use, and where its Secret lives. */
const SHARED_CONFIG = "soak-shared";
const CREDENTIALS_NAMESPACE = "soak-credentials";
const SHARED_TOKEN_SECRET = "soak-shared-token";
const usesSharedConfig = (index: number): boolean => index % 4 === 3;

export interface SoakOptions {
  seed: number;
  /** Churn and faults, before the quiet tail. */
  minutes: number;
  namespaces: number;
  /** 1: one keyward; more: that many replicas with sharding and leader election. */
  replicas: number;
  /** The longest the quiet tail waits for everything to settle. */
  tailMinutes: number;
  /**
   * Live resources per namespace the workload keeps around (creates turn into deletions above it);
   * each namespace is applied up to it at once before the churn (the ramp).
   */
  objectsPerNamespace: number;
  outDir: string;
  /** Lease duration of leader election and shard Leases (default 6 s; the renew deadline is two thirds of it). */
  leaseSeconds?: number;
  /** keyward's entry point (default src/main.ts): a patched copy proves the soak catches a broken build. */
  keywardScript?: string;
  /** Where keyward runs (site.ts): processes on a control plane of the soak's own (default), or the chart on kind. */
  on?: "local" | "kind";
  /** With on: "kind", the cluster and artifacts (default: hack/e2e/up.sh builds or reuses them). */
  kind?: KindContext;
  log?: (line: string) => void;
}

export interface SoakReport {
  options: Omit<SoakOptions, "log">;
  startedAt: string;
  durationSeconds: number;
  objects: { created: Record<string, number>; deleted: Record<string, number>; peakLive: number; liveAtEnd: number };
  operations: Record<string, number>;
  faults: { scheduled: Record<string, number>; shapedRequests: Record<string, number> };
  /** Seconds the ramp took to apply every namespace up to objectsPerNamespace. */
  rampSeconds: number;
  keywardKills: number;
  /** Of the SIGKILLs, those aimed at the leader (the Lease holder), with sharding. */
  leaderKills: number;
  /** Processes that exited by themselves (a replica that lost its lease) and were started again. */
  keywardExitsRestarted: number;
  /** With sharding: replicas added during the run, and replicas stopped (SIGTERM) for good. */
  replicasJoined: number;
  replicasLeft: number;
  /** A keyward process's apiserver connections (its watches among them) reset at the TCP proxy: times, and connections. */
  connectionCuts: { times: number; connections: number };
  /** On kind: pods evicted through the Eviction API, and evictions the PodDisruptionBudget refused. */
  evictions: { evicted: number; refused: number };
  apiserverRestarts: number;
  /** ProviderConfig and ClusterProviderConfig spec changes and credential rotations, by kind. */
  providerChanges: Record<string, number>;
  /** Temporary membership roles declared, and those whose end the service had passed at the end. */
  temporaryRoles: { declared: number; endedAtService: number };
  serviceCalls: { total: number; byOperation: Record<string, number> };
  settledAfterSeconds: number | undefined;
  invariants: { name: string; checked: number; violations: number; examples: string[]; notes: string[] }[];
  health: { samples: number; later: ReturnType<typeof laterSlopes>; maxRssMb: number; queueDepthAtEnd: number };
  files: { report: string; plot: string };
  passed: boolean;
}

const fallbackLog = (line: string): void => {
  process.stdout.write(`${new Date().toISOString()} ${line}\n`);
};

export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const log = options.log ?? fallbackLog;
  const began = Date.now();
  const t = (): number => (Date.now() - began) / 1000;
  // One stream per schedule, so each replays its own sequence whatever the others' timing.
  const random = createRandom(options.seed);
  const faultRandom = createRandom(options.seed * 7919 + 1);
  const killRandom = createRandom(options.seed * 7919 + 2);
  const prefix = `k${options.seed.toString(36)}`;
  mkdirSync(options.outDir, { recursive: true });
  const stamp = new Date(began).toISOString().replace(/[:.]/g, "-");
  const base = join(options.outDir, `soak-${options.seed}-${stamp}`);

  const events: { t: number; what: string }[] = [];
  const site: Site =
    options.on === "kind"
      ? kindSite({ context: options.kind ?? (await kindContextFromUp()), log })
      : await localSite({
          base,
          ...(options.leaseSeconds !== undefined ? { leaseSeconds: options.leaseSeconds } : {}),
          ...(options.keywardScript !== undefined ? { keywardScript: options.keywardScript } : {}),
          log,
          note: (what) => events.push({ t: t(), what }),
        });
  try {
    const kc = new KubeConfig();
    kc.loadFromFile(site.kubeconfigPath);
    const core = kc.makeApiClient(CoreV1Api);
    const custom = kc.makeApiClient(CustomObjectsApi);

    const namespaces = Array.from({ length: options.namespaces }, (_, i) => `soak-${String(i).padStart(2, "0")}`);
    const providerOf = new Map<string, Provider>(
      namespaces.map((ns, i) => [
        ns,
        usesSharedConfig(i) ? { kind: "ClusterProviderConfig", name: SHARED_CONFIG } : { kind: "ProviderConfig" },
      ]),
    );
    const sharedNamespaces = namespaces.filter((ns) => providerOf.get(ns)?.kind === "ClusterProviderConfig");
    // Two tokens per credential, both valid at the service: the run rotates between them.
    const tokensOf = (owner: string): [string, string] => [
      `soak-token-${owner}-${options.seed}-a`,
      `soak-token-${owner}-${options.seed}-b`,
    ];
    const credentialOwners = [
      ...namespaces.filter((ns) => !sharedNamespaces.includes(ns)),
      ...(sharedNamespaces.length > 0 ? [SHARED_CONFIG] : []),
    ];
    const service = await site.open(credentialOwners.flatMap(tokensOf));
    for (const ns of namespaces) {
      await core.createNamespace({ body: { metadata: { name: ns } } });
      if (!sharedNamespaces.includes(ns)) await installProviderConfig(core, custom, ns, service.url, tokensOf(ns)[0]);
    }
    if (sharedNamespaces.length > 0) {
      await core.createNamespace({ body: { metadata: { name: CREDENTIALS_NAMESPACE } } });
      await installClusterProviderConfig(core, custom, sharedNamespaces, service.url, tokensOf(SHARED_CONFIG)[0]);
    }
    const principalsOf = new Map(
      namespaces.map((ns) => [ns, new Set(tokensOf(sharedNamespaces.includes(ns) ? SHARED_CONFIG : ns).map(principalOf))]),
    );

    const sharded = options.replicas > 1;
    await site.startKeyward({
      namespaces,
      clusterProviderConfigs: sharedNamespaces.length > 0,
      credentialsNamespace: CREDENTIALS_NAMESPACE,
      replicas: options.replicas,
    });
    log(
      `keyward up (${options.replicas} ${sharded ? "sharded replicas" : "process"}), ${namespaces.length} namespaces (${sharedNamespaces.length} on the ClusterProviderConfig)`,
    );

    // ---- evidence gathered as the run goes
    const lineages = new Map<string, Lineage>();
    const live = new Map<string, LiveObject>();
    const calls: Call[] = [];
    const projectIdsBySlug = new Map<string, Set<string>>();
    const syncIdsByName = new Map<string, Set<string>>();
    const operations: Record<string, number> = {};
    const count = (what: string): void => {
      operations[what] = (operations[what] ?? 0) + 1;
    };
    /** The apiserver's refusals of workload requests, by status (a restart, a name taken). */
    const failed = (error: unknown): void => {
      const code = (error as { code?: number }).code;
      count(`workload request failed: ${String(code ?? "no answer")}`);
      if (code === 422) log(`the apiserver refused a workload request: ${String((error as { body?: unknown }).body).slice(0, 300)}`);
    };
    const samples: Sample[] = [];
    let peakLive = 0;

    const drain = async (): Promise<void> => {
      for (const r of await service.takeRequests()) calls.push(compact(r));
    };
    const snapshotState = async (): Promise<ServiceState> => {
      const state = await service.state();
      for (const p of Object.values(state.projects)) addTo(projectIdsBySlug, p.slug, p.id);
      for (const s of Object.values(state.syncs)) addTo(syncIdsByName, s.name, s.id);
      return state;
    };
    const ownNamespaces = new Set(namespaces);
    const observe = async (): Promise<void> => {
      const listed = new Map<string, LiveObject>();
      for (const kind of Object.keys(plurals) as Kind[]) {
        const list = (await custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: plurals[kind] })) as {
          items: LiveObject[];
        };
        // Only the soak's own namespaces: a shared cluster (the kind e2e) holds other tests' objects,
        // which another service manages.
        for (const item of list.items) {
          if (!ownNamespaces.has(item.metadata.namespace ?? "")) continue;
          listed.set(lineageKey(kind, item.metadata.namespace, item.metadata.name), { ...item, kind });
        }
      }
      const seenAt = Date.now();
      live.clear();
      for (const [k, obj] of listed) {
        live.set(k, obj);
        // A create whose answer was lost (an apiserver restart) still gets its lineage.
        if (!lineages.has(k)) lineages.set(k, lineageOf(obj));
        const l = lineages.get(k);
        if (l && obj.metadata.finalizers?.includes(FINALIZER)) l.heldFinalizer = true;
      }
      for (const [k, l] of lineages) if (l.deleteRequestedAt !== undefined && l.goneAt === undefined && !listed.has(k)) l.goneAt = seenAt;
      peakLive = Math.max(peakLive, listed.size);
    };

    // ---- the workload
    let seq = 0;
    const next = (): number => (seq += 1);
    const provider = (ns: string): Provider => providerOf.get(ns) ?? { kind: "ProviderConfig" };
    let apiserverDown = false;
    const liveOf = (ns: string, kind: Kind): Lineage[] =>
      [...lineages.values()].filter((l) => l.namespace === ns && l.kind === kind && l.deleteRequestedAt === undefined);
    const create = async (ns: string, kind: Kind, body: { metadata: { name: string } }): Promise<void> => {
      const l = lineageOf({ ...(body as unknown as LiveObject), kind, metadata: { ...body.metadata, namespace: ns } });
      try {
        await custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: plurals[kind], body });
        lineages.set(lineageKey(kind, ns, body.metadata.name), l);
        count(`create ${kind}`);
      } catch (error) {
        failed(error);
      }
    };
    const patch = async (l: Lineage, body: object, what: string): Promise<boolean> => {
      try {
        await custom.patchNamespacedCustomObject(
          { group: GROUP, version: VERSION, namespace: l.namespace, plural: plurals[l.kind], name: l.name, body },
          setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
        );
        count(what);
        return true;
      } catch (error) {
        failed(error);
        return false;
      }
    };
    const remove = async (l: Lineage): Promise<void> => {
      const at = Date.now();
      try {
        await custom.deleteNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace: l.namespace,
          plural: plurals[l.kind],
          name: l.name,
        });
        l.deleteRequestedAt = at;
        count(`delete ${l.kind}${l.deletionPolicy ? ` (${l.deletionPolicy})` : ""}`);
      } catch (error) {
        if ((error as { code?: number }).code === 404) l.deleteRequestedAt = at;
        else failed(error);
      }
    };
    const newProject = async (ns: string): Promise<void> => {
      const n = next();
      const name = `p${n}`;
      const slug = `${prefix}-${ns.slice(5)}-p${n}`;
      // alice is a member of each project from its creation (the interface cannot add members).
      await service.seed({ memberships: [{ projectSlug: slug, username: membershipUser, roles: [{ role: "member" }] }] });
      await create(
        ns,
        "Project",
        projectManifest(name, slug, random.pick(deletionPolicies.Project), `d${n}`, provider(ns)) as { metadata: { name: string } },
      );
    };
    const newSync = async (ns: string, project: Lineage): Promise<void> => {
      const n = next();
      const destination = random.pick(Object.keys(destinations));
      const body = syncManifest(`${prefix}-${ns.slice(5)}-s${n}`, project.name, destination, {
        deletionPolicy: random.pick(deletionPolicies.SecretSync),
        description: `d${n}`,
        provider: provider(ns),
      });
      await create(ns, "SecretSync", body as { metadata: { name: string } });
    };
    // Half the memberships (and role changes) carry a temporary role that ends within the run.
    let temporaryRolesDeclared = 0;
    const temporarySeconds = Math.max(30, Math.min(300, options.minutes * 60 * 0.4));
    const rolesFor = (): ReturnType<typeof membershipRoles> => {
      if (!random.chance(0.5)) return membershipRoles(random.pick(memberRoles));
      temporaryRolesDeclared += 1;
      return membershipRoles(random.pick(memberRoles), 20 + random.int(temporarySeconds));
    };
    const newMembership = async (ns: string, project: Lineage): Promise<void> => {
      const body = membershipManifest(
        `m-${project.name}`,
        project.name,
        rolesFor(),
        random.pick(deletionPolicies.ProjectMembership),
        provider(ns),
      );
      await create(ns, "ProjectMembership", body as { metadata: { name: string } });
    };
    const deleteWithDependents = async (project: Lineage): Promise<void> => {
      const dependents = [...lineages.values()].filter(
        (l) => l.namespace === project.namespace && l.projectName === project.name && l.deleteRequestedAt === undefined,
      );
      await Promise.all([...dependents, project].map(remove));
    };
    const step = async (): Promise<void> => {
      const ns = random.pick(namespaces);
      const projects = liveOf(ns, "Project");
      const liveCount = [...lineages.values()].filter((l) => l.namespace === ns && l.deleteRequestedAt === undefined).length;
      const full = liveCount >= options.objectsPerNamespace;
      const op = random.weighted({
        project: full ? 0 : projects.length < 2 ? 20 : 6,
        sync: full || projects.length === 0 ? 0 : 14,
        membership: full || projects.length === 0 ? 0 : 4,
        token: full ? 0 : 2,
        profile: full ? 0 : 1,
        change: 16,
        syncRequest: 10,
        removeRequest: 4,
        delete: full ? 16 : 5,
        burst: 0.6,
      });
      const any = (kinds: Kind[]): Lineage[] => kinds.flatMap((k) => liveOf(ns, k));
      switch (op) {
        case "project":
          return newProject(ns);
        case "sync":
          return newSync(ns, random.pick(projects));
        case "membership": {
          const free = projects.filter(
            (p) => ![...lineages.values()].some((l) => l.kind === "ProjectMembership" && l.namespace === ns && l.projectName === p.name),
          );
          return free.length > 0 ? newMembership(ns, random.pick(free)) : undefined;
        }
        case "token": {
          const n = next();
          return create(
            ns,
            "AccessToken",
            accessTokenManifest(`t${n}`, random.chance(0.3), provider(ns)) as { metadata: { name: string } },
          );
        }
        case "profile": {
          const n = next();
          return create(
            ns,
            "CertificateProfile",
            profileManifest(`c${n}`, random.pick(profileSlugs), provider(ns)) as { metadata: { name: string } },
          );
        }
        case "change": {
          const candidates = any(["Project", "SecretSync", "ProjectMembership"]);
          if (candidates.length === 0) return;
          const l = random.pick(candidates);
          const spec = l.kind === "ProjectMembership" ? { roles: rolesFor() } : { description: `d${next()}` };
          await patch(l, { spec }, `spec change ${l.kind}`);
          return;
        }
        case "syncRequest":
        case "removeRequest": {
          const action = op === "syncRequest" ? "sync" : "remove";
          // A new value once the previous one is handled, so every value set must run (exactly once).
          const ready = liveOf(ns, "SecretSync").filter((l) => {
            const status = live.get(lineageKey("SecretSync", ns, l.name))?.status ?? {};
            const values = action === "sync" ? l.syncValues : l.removeValues;
            const handled = action === "sync" ? status["lastHandledSyncRequest"] : status["lastHandledRemoveSecretsRequest"];
            return typeof status["syncId"] === "string" && (values.length === 0 || handled === values[values.length - 1]);
          });
          if (ready.length === 0) return;
          const l = random.pick(ready);
          const value = new Date(Date.UTC(2030, 0, 1) + next() * 1000).toISOString();
          if (
            await patch(
              l,
              { metadata: { annotations: { [action === "sync" ? SYNC_REQUESTED : REMOVE_REQUESTED]: value } } },
              `${action} request`,
            )
          ) {
            (action === "sync" ? l.syncValues : l.removeValues).push(value);
          }
          return;
        }
        case "delete": {
          const candidates = any(["Project", "SecretSync", "ProjectMembership", "AccessToken", "CertificateProfile"]);
          if (candidates.length === 0) return;
          const l = random.pick(candidates);
          return l.kind === "Project" ? deleteWithDependents(l) : remove(l);
        }
        case "burst": {
          count("burst");
          events.push({ t: t(), what: `burst ${ns}` });
          if (random.chance(0.5)) {
            // The whole namespace deleted at once (its ProviderConfig stays).
            await Promise.all(liveOf(ns, "Project").map(deleteWithDependents));
            await Promise.all(any(["AccessToken", "CertificateProfile", "SecretSync", "ProjectMembership"]).map(remove));
          } else {
            // A namespace applied at once: projects with their syncs and a membership each.
            for (let i = 0; i < 3; i++) await newProject(ns);
            const fresh = liveOf(ns, "Project").slice(-3);
            await Promise.all(fresh.flatMap((p) => [newSync(ns, p), newSync(ns, p), newMembership(ns, p)]));
          }
          return;
        }
      }
    };

    // ---- faults: one at a time, on a schedule
    const faultKinds: Record<string, () => Faults> = {
      "500s": () => ({ errorRate: 0.4, errorStatus: 500 }),
      "503s": () => ({ errorRate: 0.4, errorStatus: 503 }),
      "429 with Retry-After": () => ({ rateLimit: { count: 30, retryAfterSeconds: 2 } }),
      "hang past the timeout": () => ({ latencyMs: 4_000, ...(faultRandom.chance(0.5) ? { match: { method: "POST" } } : {}) }),
      "create commits after its client gave up": () => ({ latencyMs: 4_000, landsWithoutClient: true, match: { method: "POST" } }),
      "answer held after handling": () => ({ latencyMs: 4_000, latencyWhen: "after-handling" }),
      "connection dropped before handling": () => ({ drop: { count: 10, when: "before-handling" } }),
      "commit then drop the answer": () => ({
        drop: { count: 10, when: "after-handling" },
        ...(faultRandom.chance(0.5) ? { match: { method: "POST" } } : {}),
      }),
    };
    const scheduled: Record<string, number> = {};

    // ---- the ramp: each namespace applied up to its live target at once (one burst of Projects,
    // then one of what refers to them), so the churn starts at full size and a long run is flat
    // after warm-up. Each burst's choices are drawn before its first request: the seed replays them.
    const liveIn = (ns: string): number =>
      [...lineages.values()].filter((l) => l.namespace === ns && l.deleteRequestedAt === undefined).length;
    events.push({ t: t(), what: "ramp" });
    log(`ramp: ${namespaces.length} namespaces up to ${options.objectsPerNamespace} resources each`);
    for (const ns of namespaces) {
      const projectsNeeded = Math.max(1, Math.ceil((options.objectsPerNamespace - liveIn(ns)) / 6));
      await Promise.all(Array.from({ length: projectsNeeded }, () => newProject(ns)));
      const projects = liveOf(ns, "Project");
      const dependents: Array<() => Promise<void>> = [];
      const room = options.objectsPerNamespace - liveIn(ns);
      // Per Project: a sync, a membership, a token or a profile, then two more syncs, until the target.
      for (let i = 0; dependents.length < room && i < projects.length * 5; i++) {
        const p = projects[i % projects.length];
        if (p === undefined) break;
        const round = Math.floor(i / projects.length);
        if (round === 1) dependents.push(() => newMembership(ns, p));
        else if (round === 2) {
          const n = next();
          dependents.push(() =>
            i % 2 === 0
              ? create(ns, "AccessToken", accessTokenManifest(`t${n}`, random.chance(0.3), provider(ns)) as { metadata: { name: string } })
              : create(
                  ns,
                  "CertificateProfile",
                  profileManifest(`c${n}`, random.pick(profileSlugs), provider(ns)) as { metadata: { name: string } },
                ),
          );
        } else dependents.push(() => newSync(ns, p));
      }
      await Promise.all(dependents.map((d) => d()));
    }
    const churnStart = Date.now();
    const rampSeconds = Math.round((churnStart - began) / 1000);
    log(`ramp done in ${rampSeconds} s: ${lineages.size} resources; churn for ${options.minutes} min`);

    const chaosEnd = churnStart + options.minutes * 60_000;
    // Kills, joins and leaves stop at 60% of the churn, so the later part shows one process's memory over time.
    const killsEnd = churnStart + options.minutes * 60_000 * 0.6;
    let apiserverRestarts = 0;
    let keywardKills = 0;
    let leaderKills = 0;
    let replicasJoined = 0;
    let replicasLeft = 0;
    const connectionCuts = { times: 0, connections: 0 };
    const cutRandom = createRandom(options.seed * 7919 + 4);
    const providerChanges: Record<string, number> = {};
    const providerRandom = createRandom(options.seed * 7919 + 5);
    /** Which of its two tokens each credential holds now (0 at install). */
    const tokenIndex = new Map<string, number>();
    const loops: Promise<void>[] = [];
    const until = async (end: number, body: () => Promise<void>): Promise<void> => {
      while (Date.now() < end) await body();
    };
    const evictions = { evicted: 0, refused: 0 };
    let stopSampling = false;
    const coordination = kc.makeApiClient(CoordinationV1Api);
    const leader = async (): Promise<string | undefined> => {
      try {
        const lease = await coordination.readNamespacedLease(site.leaderLease);
        return lease.spec?.holderIdentity ?? undefined;
      } catch {
        return undefined;
      }
    };
    /** The fault loops' base period: a minute, or a tenth of a short run (kills come every one to two of it). */
    const every = Math.min(60_000, options.minutes * 60_000 * 0.1);

    loops.push(
      until(chaosEnd, async () => {
        if (!apiserverDown) await step().catch(() => count("workload step failed"));
        await sleep(300 + random.int(400));
      }),
    );
    loops.push(
      until(chaosEnd, async () => {
        await sleep(15_000 + faultRandom.int(20_000));
        if (Date.now() >= chaosEnd) return;
        const kind = faultRandom.pick(Object.keys(faultKinds));
        const faults = faultKinds[kind]?.() ?? {};
        scheduled[kind] = (scheduled[kind] ?? 0) + 1;
        events.push({ t: t(), what: `fault: ${kind}` });
        await service.setFaults(faults).catch((error: unknown) => log(`setting faults failed: ${String(error)}`));
        await sleep(5_000 + faultRandom.int(10_000));
        await service.setFaults({}).catch((error: unknown) => log(`clearing faults failed: ${String(error)}`));
      }),
    );
    loops.push(
      until(killsEnd, async () => {
        await sleep(every + killRandom.int(every));
        if (Date.now() >= killsEnd) return;
        // With sharding, every other kill is aimed at the leader (the Lease's holder).
        const holder = sharded && killRandom.chance(0.5) ? await leader() : undefined;
        const candidates = await site.killable();
        const target = candidates.find((x) => x === holder) ?? (candidates.length > 0 ? killRandom.pick(candidates) : undefined);
        if (target === undefined) return;
        const isLeader = holder !== undefined && target === holder;
        const at = t();
        let how: string;
        try {
          how = await site.kill(target, killRandom);
        } catch (error) {
          log(`kill of ${target} failed: ${String(error)}`);
          return;
        }
        events.push({ t: at, what: `${how}${isLeader ? " (leader)" : ""}` });
        keywardKills += 1;
        if (isLeader) leaderKills += 1;
      }),
    );
    const scale = site.scale;
    if (sharded && scale) {
      // Replicas join and leave, as a Deployment scaled between replicas-1 and replicas+1: a leave
      // is a SIGTERM (the replica hands its share on), a join a new identity. Back to --replicas
      // at the end of the window.
      const scaleRandom = createRandom(options.seed * 7919 + 3);
      const join = async (): Promise<void> => {
        events.push({ t: t(), what: `${await scale.join()} joins` });
        replicasJoined += 1;
      };
      const leave = async (): Promise<void> => {
        const at = t();
        const identity = await scale.leave(scaleRandom);
        if (identity === undefined) return;
        events.push({ t: at, what: `${identity} leaves` });
        replicasLeft += 1;
      };
      loops.push(
        (async () => {
          await until(killsEnd, async () => {
            await sleep(every + scaleRandom.int(every));
            if (Date.now() >= killsEnd) return;
            const n = scale.size();
            const grow = n <= Math.max(1, options.replicas - 1) ? true : n >= options.replicas + 1 ? false : scaleRandom.chance(0.5);
            await (grow ? join() : leave());
          });
          while (scale.size() < options.replicas) await join();
          while (scale.size() > options.replicas) await leave();
        })(),
      );
    }
    const evict = site.evict?.bind(site);
    if (evict) {
      const evictRandom = createRandom(options.seed * 7919 + 6);
      loops.push(
        // Evictions (a node drain's requests) through the whole kill window: the PodDisruptionBudget decides.
        until(killsEnd, async () => {
          await sleep(every + evictRandom.int(every));
          if (Date.now() >= killsEnd || apiserverDown) return;
          const done = await evict(evictRandom).catch((error: unknown) => {
            failed(error);
            return undefined;
          });
          if (!done) return;
          if (done.evicted) evictions.evicted += 1;
          else evictions.refused += 1;
          events.push({ t: t(), what: `evict ${done.identity}${done.evicted ? "" : ": refused by the PodDisruptionBudget"}` });
        }),
      );
    }
    loops.push(
      // A process's apiserver connections reset at its proxy: its watches end mid-stream and its
      // requests in flight fail. Through the whole churn (a cut is not a restart: memory stays one curve).
      until(chaosEnd, async () => {
        await sleep(every * 0.75 + cutRandom.int(every));
        if (Date.now() >= chaosEnd) return;
        const cut = await site.cut?.(cutRandom);
        if (!cut) return;
        connectionCuts.times += 1;
        connectionCuts.connections += cut.connections;
        events.push({ t: t(), what: `cut ${cut.identity}'s ${cut.connections} apiserver connections` });
      }),
    );
    loops.push(
      // Providers change under their users: a rate limit changed (every user in reach is
      // evaluated again), or the credential rotated to the other token the service accepts.
      until(chaosEnd, async () => {
        await sleep(every / 2 + providerRandom.int(every));
        if (Date.now() >= chaosEnd || apiserverDown) return;
        const owner = providerRandom.pick(credentialOwners);
        const shared = owner === SHARED_CONFIG;
        const what = providerRandom.chance(0.5) ? "rate limit" : "credential rotation";
        try {
          if (what === "rate limit") {
            const rateLimit = { requestsPerSecond: providerRandom.pick([30, 40, 50]), burst: providerRandom.pick([60, 80, 100]) };
            const body = { spec: { rateLimit } };
            const merge = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
            if (shared)
              await custom.patchClusterCustomObject(
                { group: GROUP, version: VERSION, plural: "clusterproviderconfigs", name: SHARED_CONFIG, body },
                merge,
              );
            else
              await custom.patchNamespacedCustomObject(
                { group: GROUP, version: VERSION, namespace: owner, plural: "providerconfigs", name: "default", body },
                merge,
              );
          } else {
            const index = 1 - (tokenIndex.get(owner) ?? 0);
            const token = tokensOf(owner)[index] ?? "";
            await core.patchNamespacedSecret(
              {
                name: shared ? SHARED_TOKEN_SECRET : "soak-token",
                namespace: shared ? CREDENTIALS_NAMESPACE : owner,
                body: { stringData: { token } },
              },
              setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
            );
            tokenIndex.set(owner, index);
          }
          const key = `${shared ? "ClusterProviderConfig" : "ProviderConfig"} ${what}`;
          providerChanges[key] = (providerChanges[key] ?? 0) + 1;
          events.push({ t: t(), what: `${key} (${owner})` });
        } catch (error) {
          failed(error);
        }
      }),
    );
    if (options.minutes >= 3) {
      loops.push(
        (async () => {
          for (const at of [0.3, 0.55]) {
            await sleep(Math.max(0, churnStart + options.minutes * 60_000 * at - Date.now()));
            apiserverDown = true;
            events.push({ t: t(), what: "kube-apiserver restart" });
            await site.restartApiserver().catch((error: unknown) => log(`apiserver restart failed: ${String(error)}`));
            apiserverRestarts += 1;
            apiserverDown = false;
          }
        })(),
      );
    }
    const observerLoop = (async () => {
      let i = 0;
      while (!stopSampling) {
        await drain().catch(() => undefined);
        if (!apiserverDown) await observe().catch(() => undefined);
        if (i++ % 3 === 0) await snapshotState().catch(() => undefined);
        await sleep(2_000);
      }
    })();
    const sampler = createSampler(site, t, samples, () => live.size);
    const samplerLoop = (async () => {
      while (!stopSampling) {
        await sampler().catch(() => undefined);
        await sleep(10_000);
      }
    })();
    const progress = setInterval(() => {
      const alive = [...lineages.values()].filter((l) => l.deleteRequestedAt === undefined).length;
      log(
        `t=${Math.round(t())}s live=${alive} lineages=${lineages.size} service calls=${calls.length} faults=${JSON.stringify(scheduled)}`,
      );
    }, 60_000);

    await Promise.all(loops);
    // ---- the quiet tail
    await service.setFaults({});
    events.push({ t: t(), what: "quiet tail" });
    log("quiet tail: faults off, workload stopped");
    const tailStart = Date.now();
    let settledAfterSeconds: number | undefined;
    while (Date.now() - tailStart < options.tailMinutes * 60_000) {
      await sleep(5_000);
      await observe().catch(() => undefined);
      const pending = unsettled(lineages, live);
      if (pending.length === 0) {
        settledAfterSeconds = (Date.now() - tailStart) / 1000;
        break;
      }
      log(`settling: ${pending.length} not yet (${pending.slice(0, 3).join("; ")})`);
    }
    // Let the service's jobs finish and one more resync pass over everything.
    await sleep(15_000);
    await sampler().catch(() => undefined);
    stopSampling = true;
    clearInterval(progress);
    await Promise.all([observerLoop, samplerLoop]);
    await drain();
    await observe();
    const final = await snapshotState();
    for (const [k, l] of lineages) {
      const obj = live.get(k);
      if (obj) l.final = finalOf(obj);
    }

    const verdicts = judge({
      calls,
      lineages: [...lineages.values()],
      projectIdsBySlug,
      syncIdsByName,
      principalsOf,
      final,
      prefix,
    });
    const report = summarise({
      options,
      began,
      lineages: [...lineages.values()],
      operations,
      scheduled,
      calls,
      keywardKills,
      selfExits: await site.selfExits(),
      apiserverRestarts,
      settledAfterSeconds,
      verdicts,
      samples,
      peakLive,
      base,
      more: {
        rampSeconds,
        leaderKills,
        replicasJoined,
        replicasLeft,
        connectionCuts,
        evictions,
        providerChanges,
        temporaryRoles: { declared: temporaryRolesDeclared, endedAtService: endedTemporaryRoles(final, prefix, Date.now()) },
      },
    });
    writeFileSync(`${base}.json`, `${JSON.stringify({ ...report, samples, events }, null, 1)}\n`);
    // The call log as judged, one request a line: what a violation is read against afterwards.
    writeFileSync(`${base}-calls.jsonl`, calls.map((c) => `${JSON.stringify(c)}\n`).join(""));
    // And the rest of the evidence: without each resource's delete and gone times, and the service's
    // final state, a violation's resource could only be placed by replaying the seed's schedule.
    writeFileSync(`${base}-lineages.jsonl`, [...lineages.values()].map((l) => `${JSON.stringify(l)}\n`).join(""));
    writeFileSync(`${base}-state.json`, `${JSON.stringify(final, null, 1)}\n`);
    writeFileSync(
      `${base}.svg`,
      plotSvg(samples, events, `keyward soak, seed ${options.seed}, ${options.minutes} min, ${options.replicas} replica(s)`),
    );
    return report;
  } finally {
    await site.close();
  }
}

interface LiveObject {
  kind: Kind;
  metadata: { name: string; namespace: string; generation?: number; uid?: string; finalizers?: string[] };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown> & { conditions?: FinalObject["conditions"] };
}

const lineageKey = (kind: Kind, ns: string, name: string): string => `${kind}/${ns}/${name}`;

function lineageOf(obj: LiveObject): Lineage {
  const spec = obj.spec ?? {};
  const projectRef = spec["projectRef"] as { name?: string } | undefined;
  return {
    kind: obj.kind,
    namespace: obj.metadata.namespace,
    name: obj.metadata.name,
    ...(typeof spec["deletionPolicy"] === "string" ? { deletionPolicy: spec["deletionPolicy"] } : {}),
    ...(obj.kind === "Project" && typeof spec["slug"] === "string" ? { slug: spec["slug"] } : {}),
    ...(projectRef?.name ? { projectName: projectRef.name } : {}),
    syncValues: [],
    removeValues: [],
  };
}

const finalOf = (obj: LiveObject): FinalObject => ({
  generation: obj.metadata.generation ?? 0,
  spec: obj.spec ?? {},
  conditions: obj.status?.conditions ?? [],
});

/** What the quiet tail still waits for: a live resource not Ready at its generation or with a value unhandled, a deleted one not gone. */
function unsettled(lineages: ReadonlyMap<string, Lineage>, live: ReadonlyMap<string, LiveObject>): string[] {
  const out: string[] = [];
  for (const [k, l] of lineages) {
    if (l.deleteRequestedAt !== undefined) {
      if (l.goneAt === undefined) out.push(`${k} being deleted`);
      continue;
    }
    const obj = live.get(k);
    const ready = obj?.status?.conditions?.find((c) => c.type === "Ready");
    if (!obj || ready?.status !== "True" || ready.observedGeneration !== obj.metadata.generation) {
      out.push(`${k} ${ready?.reason ?? "no Ready"}`);
      continue;
    }
    const status = obj.status ?? {};
    if (l.syncValues.length > 0 && status["lastHandledSyncRequest"] !== l.syncValues[l.syncValues.length - 1])
      out.push(`${k} sync value unhandled`);
    if (l.removeValues.length > 0 && status["lastHandledRemoveSecretsRequest"] !== l.removeValues[l.removeValues.length - 1]) {
      out.push(`${k} remove value unhandled`);
    }
  }
  return out;
}

/** Temporary roles on the soak's projects at the service whose end had passed at `now`. */
function endedTemporaryRoles(state: ServiceState, prefix: string, now: number): number {
  const soakProjects = new Set(
    Object.values(state.projects)
      .filter((p) => p.slug.startsWith(prefix))
      .map((p) => p.id),
  );
  return Object.values(state.memberships)
    .filter((m) => soakProjects.has(m.projectId))
    .flatMap((m) => m.roles)
    .filter((r) => r.isTemporary === true && r.temporaryAccessEndTime !== undefined && Date.parse(r.temporaryAccessEndTime) <= now).length;
}

function compact(r: RecordedRequest): Call {
  const body = (r.body ?? {}) as Record<string, unknown>;
  return {
    at: Date.parse(r.at),
    method: r.method,
    operation: r.operation,
    path: r.path,
    status: r.status,
    ...(r.fault ? { fault: r.fault } : {}),
    ...(r.principal ? { principal: r.principal } : {}),
    ...(r.operation === "createProject" && typeof body["slug"] === "string" ? { slug: body["slug"] } : {}),
    ...(r.operation === "createSecretSync" && typeof body["name"] === "string" ? { name: body["name"] } : {}),
    ...(typeof body["projectId"] === "string" ? { projectId: body["projectId"] } : {}),
  };
}

function addTo(map: Map<string, Set<string>>, key: string, value: string): void {
  const set = map.get(key) ?? new Set<string>();
  set.add(value);
  map.set(key, set);
}

// A 3 s timeout: the latency faults (4 s) hang past it.
const connection = (baseUrl: string, secret: string): Record<string, unknown> => ({
  baseUrl,
  credentialsSecretRef: { name: secret },
  timeoutSeconds: 3,
  rateLimit: { requestsPerSecond: 50, burst: 100 },
});

async function installSecret(core: CoreV1Api, namespace: string, name: string, baseUrl: string, token: string): Promise<void> {
  await core.createNamespacedSecret({
    namespace,
    body: {
      metadata: { name, labels: { [CREDENTIALS_LABEL]: "true" }, annotations: { [ALLOWED_BASE_URLS_ANNOTATION]: baseUrl } },
      stringData: { token },
    },
  });
}

/** A namespace's own credential Secret and ProviderConfig "default". */
async function installProviderConfig(core: CoreV1Api, custom: CustomObjectsApi, ns: string, baseUrl: string, token: string): Promise<void> {
  await installSecret(core, ns, "soak-token", baseUrl, token);
  await custom.createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace: ns,
    plural: "providerconfigs",
    body: {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: "ProviderConfig",
      metadata: { name: "default" },
      spec: connection(baseUrl, "soak-token"),
    },
  });
}

/** The ClusterProviderConfig the namespaces listed use, its Secret in the credentials namespace. */
async function installClusterProviderConfig(
  core: CoreV1Api,
  custom: CustomObjectsApi,
  namespaces: readonly string[],
  baseUrl: string,
  token: string,
): Promise<void> {
  await installSecret(core, CREDENTIALS_NAMESPACE, SHARED_TOKEN_SECRET, baseUrl, token);
  await custom.createClusterCustomObject({
    group: GROUP,
    version: VERSION,
    plural: "clusterproviderconfigs",
    body: {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: "ClusterProviderConfig",
      metadata: { name: SHARED_CONFIG },
      spec: { ...connection(baseUrl, SHARED_TOKEN_SECRET), namespaces: [...namespaces] },
    },
  });
}

/** One health sample per running keyward (its RSS and /metrics, as the site reads them), and the apiserver's request rate. */
function createSampler(site: Site, t: () => number, samples: Sample[], liveObjects: () => number): () => Promise<void> {
  const previous = new Map<number, { t: number; service: number }>();
  let apiserverBefore: { t: number; total: number } | undefined;
  return async () => {
    const now = t();
    let apiserverRps = 0;
    try {
      const { stdout } = await execFileAsync(site.kubectl, ["--kubeconfig", site.kubeconfigPath, "get", "--raw", "/metrics"], {
        maxBuffer: 256 * 1024 * 1024,
      });
      const total = [...parseRequestCounts(stdout).values()].reduce((a, b) => a + b, 0);
      if (apiserverBefore && now > apiserverBefore.t)
        apiserverRps = Math.max(0, (total - apiserverBefore.total) / (now - apiserverBefore.t));
      apiserverBefore = { t: now, total };
    } catch {
      // the apiserver is restarting
    }
    for (const k of await site.sample()) {
      const text = k.metrics;
      const service = metricSum(text, "keyward_api_requests_total") ?? 0;
      const before = previous.get(k.pid);
      previous.set(k.pid, { t: now, service });
      const heap = metricSum(text, "nodejs_heap_size_used_bytes");
      const handles = metricSum(text, "nodejs_active_handles_total");
      const lag = metricSum(text, "nodejs_eventloop_lag_p99_seconds");
      samples.push({
        t: Math.round(now),
        replica: k.identity,
        pid: k.pid,
        rssMb: Math.round((k.rssBytes / 2 ** 20) * 10) / 10,
        ...(heap !== undefined ? { heapUsedMb: Math.round((heap / 2 ** 20) * 10) / 10 } : {}),
        ...(handles !== undefined ? { handles } : {}),
        ...(lag !== undefined ? { eventLoopLagP99Ms: Math.round(lag * 1e4) / 10 } : {}),
        queueDepth: metricSum(text, "workqueue_depth") ?? 0,
        series: seriesCount(text),
        liveObjects: liveObjects(),
        serviceRps: before && now > before.t ? Math.round(((service - before.service) / (now - before.t)) * 10) / 10 : 0,
        apiserverRps: Math.round(apiserverRps * 10) / 10,
      });
    }
  };
}

function summarise(x: {
  options: SoakOptions;
  began: number;
  lineages: readonly Lineage[];
  operations: Record<string, number>;
  scheduled: Record<string, number>;
  calls: readonly Call[];
  keywardKills: number;
  selfExits: number;
  apiserverRestarts: number;
  settledAfterSeconds: number | undefined;
  verdicts: readonly Verdict[];
  samples: readonly Sample[];
  peakLive: number;
  base: string;
  more: Pick<
    SoakReport,
    | "rampSeconds"
    | "leaderKills"
    | "replicasJoined"
    | "replicasLeft"
    | "connectionCuts"
    | "evictions"
    | "providerChanges"
    | "temporaryRoles"
  >;
}): SoakReport {
  const tally = (keys: readonly string[]): Record<string, number> => {
    const out: Record<string, number> = {};
    for (const k of keys) out[k] = (out[k] ?? 0) + 1;
    return out;
  };
  const { log: _log, ...options } = x.options;
  const chaosSeconds = x.options.minutes * 60;
  const lastT = Math.max(0, ...x.samples.map((s) => s.t));
  const lastSamples = x.samples.filter((s) => s.t === lastT);
  return {
    options,
    startedAt: new Date(x.began).toISOString(),
    durationSeconds: Math.round((Date.now() - x.began) / 1000),
    objects: {
      created: tally(x.lineages.map((l) => l.kind)),
      deleted: tally(
        x.lineages
          .filter((l) => l.deleteRequestedAt !== undefined)
          .map((l) => `${l.kind}${l.deletionPolicy ? ` (${l.deletionPolicy})` : ""}`),
      ),
      peakLive: x.peakLive,
      liveAtEnd: x.lineages.filter((l) => l.deleteRequestedAt === undefined).length,
    },
    operations: x.operations,
    faults: { scheduled: x.scheduled, shapedRequests: tally(x.calls.flatMap((c) => (c.fault ? [c.fault] : []))) },
    ...x.more,
    keywardKills: x.keywardKills,
    keywardExitsRestarted: x.selfExits,
    apiserverRestarts: x.apiserverRestarts,
    serviceCalls: { total: x.calls.length, byOperation: tally(x.calls.map((c) => c.operation)) },
    settledAfterSeconds: x.settledAfterSeconds,
    invariants: x.verdicts.map((v) => ({
      name: v.name,
      checked: v.checked,
      violations: v.violations.length,
      examples: v.violations.slice(0, 20),
      notes: v.notes ?? [],
    })),
    health: {
      samples: x.samples.length,
      // The later part: the last 40% of the churn and the tail (kills stop at 60%).
      later: laterSlopes(x.samples, x.more.rampSeconds + chaosSeconds * 0.6),
      maxRssMb: Math.max(0, ...x.samples.map((s) => s.rssMb)),
      queueDepthAtEnd: lastSamples.reduce((sum, s) => sum + s.queueDepth, 0),
    },
    files: { report: `${x.base}.json`, plot: `${x.base}.svg` },
    passed: x.verdicts.every((v) => v.violations.length === 0),
  };
}

export function printReport(report: SoakReport, print: (line: string) => void = console.log): void {
  print(
    `soak seed ${report.options.seed}: ${report.options.minutes} min churn, ${report.options.namespaces} namespaces, ${report.options.replicas} replica(s), ${report.durationSeconds} s in all`,
  );
  print(
    `objects created ${JSON.stringify(report.objects.created)}; deleted ${JSON.stringify(report.objects.deleted)}; peak live ${report.objects.peakLive}`,
  );
  print(`operations ${JSON.stringify(report.operations)}`);
  print(`faults scheduled ${JSON.stringify(report.faults.scheduled)}; requests shaped ${JSON.stringify(report.faults.shapedRequests)}`);
  print(
    `ramp ${report.rampSeconds} s; temporary roles declared ${report.temporaryRoles.declared}, ended at the service ${report.temporaryRoles.endedAtService}; provider changes ${JSON.stringify(report.providerChanges)}`,
  );
  print(
    `keyward SIGKILLs ${report.keywardKills} (leader ${report.leaderKills}), exits restarted ${report.keywardExitsRestarted}, replicas joined ${report.replicasJoined} left ${report.replicasLeft}, evictions ${report.evictions.evicted} (refused ${report.evictions.refused}), connection cuts ${report.connectionCuts.times} (${report.connectionCuts.connections} connections), apiserver restarts ${report.apiserverRestarts}, service calls ${report.serviceCalls.total}`,
  );
  print(
    `settled ${report.settledAfterSeconds === undefined ? "NOT within the tail" : `${report.settledAfterSeconds} s into the quiet tail`}`,
  );
  for (const v of report.invariants) {
    const notes = v.notes.length > 0 ? ` (${v.notes.length} by a documented limit: ${v.notes[0] ?? ""})` : "";
    print(`${v.violations === 0 ? "ok  " : "FAIL"} ${v.name}: ${v.checked} checked, ${v.violations} violations${notes}`);
    for (const example of v.examples.slice(0, 5)) print(`       ${example}`);
  }
  const h = report.health;
  print(
    `health: ${h.samples} samples, max RSS ${h.maxRssMb} MB, later RSS slope ${h.later.rssMbPerHour ?? "?"} MB/h, heap ${h.later.heapMbPerHour ?? "?"} MB/h (pid ${h.later.pid ?? "?"}, ${h.later.points} points, live resources ${h.later.liveObjects?.join(" → ") ?? "?"}), queue depth at end ${h.queueDepthAtEnd}`,
  );
  print(`report ${report.files.report}\nplot   ${report.files.plot}`);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      seed: { type: "string", default: "1" },
      minutes: { type: "string", default: "60" },
      namespaces: { type: "string", default: "20" },
      replicas: { type: "string", default: "1" },
      "tail-minutes": { type: "string", default: "10" },
      "objects-per-namespace": { type: "string", default: "20" },
      "lease-seconds": { type: "string", default: "6" },
      out: { type: "string", default: join(repoRoot, "bench", "soak", "out") },
      "keyward-script": { type: "string" },
      break: { type: "string" },
      on: { type: "string", default: "local" },
    },
  });
  const outDir = values.out;
  if (values.on !== "local" && values.on !== "kind") throw new Error("--on: local or kind");
  if (values.on === "kind" && (values.break !== undefined || values["keyward-script"] !== undefined))
    throw new Error("--on kind runs the release's image: --break and --keyward-script are for the local site");
  const broken = values.break;
  if (broken !== undefined && !(broken in patches)) throw new Error(`--break: one of ${Object.keys(patches).join(", ")}`);
  const patched = broken === undefined ? undefined : brokenBuild(broken as BrokenBuild);
  if (patched) console.log(`a broken build on purpose (${broken}): the soak must report "${patched.breaks}" violated`);
  const report = await runSoak({
    seed: Number(values.seed),
    minutes: Number(values.minutes),
    namespaces: Number(values.namespaces),
    replicas: Number(values.replicas),
    tailMinutes: Number(values["tail-minutes"]),
    objectsPerNamespace: Number(values["objects-per-namespace"]),
    leaseSeconds: Number(values["lease-seconds"]),
    outDir,
    on: values.on,
    ...(patched ? { keywardScript: patched.script } : values["keyward-script"] ? { keywardScript: values["keyward-script"] } : {}),
  });
  printReport(report);
  process.exit(report.passed ? 0 : 1);
}

if (process.argv[1] === import.meta.filename) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(2);
  });
}
