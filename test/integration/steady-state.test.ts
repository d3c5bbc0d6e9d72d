// Steady state at the service: resync passes of objects that are Ready and Synced share one
// listing per scope (a ProviderConfig, a project) instead of reading every object, so the
// service's read budget (60 a minute per token by default) holds thousands of objects. Counted in
// the emulator's log over several resync periods; a change made at the service is still seen.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Emulator } from "../emulator/server.ts";
import { loadDefaultSeed } from "../emulator/default-seed.ts";
import { waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import { condition, createReadyProjects, startTestEnv, steadyRequests, waitForObject, type KeywardTestEnv } from "./support/keyward.ts";

const TOKEN = "kw-steady-state-token-2b6e11";
const RESYNC_MS = 2_000;
const PROJECTS = 12;

let env: KeywardTestEnv | undefined;
let kc: KubeConfig;
let emulator: Emulator;
let ns: TestNamespace;

beforeAll(async () => {
  env = await startTestEnv({
    prefix: "steady-state",
    token: TOKEN,
    emulator: { seed: loadDefaultSeed(), jobDelayMs: 50 },
    keyward: { resyncIntervalMs: RESYNC_MS },
  });
  ({ kc, emulator, ns } = env);
});

afterAll(() => env?.stop());

describe("steady state", () => {
  it("reads projects through shared listings, not one read per project per resync", async () => {
    const names = Array.from({ length: PROJECTS }, (_, i) => `steady-${String(i)}`);
    await createReadyProjects(kc, ns.name, names, (name) => ({ slug: `${name}-slug`, description: "kept by keyward" }));
    // Let the first resync of the now-steady objects pass, then count over three periods.
    const { requests, windowMs } = await steadyRequests(emulator, RESYNC_MS);
    const periods = windowMs / (0.9 * RESYNC_MS);
    const reads = (op: string): number => requests.filter((r) => r.operation === op).length;
    // Each project is reconciled every resync, yet no project is read on its own...
    expect(reads("getProject")).toBe(0);
    // ...and the listings: at most a couple per resync for the whole namespace, not one per project.
    expect(reads("listProjects")).toBeGreaterThanOrEqual(1);
    expect(reads("listProjects")).toBeLessThanOrEqual(2 * Math.ceil(periods) + 2);
    expect(requests.filter((r) => r.method !== "GET")).toEqual([]);
  });

  it("still sees a change made at the service, through the listing, and corrects it", async () => {
    const project = await waitForObject(kc, ns.name, "projects", "steady-0", {
      until: (o) => condition(o, "Ready")?.status === "True",
      timeoutMs: 30_000,
      description: "steady-0 Ready",
    });
    const id = String((project.status as { projectId?: string } | undefined)?.projectId);
    // Someone edits the project at the service behind keyward's back.
    const res = await fetch(`${emulator.url}/api/v1/projects/${id}`, {
      method: "PATCH",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ description: "edited elsewhere" }),
    });
    expect(res.status).toBe(200);
    emulator.clearRequests();
    await waitFor(
      () => Promise.resolve(emulator.requests().some((r) => r.operation === "updateProject" && r.path.endsWith(id)) ? true : undefined),
      { timeoutMs: 30_000, description: "the drift to be corrected" },
    );
    const update = emulator.requests().find((r) => r.operation === "updateProject" && r.path.endsWith(id));
    expect(update?.body).toEqual({ description: "kept by keyward" });
    // found through a listing, not a read of the one project
    expect(emulator.requests().filter((r) => r.operation === "listProjects").length).toBeGreaterThanOrEqual(1);
  });
});
