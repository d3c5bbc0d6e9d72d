// tokenAuth: a ProviderConfig holding only a bootstrap token. keyward mints short-lived access
// tokens for a machine identity with it (create-token), uses them for every other call, and
// mints the next one before the current expires. A recording proxy in front of the emulator
// sees every request's Authorization header and every minted token, so the test can check that
// the bootstrap token served create-token only, that calls kept succeeding across three
// expiries, and that no minted token reached a log line, an Event or a status.
//
// The identity is seeded with a 9-second TTL (the emulator's seed allows any; the default seed's
// identity lives 60 s) so three expiries pass in about half a minute.
import { createServer, type Server } from "node:http";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import type { Emulator } from "../emulator/server.ts";
import { waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import {
  condition,
  credentialsLabels,
  createCustom,
  exposedTexts,
  getCustom,
  projectObject,
  startKeyward,
  startTestEnv,
  waitForObject,
  type RunningKeyward,
  type TestEnv,
} from "./support/keyward.ts";

const BOOTSTRAP = `kw-bootstrap-${randomBytes(8).toString("hex")}`;
const WRONG_BOOTSTRAP = `kw-wrong-bootstrap-${randomBytes(8).toString("hex")}`;
const IDENTITY = "a1b2c3d4-0003-4a00-8000-0000000000f9";
const TTL_SECONDS = 9;

interface Seen {
  at: number;
  method: string;
  path: string;
  authorization: string | undefined;
  status: number;
}

let env: TestEnv | undefined;
let kc: KubeConfig;
let emulator: Emulator;
let ns: TestNamespace;
let keyward: RunningKeyward;
let proxy: Server;
let proxyUrl: string;
const seen: Seen[] = [];
const minted: { token: string; at: number; expiresIn: number }[] = [];

/** Forwards every request to the emulator and records what passed. */
function startProxy(target: string): Promise<void> {
  proxy = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      void (async () => {
        const body = Buffer.concat(chunks);
        const headers: Record<string, string> = {};
        for (const h of ["authorization", "content-type"]) {
          const v = req.headers[h];
          if (typeof v === "string") headers[h] = v;
        }
        const upstream = await fetch(`${target}${req.url ?? ""}`, {
          method: req.method ?? "GET",
          headers,
          ...(body.length > 0 ? { body } : {}),
        });
        const text = await upstream.text();
        const at = Date.now();
        seen.push({ at, method: req.method ?? "", path: req.url ?? "", authorization: req.headers.authorization, status: upstream.status });
        if (upstream.status === 200 && /\/api\/v1\/auth\/token-auth\/identities\/[^/]+\/tokens$/.test(req.url ?? "")) {
          const answer = JSON.parse(text) as { accessToken: string; expiresIn: number };
          minted.push({ token: answer.accessToken, at, expiresIn: answer.expiresIn });
        }
        const out: Record<string, string> = { "content-type": upstream.headers.get("content-type") ?? "application/json" };
        const retryAfter = upstream.headers.get("retry-after");
        if (retryAfter) out["retry-after"] = retryAfter;
        res.writeHead(upstream.status, out);
        res.end(text);
      })().catch(() => {
        res.writeHead(502);
        res.end();
      });
    });
  });
  return new Promise((resolve) => {
    proxy.listen(0, "127.0.0.1", () => {
      const addr = proxy.address();
      proxyUrl = `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}`;
      resolve();
    });
  });
}

async function tokenAuthProvider(name: string, secretName: string, bootstrap: string): Promise<void> {
  await kc.makeApiClient(CoreV1Api).createNamespacedSecret({
    namespace: ns.name,
    body: { metadata: { name: secretName, labels: credentialsLabels }, stringData: { token: bootstrap } },
  });
  await createCustom(kc, ns.name, "providerconfigs", {
    apiVersion: "keyward.dev/v1alpha1",
    kind: "ProviderConfig",
    metadata: { name },
    spec: {
      baseUrl: proxyUrl,
      tokenAuth: { identityId: IDENTITY, bootstrapSecretRef: { name: secretName } },
      rateLimit: { requestsPerSecond: 200, burst: 200 },
      timeoutSeconds: 5,
    },
  });
}

beforeAll(async () => {
  env = await startTestEnv({ prefix: "pc-tokenauth", token: BOOTSTRAP, provider: false, keyward: false });
  ({ kc, emulator, ns } = env);
  emulator.seed({ identities: [{ id: IDENTITY, name: "keyward-nine-seconds", accessTokenTTL: TTL_SECONDS, accessTokenMaxTTL: 60 }] });
  await startProxy(emulator.url);
  env.onStop(() => new Promise((resolve) => proxy.close(resolve)));
  await tokenAuthProvider("default", "bootstrap", BOOTSTRAP);
  // A resync every second keeps the Project calling the service all along.
  keyward = await startKeyward(kc, { namespaces: [ns.name], resyncIntervalMs: 1_000 });
  env.onStop(() => keyward.stop());
  await createCustom(kc, ns.name, "projects", projectObject("rotating", { slug: `rotating-${randomBytes(3).toString("hex")}` }));
});

afterAll(() => env?.stop());

const isMint = (s: Seen): boolean => /\/tokens$/.test(s.path);

describe("tokenAuth credentials", () => {
  it("rotate through three expiries of the minted token with no failed call", async () => {
    await waitForObject(kc, ns.name, "projects", "rotating", {
      until: (o) => condition(o, "Ready")?.status === "True",
      timeoutMs: 60_000,
      description: "Project Ready",
    });
    // Three minted tokens have expired (by the proxy's clock, which saw each answer after the
    // service started its lifetime) and a call made after the third expiry succeeded.
    await waitFor(
      () => {
        const lastCall = Math.max(0, ...seen.filter((s) => !isMint(s) && s.status === 200).map((s) => s.at));
        return Promise.resolve(minted.filter((m) => m.at + m.expiresIn * 1000 < lastCall).length >= 3 ? true : undefined);
      },
      { timeoutMs: 110_000, description: "three minted tokens expired while calls went on" },
    );
    const snapshot = [...seen];
    const tokens = new Set(minted.map((m) => `Bearer ${m.token}`));
    expect(minted.length).toBeGreaterThanOrEqual(4);
    expect(minted.every((m) => m.expiresIn === TTL_SECONDS)).toBe(true);
    // No failed call: every request succeeded, but for the slug lookup that finds no project
    // before the first create (a 404 answer, not an authentication failure).
    expect(snapshot.filter((s) => s.status !== 200 && !(s.status === 404 && s.path.startsWith("/api/v1/projects/slug/")))).toEqual([]);
    expect(snapshot.filter((s) => s.status === 200).length).toBeGreaterThan(minted.length);
    // The bootstrap token served create-token and nothing else; every other call used a minted token.
    const mints = snapshot.filter(isMint);
    const calls = snapshot.filter((s) => !isMint(s));
    expect(mints.every((s) => s.authorization === `Bearer ${BOOTSTRAP}`)).toBe(true);
    expect(calls.length).toBeGreaterThan(minted.length);
    expect(calls.filter((s) => !tokens.has(s.authorization ?? ""))).toEqual([]);
    // Each call used a token that had not expired yet.
    for (const call of calls) {
      const token = minted.find((m) => `Bearer ${m.token}` === call.authorization);
      expect(token && call.at < token.at + token.expiresIn * 1000 + 1_000).toBe(true);
    }
    // Several distinct minted tokens were used for calls, not just the first.
    expect(new Set(calls.map((s) => s.authorization)).size).toBeGreaterThanOrEqual(4);
    expect(emulator.requests().filter((r) => r.auth === "invalid")).toEqual([]);
  });

  it("shows the current token's expiry in status, and no minted token anywhere", async () => {
    const pc = await waitForObject(kc, ns.name, "providerconfigs", "default", {
      until: (o) =>
        condition(o, "Ready")?.status === "True" && typeof (o.status as { tokenExpiresAt?: string }).tokenExpiresAt === "string",
      timeoutMs: 30_000,
      description: "ProviderConfig Ready with tokenExpiresAt",
    });
    const status = pc.status as { tokenExpiresAt: string; tokenRenewAt?: string };
    expect(Number.isNaN(Date.parse(status.tokenExpiresAt))).toBe(false);
    expect(Date.parse(status.tokenRenewAt ?? "")).toBeLessThan(Date.parse(status.tokenExpiresAt));
    const texts = await exposedTexts(ns.name, keyward.logs, "providerconfigs,projects");
    expect(minted.length).toBeGreaterThan(0);
    for (const text of texts.all) {
      expect(text).not.toContain(BOOTSTRAP);
      for (const m of minted) {
        expect(text).not.toContain(m.token);
        expect(text).not.toContain(Buffer.from(m.token).toString("base64"));
      }
    }
  });

  it("reports a rejected bootstrap token as Ready=False with a reason", async () => {
    await tokenAuthProvider("rejected", "wrong-bootstrap", WRONG_BOOTSTRAP);
    const pc = await waitForObject(kc, ns.name, "providerconfigs", "rejected", {
      until: (o) => condition(o, "Ready")?.status === "False",
      timeoutMs: 30_000,
      description: "ProviderConfig rejected Ready=False",
    });
    const ready = condition(pc, "Ready");
    expect(ready?.reason).toBe("BootstrapTokenRejected");
    expect(ready?.message).toContain(IDENTITY);
    expect(ready?.message).not.toContain(WRONG_BOOTSTRAP);
    expect((pc.status as { tokenExpiresAt?: string }).tokenExpiresAt).toBeUndefined();
    // A Project using it reports the same reason and calls nothing but the refused create-token.
    await createCustom(
      kc,
      ns.name,
      "projects",
      projectObject("stuck", { slug: `stuck-${randomBytes(3).toString("hex")}`, providerConfigRef: { name: "rejected" } }),
    );
    const stuck = await waitForObject(kc, ns.name, "projects", "stuck", {
      until: (o) => condition(o, "Synced")?.reason === "BootstrapTokenRejected",
      timeoutMs: 30_000,
      description: "Project BootstrapTokenRejected",
    });
    expect(condition(stuck, "Synced")?.status).toBe("False");
    expect(seen.filter((s) => s.authorization === `Bearer ${WRONG_BOOTSTRAP}` && !isMint(s))).toEqual([]);
    const texts = await exposedTexts(ns.name, keyward.logs, "providerconfigs,projects");
    for (const text of texts.all) expect(text).not.toContain(WRONG_BOOTSTRAP);
    expect(await getCustom(kc, ns.name, "projects", "stuck")).toBeDefined();
  });
});
