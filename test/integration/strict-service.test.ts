// keyward against a stricter server: one that serves only interface.md plus get and delete of
// one sync — no find-by-name (the emulator's withoutOperations), so that path answers Fastify's
// route 404. Every sample must still reach Ready, and a sync whose create landed just before
// keyward was killed must never be created twice: keyward reports CreateOutcomeUnknown until the
// user adopts it by spec.syncId.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUnconfirmed } from "../../src/engine/create-rule.ts";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Emulator } from "../emulator/server.ts";
import { loadDefaultSeed, seedIds } from "../emulator/default-seed.ts";
import { kubectl, testKubeconfigPath, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import {
  condition,
  createCustom,
  dataPlatformSync,
  mergePatchCustom,
  startTestEnv,
  waitForObject,
  type TestEnv,
} from "./support/keyward.ts";
import { keywardProcesses, type KeywardProcess } from "./support/keyward-process.ts";
import type { KubeObject } from "../../src/engine/types.ts";

const TOKEN = "kw-strict-service-token-5d21c0";
const samplesDir = fileURLToPath(new URL("../../config/samples/", import.meta.url));

let env: TestEnv | undefined;
let kc: KubeConfig;
let emulator: Emulator;
let ns: TestNamespace;
// No periodic resync: every pass comes from keyward's own requeues or a change to the object.
const keywards = keywardProcesses(testKubeconfigPath, () => ns.name, { resyncIntervalMs: 600_000 });
const startChild = (): Promise<KeywardProcess> => keywards.start();

const requestsOf = (operation: string) => emulator.requests().filter((r) => r.operation === operation);
const routeMisses = () => emulator.requests().filter((r) => r.status === 404 && r.path.includes("/sync-name/"));

function kindPlural(kind: string): string {
  return `${kind.toLowerCase()}s`;
}

beforeAll(async () => {
  env = await startTestEnv({
    prefix: "strict-service",
    token: TOKEN,
    emulator: { seed: loadDefaultSeed(), jobDelayMs: 100, withoutOperations: ["getSecretSyncByName"] },
    keyward: false,
  });
  ({ kc, emulator, ns } = env);
  env.onStop(() => keywards.stopAll());
});

afterAll(() => env?.stop());

describe("a server without find-by-name", () => {
  it("answers that path with a route 404, which is not an unknown sync", async () => {
    const res = await fetch(`${emulator.url}/api/v1/secret-syncs/data-platform/sync-name/x?projectId=${seedIds.demoProject}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: "Not Found", message: expect.stringMatching(/^Route GET:.* not found$/) as unknown });
  });

  it("brings every sample to Ready, sending the initialSyncBehavior the service requires", async () => {
    // The samples' own ProviderConfigs (and ClusterProviderConfig) point at a local dev emulator; the test installs its own.
    const files = readdirSync(samplesDir).filter(
      (f) => f.endsWith(".yaml") && !/^(cluster)?providerconfig/.test(f) && !f.startsWith("kustomization"),
    );
    for (const file of files) {
      const applied = await kubectl(["apply", "-n", ns.name, "-f", join(samplesDir, file)]);
      expect(applied.code, `${file}: ${applied.stderr}`).toBe(0);
    }
    await startChild();
    const objects = files.flatMap((f) =>
      readFileSync(join(samplesDir, f), "utf8")
        .split(/^---$/m)
        .map((doc) => ({ kind: /^kind: (\w+)$/m.exec(doc)?.[1], name: /^ {2}name: (\S+)$/m.exec(doc)?.[1] }))
        .filter((o): o is { kind: string; name: string } => o.kind !== undefined && o.name !== undefined),
    );
    expect(objects.filter((o) => o.kind === "SecretSync")).toHaveLength(7);
    for (const o of objects) {
      await waitForObject(kc, ns.name, kindPlural(o.kind), o.name, {
        until: (obj) => condition(obj, "Ready")?.status === "True",
        timeoutMs: 90_000,
        description: `${o.kind} ${o.name} Ready`,
      });
    }
    const creates = requestsOf("createSecretSync");
    expect(creates.filter((r) => r.status !== 200)).toEqual([]);
    expect(creates).toHaveLength(7);
    for (const r of creates)
      expect((r.body as { syncOptions?: { initialSyncBehavior?: string } }).syncOptions?.initialSyncBehavior).toMatch(
        /^(overwrite-destination|import-prioritize-)/,
      );
  });

  it("after a kill between a landed create and the status write: no second create, CreateOutcomeUnknown, then adoption by spec.syncId", async () => {
    const running = keywards.latest();
    if (!running) throw new Error("no keyward running");
    emulator.setFaults({
      match: { method: "POST", pathPattern: "^/api/v1/secret-syncs/data-platform$" },
      latencyMs: 120_000,
      latencyWhen: "after-handling",
    });
    const createsBefore = requestsOf("createSecretSync").length;
    await createCustom(kc, ns.name, "secretsyncs", dataPlatformSync("landed-then-killed"));
    await waitFor(() => Promise.resolve(requestsOf("createSecretSync").length > createsBefore ? true : undefined), {
      timeoutMs: 60_000,
      intervalMs: 20,
      description: "the create to reach the service",
    });
    expect(await running.kill()).toBe("SIGKILL");
    emulator.setFaults({});
    const state = (await (await fetch(`${emulator.url}/_emulator/state`)).json()) as {
      syncs: Record<string, { id: string; name: string }>;
    };
    const landed = Object.values(state.syncs).filter((s) => s.name === "landed-then-killed");
    expect(landed).toHaveLength(1);

    await startChild();
    const unknown = await waitForObject(kc, ns.name, "secretsyncs", "landed-then-killed", {
      until: (o) => condition(o, "Ready")?.reason === "CreateOutcomeUnknown",
      timeoutMs: 60_000,
      description: "CreateOutcomeUnknown",
    });
    expect(condition(unknown, "Ready")).toMatchObject({ status: "False" });
    expect(condition(unknown, "Ready")?.message).toMatch(/spec\.syncId/);
    expect(unknown.metadata.annotations?.["keyward.dev/create-started"]).toBeDefined();
    // more passes (forced by label changes): never a second create
    for (const n of [1, 2, 3]) {
      const misses = routeMisses().length;
      await mergePatchCustom(kc, ns.name, "secretsyncs", "landed-then-killed", {
        metadata: { labels: { "keyward.dev/test-pass": String(n) } },
      });
      await waitFor(() => Promise.resolve(routeMisses().length > misses ? true : undefined), {
        timeoutMs: 60_000,
        description: `pass ${String(n)}`,
      });
    }
    expect(requestsOf("createSecretSync")).toHaveLength(createsBefore + 1);

    await mergePatchCustom(kc, ns.name, "secretsyncs", "landed-then-killed", { spec: { syncId: landed[0]?.id } });
    const adopted = await waitForObject(kc, ns.name, "secretsyncs", "landed-then-killed", {
      until: (o) => condition(o, "Ready")?.status === "True" && (o.status as { syncId?: string } | undefined)?.syncId === landed[0]?.id,
      timeoutMs: 60_000,
      description: "adopted by spec.syncId",
    });
    // The id in status confirms the create: no later pass looks for it by name again.
    expect(
      createUnconfirmed(adopted.metadata.annotations ?? {}, (adopted.status as { syncId?: string }).syncId, adopted.metadata.uid),
    ).toBe(false);
    expect(adopted.metadata.name).toBe("landed-then-killed");
    expect(requestsOf("createSecretSync")).toHaveLength(createsBefore + 1);
  });

  it("reports NotFound, and creates nothing, for a spec.syncId that does not exist", async () => {
    const createsBefore = requestsOf("createSecretSync").length;
    await createCustom(kc, ns.name, "secretsyncs", dataPlatformSync("adopt-missing", { syncId: "0b7e6f2a-1c3d-4e5f-8a9b-0c1d2e3f4a5b" }));
    const missing: KubeObject = await waitForObject(kc, ns.name, "secretsyncs", "adopt-missing", {
      until: (o) => condition(o, "Ready")?.reason === "NotFound",
      timeoutMs: 60_000,
      description: "NotFound",
    });
    expect(condition(missing, "Ready")?.message).toContain("spec.syncId");
    expect(requestsOf("createSecretSync")).toHaveLength(createsBefore);
  });
});
