// The GitHub Actions workflows (.github/workflows): they pass `npm run lint:workflows`
// (actionlint), actionlint fails on a broken workflow, third-party actions are pinned by commit
// SHA with the version in a comment, and every job of the release workflow says its permissions
// (the workflow's default is none).
import { mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { load } from "js-yaml";
import { run, toolBinary } from "../../../hack/lint/chart.ts";
import { repoRoot } from "../../../hack/lint/schemas.ts";

const workflowsDir = join(repoRoot, ".github", "workflows");
let actionlint: string;
let work: string;

interface Workflow {
  on: unknown;
  permissions?: unknown;
  jobs: Record<string, { permissions?: Record<string, string>; steps: { uses?: string; run?: string }[] }>;
}

const readWorkflow = async (name: string): Promise<{ text: string; parsed: Workflow }> => {
  const text = await readFile(join(workflowsDir, name), "utf8");
  return { text, parsed: load(text) as Workflow };
};

beforeAll(async () => {
  actionlint = await toolBinary("actionlint", "KEYWARD_ACTIONLINT", "ensure-actionlint.sh");
  work = await mkdtemp(join(tmpdir(), "keyward-workflows-"));
}, 300_000);

afterAll(() => rm(work, { recursive: true, force: true }));

describe("the workflows", () => {
  it("are ci.yml and release.yml, and pass npm run lint:workflows", async () => {
    expect((await readdir(workflowsDir)).sort()).toEqual(["ci.yml", "release.yml"]);
    const result = await run("bash", [join(repoRoot, "hack", "lint", "workflows.sh")]);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain("2 workflows ok");
  });

  it("pin every action by a full commit SHA, with its version in a comment", async () => {
    for (const name of ["ci.yml", "release.yml"]) {
      const { text } = await readWorkflow(name);
      const uses = [...text.matchAll(/^\s*(?:-\s+)?uses:\s*(\S+)(.*)$/gm)];
      expect(uses.length, name).toBeGreaterThan(0);
      for (const [line, ref, rest] of uses) {
        expect(ref, line).toMatch(/^[\w.-]+\/[\w.-]+@[0-9a-f]{40}$/);
        expect(rest, line).toMatch(/^ # v\d+\.\d+\.\d+$/);
      }
    }
  });

  it("release: no permissions by default, each job only what it uses, id-token only where cosign signs", async () => {
    const { parsed } = await readWorkflow("release.yml");
    expect(parsed.on).toEqual({ push: { tags: ["v*"] } });
    expect(parsed.permissions).toEqual({});
    const permissions = Object.fromEntries(Object.entries(parsed.jobs).map(([job, spec]) => [job, spec.permissions]));
    expect(permissions).toEqual({
      artifacts: { contents: "read" },
      image: { contents: "read", packages: "write", "id-token": "write" },
      chart: { contents: "read", packages: "write", "id-token": "write" },
      "github-release": { contents: "write" },
    });
    const runs = Object.values(parsed.jobs)
      .flatMap((job) => job.steps.map((step) => step.run ?? ""))
      .join("\n");
    expect(runs).toContain("npm run --silent release");
    expect(runs).toMatch(/cosign sign --yes "\$IMAGE@\$DIGEST"/);
    expect(runs).toMatch(/cosign attest --yes --type cyclonedx/);
    expect(runs).toMatch(/helm" push .* "oci:\/\/\$REGISTRY\/\$OWNER\/charts"/);
  });

  it("actionlint fails on a broken workflow: an unknown expression and an unquoted variable in a script", async () => {
    const broken = join(work, "broken.yml");
    await writeFile(
      broken,
      "on: push\npermissions: {}\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    steps:\n      - run: echo ${{ github.nope.deeper }}\n      - run: cp $FROM /tmp\n",
    );
    const result = await run(actionlint, ["-no-color", "-pyflakes=", broken]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('property "nope" is not defined');
    expect(result.stdout).toContain("SC2086");
  });
});
