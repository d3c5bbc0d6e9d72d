// The Dockerfile's structure (no Docker engine here to run hadolint or a build in the unit
// suite): multi-stage, production dependencies only at run time, non-root, node dist/main.js,
// OCI labels, and a build context limited by .dockerignore.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "./helm.ts";

interface Instruction {
  op: string;
  args: string;
}
interface Stage {
  from: string;
  name: string | undefined;
  instructions: Instruction[];
}

/** Instructions with continuation lines joined and comments dropped, grouped by stage. */
function parseDockerfile(text: string): { args: Instruction[]; stages: Stage[] } {
  const logical: string[] = [];
  let current = "";
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line.startsWith("#") || (line === "" && current === "")) continue;
    if (line.endsWith("\\")) {
      current += `${line.slice(0, -1)} `;
      continue;
    }
    current += line;
    if (current.trim() !== "") logical.push(current.trim());
    current = "";
  }
  const globalArgs: Instruction[] = [];
  const stages: Stage[] = [];
  for (const line of logical) {
    const m = /^(\S+)\s*(.*)$/s.exec(line);
    if (!m?.[1]) continue;
    const instruction = { op: m[1].toUpperCase(), args: m[2] ?? "" };
    if (instruction.op === "FROM") {
      const from = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(instruction.args);
      stages.push({ from: from?.[1] ?? "", name: from?.[2], instructions: [] });
    } else if (stages.length === 0) {
      globalArgs.push(instruction);
    } else {
      stages[stages.length - 1]?.instructions.push(instruction);
    }
  }
  return { args: globalArgs, stages };
}

const dockerfile = parseDockerfile(readFileSync(join(repoRoot, "Dockerfile"), "utf8"));
const final = dockerfile.stages[dockerfile.stages.length - 1];
const ops = (stage: Stage | undefined, op: string): string[] => (stage?.instructions ?? []).filter((i) => i.op === op).map((i) => i.args);
const argDefault = (name: string): string | undefined =>
  dockerfile.args.map((a) => new RegExp(`^${name}=(\\S+)$`).exec(a.args)?.[1]).find(Boolean);
const imageOf = (from: string): string => from.replace(/^\$\{(\w+)\}$/, (_m, name: string) => argDefault(name) ?? from);

describe("Dockerfile", () => {
  it("builds in a stage with dev dependencies (npm ci, npm run build)", () => {
    const build = dockerfile.stages.find((s) => ops(s, "RUN").some((r) => r.includes("npm run build")));
    expect(build).toBeDefined();
    expect(imageOf(build?.from ?? "")).toMatch(/^node:24/);
    const runs = ops(build, "RUN").join("\n");
    expect(runs).toMatch(/npm ci(?![^\n]*--omit=dev)/);
    expect(runs.indexOf("npm ci")).toBeLessThan(runs.indexOf("npm run build"));
  });

  it("installs production dependencies only for the runtime", () => {
    const prod = dockerfile.stages.find((s) => ops(s, "RUN").some((r) => r.includes("npm ci --omit=dev")));
    expect(prod?.name).toBeDefined();
    const copies = ops(final, "COPY");
    expect(copies).toContain(`--from=${prod?.name ?? ""} /src/node_modules ./node_modules`);
    expect(copies.some((c) => c.startsWith("--from=") && c.includes("dist"))).toBe(true);
    // Nothing but build outputs and package.json from the context: no source, no dev tooling.
    expect(copies.filter((c) => !c.startsWith("--from="))).toEqual(["package.json ./"]);
  });

  it("runs on a Node 24 slim base as uid 65532, with no npm or build step at run time", () => {
    expect(dockerfile.stages.length).toBeGreaterThanOrEqual(2);
    expect(imageOf(final?.from ?? "")).toMatch(/^node:24(-[a-z]+)?-slim$|distroless/);
    expect(ops(final, "USER")).toEqual(["65532:65532"]);
    expect(ops(final, "RUN")).toEqual([]);
  });

  it("starts keyward as node dist/main.js, exec form", () => {
    expect(ops(final, "ENTRYPOINT")).toEqual(['["node", "dist/main.js"]']);
    expect(ops(final, "CMD")).toEqual([]);
  });

  it("carries OCI labels", () => {
    const labels = ops(final, "LABEL").join(" ");
    for (const key of ["title", "description", "version", "revision", "created", "licenses"]) {
      expect(labels).toContain(`org.opencontainers.image.${key}=`);
    }
  });

  it("writes nothing outside /tmp at run time (read-only root filesystem)", () => {
    // No VOLUME, no writable state dir: the chart mounts an emptyDir on /tmp.
    expect(ops(final, "VOLUME")).toEqual([]);
    expect(ops(final, "ENV").join(" ")).toContain("NODE_ENV=production");
  });

  it("runs Node with a small young generation and at most two malloc arenas (the measured memory figures)", () => {
    const envs = ops(final, "ENV").join(" ");
    expect(envs).toContain('NODE_OPTIONS="--max-semi-space-size=1"');
    expect(envs).toContain("MALLOC_ARENA_MAX=2");
  });

  it("sends only what it copies as the build context", () => {
    const ignore = readFileSync(join(repoRoot, ".dockerignore"), "utf8")
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith("#"));
    expect(ignore[0]).toBe("*");
    expect(ignore.slice(1).sort()).toEqual(["!package-lock.json", "!package.json", "!src/", "!tsconfig.build.json", "!tsconfig.json"]);
  });
});
