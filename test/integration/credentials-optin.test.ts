// Credentials are opt-in (no confused deputy): whoever may create a ProviderConfig must not be
// able to have keyward send a Secret they cannot read to a URL of their choosing. keyward uses a
// Secret only when it carries keyward.dev/credentials=true, sends its token only where the
// Secret's keyward.dev/allowed-base-urls and the admin's --allowed-base-urls allow — with
// neither, by default, nowhere — and writes nothing on a Secret that is not marked. The
// "attacker" is a real HTTP server on loopback that records every request it receives (its
// Authorization header).
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CoreV1Api, PatchStrategy, setHeaderOptions, type KubeConfig, type V1Secret } from "@kubernetes/client-node";
import { startEmulator, type Emulator } from "../emulator/server.ts";
import { createTestNamespace, testKubeConfig, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import {
  condition,
  createCustom,
  credentialsLabels,
  exposedTexts,
  getCustom,
  mergePatchCustom,
  startKeyward,
  type RunningKeyward,
} from "./support/keyward.ts";

const TOKEN = "kw-optin-token-3f9c2a";
const OTHER_SECRET = "kw-optin-database-password-77d1";

let kc: KubeConfig;
let core: CoreV1Api;
let emulator: Emulator;
let attacker: { server: Server; url: string; authorizations: string[] };
let ns: TestNamespace;
let admin: TestNamespace;
let keyward: RunningKeyward;
let pinned: RunningKeyward;

async function startAttacker(): Promise<typeof attacker> {
  const authorizations: string[] = [];
  const server = createServer((req, res) => {
    authorizations.push(req.headers.authorization ?? "");
    res.writeHead(200, { "content-type": "application/json" }).end('{"projects":[]}');
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, authorizations };
}

function providerConfig(name: string, baseUrl: string, secret: string): object {
  return {
    apiVersion: "keyward.dev/v1alpha1",
    kind: "ProviderConfig",
    metadata: { name },
    spec: { baseUrl, credentialsSecretRef: { name: secret }, rateLimit: { requestsPerSecond: 200, burst: 200 } },
  };
}

async function readyReason(namespace: string, name: string, reason: string): Promise<{ status: string; reason: string; message: string }> {
  return waitFor(
    async () => {
      const c = condition(await getCustom(kc, namespace, "providerconfigs", name), "Ready");
      return c?.reason === reason ? c : undefined;
    },
    { timeoutMs: 30_000, description: `ProviderConfig ${namespace}/${name} Ready reason ${reason}` },
  );
}

async function secret(namespace: string, name: string): Promise<V1Secret> {
  return core.readNamespacedSecret({ namespace, name });
}

beforeAll(async () => {
  kc = testKubeConfig();
  core = kc.makeApiClient(CoreV1Api);
  emulator = await startEmulator({ tokens: [TOKEN] });
  attacker = await startAttacker();
  ns = await createTestNamespace("optin");
  admin = await createTestNamespace("optin-admin");
  // keyward's own defaults: no --allowed-base-urls.
  keyward = await startKeyward(kc, { namespaces: [ns.name], resyncIntervalMs: 2_000, allowedBaseUrls: null });
  // A second keyward whose admin allows the emulator's URL only, on a namespace of its own.
  pinned = await startKeyward(kc, { namespaces: [admin.name], resyncIntervalMs: 2_000, allowedBaseUrls: [emulator.url] });
});

afterAll(async () => {
  await keyward.stop();
  await pinned.stop();
  await emulator.close();
  await new Promise((resolve) => attacker.server.close(resolve));
  await ns.cleanup();
  await admin.cleanup();
});

describe("a Secret not marked as credentials", () => {
  it("is not used, not labelled and not held; marking it makes the ProviderConfig Ready at once", async () => {
    await core.createNamespacedSecret({ namespace: ns.name, body: { metadata: { name: "later-marked" }, stringData: { token: TOKEN } } });
    await createCustom(kc, ns.name, "providerconfigs", providerConfig("later", emulator.url, "later-marked"));
    const waiting = await readyReason(ns.name, "later", "CredentialsNotMarked");
    expect(waiting.status).toBe("False");
    expect(waiting.message).toContain("keyward.dev/credentials=true");
    const before = await secret(ns.name, "later-marked");
    expect(before.metadata?.finalizers ?? []).toEqual([]);
    expect(before.metadata?.labels ?? {}).toEqual({});
    // Nothing else uses the emulator yet: no call at all was made with the unmarked Secret's token.
    expect(emulator.requests().filter((r) => r.auth !== "none").length).toBe(0);

    await core.patchNamespacedSecret(
      {
        namespace: ns.name,
        name: "later-marked",
        body: { metadata: { labels: credentialsLabels, annotations: { "keyward.dev/allowed-base-urls": emulator.url } } },
      },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    // Terminal until something changes: only the marked Secret's watch event can wake it
    // before the resync, which is 2 s here; so this also holds with the resync.
    expect((await readyReason(ns.name, "later", "Connected")).status).toBe("True");
    const held = await waitFor(
      async () => {
        const s = await secret(ns.name, "later-marked");
        return s.metadata?.finalizers?.includes("keyward.dev/in-use") ? s : undefined;
      },
      { timeoutMs: 30_000, description: "the marked Secret held" },
    );
    expect(held.metadata?.labels).toEqual(credentialsLabels);
    expect(held.metadata?.annotations).toEqual({ "keyward.dev/allowed-base-urls": emulator.url });
  });

  it("cannot be sent anywhere through a ProviderConfig: the attacker sees no request, and nothing leaks in status, Events or logs", async () => {
    await core.createNamespacedSecret({
      namespace: ns.name,
      body: { metadata: { name: "database" }, stringData: { token: OTHER_SECRET } },
    });
    await createCustom(kc, ns.name, "providerconfigs", providerConfig("exfiltrate", attacker.url, "database"));
    const refused = await readyReason(ns.name, "exfiltrate", "CredentialsNotMarked");
    expect(refused.status).toBe("False");
    expect(attacker.authorizations).toEqual([]);
    const after = await secret(ns.name, "database");
    expect(after.metadata?.finalizers ?? []).toEqual([]);
    expect(after.metadata?.labels ?? {}).toEqual({});
    const exposed = await exposedTexts(ns.name, keyward.logs, "providerconfigs.keyward.dev");
    for (const text of exposed.all) expect(text).not.toContain(OTHER_SECRET);
  });

  it("held by an earlier keyward (its finalizer and label) is let go", async () => {
    await core.createNamespacedSecret({
      namespace: ns.name,
      body: {
        metadata: { name: "legacy", finalizers: ["keyward.dev/in-use"], labels: { "keyward.dev/provider-config": "legacy" } },
        stringData: { token: TOKEN },
      },
    });
    await createCustom(kc, ns.name, "providerconfigs", providerConfig("legacy", emulator.url, "legacy"));
    expect((await readyReason(ns.name, "legacy", "CredentialsNotMarked")).status).toBe("False");
    const released = await waitFor(
      async () => {
        const s = await secret(ns.name, "legacy");
        return (s.metadata?.finalizers ?? []).length === 0 && s.metadata?.labels?.["keyward.dev/provider-config"] === undefined
          ? s
          : undefined;
      },
      { timeoutMs: 30_000, description: "the legacy Secret released" },
    );
    expect(released.metadata?.labels ?? {}).toEqual({});
  });
});

describe("where a marked Secret's token may go", () => {
  it("by default, nowhere until someone says where: a ProviderConfig aiming a marked Secret without the annotation at a server sends nothing", async () => {
    // A second listener stands for an internal address the author wants keyward to call.
    const internal = await startAttacker();
    const before = attacker.authorizations.length;
    await core.createNamespacedSecret({
      namespace: ns.name,
      body: { metadata: { name: "unpinned", labels: credentialsLabels }, stringData: { token: TOKEN } },
    });
    await createCustom(kc, ns.name, "providerconfigs", providerConfig("aimed", attacker.url, "unpinned"));
    await createCustom(kc, ns.name, "providerconfigs", providerConfig("internal", internal.url, "unpinned"));
    await createCustom(kc, ns.name, "providerconfigs", providerConfig("meant", emulator.url, "unpinned"));
    for (const name of ["aimed", "internal", "meant"]) {
      const refused = await readyReason(ns.name, name, "BaseUrlNotAllowed");
      expect(refused.status).toBe("False");
      // Both ways to allow it: the Secret's annotation (its owner) or the admin's list.
      expect(refused.message).toContain("keyward.dev/allowed-base-urls=");
      expect(refused.message).toContain("--allowed-base-urls");
      expect(refused.message).not.toContain(TOKEN);
    }
    // Not a request of any kind: no token, no connection check, no call to an address of the author's choosing.
    expect(attacker.authorizations.length).toBe(before);
    expect(internal.authorizations).toEqual([]);
    // The Secret's owner pins the emulator: that config connects, the others stay refused.
    await core.patchNamespacedSecret(
      { namespace: ns.name, name: "unpinned", body: { metadata: { annotations: { "keyward.dev/allowed-base-urls": emulator.url } } } },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    expect((await readyReason(ns.name, "meant", "Connected")).status).toBe("True");
    for (const name of ["aimed", "internal"]) {
      await waitFor(
        async () => {
          const c = condition(await getCustom(kc, ns.name, "providerconfigs", name), "Ready");
          return c?.reason === "BaseUrlNotAllowed" && c.message.includes("does not allow its token to be sent to") ? c : undefined;
        },
        { timeoutMs: 30_000, description: `ProviderConfig ${name} refused by the Secret's annotation` },
      );
    }
    expect(attacker.authorizations.length).toBe(before);
    expect(internal.authorizations).toEqual([]);
    await new Promise((resolve) => internal.server.close(resolve));
    const exposed = await exposedTexts(ns.name, keyward.logs, "providerconfigs.keyward.dev");
    for (const text of exposed.all) expect(text).not.toContain(TOKEN);
  });

  it("the Secret's keyward.dev/allowed-base-urls pins it: a ProviderConfig naming another URL sends nothing", async () => {
    await core.createNamespacedSecret({
      namespace: ns.name,
      body: {
        metadata: { name: "pinned", labels: credentialsLabels, annotations: { "keyward.dev/allowed-base-urls": emulator.url } },
        stringData: { token: TOKEN },
      },
    });
    await createCustom(kc, ns.name, "providerconfigs", providerConfig("pinned-ok", emulator.url, "pinned"));
    await createCustom(kc, ns.name, "providerconfigs", providerConfig("pinned-elsewhere", attacker.url, "pinned"));
    expect((await readyReason(ns.name, "pinned-ok", "Connected")).status).toBe("True");
    const refused = await readyReason(ns.name, "pinned-elsewhere", "BaseUrlNotAllowed");
    expect(refused.message).toContain("keyward.dev/allowed-base-urls");
    expect(attacker.authorizations).toEqual([]);
  });

  it("the admin's --allowed-base-urls: a ProviderConfig naming another URL sends nothing, and fixing the URL makes it Ready", async () => {
    await core.createNamespacedSecret({
      namespace: admin.name,
      body: { metadata: { name: "token", labels: credentialsLabels }, stringData: { token: TOKEN } },
    });
    await createCustom(kc, admin.name, "providerconfigs", providerConfig("default", attacker.url, "token"));
    const refused = await readyReason(admin.name, "default", "BaseUrlNotAllowed");
    expect(refused.status).toBe("False");
    expect(refused.message).toContain("--allowed-base-urls");
    expect(refused.message).not.toContain(TOKEN);
    expect(attacker.authorizations).toEqual([]);
    await mergePatchCustom(kc, admin.name, "providerconfigs", "default", { spec: { baseUrl: emulator.url } });
    expect((await readyReason(admin.name, "default", "Connected")).status).toBe("True");
    expect(attacker.authorizations).toEqual([]);
  });
});
