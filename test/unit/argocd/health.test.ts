// The Argo CD health checks of argocd/health.lua, run by a real Lua 5.1 interpreter (Debian's
// lua5.1, as Argo CD's gopher-lua implements 5.1) against sample objects for every state.
import { execFile } from "node:child_process";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { assessWithLua, type Health } from "../../../hack/tools/argocd-lua.ts";
import { configMapFile, customizationsKey, groupPattern, healthFile, healthScript, keywardKinds, staleFiles, upstreamDir, valuesFile } from "../../../hack/tools/render-argocd-cm.ts";
import { kinds as registered, reasonRegistry } from "../../../src/resources/registry.ts";
import { keywardClusterPlurals, keywardPlurals, parseYamlDocuments, readYamlFile, repoRoot } from "../chart/helm.ts";

// Every kind of the registry: a new kind is checked here without touching this file.
const kinds = registered.map((k) => k.ref.kind).sort((a, b) => a.localeCompare(b));

/** Runs the script over every object with lua5.1, the way Argo CD calls it. */
function assess(scriptPath: string, objects: object[]): Promise<Health[]> {
  return assessWithLua(scriptPath, objects);
}

let argocd: Promise<string> | undefined;

/**
 * The argocd binary, KEYWARD_ARGOCD's or hack/e2e/build-tools.sh's: built from its Go module into
 * keyward's cache once (minutes cold; .ci/run starts that build beside the integration tests, and
 * the script's lock makes this wait for it), found there after.
 */
function argocdBinary(): Promise<string> {
  argocd ??= new Promise((resolvePromise, reject) => {
    const given = process.env["KEYWARD_ARGOCD"];
    if (given) {
      if (existsSync(given)) resolvePromise(given);
      else reject(new Error(`KEYWARD_ARGOCD=${given}: no such file`));
      return;
    }
    execFile("bash", [join(repoRoot, "hack", "e2e", "build-tools.sh"), "argocd"], { maxBuffer: 16 << 20 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`bash hack/e2e/build-tools.sh argocd failed: ${stderr.slice(-2000) || error.message}`));
      else resolvePromise(join(stdout.trim(), "argocd"));
    });
  });
  return argocd;
}

/** Argo CD's own Lua engine on one saved object, with argocd/argocd-cm.yaml as argocd-cm. */
async function assessWithArgocd(objectFile: string): Promise<Health> {
  const binary = await argocdBinary();
  return new Promise((resolvePromise, reject) => {
    execFile(
      binary,
      ["admin", "settings", "resource-overrides", "health", objectFile, "--argocd-cm-path", configMapFile],
      { env: { ...process.env, KUBECONFIG: "/dev/null" } },
      (error, stdout, stderr) => {
        if (error) {
          reject(new Error(`argocd admin settings resource-overrides health ${objectFile}: ${stderr.split("\n").filter((l) => l.includes("fatal") || l.includes("error")).join(" ") || error.message}`));
          return;
        }
        const status = /^STATUS: (.*)$/m.exec(stdout)?.[1] ?? "";
        const message = /^MESSAGE: (.*)$/m.exec(stdout)?.[1] ?? "";
        resolvePromise({ status, message });
      },
    );
  });
}

type Cond = [type: string, status: string, reason: string, message?: string, observedGeneration?: number];

function object(kind: string, opts: { generation?: number; observed?: number | null; conditions?: Cond[] | null; status?: Record<string, unknown>; deleting?: boolean } = {}): object {
  const generation = opts.generation ?? 3;
  const conditions = opts.conditions === null ? undefined : (opts.conditions ?? []).map(([type, status, reason, message, og]) => ({
    type,
    status,
    reason,
    message: message ?? `${type} is ${status}`,
    observedGeneration: og ?? generation,
    lastTransitionTime: "2026-01-01T00:00:00Z",
  }));
  const hasStatus = opts.conditions !== undefined || opts.status !== undefined || opts.observed !== undefined;
  return {
    apiVersion: "keyward.dev/v1alpha1",
    kind,
    metadata: { name: "sample", namespace: "team-a", generation, ...(opts.deleting ? { deletionTimestamp: "2026-01-01T00:00:00Z" } : {}) },
    spec: {},
    ...(hasStatus
      ? { status: { ...(opts.observed === null ? {} : { observedGeneration: opts.observed ?? generation }), ...(conditions ? { conditions } : {}), ...opts.status } }
      : {}),
  };
}

const ok: Cond[] = [["Ready", "True", "Available", "the external object is available"], ["Synced", "True", "ReconcileSuccess"]];
const syncedFalse = (reason: string): Cond[] => [["Ready", "True", "Available"], ["Synced", "False", reason, `failed with ${reason}`]];
const readyFalse = (reason: string): Cond[] => [["Ready", "False", reason, `not ready: ${reason}`], ["Synced", "True", "ReconcileSuccess"]];

// [what, object options, expected status, text the message contains]
type Case = [string, Parameters<typeof object>[1], string, string];
const commonCases: Case[] = [
  ["no status yet", {}, "Progressing", "Waiting for keyward to reconcile"],
  ["a status without conditions", { observed: 3, conditions: null }, "Progressing", "Waiting"],
  ["an empty condition list", { conditions: [] }, "Progressing", "Waiting"],
  ["a status for an older generation", { generation: 4, observed: 3, conditions: ok.map(([t, s, r, m]) => [t, s, r, m, 3] as Cond) }, "Progressing", "generation 4"],
  ["no observedGeneration in status", { observed: null, conditions: ok }, "Progressing", "generation 3"],
  ["Ready=True for the current generation", { conditions: ok }, "Healthy", "Available: the external object is available"],
  ["Ready=True for an older generation", { conditions: [["Ready", "True", "Available", "old", 2], ["Synced", "True", "ReconcileSuccess"]] }, "Progressing", "generation 3"],
  ["Ready=Unknown", { conditions: [["Ready", "Unknown", "Reconciling"]] }, "Progressing", "Reconciling"],
  ["only Synced=True so far", { conditions: [["Synced", "True", "ReconcileSuccess"]] }, "Progressing", "Ready condition"],
  ["Ready=False WaitingForJob", { conditions: readyFalse("WaitingForJob") }, "Progressing", "WaitingForJob"],
  ["Ready=False RemovingSecrets", { conditions: readyFalse("RemovingSecrets") }, "Progressing", "RemovingSecrets"],
  ["Ready=False InUse (waits for the objects that use it)", { conditions: readyFalse("InUse") }, "Progressing", "InUse"],
  ["Ready=False with a reason keyward never writes", { conditions: readyFalse("Creating") }, "Degraded", "Creating"],
  ["being deleted", { deleting: true, conditions: ok }, "Progressing", "Being deleted"],
  ["Synced=False ServiceUnavailable (retried)", { conditions: syncedFalse("ServiceUnavailable") }, "Progressing", "ServiceUnavailable: failed with ServiceUnavailable (retrying)"],
  ["Synced=False RateLimited (retried)", { conditions: syncedFalse("RateLimited") }, "Progressing", "retrying"],
  ["Synced=False CredentialsNotFound (waits for the Secret)", { conditions: syncedFalse("CredentialsNotFound") }, "Progressing", "retrying"],
  ["Synced=False ProviderConfigNotFound", { conditions: syncedFalse("ProviderConfigNotFound") }, "Progressing", "retrying"],
  ["Synced=False ValidationFailed", { conditions: syncedFalse("ValidationFailed") }, "Degraded", "ValidationFailed: failed with ValidationFailed"],
  ["Synced=False Unauthorized", { conditions: syncedFalse("Unauthorized") }, "Degraded", "Unauthorized"],
  ["Synced=False Forbidden", { conditions: syncedFalse("Forbidden") }, "Degraded", "Forbidden"],
  ["Synced=False AlreadyExists", { conditions: syncedFalse("AlreadyExists") }, "Degraded", "AlreadyExists"],
  ["Synced=False InvalidSpec", { conditions: syncedFalse("InvalidSpec") }, "Degraded", "InvalidSpec"],
  ["Synced=False with a reason never seen before", { conditions: syncedFalse("SomethingNew") }, "Degraded", "SomethingNew"],
  ["Ready=False NotFound", { conditions: readyFalse("NotFound") }, "Degraded", "NotFound: not ready: NotFound"],
  ["Ready=False MemberNotFound", { conditions: readyFalse("MemberNotFound") }, "Degraded", "MemberNotFound"],
  ["Ready=False DeleteProtected while deleting", { deleting: true, conditions: readyFalse("DeleteProtected") }, "Degraded", "DeleteProtected"],
  ["Ready=False JobFailed", { conditions: readyFalse("JobFailed") }, "Degraded", "JobFailed"],
  ["Synced=False ReconcilePaused", { conditions: [["Ready", "True", "Available"], ["Synced", "False", "ReconcilePaused", "paused by annotation"]] }, "Suspended", "ReconcilePaused"],
  ["ObserveOnly with a difference, Ready=True", { conditions: [["Ready", "True", "Available"], ["Synced", "False", "ObserveOnly", "differs"]] }, "Healthy", "Available"],
  ["ObserveOnly with the object missing", { conditions: [["Ready", "False", "NotFound", "missing"], ["Synced", "True", "ObserveOnly"]] }, "Degraded", "NotFound"],
  ["a SecretSync-only field on another kind is ignored", { conditions: ok, status: { syncStatus: "running" } }, "Healthy", "Available"],
];

const secretSyncCases: Case[] = [
  ["a sync job pending", { conditions: ok, status: { syncStatus: "pending" } }, "Progressing", "The sync job is pending"],
  ["a sync job running", { conditions: ok, status: { syncStatus: "running" } }, "Progressing", "The sync job is running"],
  ["a remove job running", { conditions: ok, status: { syncStatus: "succeeded", removeStatus: "running" } }, "Progressing", "The remove job is running"],
  ["an import job pending", { conditions: ok, status: { importStatus: "pending" } }, "Progressing", "The import job is pending"],
  ["a sync job failed", { conditions: ok, status: { syncStatus: "failed", lastSyncMessage: "destination refused the write" } }, "Degraded", "The sync job failed: destination refused the write"],
  ["a remove job failed", { conditions: ok, status: { syncStatus: "succeeded", removeStatus: "failed" } }, "Degraded", "The remove job failed"],
  ["every job succeeded", { conditions: ok, status: { syncStatus: "succeeded", removeStatus: "succeeded" } }, "Healthy", "Available"],
  ["a terminal error wins over a running job", { conditions: syncedFalse("ValidationFailed"), status: { syncStatus: "running" } }, "Degraded", "ValidationFailed"],
  ["a job running before the first status write of the generation", { generation: 5, observed: 4, conditions: ok, status: { syncStatus: "running" } }, "Progressing", "generation 5"],
];

const scriptPath = (_kind: string): string => healthFile;

describe("the health script", () => {
  it("serves every keyward kind", () => {
    expect(keywardKinds()).toEqual(kinds);
    expect(keywardPlurals.length + keywardClusterPlurals.length).toBe(kinds.length);
  });

  it("starts with `hs = {}` and returns hs, as argocd-cm expects", () => {
    const script = readFileSync(healthFile, "utf8");
    expect(script).toMatch(/^hs = \{\}$/m);
    expect(script.trimEnd()).toMatch(/return set\("Healthy", describe\(ready\)\)$/);
    expect(script).toMatch(/local function set\(status, message\)\n\s+hs\.status = status\n\s+hs\.message = message\n\s+return hs/);
  });

  it("sees every reason of the registry as the registry means it (Ready=False)", async () => {
    const registry = [...reasonRegistry()].filter(([, r]) => r.means !== "available" && r.means !== "done");
    expect(registry.length).toBeGreaterThan(20);
    const results = await assess(
      healthFile,
      registry.map(([name]) => object("Project", { conditions: [["Ready", "False", name], ["Synced", "True", "ReconcileSuccess"]] })),
    );
    const seen = registry.map(([name, r], i) => [name, r.means, results[i]?.status]);
    const expected = registry.map(([name, r]) => [name, r.means, r.means === "failed" ? "Degraded" : "Progressing"]);
    expect(seen).toEqual(expected);
  });

  it("shows as Suspended every reason the registry says Argo CD shows so (Synced=False), as docs/kinds.md says", async () => {
    const suspended = [...reasonRegistry()].filter(([, r]) => r.argoCd === "Suspended").map(([name]) => name);
    expect(suspended).toEqual(["ReconcilePaused"]);
    const results = await assess(
      healthFile,
      suspended.map((name) => object("Project", { conditions: [["Ready", "True", "Available"], ["Synced", "False", name]] })),
    );
    expect(results.map((r) => r.status)).toEqual(suspended.map(() => "Suspended"));
    const doc = readFileSync(join(repoRoot, "docs", "kinds.md"), "utf8");
    for (const name of suspended) expect(doc).toMatch(new RegExp(`^\\| ${name} \\| [^|]*Argo CD Suspended\\)`, "m"));
  });
});

describe.each(kinds)("%s", (kind) => {
  const cases = kind === "SecretSync" ? [...commonCases.filter(([what]) => !what.startsWith("a SecretSync-only")), ...secretSyncCases] : commonCases;
  let results: Health[];
  beforeAll(async () => {
    results = await assess(scriptPath(kind), cases.map(([, opts]) => object(kind, opts)));
  });

  it.each(cases.map((c, i) => [c[0], i, c[2], c[3]] as const))("%s", (_what, index, status, message) => {
    const result = results[index];
    expect(result?.status, result?.message).toBe(status);
    expect(result?.message).toContain(message);
  });
});

describe("the rendered argocd/ files (npx node hack/tools/render-argocd-cm.ts)", () => {
  it("are up to date with health.lua and the samples", async () => {
    expect(await staleFiles()).toEqual([]);
  }, 30_000);

  it("use argocd-cm's wildcard form: resource.customizations with keyward.dev/* and the one script", () => {
    const [values] = parseYamlDocuments(readFileSync(valuesFile, "utf8")) as unknown as [{ configs: { cm: Record<string, string> } }];
    const [configMap] = readYamlFile(configMapFile) as unknown as [{ kind: string; metadata: { name: string }; data: Record<string, string> }];
    expect(configMap.kind).toBe("ConfigMap");
    expect(configMap.metadata.name).toBe("argocd-cm");
    for (const cm of [values.configs.cm, configMap.data]) {
      expect(Object.keys(cm)).toEqual([customizationsKey]);
      const [customizations] = parseYamlDocuments(cm[customizationsKey] ?? "") as unknown as [Record<string, { "health.lua": string }>];
      expect(Object.keys(customizations)).toEqual([groupPattern]);
      expect(customizations[groupPattern]?.["health.lua"]).toBe(healthScript());
    }
  });

  it("ship Argo CD's upstream layout for every kind: health.lua, health_test.yaml, testdata", () => {
    expect(readdirSync(upstreamDir).sort()).toEqual(kinds);
    for (const kind of kinds) {
      expect(readFileSync(join(upstreamDir, kind, "health.lua"), "utf8")).toBe(healthScript());
      const tests = upstreamTests(kind);
      expect(new Set(tests.map((t) => t.healthStatus.status))).toEqual(new Set(["Progressing", "Healthy", "Degraded", "Suspended"]));
      for (const t of tests) expect(existsSync(join(upstreamDir, kind, t.inputPath)), t.inputPath).toBe(true);
    }
  });

  it("are documented in argocd/README.md", () => {
    const readme = readFileSync(join(repoRoot, "argocd", "README.md"), "utf8");
    expect(readme).toContain(customizationsKey);
    expect(readme).toContain(groupPattern);
    expect(readme).toContain("resource_customizations/keyward.dev/");
  });
});

interface UpstreamTest {
  healthStatus: Health;
  inputPath: string;
}

function upstreamTests(kind: string): UpstreamTest[] {
  const [file] = readYamlFile(join(upstreamDir, kind, "health_test.yaml")) as unknown as [{ tests: UpstreamTest[] }];
  return file.tests;
}

// health_test.yaml as Argo CD's own test (resource_customizations_test.go) reads it, run through
// Argo CD's Lua engine (`argocd admin settings resource-overrides health` with argocd-cm.yaml)
// and through lua5.1: both must give exactly the recorded status and message.
describe.each(kinds)("%s through Argo CD's own engine and lua5.1", (kind) => {
  const tests = upstreamTests(kind);
  let fromArgocd: Health[];
  let fromLua: Health[];
  beforeAll(async () => {
    const files = tests.map((t) => join(upstreamDir, kind, t.inputPath));
    fromArgocd = await Promise.all(files.map((f) => assessWithArgocd(f)));
    fromLua = await assess(healthFile, files.map((f) => readYamlFile(f)[0] as object));
  }, 1_200_000); // a cold build of argocd takes minutes

  it.each(tests.map((t, i) => [t.inputPath, i] as const))("%s", (_path, index) => {
    const expected = tests[index]?.healthStatus;
    expect(fromArgocd[index]).toEqual(expected);
    expect(fromLua[index]).toEqual(expected);
  });
});

describe("nothing keyward writes makes Argo CD report OutOfSync", () => {
  /** Paths of every `default` in a JSON schema. */
  function defaults(schema: unknown, path: string): string[] {
    if (typeof schema !== "object" || schema === null) return [];
    return Object.entries(schema as Record<string, unknown>).flatMap(([key, value]) =>
      key === "default" && path.split(".").at(-1) !== "properties" ? [path] : defaults(value, `${path}.${key}`),
    );
  }

  // v1alpha1 only: v1beta1 moves the defaults into its schema (docs/api-review.md), and an Argo CD
  // Application of v1beta1 manifests with no permanent diff is still to be proved.
  it("the CRDs default nothing into a v1alpha1 object, so the stored spec is what Git says", () => {
    const dir = join(repoRoot, "crds");
    const files = readdirSync(dir).filter((f) => f.endsWith(".yaml"));
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const [crd] = readYamlFile(join(dir, file)) as unknown as [{ spec: { versions: { name: string; schema: unknown; subresources?: { status?: object } }[] } }];
      const alpha = crd.spec.versions.filter((v) => v.name === "v1alpha1");
      expect(alpha, file).toHaveLength(1);
      for (const version of alpha) {
        expect(defaults(version.schema, `${file}:${version.name}`)).toEqual([]);
        // status lives behind the /status subresource, which Argo CD does not diff
        expect(version.subresources?.status).toEqual({});
      }
    }
  });
});
