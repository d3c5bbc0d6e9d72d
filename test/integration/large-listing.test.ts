// An organisation with more projects than one answer may hold (--max-response-bytes): the 50,000
// Project bench met it at 16 MiB. The provider config's check (a list-projects call) and the
// shared listings of steady passes get an answer refused unread. Before: the ProviderConfig went
// Ready=False ResponseTooLarge, so nothing was reconciled, and steady Projects failed terminally.
// Now: the config is Connected (the answer came with a success status for its credentials), a
// scope too large to list is remembered for the listing's TTL, and steady passes read their own
// project. Here the limit is 64 KiB and the emulator holds ~200 projects.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Emulator } from "../emulator/server.ts";
import type { TestNamespace } from "../controlplane/testenv.ts";
import {
  condition,
  createReadyProjects,
  getCustom,
  startKeyward,
  startTestEnv,
  steadyRequests,
  waitForObject,
  type TestEnv,
} from "./support/keyward.ts";

const TOKEN = "kw-large-listing-token-7c3e9a";
const LIMIT = 64 * 1024;
const RESYNC_MS = 2_000;
const OTHER_PROJECTS = 200;

let env: TestEnv | undefined;
let kc: KubeConfig;
let emulator: Emulator;
let ns: TestNamespace;

beforeAll(async () => {
  env = await startTestEnv({ prefix: "large-listing", token: TOKEN, emulator: { rateLimit: false }, keyward: false });
  ({ kc, emulator, ns } = env);
  // The organisation's other projects, created at the service before keyward starts.
  for (let i = 0; i < OTHER_PROJECTS; i++) {
    const res = await fetch(`${emulator.url}/api/v2/workspace`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ projectName: `other team project ${String(i)}`, slug: `other-${String(i).padStart(4, "0")}` }),
    });
    expect(res.ok).toBe(true);
  }
  const keyward = await startKeyward(kc, { namespaces: [ns.name], resyncIntervalMs: RESYNC_MS, maxResponseBytes: LIMIT });
  env.onStop(() => keyward.stop());
});

afterAll(() => env?.stop());

describe("a project list larger than --max-response-bytes", () => {
  it("the precondition: the service's list-projects answer is larger than the limit", async () => {
    const res = await fetch(`${emulator.url}/api/v1/projects`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    expect((await res.text()).length).toBeGreaterThan(LIMIT);
  });

  it("leaves the ProviderConfig Connected, saying why listings are not used", async () => {
    const config = await waitForObject(kc, ns.name, "providerconfigs", "default", {
      until: (o) => condition(o, "Ready") !== undefined,
      timeoutMs: 30_000,
      description: "the ProviderConfig's Ready condition",
    });
    expect(condition(config, "Ready")).toMatchObject({ status: "True", reason: "Connected" });
    expect(condition(config, "Ready")?.message).toContain("larger than --max-response-bytes");
  });

  it("creates Projects and keeps them Ready through steady resyncs, each read by id; the too-large list asked once per window, not per pass", async () => {
    const names = ["payments", "ledger", "billing", "search"];
    await createReadyProjects(kc, ns.name, names, (name) => ({ slug: `${name}-large-org`, description: "kept by keyward" }));
    // Past their first steady resync, count over three periods.
    const { requests } = await steadyRequests(emulator, RESYNC_MS);
    const calls = (op: string): number => requests.filter((r) => r.operation === op).length;
    // Every steady pass of at least two resyncs read its project by id instead of failing on the
    // listing (before: one read each, then the passes failed terminally)...
    expect(calls("getProject")).toBeGreaterThanOrEqual(2 * names.length);
    // ...and the listing refused for its size is asked for once per resync window (plus the
    // config's check), not by each of the 4 passes as a failed listing would be.
    const resyncs = Math.round(calls("getProject") / names.length);
    expect(calls("listProjects")).toBeLessThanOrEqual(2 * resyncs + 1);
    // ...and nothing was written.
    expect(requests.filter((r) => r.method !== "GET")).toEqual([]);
    for (const name of names) {
      const project = await getCustom(kc, ns.name, "projects", name);
      expect(condition(project, "Ready")).toMatchObject({ status: "True" });
      expect(condition(project, "Synced")).toMatchObject({ status: "True" });
    }
  });
});
