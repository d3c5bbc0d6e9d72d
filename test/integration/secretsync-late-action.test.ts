// A sync-secrets call held by the service past keyward's timeout and applied after keyward gave
// up on it (found by `npm run soak -- --seed 7 --minutes 10`: a "create commits after its client
// gave up" fault, which holds every POST, caught two sync-secrets jobs for one request value).
// keyward must not make a second call the service accepts for the same value.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../controlplane/testenv.ts";
import { loadDefaultSeed } from "../emulator/default-seed.ts";
import {
  createCustom,
  dataPlatformSync,
  deleteCustom,
  getCustom,
  mergePatchCustom,
  startTestEnv,
  type KeywardTestEnv,
} from "./support/keyward.ts";

const TOKEN = "kw-secretsync-late-action-token-5d1e0a";
let env: KeywardTestEnv | undefined;

beforeAll(async () => {
  env = await startTestEnv({
    prefix: "late-action",
    token: TOKEN,
    emulator: { seed: loadDefaultSeed() },
    keyward: { resyncIntervalMs: 2_000 },
  });
});
afterAll(async () => {
  await env?.stop();
});

describe("an action call applied after keyward's timeout", () => {
  it("runs the request value once", { timeout: 180_000 }, async () => {
    if (!env) throw new Error("no env");
    const { kc, emulator, ns } = env;
    await createCustom(kc, ns.name, "secretsyncs", dataPlatformSync("late"));
    const created = await waitFor(
      async () => {
        const obj = await getCustom(kc, ns.name, "secretsyncs", "late");
        const s = obj?.status ?? {};
        return typeof s["syncId"] === "string" && s["syncStatus"] === "succeeded" ? obj : undefined;
      },
      { timeoutMs: 60_000, description: "the sync created and its first job settled" },
    );
    const syncId = String(created.status?.["syncId"]);
    // The ProviderConfig's timeout is 5 s: the sync-secrets call is held until keyward has given
    // up on it (its connection closed), then applied.
    emulator.setFaults({
      match: { method: "POST", pathPattern: `/${syncId}/sync-secrets$` },
      latencyMs: 120_000,
      landsWithoutClient: true,
    });
    const value = "2031-01-01T00:00:00.000Z";
    await mergePatchCustom(kc, ns.name, "secretsyncs", "late", { metadata: { annotations: { "keyward.dev/sync-requested-at": value } } });
    await waitFor(() => Promise.resolve(emulator.heldRequests({ clientGone: true }) > 0 || undefined), {
      timeoutMs: 60_000,
      description: "keyward gave up on the held call",
    });
    expect(emulator.releaseHeld()).toBe(1);
    await waitFor(
      () => Promise.resolve(emulator.requests().some((r) => r.operation === "triggerSecretSync" && r.status === 200) || undefined),
      {
        timeoutMs: 60_000,
        description: "the held call applied",
      },
    );
    emulator.setFaults({});
    await waitFor(
      async () => ((await getCustom(kc, ns.name, "secretsyncs", "late"))?.status?.["lastHandledSyncRequest"] === value ? true : undefined),
      { timeoutMs: 60_000, description: "the value recorded as handled" },
    );
    // A few more passes (resync every 2 s): nothing more may run.
    await new Promise((resolve) => setTimeout(resolve, 8_000));
    const applied = emulator.requests().filter((r) => r.operation === "triggerSecretSync" && r.status === 200);
    expect(applied.map((r) => r.fault ?? "answered")).toHaveLength(1);
  });

  // Found by the same soak after the fix above (seed 7, 10 minutes): deletionPolicy RemoveSecrets
  // called remove-secrets again while the first call, held past the timeout, was not applied yet.
  it("removes the secrets once at deletion when the call is applied after keyward's timeout", { timeout: 180_000 }, async () => {
    if (!env) throw new Error("no env");
    const { kc, emulator, ns } = env;
    await createCustom(
      kc,
      ns.name,
      "secretsyncs",
      dataPlatformSync("late-removal", { name: "late-removal", deletionPolicy: "RemoveSecrets" }),
    );
    const created = await waitFor(
      async () => {
        const obj = await getCustom(kc, ns.name, "secretsyncs", "late-removal");
        const s = obj?.status ?? {};
        return typeof s["syncId"] === "string" && s["syncStatus"] === "succeeded" ? obj : undefined;
      },
      { timeoutMs: 60_000, description: "the sync created and its first job settled" },
    );
    const syncId = String(created.status?.["syncId"]);
    // Held 20 s: keyward's retry after its timeout (5 s) is sent before the first call is applied.
    const hold = 20_000;
    emulator.setFaults({ match: { method: "POST", pathPattern: `/${syncId}/remove-secrets$` }, latencyMs: hold, landsWithoutClient: true });
    await deleteCustom(kc, ns.name, "secretsyncs", "late-removal");
    await waitFor(async () => ((await getCustom(kc, ns.name, "secretsyncs", "late-removal")) === undefined ? true : undefined), {
      timeoutMs: 120_000,
      description: "the resource released",
    });
    emulator.setFaults({});
    // Any call sent before the release lands within the hold.
    await new Promise((resolve) => setTimeout(resolve, hold + 2_000));
    const applied = emulator.requests().filter((r) => r.operation === "removeSecretSyncSecrets" && r.status === 200);
    expect(applied.map((r) => r.fault ?? "answered")).toEqual(["client-gone"]);
  });
});
