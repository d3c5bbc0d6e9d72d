// The Argo CD health checks of argocd/health.lua, run by a real Lua 5.1 interpreter (Debian's
// lua5.1, as Argo CD's gopher-lua implements 5.1) against sample objects for every state.
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { healthFile, healthScripts, keywardKinds, renderValues, valuesFile } from "../../../hack/tools/render-argocd-cm.ts";
import { keywardClusterPlurals, keywardPlurals, parseYamlDocuments, readYamlFile, repoRoot } from "../chart/helm.ts";

const kinds = ["AccessToken", "CertificateProfile", "ClusterProviderConfig", "Project", "ProjectMembership", "ProviderConfig", "SecretSync"];

function luaBinary(): string {
  const fromEnv = process.env["KEYWARD_LUA"];
  if (fromEnv) return fromEnv;
  for (const dir of (process.env["PATH"] ?? "").split(":")) {
    if (dir && existsSync(join(dir, "lua5.1"))) return join(dir, "lua5.1");
  }
  throw new Error("lua5.1 not found on PATH (nor $KEYWARD_LUA): install it with `apt-get update && apt-get install -y lua5.1`");
}

/** A JSON value as a Lua table constructor (null fields left out, as Argo CD's conversion does). */
function luaLiteral(value: unknown): string {
  if (value === null || value === undefined) return "nil";
  if (typeof value === "string") return luaString(value);
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (Array.isArray(value)) return `{${value.map(luaLiteral).join(", ")}}`;
  const fields = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== null && v !== undefined)
    .map(([k, v]) => `[${luaString(k)}] = ${luaLiteral(v)}`);
  return `{${fields.join(", ")}}`;
}

function luaString(text: string): string {
  // Lua 5.1 decimal escapes for every control character, quote and backslash.
  let out = "";
  for (const c of text) {
    const code = c.charCodeAt(0);
    out += code < 32 || c === '"' || c === "\\" ? `\\${code}` : c;
  }
  return `"${out}"`;
}

interface Health {
  status: string;
  message: string;
}

/** Runs one script over every object in one interpreter, the way Argo CD calls it: `obj` global, `hs` returned. */
async function assess(scriptPath: string, objects: object[], workDir: string): Promise<Health[]> {
  const program = [
    `local run = assert(loadfile(${luaString(scriptPath)}))`,
    `local objects = {${objects.map(luaLiteral).join(",\n")}}`,
    "for i, o in ipairs(objects) do",
    "  obj = o",
    "  hs = nil",
    "  local ok, result = pcall(run)",
    "  if not ok then io.write('ERROR\\t', tostring(result), '\\n')",
    "  elseif type(result) ~= 'table' then io.write('ERROR\\tno table returned\\n')",
    "  else io.write(tostring(result.status), '\\t', (string.gsub(tostring(result.message), '[\\t\\n]', ' ')), '\\n') end",
    "end",
  ].join("\n");
  const file = join(workDir, `run-${String(Math.random()).slice(2)}.lua`);
  writeFileSync(file, program);
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile(luaBinary(), [file], (error, out, err) => (error ? reject(new Error(`lua5.1 failed: ${err || error.message}`)) : resolve(out)));
  });
  return stdout
    .trimEnd()
    .split("\n")
    .map((line) => {
      const [status = "", message = ""] = line.split("\t");
      return { status, message };
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
  ["Ready=False Creating", { conditions: readyFalse("Creating") }, "Progressing", "Creating"],
  ["Ready=False Deleting", { conditions: readyFalse("Deleting") }, "Progressing", "Deleting"],
  ["Ready=False Pending", { conditions: readyFalse("Pending") }, "Progressing", "Pending"],
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

let workDir: string;
beforeAll(() => {
  workDir = mkdtempSync(join(tmpdir(), "keyward-argocd-"));
});
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

const scripts = healthScripts();
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

  it("knows every progress reason the engine records as Normal", () => {
    const engine = readFileSync(join(repoRoot, "src", "engine", "status.ts"), "utf8");
    const list = /const progressReasons = new Set\(\[([^\]]*)\]\)/.exec(engine)?.[1] ?? "";
    const reasons = [...list.matchAll(/"([A-Za-z]+)"/g)].map((m) => m[1]);
    expect(reasons.length).toBeGreaterThan(3);
    const script = readFileSync(healthFile, "utf8");
    for (const r of reasons) expect(script).toMatch(new RegExp(`\\b${r ?? ""} = true`));
  });
});

describe.each(kinds)("%s", (kind) => {
  const cases = kind === "SecretSync" ? [...commonCases.filter(([what]) => !what.startsWith("a SecretSync-only")), ...secretSyncCases] : commonCases;
  let results: Health[];
  beforeAll(async () => {
    results = await assess(scriptPath(kind), cases.map(([, opts]) => object(kind, opts)), workDir);
  });

  it.each(cases.map((c, i) => [c[0], i, c[2], c[3]] as const))("%s", (_what, index, status, message) => {
    const result = results[index];
    expect(result?.status, result?.message).toBe(status);
    expect(result?.message).toContain(message);
  });
});

describe("argocd/argocd-cm-health.yaml", () => {
  it("is rendered from the script (npx node hack/tools/render-argocd-cm.ts)", () => {
    expect(readFileSync(valuesFile, "utf8")).toBe(renderValues(scripts));
  });

  it("holds one valid argocd-cm key per kind whose value is that kind's script", () => {
    const [values] = parseYamlDocuments(readFileSync(valuesFile, "utf8")) as unknown as [{ configs: { cm: Record<string, string> } }];
    const cm = values.configs.cm;
    expect(Object.keys(cm).sort()).toEqual(kinds.map((k) => `resource.customizations.health.keyward.dev_${k}`));
    for (const key of Object.keys(cm)) expect(key).toMatch(/^[-._a-zA-Z0-9]+$/);
    for (const s of scripts) expect(cm[`resource.customizations.health.keyward.dev_${s.kind}`]).toBe(s.script);
  });

  it("is documented in argocd/README.md for every kind", () => {
    const readme = readFileSync(join(repoRoot, "argocd", "README.md"), "utf8");
    for (const kind of kinds) expect(readme).toContain(`resource.customizations.health.keyward.dev_${kind}`);
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

  it("the CRDs default nothing into an object, so the stored spec is what Git says", () => {
    const dir = join(repoRoot, "crds");
    const files = readdirSync(dir).filter((f) => f.endsWith(".yaml"));
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const [crd] = readYamlFile(join(dir, file)) as unknown as [{ spec: { versions: { name: string; schema: unknown; subresources?: { status?: object } }[] } }];
      for (const version of crd.spec.versions) {
        expect(defaults(version.schema, `${file}:${version.name}`)).toEqual([]);
        // status lives behind the /status subresource, which Argo CD does not diff
        expect(version.subresources?.status).toEqual({});
      }
    }
  });
});
