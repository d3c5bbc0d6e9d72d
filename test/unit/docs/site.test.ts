// The docs site (VitePress, docs/): it builds with no dead internal link, the repository's
// top-level Markdown files link only to files that exist, and the built landing page renders in
// headless Chromium (Debian's /usr/bin/chromium; .ci/run installs it): its DOM has the hero and
// its screenshot is not blank. The screenshot and the DOM are kept in .keyward/docs-site/
// (landing.png, landing.html; .keyward/ is ignored by Git) to look at.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { decodePng, relativeLinks, serveDir } from "./support.ts";

const run = promisify(execFile);
const root = resolve(import.meta.dirname, "..", "..", "..");
const dist = join(root, "docs", ".vitepress", "dist");
const out = join(root, ".keyward", "docs-site");
const CHROMIUM = "/usr/bin/chromium";
const HERO_TITLE = "Secrets-service projects and syncs as Kubernetes resources";
const LINKED_FILES = ["README.md", "CONTRIBUTING.md", "SECURITY.md", "CHANGELOG.md", "charts/keyward/README.md"];

/** Chromium headless, as CI runs it: no sandbox (root), no GPU, nothing fetched in the background. */
async function chromium(args: string[]): Promise<string> {
  const profile = await mkdtemp(join(tmpdir(), "keyward-chromium-"));
  try {
    const { stdout } = await run(
      CHROMIUM,
      [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        `--user-data-dir=${profile}`,
        "--window-size=1280,900",
        "--virtual-time-budget=5000",
        ...args,
      ],
      { timeout: 120_000, maxBuffer: 64 * 1024 * 1024 },
    );
    return stdout;
  } finally {
    await rm(profile, { recursive: true, force: true });
  }
}

describe("the docs site", () => {
  let buildOutput = "";
  let buildError: unknown;

  beforeAll(async () => {
    await rm(dist, { recursive: true, force: true });
    try {
      const vitepress = join(root, "node_modules", "vitepress", "bin", "vitepress.js");
      const { stdout, stderr } = await run(process.execPath, [vitepress, "build", "docs"], {
        cwd: root,
        timeout: 240_000,
        maxBuffer: 64 * 1024 * 1024,
        env: { ...process.env, NO_COLOR: "1" },
      });
      buildOutput = stdout + stderr;
    } catch (err) {
      buildError = err;
      const e = err as { stdout?: string; stderr?: string };
      buildOutput = `${e.stdout ?? ""}${e.stderr ?? ""}`;
    }
  }, 300_000);

  it("builds with no dead internal link (ignoreDeadLinks is off)", async () => {
    expect(buildError, buildOutput).toBeUndefined();
    expect(buildOutput).not.toMatch(/dead link/i);
    const config = await readFile(join(root, "docs", ".vitepress", "config.mts"), "utf8");
    expect(config).not.toMatch(/ignoreDeadLinks\s*:/);
    for (const page of ["index.html", "getting-started.html", "install.html", "security.html", "kinds.html", "contributing/index.html"]) {
      expect(existsSync(join(dist, page)), page).toBe(true);
    }
  });

  it("README, CONTRIBUTING, SECURITY, CHANGELOG and the chart README link only to files that exist", async () => {
    const missing: string[] = [];
    let checked = 0;
    for (const file of LINKED_FILES) {
      const text = await readFile(join(root, file), "utf8");
      for (const target of relativeLinks(text)) {
        checked++;
        const path = target.startsWith("/") ? join(root, target) : resolve(root, dirname(file), target);
        if (!existsSync(path)) missing.push(`${file} -> ${target}`);
      }
    }
    expect(missing).toEqual([]);
    expect(checked).toBeGreaterThan(20);
  });

  it("renders the landing page in headless Chromium: the hero is in the DOM, the screenshot is not blank", async () => {
    expect(
      existsSync(CHROMIUM),
      `${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium), as .ci/run does in CI`,
    ).toBe(true);
    expect(existsSync(join(dist, "index.html")), "the site was not built").toBe(true);
    await mkdir(out, { recursive: true });
    const png = join(out, "landing.png");
    await rm(png, { force: true });
    const server = await serveDir(dist);
    try {
      const dom = await chromium(["--dump-dom", server.url]);
      await writeFile(join(out, "landing.html"), dom);
      expect(dom).toContain("VPHero");
      expect(dom).toContain(HERO_TITLE);
      expect(dom).toContain("Get started");
      await chromium([`--screenshot=${png}`, server.url]);
    } finally {
      await server.close();
    }
    const image = decodePng(await readFile(png));
    expect(image.width).toBe(1280);
    expect(image.height).toBe(900);
    // A blank or error page has a handful of values; the hero, its text and buttons have hundreds.
    expect(image.distinctPixels).toBeGreaterThan(200);
    expect(image.dominantShare).toBeLessThan(0.98);
  }, 240_000);
});
