// Issue 16 §4, AccessToken: a token whose Secret write fails is written again by the next pass,
// not minted anew (counted in the emulator's request log), and a rewrite of the Secret keeps
// what other controllers put on it (finalizers, labels, annotations). A real kube-apiserver (its
// ValidatingAdmissionPolicy refuses the Secret), the emulator over HTTP, keyward in-process.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CoreV1Api, PatchStrategy, setHeaderOptions, type KubeConfig, type V1Secret } from "@kubernetes/client-node";
import type { Emulator } from "../emulator/server.ts";
import { kubectl, waitFor, type TestNamespace } from "../controlplane/testenv.ts";
import {
  condition,
  createCustom,
  exposedTexts,
  isReady,
  startTestEnv,
  waitForObject,
  type KeywardTestEnv,
  type RunningKeyward,
} from "./support/keyward.ts";
import type { KubeObject } from "../../src/engine/types.ts";

const TOKEN = "kw-test-operator-token-b0d5e1";
const IDENTITY = "c0ffee00-0016-4a00-8000-000000000001";
const FOREIGN_FINALIZER = "example.com/backup-hold";

let env: KeywardTestEnv | undefined;
let kc: KubeConfig;
let core: CoreV1Api;
let emulator: Emulator;
let ns: TestNamespace;
let keyward: RunningKeyward;
const seenTokens = new Set<string>();

const accessToken = (name: string, secretName: string): object => ({
  apiVersion: "keyward.dev/v1alpha1",
  kind: "AccessToken",
  metadata: { name },
  spec: { identityId: IDENTITY, secretName },
});

const mints = (): number => emulator.requests().filter((r) => r.operation === "createIdentityToken").length;

async function readSecret(name: string): Promise<V1Secret | undefined> {
  try {
    return await core.readNamespacedSecret({ namespace: ns.name, name });
  } catch (err) {
    if ((err as { code?: number }).code === 404) return undefined;
    throw err;
  }
}

function tokenOf(s: V1Secret | undefined): string | undefined {
  const v = s?.data?.["token"];
  const token = v === undefined ? undefined : Buffer.from(v, "base64").toString("utf8");
  if (token) seenTokens.add(token);
  return token;
}

const mergePatchSecret = (name: string, patch: object): Promise<V1Secret> =>
  core.patchNamespacedSecret({ namespace: ns.name, name, body: patch }, setHeaderOptions("Content-Type", PatchStrategy.MergePatch));

/** Whether the apiserver lets a new Secret be created now (a probe Secret, deleted at once). */
async function secretCreateAllowed(name: string): Promise<boolean> {
  try {
    await core.createNamespacedSecret({ namespace: ns.name, body: { metadata: { name }, stringData: { x: "y" } } });
  } catch (err) {
    const code = (err as { code?: number }).code;
    if (code === 403 || code === 422) return false;
    throw err;
  }
  await core.deleteNamespacedSecret({ namespace: ns.name, name });
  return true;
}

const readyToken = (name: string): Promise<KubeObject> =>
  waitForObject(kc, ns.name, "accesstokens", name, { until: isReady, timeoutMs: 60_000, description: `AccessToken ${name} Ready` });

beforeAll(async () => {
  env = await startTestEnv({
    prefix: "accesstoken-bounds",
    token: TOKEN,
    emulator: { seed: { identities: [{ id: IDENTITY, name: "bounds", accessTokenTTL: 7200 }] } },
    keyward: { resyncIntervalMs: 1_000 },
  });
  ({ kc, emulator, ns, keyward } = env);
  core = kc.makeApiClient(CoreV1Api);
});

afterAll(() => env?.stop());

describe("AccessToken: bounded minting and a Secret shared with other controllers", () => {
  it("a token whose Secret cannot be written is kept and written by a later pass, not minted again", async () => {
    // The apiserver refuses the Secret (a ValidatingAdmissionPolicy of this namespace denies its name).
    const policy = `kw-bounds-${ns.name}`;
    const objects = [
      {
        apiVersion: "admissionregistration.k8s.io/v1",
        kind: "ValidatingAdmissionPolicy",
        metadata: { name: policy },
        spec: {
          failurePolicy: "Fail",
          matchConstraints: {
            resourceRules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["secrets"] }],
          },
          validations: [{ expression: "object.metadata.name != 'quota-token'", message: "this Secret is held back by the test" }],
        },
      },
      {
        apiVersion: "admissionregistration.k8s.io/v1",
        kind: "ValidatingAdmissionPolicyBinding",
        metadata: { name: policy },
        spec: {
          policyName: policy,
          validationActions: ["Deny"],
          matchResources: { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": ns.name } } },
        },
      },
    ];
    const removePolicy = () =>
      kubectl(["delete", "--ignore-not-found", "validatingadmissionpolicybinding,validatingadmissionpolicy", policy]);
    env!.onStop(removePolicy);
    await kubectl(["apply", "-f", "-"], { input: JSON.stringify({ apiVersion: "v1", kind: "List", items: objects }) });
    await waitFor(async () => ((await secretCreateAllowed("quota-token")) ? undefined : true), {
      timeoutMs: 60_000,
      description: "the policy refusing the Secret",
    });

    const before = mints();
    await createCustom(kc, ns.name, "accesstokens", accessToken("quota", "quota-token"));
    const failed = await waitForObject(kc, ns.name, "accesstokens", "quota", {
      until: (o) => condition(o, "Synced")?.reason === "SecretWriteFailed",
      timeoutMs: 60_000,
      description: "Synced=False SecretWriteFailed",
    });
    expect(condition(failed, "Synced")?.message).toMatch(/could not create Secret .*\/quota-token: HTTP (403|422) [A-Za-z]+$/);
    // Several more passes (the resync is 1 s) try the write again with the kept token.
    const failedPasses = (): number =>
      keyward.logs.filter((l) => l.includes("SecretWriteFailed") && l.includes('"reconcile failed')).length;
    await waitFor(() => Promise.resolve(failedPasses() >= 3 ? true : undefined), {
      timeoutMs: 60_000,
      description: "three passes failing to write the Secret",
    });
    expect(mints() - before).toBe(1);
    expect(keyward.logs.filter((l) => l.includes("writing the token minted earlier")).length).toBeGreaterThanOrEqual(2);
    expect(await readSecret("quota-token")).toBeUndefined();

    await removePolicy();
    const ready = await readyToken("quota");
    const token = tokenOf(await readSecret("quota-token"));
    expect(token).toBeTruthy();
    // The one token minted is the one in the Secret, and the service accepts it.
    expect(mints() - before).toBe(1);
    const res = await fetch(`${emulator.url}/api/v1/projects`, { headers: { authorization: `Bearer ${token!}` } });
    await res.arrayBuffer();
    expect(res.status).toBe(200);
    expect(ready.status?.["lastIssueReason"]).toBe("Initial");
  });

  it("rewriting the Secret keeps other controllers' finalizers, labels and annotations, and drops data keys keyward did not write", async () => {
    await createCustom(kc, ns.name, "accesstokens", accessToken("shared", "shared-token"));
    await readyToken("shared");
    const first = tokenOf(await readSecret("shared-token"))!;
    const before = mints();
    // Another controller holds the Secret and tags it; someone edits the token (a rewrite is due).
    await mergePatchSecret("shared-token", {
      metadata: {
        finalizers: [FOREIGN_FINALIZER],
        labels: { "backup.example.com/include": "true" },
        annotations: { "backup.example.com/last": "2030-01-01" },
      },
      data: { token: Buffer.from("edited-by-hand").toString("base64"), extra: Buffer.from("stray").toString("base64") },
    });
    try {
      const rewritten = await waitFor(
        async () => {
          const s = await readSecret("shared-token");
          const t = tokenOf(s);
          return t && t !== first && t !== "edited-by-hand" ? s : undefined;
        },
        { timeoutMs: 60_000, description: "keyward rewriting the edited Secret" },
      );
      // The Secret is written before the status that records it: the AccessToken, Ready all along,
      // says why once that pass is over; only then is the count of mints final.
      const obj = await waitForObject(kc, ns.name, "accesstokens", "shared", {
        until: (o) => isReady(o) && o.status?.["lastIssueReason"] === "SecretEdited",
        timeoutMs: 60_000,
        description: "AccessToken shared recording the reissue",
      });
      expect(obj.status?.["secretDataHash"]).toBe(rewritten.metadata?.annotations?.["keyward.dev/data-hash"]);
      expect(mints() - before).toBe(1);
      expect(rewritten.metadata?.finalizers).toEqual([FOREIGN_FINALIZER]);
      expect(rewritten.metadata?.labels).toMatchObject({
        "backup.example.com/include": "true",
        "keyward.dev/owner-kind": "AccessToken",
        "app.kubernetes.io/managed-by": "keyward",
      });
      expect(rewritten.metadata?.annotations).toMatchObject({ "backup.example.com/last": "2030-01-01" });
      expect(rewritten.metadata?.annotations?.["keyward.dev/data-hash"]).toMatch(/^sha256:/);
      expect(Object.keys(rewritten.data ?? {}).sort()).toEqual(["expiresAt", "token", "tokenType"]);
    } finally {
      await mergePatchSecret("shared-token", { metadata: { finalizers: null } });
    }
  });

  it("no token in keyward's logs, the namespace's events or the AccessTokens", async () => {
    expect(seenTokens.size).toBeGreaterThanOrEqual(2);
    const exposed = await exposedTexts(ns.name, keyward.logs, "accesstokens");
    for (const token of seenTokens) {
      for (const text of exposed.all) expect(text).not.toContain(token);
    }
  });
});
