// readCached reads through the cache a Kube was made with (withCache), never through a slot set
// later: a synced cache answers without a request, anything else reads the apiserver (a loopback
// server here, counting GETs).
import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { secretKind, withCache, type CacheReader, type CachedKind, type Kube } from "../../../src/kube/client.ts";
import { readCached } from "../../../src/kube/objects.ts";
import type { KubeObject, ObjectKey } from "../../../src/kube/types.ts";
import { loopbackAccess, serverUrl } from "../../support/loopback-access.ts";

const SELECTOR = "keyward.dev/credentials=true";
let server: Server;
const gets: string[] = [];
let direct: Kube;

const secret = (name: string, from: string): KubeObject => ({
  apiVersion: "v1",
  kind: "Secret",
  metadata: { namespace: "ns", name, annotations: { from } },
  spec: {},
});

beforeAll(async () => {
  server = createServer((req, res) => {
    gets.push(req.url ?? "");
    const name = decodeURIComponent((req.url ?? "").split("/").pop() ?? "");
    if (name === "absent") {
      res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ kind: "Status", code: 404 }));
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(secret(name, "apiserver")));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  direct = { access: loopbackAccess(serverUrl(server), { authorization: "Bearer t", requestTimeoutMs: 5_000 }) };
});

afterAll(() => {
  server.closeAllConnections();
  server.close();
});

/** A cache of Secrets: `synced`, holding `names`, kept for `selector` only. */
function cacheOf(opts: { synced: boolean; names: string[]; selector?: string; partial?: boolean }): CacheReader {
  const kind: CachedKind = {
    ...(opts.partial ? { partial: true } : {}),
    hasSynced: () => opts.synced,
    get: (key: ObjectKey) => (opts.names.includes(key.name) ? secret(key.name, "cache") : undefined),
  };
  return { peek: (ref, labelSelector) => (ref === secretKind && labelSelector === opts.selector ? kind : undefined) };
}

const read = async (kube: Kube, name: string, labelSelector?: string): Promise<{ from: string | undefined; requests: number }> => {
  const before = gets.length;
  const obj = await readCached(kube, secretKind, { namespace: "ns", name }, labelSelector);
  return { from: obj === undefined ? undefined : obj.metadata.annotations?.["from"], requests: gets.length - before };
};

describe("readCached", () => {
  it("reads the apiserver through a Kube made without a cache", async () => {
    expect(await read(direct, "a")).toEqual({ from: "apiserver", requests: 1 });
    expect(await read(direct, "absent")).toEqual({ from: undefined, requests: 1 });
  });

  it("confirms a miss of a partial cache (this replica's shard) at the apiserver; a hit needs no request", async () => {
    const kube = withCache(direct, cacheOf({ synced: true, names: ["a"], partial: true }));
    expect(await read(kube, "a")).toEqual({ from: "cache", requests: 0 });
    expect(await read(kube, "b")).toEqual({ from: "apiserver", requests: 1 });
    expect(await read(kube, "absent")).toEqual({ from: undefined, requests: 1 });
  });

  it("answers from a synced cache without a request; a miss without a selector is absent", async () => {
    const kube = withCache(direct, cacheOf({ synced: true, names: ["a"] }));
    expect(await read(kube, "a")).toEqual({ from: "cache", requests: 0 });
    expect(await read(kube, "b")).toEqual({ from: undefined, requests: 0 });
  });

  it("reads the apiserver when the cache has not synced, or has no informer of the kind and selector", async () => {
    expect(await read(withCache(direct, cacheOf({ synced: false, names: ["a"] })), "a")).toEqual({ from: "apiserver", requests: 1 });
    expect(await read(withCache(direct, cacheOf({ synced: true, names: ["a"] })), "a", SELECTOR)).toEqual({
      from: "apiserver",
      requests: 1,
    });
  });

  it("reads the apiserver on a miss in a narrowed (label-selected) cache: the object may lack the label", async () => {
    const kube = withCache(direct, cacheOf({ synced: true, names: ["a"], selector: SELECTOR }));
    expect(await read(kube, "a", SELECTOR)).toEqual({ from: "cache", requests: 0 });
    expect(await read(kube, "b", SELECTOR)).toEqual({ from: "apiserver", requests: 1 });
  });
});

describe("withCache", () => {
  it("keeps the access, leaves the Kube it was given alone, and cannot be changed after", () => {
    const cache = cacheOf({ synced: true, names: [] });
    const kube = withCache(direct, cache);
    expect(kube.access).toBe(direct.access);
    expect(kube.cache).toBe(cache);
    expect(direct.cache).toBeUndefined();
    expect(Object.isFrozen(kube)).toBe(true);
    expect(() => Object.assign(kube, { cache: undefined })).toThrow(TypeError);
  });
});
