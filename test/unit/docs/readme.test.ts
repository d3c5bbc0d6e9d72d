// README.md stays a front page: at most 12 KiB, with the two install commands and the two
// contributor commands (everything else lives on the docs site).
import { readFile, stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "..", "..", "..");
const readme = join(root, "README.md");

describe("README.md", () => {
  it("is at most 12,288 bytes", async () => {
    expect((await stat(readme)).size).toBeLessThanOrEqual(12_288);
  });

  it("keeps the two install commands and the two contributor commands", async () => {
    const text = await readFile(readme, "utf8");
    const { version } = JSON.parse(await readFile(join(root, "package.json"), "utf8")) as { version: string };
    const commands = [
      `docker build -t <registry>/keyward:${version} . && docker push <registry>/keyward:${version}`,
      "helm install keyward charts/keyward -n keyward-system --create-namespace --set image.repository=<registry>/keyward --wait",
      "npm ci && npm run dev",
      "npm ci && npm test",
    ];
    const codeLines = [...text.matchAll(/^```sh\n([\s\S]*?)^```/gm)].flatMap((m) => m[1]!.split("\n")).map((l) => l.trim());
    for (const command of commands) {
      expect(
        codeLines.some((line) => line.startsWith(command)),
        command,
      ).toBe(true);
    }
  });

  it("names the version its image command builds: the one in package.json", async () => {
    const text = await readFile(readme, "utf8");
    const { version } = JSON.parse(await readFile(join(root, "package.json"), "utf8")) as { version: string };
    expect(text).toContain(`<registry>/keyward:${version} .`);
  });

  it("names the published chart at the version in package.json", async () => {
    const text = await readFile(readme, "utf8");
    const { version } = JSON.parse(await readFile(join(root, "package.json"), "utf8")) as { version: string };
    expect(text).toContain(`helm install keyward oci://ghcr.io/keyward/charts/keyward --version ${version} `);
  });

  it("names npm scripts that exist", async () => {
    const text = await readFile(readme, "utf8");
    const { scripts } = JSON.parse(await readFile(join(root, "package.json"), "utf8")) as { scripts: Record<string, string> };
    const used = [...text.matchAll(/npm run ([a-z:-]+)/g)].map((m) => m[1]!);
    expect(used.length).toBeGreaterThan(0);
    for (const name of used) expect(Object.keys(scripts), name).toContain(name);
  });
});
