// requestTarget builds a request's origin and path without a URL parse per request: it must give
// exactly what `new URL(server + path)` with the query in its searchParams gives, for every
// server (a path prefix, a trailing slash, IPv6) and path (plain, escaped, dot segments, a query).
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { requestTarget } from "../../../src/kube/rest.ts";

function byUrl(server: string, path: string, query?: Record<string, string | number | boolean | undefined>) {
  const url = new URL(server + path);
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value !== undefined) url.searchParams.set(key, String(value));
  }
  return { origin: url.origin, path: `${url.pathname}${url.search}` };
}

const servers = [
  "https://127.0.0.1:6443",
  "https://10.96.0.1:443",
  "https://[::1]:6443",
  "https://rancher.example/k8s/clusters/c-abc12",
  "https://kube.example:8443/",
  "http://localhost:8080/prefix/",
];
const paths = [
  "/apis/keyward.dev/v1alpha1/namespaces/ns/projects/kb-1000-1-0",
  "/apis/keyward.dev/v1alpha1/namespaces/ns/projects/p/status",
  "/api/v1/namespaces/ns/events",
  "/api/v1/namespaces",
  "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/a.b",
  "/api/v1/namespaces/ns/secrets/with%20space",
  "/api/v1/namespaces/ns/../secrets",
  "/api/v1/namespaces/ns/./secrets",
  "/api/v1/namespaces/ns/secrets?x=1",
  "/",
  "/a b",
  "/ümlaut",
];
const queries = [
  undefined,
  {},
  { limit: 500, continue: undefined, labelSelector: "keyward.dev/credentials=true" },
  { watch: true, resourceVersion: "123", allowWatchBookmarks: true, timeoutSeconds: 300, labelSelector: "a in (b, c),!d" },
  { continue: "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIzfQ==" },
];

describe("requestTarget", () => {
  it("gives what URL parsing gives, for servers with and without a path, plain and odd paths, and queries", () => {
    for (const server of servers)
      for (const path of paths) for (const query of queries) expect(requestTarget(server, path, query)).toEqual(byUrl(server, path, query));
  });

  it("agrees with URL parsing on arbitrary paths and query values", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...servers),
        fc.array(fc.string({ minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 6 }),
        fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), fc.string({ maxLength: 16 })),
        (server, segments, query) => {
          const path = `/${segments.join("/")}`;
          expect(requestTarget(server, path, query)).toEqual(byUrl(server, path, query));
        },
      ),
    );
  });
});
