// The Dockerfile's structure (no Docker engine here to run hadolint or a build in the unit
// suite): multi-stage, production dependencies only at run time, a FROM scratch runtime of
// distroless's shape (Debian's libc6, libgcc-s1, libstdc++6, the CA bundle, nonroot, Node), non-root,
// node dist/main.js, OCI labels, and a build context limited by .dockerignore. The kind e2e builds
// and runs it (no shell: test/e2e/install.test.ts).
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
  platform: string | undefined;
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
      const from = /^(?:--platform=(\S+)\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(instruction.args);
      stages.push({ from: from?.[2] ?? "", platform: from?.[1], name: from?.[3], instructions: [] });
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

  it("runs FROM scratch as uid 65532, with no RUN, shell, apt or npm at run time", () => {
    expect(final?.from).toBe("scratch");
    expect(ops(final, "USER")).toEqual(["65532:65532"]);
    expect(ops(final, "RUN")).toEqual([]);
    // The root filesystem comes whole from the rootfs stage, the app from the JavaScript stages.
    const rootfs = dockerfile.stages.find((s) => s.name === "rootfs");
    expect(ops(final, "COPY").filter((c) => c.startsWith("--from=rootfs"))).toEqual(["--from=rootfs /rootfs/ /"]);
    const script = ops(rootfs, "RUN").join("\n");
    // Only the files of these Debian packages (no bash, coreutils, dpkg, apt), recorded in status.d.
    expect(/for pkg in ([^;]+);\s*do\s+dpkg-query -L/.exec(script)?.[1]?.trim().split(/\s+/)).toEqual([
      "libc6",
      "libgcc-s1",
      "libstdc++6",
      "gcc-12-base",
    ]);
    expect(/for pkg in ([^;]+);\s*do\s+dpkg-query -s/.exec(script)?.[1]?.trim().split(/\s+/).sort()).toEqual([
      "base-files",
      "ca-certificates",
      "gcc-12-base",
      "libc6",
      "libgcc-s1",
      "libstdc++6",
    ]);
    expect(script).toContain('>"$r/var/lib/dpkg/status.d/$pkg"');
    // Their libraries and configuration only: no programs (/usr/bin, /sbin: ldd is a bash script).
    expect(script).toMatch(/\/lib\/\*\|\/lib64\/\*\|\/usr\/lib\/\*\|\/usr\/lib64\/\*\|\/etc\/\*\|\/usr\/share\/doc\/\*\/copyright\)/);
    expect(script).toContain("update-ca-certificates --fresh");
    expect(script).toContain('cp /etc/ssl/certs/ca-certificates.crt "$r/etc/ssl/certs/ca-certificates.crt"');
    expect(script).toContain("nonroot:x:65532:65532:");
    expect(script).toContain("nonroot:x:65532:\\n");
    expect(script).toContain('mkdir -m 1777 "$r/tmp"');
    // Node's binary only: not /usr/local/lib/node_modules (npm, corepack).
    expect(script).toContain('cp "$(command -v node)" "$r/usr/local/bin/node"');
    expect(script).not.toMatch(/node_modules|npm|corepack/);
  });

  it("builds JavaScript on the build platform and the root filesystem on the target one", () => {
    const js = dockerfile.stages.filter((s) => ops(s, "RUN").some((r) => r.includes("npm ci")));
    expect(js.map((s) => s.platform)).toEqual(["$BUILDPLATFORM", "$BUILDPLATFORM"]);
    const rootfs = dockerfile.stages.find((s) => s.name === "rootfs");
    expect(rootfs?.platform).toBeUndefined();
    expect(imageOf(rootfs?.from ?? "")).toBe("node:24-bookworm");
    expect(ops(rootfs, "ARG")).toContain("TARGETARCH");
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

  it("runs Node with a small young generation, at most two malloc arenas and a fixed mmap threshold (the measured memory figures)", () => {
    const envs = ops(final, "ENV").join(" ");
    expect(envs).toContain('NODE_OPTIONS="--max-semi-space-size=1"');
    expect(envs).toContain("MALLOC_ARENA_MAX=2");
    expect(envs).toContain("MALLOC_MMAP_THRESHOLD_=131072");
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
