// One ClusterProviderConfig, its token Secret in a credentials namespace keyward does not
// otherwise watch, serving the namespaces its selector allows: two selected namespaces get their
// Projects, a third gets Synced=False NotAllowed and not a single call to the service; changing
// the ClusterProviderConfig's namespaces list, or a namespace's labels, re-evaluates the users at
// once (resync is an hour here, so only the secondary watches can explain it).
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from "@kubernetes/client-node";
import type { Emulator } from "../emulator/server.ts";
import { applyYaml, createTestNamespace, kubectl, type TestNamespace } from "../controlplane/testenv.ts";
import {
  condition,
  credentialsLabels,
  createCustom,
  exposedTexts,
  projectObject,
  startKeyward,
  startTestEnv,
  waitForObject,
  type RunningKeyward,
  type TestEnv,
} from "./support/keyward.ts";

const TOKEN = `kw-cpc-token-${randomBytes(6).toString("hex")}`;
const suffix = randomBytes(3).toString("hex");
const CPC = `shared-${suffix}`;
const LABEL = `cpc-test.keyward.dev/${suffix}`;
const GROUP = { group: "keyward.dev", version: "v1alpha1", plural: "clusterproviderconfigs" };
const merge = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

let env: TestEnv | undefined;
let kc: KubeConfig;
let emulator: Emulator;
let keyward: RunningKeyward;
const ns: Record<"creds" | "a" | "b" | "c", TestNamespace> = {} as Record<"creds" | "a" | "b" | "c", TestNamespace>;
const slug = (n: string): string => `cpc-${n}-${suffix}`;

async function labelNamespace(name: string, value: string | null): Promise<void> {
  await kc.makeApiClient(CoreV1Api).patchNamespace({ name, body: { metadata: { labels: { [LABEL]: value } } } }, merge);
}

async function readCpc(): Promise<
  Record<string, unknown> & { status?: { conditions?: { type: string; status: string; reason: string }[]; credentialsNamespace?: string } }
> {
  return (await kc.makeApiClient(CustomObjectsApi).getClusterCustomObject({ ...GROUP, name: CPC })) as never;
}

const usingCpc = { providerConfigRef: { kind: "ClusterProviderConfig", name: CPC } };

beforeAll(async () => {
  env = await startTestEnv({ prefix: "cpc-a", token: TOKEN, provider: false, keyward: false });
  ({ kc, emulator } = env);
  ns.a = env.ns;
  for (const n of ["creds", "b", "c"] as const) {
    ns[n] = await createTestNamespace(`cpc-${n}`);
    const made = ns[n];
    env.onStop(() => made.cleanup());
  }
  await labelNamespace(ns.a.name, "yes");
  await labelNamespace(ns.b.name, "yes");
  await kc.makeApiClient(CoreV1Api).createNamespacedSecret({
    namespace: ns.creds.name,
    body: { metadata: { name: "service-token", labels: credentialsLabels }, stringData: { token: TOKEN } },
  });
  await kc.makeApiClient(CustomObjectsApi).createClusterCustomObject({
    ...GROUP,
    body: {
      apiVersion: "keyward.dev/v1alpha1",
      kind: "ClusterProviderConfig",
      metadata: { name: CPC },
      spec: {
        baseUrl: emulator.url,
        credentialsSecretRef: { name: "service-token" },
        namespaceSelector: { matchLabels: { [LABEL]: "yes" } },
        rateLimit: { requestsPerSecond: 200, burst: 200 },
      },
    },
  });
  env.onStop(() => kc.makeApiClient(CustomObjectsApi).deleteClusterCustomObject({ ...GROUP, name: CPC }));
  keyward = await startKeyward(kc, {
    namespaces: [ns.a.name, ns.b.name, ns.c.name],
    resyncIntervalMs: 3_600_000,
    clusterProviderConfigs: { credentialsNamespace: ns.creds.name },
  });
  env.onStop(() => keyward.stop());
  for (const n of ["a", "b", "c"] as const) {
    await createCustom(kc, ns[n].name, "projects", projectObject("app", { ...usingCpc, name: slug(n), slug: slug(n) }));
  }
});

afterAll(() => env?.stop());

const readyProject = (n: "a" | "b" | "c") =>
  waitForObject(kc, ns[n].name, "projects", "app", {
    until: (o) => condition(o, "Ready")?.status === "True",
    timeoutMs: 60_000,
    description: `Project in ${n} Ready`,
  });
const notAllowed = (n: "a" | "b" | "c") =>
  waitForObject(kc, ns[n].name, "projects", "app", {
    until: (o) => condition(o, "Synced")?.reason === "NotAllowed",
    timeoutMs: 60_000,
    description: `Project in ${n} NotAllowed`,
  });
const callsFor = (n: "a" | "b" | "c"): number => emulator.requests().filter((r) => JSON.stringify(r).includes(slug(n))).length;

describe("a ClusterProviderConfig selecting namespaces by label", () => {
  it("serves the two selected namespaces and refuses the third without calling the service for it", async () => {
    const [a, b] = await Promise.all([readyProject("a"), readyProject("b")]);
    expect((a.status as { projectId?: string }).projectId).toBeTruthy();
    expect((b.status as { projectId?: string }).projectId).toBeTruthy();
    const c = await notAllowed("c");
    const synced = condition(c, "Synced");
    expect(synced?.status).toBe("False");
    expect(synced?.message).toContain(`ClusterProviderConfig ${CPC}`);
    expect(synced?.message).toContain(ns.c.name);
    // The service saw the allowed namespaces' projects and nothing at all of the third one's.
    expect(callsFor("a")).toBeGreaterThan(0);
    expect(callsFor("b")).toBeGreaterThan(0);
    expect(callsFor("c")).toBe(0);
    expect(emulator.requests().filter((r) => r.operation === "createProject")).toHaveLength(2);

    const cpc = await readCpc();
    const ready = cpc.status?.conditions?.find((x) => x.type === "Ready");
    expect(ready?.status).toBe("True");
    expect(cpc.status?.credentialsNamespace).toBe(ns.creds.name);
    const table = await kubectl(["get", "clusterproviderconfigs.v1alpha1.keyward.dev", CPC]);
    expect(table.stdout).toMatch(/NAME\s+URL\s+READY\s+AGE/);
    expect(table.stdout).toContain("True");
  });

  it("takes a changed namespaces list into account at once, without a restart", async () => {
    await notAllowed("c");
    await kc
      .makeApiClient(CustomObjectsApi)
      .patchClusterCustomObject({ ...GROUP, name: CPC, body: { spec: { namespaces: [ns.c.name] } } }, merge);
    const c = await readyProject("c");
    expect((c.status as { projectId?: string }).projectId).toBeTruthy();
    expect(callsFor("c")).toBeGreaterThan(0);
  });

  it("takes a namespace's changed labels into account at once", async () => {
    await readyProject("b");
    await labelNamespace(ns.b.name, null);
    const b = await notAllowed("b");
    expect(condition(b, "Synced")?.message).toContain(ns.b.name);
    await labelNamespace(ns.b.name, "yes");
    await waitForObject(kc, ns.b.name, "projects", "app", {
      until: (o) => condition(o, "Synced")?.status === "True",
      timeoutMs: 60_000,
      description: "Project in b Synced again",
    });
  });

  it("re-evaluates every user at once when the namespaceSelector changes", async () => {
    await Promise.all([readyProject("a"), readyProject("b")]);
    const patchSelector = (value: string): Promise<unknown> =>
      kc
        .makeApiClient(CustomObjectsApi)
        .patchClusterCustomObject(
          { ...GROUP, name: CPC, body: { spec: { namespaceSelector: { matchLabels: { [LABEL]: value } } } } },
          merge,
        );
    await patchSelector("other");
    await Promise.all([notAllowed("a"), notAllowed("b")]);
    // c is still allowed by name.
    const c = await readyProject("c");
    expect(condition(c, "Synced")?.status).toBe("True");
    await patchSelector("yes");
    for (const n of ["a", "b"] as const) {
      await waitForObject(kc, ns[n].name, "projects", "app", {
        until: (o) => condition(o, "Synced")?.status === "True",
        timeoutMs: 60_000,
        description: `Project in ${n} Synced again`,
      });
    }
  });

  it("keeps the token out of logs, events and statuses", async () => {
    for (const n of ["a", "b", "c"] as const) {
      const texts = await exposedTexts(ns[n].name, keyward.logs, "projects");
      for (const text of texts.all) expect(text).not.toContain(TOKEN);
    }
    expect(JSON.stringify(await readCpc())).not.toContain(TOKEN);
  });
});

describe("a ClusterProviderConfig with tokenAuth", () => {
  const ROTATING = `rotating-${suffix}`;
  it("mints its access token with the bootstrap token and serves an allowed namespace with it", async () => {
    // A 60-second identity (as in the default seed); the bootstrap token is the emulator's static one.
    emulator.seed({ identities: [{ id: "a1b2c3d4-0003-4a00-8000-000000000001", accessTokenTTL: 60, accessTokenMaxTTL: 300 }] });
    await kc.makeApiClient(CoreV1Api).createNamespacedSecret({
      namespace: ns.creds.name,
      body: { metadata: { name: "bootstrap", labels: credentialsLabels }, stringData: { token: TOKEN } },
    });
    await kc.makeApiClient(CustomObjectsApi).createClusterCustomObject({
      ...GROUP,
      body: {
        apiVersion: "keyward.dev/v1alpha1",
        kind: "ClusterProviderConfig",
        metadata: { name: ROTATING },
        spec: {
          baseUrl: emulator.url,
          tokenAuth: { identityId: "a1b2c3d4-0003-4a00-8000-000000000001", bootstrapSecretRef: { name: "bootstrap" } },
          namespaces: [ns.a.name],
        },
      },
    });
    env?.onStop(() => kc.makeApiClient(CustomObjectsApi).deleteClusterCustomObject({ ...GROUP, name: ROTATING }));
    await createCustom(
      kc,
      ns.a.name,
      "projects",
      projectObject("rotating", { providerConfigRef: { kind: "ClusterProviderConfig", name: ROTATING }, slug: slug("rotating") }),
    );
    const project = await waitForObject(kc, ns.a.name, "projects", "rotating", {
      until: (o) => condition(o, "Ready")?.status === "True",
      timeoutMs: 60_000,
      description: "Project through the tokenAuth ClusterProviderConfig Ready",
    });
    expect((project.status as { projectId?: string }).projectId).toBeTruthy();
    const cpc = (await kc.makeApiClient(CustomObjectsApi).getClusterCustomObject({ ...GROUP, name: ROTATING })) as {
      status?: { tokenExpiresAt?: string; conditions?: { type: string; status: string }[] };
    };
    expect(cpc.status?.conditions?.find((c) => c.type === "Ready")?.status).toBe("True");
    expect(Number.isNaN(Date.parse(cpc.status?.tokenExpiresAt ?? ""))).toBe(false);
    const mints = emulator.requests().filter((r) => r.operation === "createIdentityToken");
    expect(mints.length).toBeGreaterThanOrEqual(1);
    expect(mints.every((r) => r.status === 200)).toBe(true);
  });
});

describe("the CRDs", () => {
  const sample = (f: string): string => fileURLToPath(new URL(`../../config/samples/${f}`, import.meta.url));

  it("accept the samples (server-side dry run)", async () => {
    const result = await kubectl([
      "apply",
      "--dry-run=server",
      "-n",
      ns.a.name,
      "-f",
      sample("clusterproviderconfig.yaml"),
      "-f",
      sample("providerconfig-tokenauth.yaml"),
    ]);
    expect(result.code, result.stderr).toBe(0);
  });

  it("take exactly one of credentialsSecretRef and tokenAuth", async () => {
    const tokenAuth = "tokenAuth: {identityId: a1b2c3d4-0003-4a00-8000-000000000001, bootstrapSecretRef: {name: b}}";
    for (const [kind, extra] of [
      ["ProviderConfig", ""],
      ["ClusterProviderConfig", "  namespaces: [x]\n"],
    ]) {
      const both = `apiVersion: keyward.dev/v1alpha1\nkind: ${kind}\nmetadata: {name: both-${suffix}}\nspec:\n  baseUrl: https://s.example.com\n  credentialsSecretRef: {name: t}\n  ${tokenAuth}\n${extra}`;
      const neither = `apiVersion: keyward.dev/v1alpha1\nkind: ${kind}\nmetadata: {name: neither-${suffix}}\nspec:\n  baseUrl: https://s.example.com\n${extra}`;
      for (const yaml of [both, neither]) {
        const result = await applyYaml(yaml, ns.a.name, { allowFailure: true, extraArgs: ["--dry-run=server"] });
        expect(result.code).not.toBe(0);
        expect(result.stderr).toContain("exactly one of credentialsSecretRef and tokenAuth must be set");
      }
    }
  });

  it("take providerConfigRef.kind ClusterProviderConfig or ProviderConfig only", async () => {
    const yaml = `apiVersion: keyward.dev/v1alpha1\nkind: Project\nmetadata: {name: badref}\nspec:\n  providerConfigRef: {kind: Secret, name: x}\n`;
    const result = await applyYaml(yaml, ns.a.name, { allowFailure: true, extraArgs: ["--dry-run=server"] });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/providerConfigRef\.kind/);
  });

  it("describe the new fields for kubectl explain", async () => {
    // Qualified by group: other files install test CRDs of the same names in groups of their own.
    const explained = await kubectl(["explain", "clusterproviderconfig.spec.namespaceSelector", "--api-version=keyward.dev/v1alpha1"]);
    expect(explained.code, explained.stderr).toBe(0);
    expect(explained.stdout).toContain("Namespaces whose labels match");
    const tokenAuth = await kubectl(["explain", "providerconfig.spec.tokenAuth"]);
    expect(tokenAuth.stdout).toContain("mints short-lived access tokens");
  });
});
