// The service's requestTarget joins a base URL and a request path without a URL parse per request
// when the path is plain: it must give exactly what URL parsing of base origin + base path (its
// trailing slashes dropped) + path gives, for every base (a path prefix, trailing slashes, IPv6,
// a port) and path (plain, escaped, dot segments, a query, odd characters).
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { requestTarget, serviceBase } from "../../../src/api/http.ts";
import { operations, fillPath } from "../../../src/api/operations.ts";
import { queryString } from "../../../src/api/client.ts";

function byUrl(baseUrl: string, path: string) {
  const base = new URL(baseUrl);
  const url = new URL(`${base.origin}${base.pathname.replace(/\/+$/, "")}${path}`);
  return { origin: url.origin, path: `${url.pathname}${url.search}`, host: url.host };
}

const bases = [
  "http://127.0.0.1:8080",
  "https://secrets.example",
  "https://secrets.example/",
  "https://secrets.example:8443/api-gateway//",
  "http://[::1]:9000/prefix",
  "https://user:pw@secrets.example/x/",
];
const slugs = ["my-project", "a.b_c~d", "..", ".", "with space", "ümlaut", "a/b", "%2e%2e", "x?y=1", "#frag", "a:b@c"];
const fixedPaths = ["/", "/api/v1/projects?limit=10", "/api/v1/../v2", "/a//b", "/api/v1/projects/%41"];

describe("the service's requestTarget", () => {
  it("gives what URL parsing gives for every operation's path filled with odd and plain values", () => {
    for (const baseUrl of bases) {
      const base = serviceBase(baseUrl);
      for (const op of operations) {
        for (const slug of slugs) {
          const params = new Proxy({}, { get: () => slug }) as Record<string, string>;
          for (const query of ["", queryString({ slug, limit: 5 })]) {
            const path = fillPath(op.path, params) + query;
            expect(requestTarget(base, path)).toEqual(byUrl(baseUrl, path));
          }
        }
      }
      for (const path of fixedPaths) expect(requestTarget(base, path)).toEqual(byUrl(baseUrl, path));
    }
  });

  it("gives what URL parsing gives for any path of printable characters", () => {
    fc.assert(
      fc.property(fc.constantFrom(...bases), fc.stringMatching(/^\/[\x21-\x7e]{0,40}$/), (baseUrl, path) => {
        expect(requestTarget(serviceBase(baseUrl), path)).toEqual(byUrl(baseUrl, path));
      }),
      { numRuns: 2000 },
    );
  });
});
