// AccessTokens only where the admin lets them write (accessTokens.namespaces, the flag
// --access-token-namespaces). The chart's secret-writer Role grants create and delete of Secrets
// only there, but patch on Secrets stays in the main role everywhere (the credentials
// finalizer), so a tenant could pre-create a Secret with a controller ownerReference to its own
// AccessToken in an excluded namespace and have keyward patch the token into it. keyward itself
// refuses AccessTokens outside the list, before it mints or writes anything. keyward runs here
// with the admin's kubeconfig: this tests keyward's own guard, not RBAC.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { startEmulator, type Emulator } from "../emulator/server.ts";
import { createTestNamespace, testKubeConfig, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import {
  condition,
  createCustom,
  exposedTexts,
  getCustom,
  installProvider,
  isReady,
  startKeyward,
  waitForObject,
  type RunningKeyward,
} from "./support/keyward.ts";

const TOKEN = "kw-atns-operator-token-5be1c9";
const IDENTITY = "c0ffee00-0003-4a00-8000-0000000000a7";

let kc: KubeConfig;
let core: CoreV1Api;
let emulator: Emulator;
let allowed: TestNamespace;
let excluded: TestNamespace;
let keyward: RunningKeyward;

const accessToken = (name: string, secretName: string): object => ({
  apiVersion: "keyward.dev/v1alpha1",
  kind: "AccessToken",
  metadata: { name },
  spec: { identityId: IDENTITY, secretName },
});

const mints = (): number => emulator.requests().filter((r) => r.operation === "createIdentityToken").length;

beforeAll(async () => {
  kc = testKubeConfig();
  core = kc.makeApiClient(CoreV1Api);
  emulator = await startEmulator({ tokens: [TOKEN], seed: { identities: [{ id: IDENTITY, name: "atns", accessTokenTTL: 7200 }] } });
  allowed = await createTestNamespace("atns-allowed");
  excluded = await createTestNamespace("atns-excluded");
  for (const ns of [allowed, excluded]) await installProvider(kc, ns.name, emulator.url, TOKEN);

  // The tenant's setup in the excluded namespace, before keyward runs: an AccessToken, and a
  // Secret of its own naming that AccessToken as its controller.
  const squat = await createCustom(kc, excluded.name, "accesstokens", accessToken("squat", "squat-token"));
  await core.createNamespacedSecret({
    namespace: excluded.name,
    body: {
      metadata: {
        name: "squat-token",
        ownerReferences: [
          { apiVersion: "keyward.dev/v1alpha1", kind: "AccessToken", name: "squat", uid: squat.metadata.uid ?? "", controller: true },
        ],
      },
      stringData: { placeholder: "tenant-made" },
    },
  });
  await createCustom(kc, allowed.name, "accesstokens", accessToken("ok", "ok-token"));

  keyward = await startKeyward(kc, {
    namespaces: [allowed.name, excluded.name],
    resyncIntervalMs: 2_000,
    accessTokenNamespaces: [allowed.name],
  });
});

afterAll(async () => {
  await keyward.stop();
  await emulator.close();
  await allowed.cleanup();
  await excluded.cleanup();
});

describe("AccessTokens outside --access-token-namespaces", () => {
  it("are refused (Synced=False NamespaceNotAllowed): no token is minted or written, not even into a Secret the tenant made it own", async () => {
    // Served where allowed: one token, in its Secret.
    await waitForObject(kc, allowed.name, "accesstokens", "ok", { until: isReady, timeoutMs: 60_000, description: "AccessToken ok Ready" });
    const written = await core.readNamespacedSecret({ namespace: allowed.name, name: "ok-token" });
    expect(Object.keys(written.data ?? {}).sort()).toEqual(["expiresAt", "token", "tokenType"]);

    const refused = await waitFor(
      async () => {
        const c = condition(await getCustom(kc, excluded.name, "accesstokens", "squat"), "Synced");
        return c?.reason === "NamespaceNotAllowed" ? c : undefined;
      },
      { timeoutMs: 30_000, description: "AccessToken squat refused" },
    );
    expect(refused.status).toBe("False");
    expect(refused.message).toContain(`not served in namespace ${excluded.name}`);
    expect(refused.message).toContain("accessTokens.namespaces");

    const squatted = await core.readNamespacedSecret({ namespace: excluded.name, name: "squat-token" });
    expect(Object.keys(squatted.data ?? {})).toEqual(["placeholder"]);
    expect(Buffer.from(squatted.data?.["placeholder"] ?? "", "base64").toString()).toBe("tenant-made");
    expect(squatted.metadata?.annotations?.["keyward.dev/data-hash"]).toBeUndefined();
    const status = (await getCustom(kc, excluded.name, "accesstokens", "squat"))?.status ?? {};
    expect(status["tokenId"]).toBeUndefined();
    // The one mint is the allowed namespace's.
    expect(mints()).toBe(1);

    const token = Buffer.from(written.data?.["token"] ?? "", "base64").toString();
    for (const text of (await exposedTexts(excluded.name, keyward.logs, "accesstokens.keyward.dev")).all) expect(text).not.toContain(token);
  });
});
