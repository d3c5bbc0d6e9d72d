// AccessToken end to end: a real kube-apiserver (with the controller manager's garbage
// collector), the emulator over HTTP, keyward in-process.
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { CoreV1Api, type KubeConfig, type V1Secret } from "@kubernetes/client-node";
import type { Emulator } from "../emulator/server.ts";
import { kubectl, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import {
  condition,
  createCustom,
  deleteCustom,
  exposedTexts,
  getCustom,
  isReady,
  startTestEnv,
  waitForObject,
  type KeywardTestEnv,
  type RunningKeyward,
} from "./support/keyward.ts";
import type { KubeObject } from "../../src/engine/types.ts";

const TOKEN = "kw-test-operator-token-ac41d7";
const LONG_LIVED = "c0ffee00-0003-4a00-8000-000000000001";
const SHORT_LIVED = "c0ffee00-0003-4a00-8000-000000000002";
const SHORT_TTL_SECONDS = 9;

let env: KeywardTestEnv | undefined;
let kc: KubeConfig;
let core: CoreV1Api;
let emulator: Emulator;
let ns: TestNamespace;
let keyward: RunningKeyward;
/** Every token keyward wrote that a test read: none may appear in logs, events or status. */
const seenTokens = new Set<string>();

const accessToken = (name: string, spec: Record<string, unknown>): object => ({
  apiVersion: "keyward.dev/v1alpha1",
  kind: "AccessToken",
  metadata: { name },
  spec,
});

type Status = Record<string, unknown> & { tokenId?: string; expiresAt?: string; renewals?: number; lastIssueReason?: string };
const statusOf = (obj: KubeObject | undefined): Status => obj?.status ?? {};

async function readSecret(name: string): Promise<V1Secret | undefined> {
  try {
    return await core.readNamespacedSecret({ namespace: ns.name, name });
  } catch (err) {
    if ((err as { code?: number }).code === 404) return undefined;
    throw err;
  }
}

const decode = (s: V1Secret | undefined, key: string): string | undefined => {
  const v = s?.data?.[key];
  return v === undefined ? undefined : Buffer.from(v, "base64").toString("utf8");
};

function tokenOf(s: V1Secret | undefined, key = "token"): string | undefined {
  const token = decode(s, key);
  if (token) seenTokens.add(token);
  return token;
}

const readyToken = (name: string): Promise<KubeObject> =>
  waitForObject(kc, ns.name, "accesstokens", name, { until: isReady, timeoutMs: 60_000, description: `AccessToken ${name} Ready` });

/** Waits for the Secret to hold a token other than `previous`, and for the status to record it. */
async function nextToken(
  name: string,
  secretName: string,
  previous: string,
): Promise<{ obj: KubeObject; secret: V1Secret; token: string }> {
  return waitFor(
    async () => {
      const secret = await readSecret(secretName);
      const token = tokenOf(secret);
      if (!secret || !token || token === previous) return undefined;
      const obj = await getCustom(kc, ns.name, "accesstokens", name);
      // The status records the token the Secret holds once its expiry matches.
      if (!obj || !isReady(obj) || statusOf(obj).expiresAt !== decode(secret, "expiresAt")) return undefined;
      return { obj, secret, token };
    },
    { timeoutMs: 60_000, description: `a new token in Secret ${secretName}` },
  );
}

/** GET /api/v1/projects with `token` as the bearer: does the service accept it? */
async function serviceAccepts(token: string): Promise<number> {
  const res = await fetch(`${emulator.url}/api/v1/projects`, { headers: { authorization: `Bearer ${token}` } });
  await res.arrayBuffer();
  return res.status;
}

/** The emulator keeps minted tokens as sha256 hashes with their ids. */
async function mintedTokenId(token: string): Promise<string | undefined> {
  const res = await fetch(`${emulator.url}/_emulator/state`);
  const state = (await res.json()) as { tokens: Record<string, { id: string }> };
  return state.tokens[createHash("sha256").update(token).digest("hex")]?.id;
}

const tokenCalls = (identityId: string) =>
  emulator.requests().filter((r) => r.operation === "createIdentityToken" && r.path.includes(identityId));

const identities = [
  { id: LONG_LIVED, name: "ci-pipeline", accessTokenTTL: 7200 },
  { id: SHORT_LIVED, name: "short-lived", accessTokenTTL: SHORT_TTL_SECONDS, accessTokenMaxTTL: 600 },
];

beforeAll(async () => {
  env = await startTestEnv({
    prefix: "accesstoken",
    token: TOKEN,
    emulator: { seed: { identities } },
    keyward: { resyncIntervalMs: 2_000 },
  });
  ({ kc, emulator, ns, keyward } = env);
  core = kc.makeApiClient(CoreV1Api);
});

afterAll(() => env?.stop());

describe("AccessToken", () => {
  it("writes a working token, its type and expiry into a Secret the AccessToken controls", async () => {
    await createCustom(
      kc,
      ns.name,
      "accesstokens",
      accessToken("ci", { identityId: LONG_LIVED, name: "ci-pipeline-token", secretName: "ci-token" }),
    );
    const obj = await readyToken("ci");
    const secret = await readSecret("ci-token");
    const token = tokenOf(secret);
    expect(token).toBeTruthy();
    expect(decode(secret, "tokenType")).toBe("Bearer");
    expect(decode(secret, "expiresAt")).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(secret?.metadata?.ownerReferences).toEqual([
      expect.objectContaining({
        apiVersion: "keyward.dev/v1alpha1",
        kind: "AccessToken",
        name: "ci",
        uid: obj.metadata.uid,
        controller: true,
      }),
    ]);
    expect(await serviceAccepts(token!)).toBe(200);

    const status = statusOf(obj);
    expect(status.tokenId).toBe(await mintedTokenId(token!));
    expect(status.expiresAt).toBe(decode(secret, "expiresAt"));
    expect(status).toMatchObject({ secretName: "ci-token", identityId: LONG_LIVED, renewals: 0, lastIssueReason: "Initial" });
    // Issued about two hours out, so the default renewal (a third of the lifetime) is ~40 min before.
    const lifetime = Date.parse(status.expiresAt!) - Date.parse(status["lastIssuedAt"] as string);
    expect(lifetime).toBe(7200_000);
    expect(Date.parse(status.expiresAt!) - Date.parse(status["renewAt"] as string)).toBe(2400_000);

    const calls = tokenCalls(LONG_LIVED);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.body).toEqual({ name: "ci-pipeline-token" });
  });

  it("issues no further token while the Secret is intact and not due", async () => {
    await readyToken("ci");
    const before = tokenCalls(LONG_LIVED).length;
    // Two resyncs pass.
    await new Promise((r) => setTimeout(r, 5_000));
    expect(tokenCalls(LONG_LIVED).length).toBe(before);
  });

  it("issues a new token before the current one expires", async () => {
    await createCustom(kc, ns.name, "accesstokens", accessToken("short", { identityId: SHORT_LIVED, secretName: "short-token" }));
    const first = await readyToken("short");
    const firstSecret = await readSecret("short-token");
    const firstToken = tokenOf(firstSecret)!;
    const firstExpiry = Date.parse(decode(firstSecret, "expiresAt")!);
    expect(Date.parse(statusOf(first)["lastIssuedAt"] as string) + SHORT_TTL_SECONDS * 1000).toBe(firstExpiry);

    const renewed = await nextToken("short", "short-token", firstToken);
    const calls = tokenCalls(SHORT_LIVED);
    expect(calls.length).toBeGreaterThanOrEqual(2);
    const [issue1, issue2] = calls;
    // The service saw the second request after the first and before the first token expired.
    expect(issue2!.seq).toBeGreaterThan(issue1!.seq);
    expect(Date.parse(issue2!.at)).toBeLessThan(firstExpiry);
    expect(Date.parse(decode(renewed.secret, "expiresAt")!)).toBeGreaterThan(firstExpiry);
    expect(statusOf(renewed.obj).renewals).toBeGreaterThanOrEqual(1);
    expect(statusOf(renewed.obj).lastIssueReason).toBe("RenewalDue");
    expect(statusOf(renewed.obj).tokenId).not.toBe(statusOf(first).tokenId);
    expect(await serviceAccepts(renewed.token)).toBe(200);
    await deleteCustom(kc, ns.name, "accesstokens", "short");
  });

  it("issues a new token when the Secret is deleted", async () => {
    const before = statusOf(await readyToken("ci"));
    const oldToken = tokenOf(await readSecret("ci-token"))!;
    const calls = tokenCalls(LONG_LIVED).length;
    await core.deleteNamespacedSecret({ namespace: ns.name, name: "ci-token" });
    const next = await nextToken("ci", "ci-token", oldToken);
    expect(tokenCalls(LONG_LIVED).length).toBe(calls + 1);
    expect(statusOf(next.obj)).toMatchObject({ lastIssueReason: "SecretMissing", renewals: (before.renewals ?? 0) + 1 });
    expect(statusOf(next.obj).tokenId).toBe(await mintedTokenId(next.token));
    expect(await serviceAccepts(next.token)).toBe(200);
  });

  it("issues a new token when the Secret is edited", async () => {
    await readyToken("ci");
    const calls = tokenCalls(LONG_LIVED).length;
    const pasted = "hand-edited-not-a-token";
    await core.patchNamespacedSecret({
      namespace: ns.name,
      name: "ci-token",
      body: [{ op: "replace", path: "/data/token", value: Buffer.from(pasted).toString("base64") }],
    });
    const next = await nextToken("ci", "ci-token", pasted);
    expect(tokenCalls(LONG_LIVED).length).toBe(calls + 1);
    expect(statusOf(next.obj).lastIssueReason).toBe("SecretEdited");
    expect(await serviceAccepts(next.token)).toBe(200);
  });

  it("never overwrites a Secret it does not own: Ready=False SecretConflict", async () => {
    const created = await kubectl(["create", "secret", "generic", "someone-elses", "-n", ns.name, "--from-literal=token=theirs"]);
    expect(created.code).toBe(0);
    const calls = tokenCalls(LONG_LIVED).length;
    await createCustom(kc, ns.name, "accesstokens", accessToken("squatter", { identityId: LONG_LIVED, secretName: "someone-elses" }));
    const obj = await waitForObject(kc, ns.name, "accesstokens", "squatter", {
      until: (o) => condition(o, "Ready")?.reason === "SecretConflict",
      timeoutMs: 30_000,
      description: "SecretConflict condition",
    });
    expect(condition(obj, "Ready")?.status).toBe("False");
    expect(decode(await readSecret("someone-elses"), "token")).toBe("theirs");
    expect(tokenCalls(LONG_LIVED).length).toBe(calls);
  });

  it("rejects secretKeys naming one key twice at apply time", async () => {
    const bad = JSON.stringify(accessToken("dupkeys", { identityId: LONG_LIVED, secretName: "dup", secretKeys: { token: "expiresAt" } }));
    const result = await kubectl(["apply", "-n", ns.name, "-f", "-"], { input: bad });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("must differ");
  });

  it("never writes a token into logs, events or status", async () => {
    expect(seenTokens.size).toBeGreaterThanOrEqual(4);
    // exposedTexts throws where kubectl fails
    for (const text of (await exposedTexts(ns.name, keyward.logs, "accesstokens,providerconfigs")).all) {
      expect(text).not.toContain(TOKEN);
      for (const token of seenTokens) {
        expect(text).not.toContain(token);
        expect(text).not.toContain(Buffer.from(token).toString("base64"));
      }
    }
  });

  // Garbage collection is the controller manager's; an existing cluster always has one.
  it("the Secret is garbage-collected after the AccessToken is deleted", async () => {
    expect(inject("keywardControllerManager"), "this test needs kube-controller-manager (garbage collector, namespace controller)").toBe(
      true,
    );
    expect(await readSecret("ci-token")).toBeDefined();
    await deleteCustom(kc, ns.name, "accesstokens", "ci");
    await waitFor(async () => ((await readSecret("ci-token")) ? undefined : true), {
      timeoutMs: 60_000,
      description: "Secret ci-token garbage-collected",
    });
    expect(await getCustom(kc, ns.name, "accesstokens", "ci")).toBeUndefined();
  });
});
