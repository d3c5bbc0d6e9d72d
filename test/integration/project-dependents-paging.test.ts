// A Project waiting on its dependents lists them fresh from the apiserver (never the cache: a
// dependent missed would lose its cleanup), in pages (limit and continue), so one answer never
// holds a whole namespace. Counted on the requests that reach the real apiserver.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Dispatcher } from "undici";
import { createTestNamespace, testKubeConfig, type TestNamespace } from "../controlplane/testenv.ts";
import { createCustom, dataPlatformSync } from "./support/keyward.ts";
import { createKube, type Kube } from "../../src/kube/client.ts";
import { freshReferrers } from "../../src/resources/common.ts";
import { ref as secretSyncRef } from "../../src/resources/secretsync-schema.ts";

let ns: TestNamespace;
const SYNCS = 7;

beforeAll(async () => {
  ns = await createTestNamespace("dependents-paging");
  const kc = testKubeConfig();
  for (let i = 0; i < SYNCS; i++)
    await createCustom(kc, ns.name, "secretsyncs", dataPlatformSync(`s-${String(i)}`, { projectId: undefined, projectRef: { name: "p" } }));
}, 60_000);

afterAll(() => ns.cleanup());

/** A Kube whose every request's path and query is recorded. */
function countingKube(): { kube: Kube; paths: string[] } {
  const base = createKube(testKubeConfig());
  const paths: string[] = [];
  // An interceptor, as informer-watchlist.test.ts records its requests: every request the
  // dispatcher sends, by whatever method it was made.
  const record: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (opts, handler) => {
    paths.push(opts.path);
    return dispatch(opts, handler);
  };
  return { kube: { ...base, access: { ...base.access, dispatcher: base.access.dispatcher.compose(record) } }, paths };
}

describe("freshReferrers", () => {
  it("lists in pages and finds every referrer", async () => {
    const { kube, paths } = countingKube();
    const found = await freshReferrers(
      kube,
      [secretSyncRef],
      ns.name,
      (o) => (o.spec as { projectRef?: { name?: string } } | undefined)?.projectRef?.name === "p",
      3,
    );
    expect(found.sort()).toEqual(Array.from({ length: SYNCS }, (_, i) => `SecretSync/s-${String(i)}`).sort());
    // 7 objects in pages of 3: three requests, each with a limit, the later ones with a continue.
    expect(paths).toHaveLength(3);
    expect(paths.every((p) => p.includes("limit=3"))).toBe(true);
    expect(paths.filter((p) => p.includes("continue=")).length).toBe(2);
  });
});
