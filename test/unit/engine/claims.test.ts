// The claim on an external id across replicas (src/engine/claims.ts, managed.ts claimHolder):
// what the metadata view keeps of an object (also through a real informer over a loopback
// apiserver), how rivals found there are judged, and who is woken when a holder goes.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { afterAll, describe, expect, it } from "vitest";
import { claimIndex, claimMetadata, claimWakeWatch, createClaimWaits } from "../../../src/engine/claims.ts";
import { ANNOTATION_EXTERNAL_ID, claimHolder } from "../../../src/engine/holder.ts";
import { createInformerFactory, type InformerHandler, type SharedInformer } from "../../../src/kube/informer.ts";
import { METADATA_LIST_ACCEPT, METADATA_WATCH_ACCEPT } from "../../../src/kube/watch.ts";
import type { KubeAccess } from "../../../src/kube/kubeconfig.ts";
import type { KubeObject } from "../../../src/kube/types.ts";
import { createLogger } from "../../../src/log.ts";
import { createOperator } from "../../../src/operator.ts";
import { createShard } from "../../../src/shard/shard.ts";
import { loopbackAccess, serverUrl } from "../../support/loopback-access.ts";

const projectKind = { group: "keyward.dev", version: "v1alpha1", plural: "projects", kind: "Project" };

/** An object as a metadata-only list or watch brings it: all of metadata, no spec or status. */
function partial(name: string, namespace: string, extra: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: "meta.k8s.io/v1",
    kind: "PartialObjectMetadata",
    metadata: {
      name,
      namespace,
      uid: `uid-${namespace}-${name}`,
      resourceVersion: "7",
      creationTimestamp: "2026-01-01T00:00:00Z",
      generation: 3,
      labels: { "shard.keyward.dev/owner": "kw-a", team: "x".repeat(200) },
      annotations: {
        [ANNOTATION_EXTERNAL_ID]: "p-1",
        "keyward.dev/create-started": "2026-01-01T00:00:00Z uid",
        "kubectl.kubernetes.io/last-applied-configuration": "{".repeat(4096),
        note: "n".repeat(1024),
      },
      finalizers: ["keyward.dev/finalizer"],
      managedFields: [{ manager: "kubectl", fieldsV1: { "f:spec": {} } }],
      ...extra,
    },
  } as unknown as KubeObject;
}

const trimmed = (name: string, namespace: string): KubeObject =>
  ({
    apiVersion: "keyward.dev/v1alpha1",
    kind: "Project",
    metadata: {
      name,
      namespace,
      uid: `uid-${namespace}-${name}`,
      resourceVersion: "7",
      annotations: { [ANNOTATION_EXTERNAL_ID]: "p-1" },
    },
  }) as unknown as KubeObject;

describe("claimMetadata", () => {
  it("keeps name, namespace, uid, creation time, resourceVersion and the external-id annotation only", () => {
    expect(claimMetadata(partial("shop", "a"), projectKind)).toStrictEqual(trimmed("shop", "a"));
  });

  it("an object naming no id keeps no annotations at all", () => {
    const o = partial("shop", "a", { annotations: { note: "n" } });
    expect(claimMetadata(o, projectKind).metadata.annotations).toBeUndefined();
    expect(Object.keys(claimMetadata(o, projectKind).metadata).sort()).toEqual(["name", "namespace", "resourceVersion", "uid"]);
  });

  it("is idempotent (a listed object is trimmed as its page arrives and again as it is stored)", () => {
    const once = claimMetadata(partial("shop", "a"), projectKind);
    expect(claimMetadata(once, projectKind)).toStrictEqual(once);
  });
});

// A loopback apiserver: lists of projects (metadata only when asked), a watch that delivers one
// event and stays open. Records each request's path and Accept header.
const servers: Server[] = [];
afterAll(() => {
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
});

type Seen = Array<{ path: string; accept: string }>;

/** A loopback apiserver answering with `answer`; records each request's path and Accept header. */
async function loopback(answer: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ access: KubeAccess; seen: Seen }> {
  const seen: Seen = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    seen.push({ path: req.url ?? "", accept: req.headers.accept ?? "" });
    answer(req, res);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { seen, access: loopbackAccess(serverUrl(server)) };
}

/** The BOOKMARK that ends a watch's initial events (sendInitialEvents), at `resourceVersion`. */
const initialEventsEnd = (resourceVersion: string): string =>
  `${JSON.stringify({ type: "BOOKMARK", object: { metadata: { resourceVersion, annotations: { "k8s.io/initial-events-end": "true" } } } })}\n`;

/**
 * Streams the current state when a watch asks for it (as kube-apiserver 1.32 and 1.34+), or refuses that
 * with 422 as 1.33 does (`streams: false`), when the informer lists instead.
 */
function apiserver(items: KubeObject[], event: KubeObject, streams: boolean): Promise<{ access: KubeAccess; seen: Seen }> {
  return loopback((req, res) => {
    if ((req.url ?? "").includes("sendInitialEvents=true")) {
      if (!streams) {
        res.writeHead(422, { "content-type": "application/json" });
        res.end(JSON.stringify({ kind: "Status", code: 422, reason: "Invalid", message: "sendInitialEvents is forbidden for watch" }));
        return;
      }
      res.writeHead(200, { "content-type": "application/json" });
      for (const item of items) res.write(`${JSON.stringify({ type: "ADDED", object: item })}\n`);
      res.write(initialEventsEnd("7"));
      res.write(`${JSON.stringify({ type: "MODIFIED", object: event })}\n`);
      return; // held open until the test ends
    }
    if ((req.url ?? "").includes("watch=true")) {
      res.writeHead(200, { "content-type": "application/json" });
      res.write(`${JSON.stringify({ type: "MODIFIED", object: event })}\n`);
      return; // held open until the test ends
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ apiVersion: "meta.k8s.io/v1", kind: "PartialObjectMetadataList", metadata: { resourceVersion: "7" }, items }));
  });
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 3000 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!check()) throw new Error(`never happened: ${what}`);
}

describe("an informer factory with metadataOnly and a transform", () => {
  it.each([
    ["streamed", true],
    ["listed", false],
  ])("asks for metadata only, and caches and hands on the trimmed objects, %s or watched", async (_how, streams) => {
    const { access, seen } = await apiserver(
      [partial("shop", "a"), partial("shop", "b")],
      partial("shop", "a", { resourceVersion: "8" }),
      streams,
    );
    const factory = createInformerFactory(
      { access },
      { logger: createLogger({ level: "silent" }), metadataOnly: true, transform: claimMetadata },
    );
    const view: SharedInformer = factory.get(projectKind);
    const events: KubeObject[] = [];
    view.subscribe((_type, obj) => events.push(obj));
    try {
      await view.start();
      await until(() => view.get({ namespace: "a", name: "shop" })?.metadata.resourceVersion === "8", "the watched update");
      expect(view.get({ namespace: "b", name: "shop" })).toStrictEqual(trimmed("shop", "b"));
      expect(view.get({ namespace: "a", name: "shop" })).toStrictEqual({
        ...trimmed("shop", "a"),
        metadata: { ...trimmed("shop", "a").metadata, resourceVersion: "8" },
      });
      // What handlers get is what the cache holds.
      expect(events.at(-1)).toBe(view.get({ namespace: "a", name: "shop" }));
      // Streamed: one watch; else the refused watch, the list, the watch from the list.
      expect(seen.map((s) => s.accept)).toEqual(
        streams ? [METADATA_WATCH_ACCEPT] : [METADATA_WATCH_ACCEPT, METADATA_LIST_ACCEPT, METADATA_WATCH_ACCEPT],
      );
      expect(seen[0]?.path).toMatch(/^\/apis\/keyward\.dev\/v1alpha1\/projects\?/);
    } finally {
      factory.stop();
    }
  });
});

describe("claimHolder", () => {
  const at = (n: number): string => `2026-01-0${String(n)}T00:00:00Z`;
  const full = (
    name: string,
    ns: string,
    created: number,
    o: { status?: string; annotation?: string; observeOnly?: boolean } = {},
  ): KubeObject => ({
    apiVersion: "keyward.dev/v1alpha1",
    kind: "Project",
    metadata: {
      name,
      namespace: ns,
      uid: `uid-${ns}-${name}`,
      creationTimestamp: at(created),
      ...(o.annotation ? { annotations: { [ANNOTATION_EXTERNAL_ID]: o.annotation } } : {}),
    },
    spec: o.observeOnly ? { managementPolicy: "ObserveOnly" } : {},
    status: o.status ? { projectId: o.status } : {},
  });
  const counts = (o: KubeObject): boolean => (o.spec as { managementPolicy?: string }).managementPolicy !== "ObserveOnly";
  const claim = { idField: "projectId", id: "p-1" };
  const apiserverOf = (objs: KubeObject[]) => {
    const reads: string[] = [];
    return {
      reads,
      read: (o: KubeObject): Promise<KubeObject | undefined> => {
        reads.push(`${o.metadata.namespace}/${o.metadata.name}`);
        return Promise.resolve(objs.find((x) => x.metadata.namespace === o.metadata.namespace && x.metadata.name === o.metadata.name));
      },
    };
  };

  it("an older rival on another replica, seen by its annotation, holds the id; it is read whole once", async () => {
    const self = full("shop", "b", 2);
    const rival = full("shop", "a", 1, { status: "p-1", annotation: "p-1" });
    const api = apiserverOf([rival]);
    const view = [claimMetadata(rival, projectKind), claimMetadata(self, projectKind)];
    expect((await claimHolder(self, [self], view, claim, { counts, read: api.read }))?.metadata.namespace).toBe("a");
    expect(api.reads).toEqual(["a/shop"]);
  });

  it("a younger rival elsewhere that holds the id in status keeps it (the rule read on the whole object)", async () => {
    const self = full("copy", "b", 1, { annotation: "p-1" });
    const holder = full("shop", "a", 3, { status: "p-1", annotation: "p-1" });
    const api = apiserverOf([holder]);
    expect((await claimHolder(self, [self], [claimMetadata(holder, projectKind)], claim, { counts, read: api.read }))?.metadata.name).toBe(
      "shop",
    );
  });

  it("a rival elsewhere that is ObserveOnly, gone, replaced (another UID) or names nothing does not count; nothing else is read", async () => {
    const self = full("shop", "b", 5);
    const observer = full("watch", "a", 1, { status: "p-1", annotation: "p-1", observeOnly: true });
    const gone = full("gone", "a", 1, { annotation: "p-1" });
    const replaced = full("again", "a", 1, { annotation: "p-1" });
    const unrelated = full("other", "a", 1, { annotation: "p-2" });
    const bare = full("bare", "a", 1);
    const api = apiserverOf([observer, { ...replaced, metadata: { ...replaced.metadata, uid: "new" } }, unrelated, bare]);
    const view = [observer, gone, replaced, unrelated, bare].map((o) => claimMetadata(o, projectKind));
    expect(await claimHolder(self, [self], view, claim, { counts, read: api.read })).toBeUndefined();
    expect(api.reads.sort()).toEqual(["a/again", "a/gone", "a/watch"]);
  });

  it("an object in this replica's cache counts as its whole copy, never read again (an ObserveOnly one not at all)", async () => {
    const self = full("shop", "b", 5);
    const cached = full("mine", "b", 1, { annotation: "p-1", observeOnly: true });
    const api = apiserverOf([]);
    expect(
      await claimHolder(self, [self, cached], [claimMetadata(cached, projectKind)], claim, { counts, read: api.read }),
    ).toBeUndefined();
    expect(api.reads).toEqual([]);
  });

  it("naming an id alone holds nothing; of those recording it, the oldest holds it, in the cache or elsewhere", async () => {
    const self = full("shop", "b", 2);
    const mine = full("mine", "b", 3, { annotation: "p-1" });
    const theirs = full("theirs", "a", 4, { annotation: "p-1" });
    const api = apiserverOf([theirs]);
    expect(
      await claimHolder(
        self,
        [self, mine],
        [theirs, mine].map((o) => claimMetadata(o, projectKind)),
        claim,
        { counts, read: api.read },
      ),
    ).toBeUndefined();
    const recordingMine = full("mine", "b", 3, { annotation: "p-1", status: "p-1" });
    const older = full("older", "c", 1, { annotation: "p-1", status: "p-1" });
    const api2 = apiserverOf([theirs, older]);
    const view = [theirs, recordingMine, older].map((o) => claimMetadata(o, projectKind));
    expect((await claimHolder(self, [self, recordingMine], view, claim, { counts, read: api2.read }))?.metadata.name).toBe("older");
    expect(
      (
        await claimHolder(
          self,
          [self, recordingMine],
          [theirs].map((o) => claimMetadata(o, projectKind)),
          claim,
          { counts, read: api.read },
        )
      )?.metadata.name,
    ).toBe("mine");
  });
});

describe("claimIndex", () => {
  it("keeps the view's objects by the id they name, through adds, renames and deletes", () => {
    let emit: InformerHandler = () => undefined;
    const view = { subscribe: (h: InformerHandler) => ((emit = h), () => undefined) } as unknown as SharedInformer;
    const index = claimIndex(view);
    const named = (name: string, id?: string): KubeObject => ({
      ...trimmed(name, "a"),
      metadata: { ...trimmed(name, "a").metadata, annotations: id ? { [ANNOTATION_EXTERNAL_ID]: id } : {} },
    });
    emit("add", named("one", "p-1"));
    emit("add", named("two", "p-1"));
    emit("add", named("bare"));
    expect(index.naming("p-1").map((o) => o.metadata.name)).toEqual(["one", "two"]);
    emit("update", named("two", "p-2"), named("two", "p-1"));
    emit("update", named("bare", "p-2"), named("bare"));
    expect(index.naming("p-1").map((o) => o.metadata.name)).toEqual(["one"]);
    expect(index.naming("p-2").map((o) => o.metadata.name)).toEqual(["two", "bare"]);
    emit("delete", named("one", "p-1"));
    emit("update", named("two"), named("two", "p-2"));
    expect(index.naming("p-1")).toEqual([]);
    expect(index.naming("p-2").map((o) => o.metadata.name)).toEqual(["bare"]);
  });
});

describe("claim waits and the wake-up watch", () => {
  const key = (namespace: string, name: string) => ({ namespace, name });
  const view = {} as SharedInformer;

  it("a holder's deletion, or its annotation changed, wakes the keys it holds back; other events wake nothing", () => {
    const waits = createClaimWaits();
    waits.wait(key("b", "shop"), key("a", "shop"));
    waits.wait(key("c", "shop"), key("a", "shop"));
    waits.wait(key("b", "copy"), key("b", "shop"));
    const watch = claimWakeWatch(projectKind, view, waits);
    const holder = trimmed("shop", "a");
    expect(watch.informer).toBe(view);
    expect(watch.mapToKeys(holder)).toEqual([key("b", "shop"), key("c", "shop")]);
    expect(watch.predicate?.("delete", holder)).toBe(true);
    const renamed = { ...holder, metadata: { ...holder.metadata, annotations: {} } };
    expect(watch.predicate?.("update", renamed, holder)).toBe(true);
    const statusWrite = { ...holder, metadata: { ...holder.metadata, resourceVersion: "9" } };
    expect(watch.predicate?.("update", statusWrite, holder)).toBe(false);
    expect(watch.predicate?.("add", holder)).toBe(false);
  });

  it("a key waits for one holder at a time, and released waits for none", () => {
    const waits = createClaimWaits();
    waits.wait(key("b", "shop"), key("a", "shop"));
    waits.wait(key("b", "shop"), key("c", "shop"));
    expect(waits.waiting(key("a", "shop"))).toEqual([]);
    expect(waits.waiting(key("c", "shop"))).toEqual([key("b", "shop")]);
    waits.release(key("b", "shop"));
    expect(waits.waiting(key("c", "shop"))).toEqual([]);
    expect(waits.size()).toBe(0);
    waits.release(key("b", "shop"));
  });
});

describe("the operator's informers", () => {
  // A loopback apiserver with nothing in it: every list empty, every watch open and silent (one
  // that asks for the current state gets just the bookmark that ends it).
  function emptyApiserver(): Promise<{ access: KubeAccess; seen: Seen }> {
    return loopback((req, res) => {
      res.writeHead(req.method === "GET" ? 200 : 201, { "content-type": "application/json" });
      if ((req.url ?? "").includes("sendInitialEvents=true")) {
        res.write(initialEventsEnd("1"));
        return; // held open
      }
      if ((req.url ?? "").includes("watch=true")) return; // held open
      res.end(JSON.stringify({ kind: "List", apiVersion: "v1", metadata: { resourceVersion: "1" }, items: [] }));
    });
  }

  let exported = "";
  const run = async (shard: boolean): Promise<Array<{ path: string; accept: string }>> => {
    const { access, seen } = await emptyApiserver();
    const operator = createOperator({
      kc: access,
      log: createLogger({ level: "silent" }),
      namespaces: ["team-a"],
      concurrency: 1,
      resyncIntervalMs: 600_000,
      ...(shard ? { shard: createShard({ identity: "kw-a" }) } : {}),
    });
    await operator.start();
    // Every informer has listed and is watching.
    await until(
      () => seen.filter((s) => s.path.includes("watch=true")).length >= seen.filter((s) => !s.path.includes("watch=true")).length,
      "every watch",
    );
    exported = await operator.metrics.registry.metrics();
    await operator.stop();
    return seen.filter((s) => !s.path.startsWith("/api/v1/namespaces/team-a/events"));
  };
  const watches = (seen: Array<{ path: string; accept: string }>): string[] =>
    seen
      .filter((s) => s.path.includes("watch=true"))
      .map((s) => `${s.path.split("?")[0] ?? ""}${s.accept === METADATA_WATCH_ACCEPT ? " (metadata)" : ""}`);

  it("without sharding: no metadata view, no watch beyond one per kind cache", async () => {
    const seen = await run(false);
    expect(exported).not.toContain("keyward_claim_view_objects");
    expect(seen.filter((s) => s.accept === METADATA_LIST_ACCEPT || s.accept === METADATA_WATCH_ACCEPT)).toEqual([]);
    // One watch per kind cache, as before the claim view: two of Secrets (two label selections).
    const kinds = "/apis/keyward.dev/v1alpha1/namespaces/team-a";
    expect(watches(seen).sort()).toEqual(
      [
        "/api/v1/namespaces/team-a/secrets",
        "/api/v1/namespaces/team-a/secrets",
        ...["accesstokens", "certificateprofiles", "projectmemberships", "projects", "providerconfigs", "secretsyncs"].map(
          (p) => `${kinds}/${p}`,
        ),
      ].sort(),
    );
  });

  it("with sharding: one metadata-only view more per kind with guardCreate (Project, SecretSync), and none for the others", async () => {
    const unsharded = watches(await run(false));
    const sharded = watches(await run(true));
    expect(exported).toContain('keyward_claim_view_objects{kind="Project"} 0');
    expect(exported).toContain('keyward_claim_view_objects{kind="SecretSync"} 0');
    const extra = sharded.filter((p) => p.endsWith("(metadata)"));
    expect(extra.sort()).toEqual([
      "/apis/keyward.dev/v1alpha1/namespaces/team-a/projects (metadata)",
      "/apis/keyward.dev/v1alpha1/namespaces/team-a/secretsyncs (metadata)",
    ]);
    // The rest: the same paths (ProjectMembership's unselected view beside its own selected one).
    expect(new Set(sharded.filter((p) => !p.endsWith("(metadata)")))).toEqual(new Set(unsharded));
  });
});
