// What the running operator loads: keyward's process (src/main.ts, as the image runs
// dist/main.js; startup loads the whole graph but for the one dynamic import in src, LAZY) with a
// recorder of every module it loads. The CRD generator (src/crd) and @kubernetes/client-node (a
// devDependency, the tests' own client) must not be among them; the Kubernetes runtime client
// (src/kube), the engine and the kinds must, and so must every runtime dependency — the image
// installs those and nothing else (npm ci --omit=dev), so a devDependency loaded here would be
// missing there.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const dir = mkdtempSync(join(tmpdir(), "keyward-modules-"));

/**
 * Loaded only when needed, by the one dynamic import in src: the webhook's certificate issuer and
 * node-forge (2.3 MB of heap) when a certificate is due, which a process whose certificates are
 * current never needs.
 */
const LAZY = { module: "src/webhook/issue.ts", importer: "src/webhook/keeper.ts", packages: ["node-forge"] };

/** The repository-relative paths of the files keyward loaded (node: builtins left out). */
let files: string[] = [];
/** Node's internal modules loaded by then (process.moduleLoadList). */
let internals: string[] = [];
/** The npm packages it loaded directly from node_modules (a package's own node_modules too). */
let packages: Set<string>;
let run: ReturnType<typeof spawnSync>;

beforeAll(() => {
  const record = join(dir, "modules.txt");
  // A kubeconfig that does not exist: keyward parses its flags, makes its logger, fails to load
  // its access and exits 1; by then every static import has been loaded and evaluated.
  run = spawnSync(
    process.execPath,
    ["--import", join(root, "test/unit/record-modules.ts"), join(root, "src/main.ts"), "--kubeconfig", join(dir, "no-such-kubeconfig")],
    { cwd: dir, env: { PATH: process.env["PATH"] ?? "", KEYWARD_MODULE_RECORD: record }, encoding: "utf8", timeout: 60_000 },
  );
  const lines = readFileSync(record, "utf8").split("\n");
  internals = lines.filter((l) => l.startsWith("internal:")).map((l) => l.slice("internal:".length));
  files = lines.filter((url) => url.startsWith("file:")).map((url) => relative(root, fileURLToPath(url)).split(sep).join("/"));
  packages = new Set(files.flatMap((f) => /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(f)?.[1] ?? []));
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the running operator's module graph", () => {
  it("starts and fails on the missing kubeconfig, as the recorder expects", () => {
    expect(run.stderr).toContain("no kubeconfig found");
    expect(run.status).toBe(1);
  });

  it("loads the runtime layers: src/kube, src/engine, the kinds, the entry points", () => {
    for (const file of [
      "src/main.ts",
      "src/operator.ts",
      "src/manager/manager.ts",
      "src/kube/client.ts",
      "src/kube/informer.ts",
      "src/kube/kubeconfig.ts",
      "src/engine/controller.ts",
      "src/engine/managed.ts",
      "src/resources/project.ts",
      "src/api/client.ts",
    ]) {
      expect(files).toContain(file);
    }
  });

  it("loads nothing of the CRD generator (src/crd)", () => {
    expect(files.filter((f) => f.startsWith("src/crd/"))).toEqual([]);
  });

  // An ES import of node:http calls its WebSocket/CloseEvent/MessageEvent getters, which load
  // Node's bundled undici (src/lib/node-http.ts). keyward's requests use the undici package.
  it("loads none of Node's bundled undici, and the recorder does see Node's internal modules", () => {
    expect(internals).toContain("_http_server");
    expect(internals.filter((m) => m.startsWith("internal/deps/undici"))).toEqual([]);
  });

  it("loads no @kubernetes/client-node and no other devDependency", () => {
    expect(packages.has("@kubernetes/client-node")).toBe(false);
    expect([...packages].filter((p) => p in pkg.devDependencies)).toEqual([]);
  });

  it("loads every runtime dependency: each one in package.json's dependencies is used at run time", () => {
    expect(Object.keys(pkg.dependencies).filter((p) => !packages.has(p) && !LAZY.packages.includes(p))).toEqual([]);
  });

  it("loads the certificate issuer only on demand, and it holds the runtime dependencies left out above", () => {
    expect(files).not.toContain(LAZY.module);
    expect(readFileSync(join(root, LAZY.importer), "utf8")).toContain(`await import("./${LAZY.module.split("/").pop() ?? ""}")`);
    const issuer = readFileSync(join(root, LAZY.module), "utf8");
    for (const p of LAZY.packages) {
      expect(issuer).toContain(`from "${p}"`);
      expect(pkg.dependencies).toHaveProperty(p);
    }
  });
});
