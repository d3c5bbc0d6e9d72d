// The SBOM of the image (hack/release/sbom.ts): every Debian package status.d records and every npm
// package the image's node_modules holds, with purls (and licences for npm). The image's
// node_modules is what `npm ci --omit=dev` installs: the non-dev packages of package-lock.json,
// laid out here from the repository's node_modules as the Dockerfile's prod-deps stage lays them out.
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateSbom, npmPackageDirs, parseDpkgStatus, type Bom } from "../../../hack/release/sbom.ts";

const repoRoot = join(import.meta.dirname, "..", "..", "..");

interface Lock {
  packages: Record<string, { version?: string; dev?: boolean; license?: string; link?: boolean }>;
}

/** name@version of every package `npm ci --omit=dev` installs, from package-lock.json. */
function productionPackages(): { path: string; name: string; version: string }[] {
  const lock = JSON.parse(readFileSync(join(repoRoot, "package-lock.json"), "utf8")) as Lock;
  return Object.entries(lock.packages)
    .filter(([path, entry]) => path.startsWith("node_modules/") && entry.dev !== true && entry.link !== true)
    .map(([path, entry]) => ({
      path,
      name: path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length),
      version: entry.version ?? "",
    }));
}

const debs: Record<string, string> = {
  libc6:
    "Package: libc6\nStatus: install ok installed\nArchitecture: amd64\nMulti-Arch: same\nSource: glibc\nVersion: 2.36-9+deb12u14\nDescription: GNU C Library: Shared libraries\n Contains the standard libraries.\n",
  "libgcc-s1": "Package: libgcc-s1\nStatus: install ok installed\nArchitecture: amd64\nSource: gcc-12\nVersion: 12.2.0-14+deb12u1\n",
  "libstdc++6": "Package: libstdc++6\nStatus: install ok installed\nArchitecture: amd64\nSource: gcc-12\nVersion: 12.2.0-14+deb12u1\n",
  "ca-certificates": "Package: ca-certificates\nStatus: install ok installed\nArchitecture: all\nVersion: 20230311+deb12u1\n",
};

let rootfs: string;
let bom: Bom;

beforeAll(() => {
  rootfs = mkdtempSync(join(tmpdir(), "sbom-rootfs-"));
  const status = join(rootfs, "var", "lib", "dpkg", "status.d");
  mkdirSync(status, { recursive: true });
  for (const [name, stanza] of Object.entries(debs)) {
    writeFileSync(join(status, name), stanza);
    writeFileSync(join(status, `${name}.md5sums`), "d41d8cd98f00b204e9800998ecf8427e  usr/lib/x\n");
  }
  mkdirSync(join(rootfs, "usr", "share", "doc", "libc6"), { recursive: true });
  writeFileSync(
    join(rootfs, "usr", "share", "doc", "libc6", "copyright"),
    "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\nFiles: *\nLicense: LGPL-2.1+\n\nFiles: debian/*\nLicense: GPL-2+\n\nLicense: LGPL-2.1+\n text\n",
  );
  mkdirSync(join(rootfs, "usr", "lib"), { recursive: true });
  writeFileSync(join(rootfs, "usr", "lib", "os-release"), 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_ID="12"\n');
  mkdirSync(join(rootfs, "etc"), { recursive: true });
  writeFileSync(join(rootfs, "etc", "os-release"), readFileSync(join(rootfs, "usr", "lib", "os-release")));
  mkdirSync(join(rootfs, "usr", "local", "bin"), { recursive: true });
  // An official Node binary names its release URL (process.release.sourceUrl).
  writeFileSync(
    join(rootfs, "usr", "local", "bin", "node"),
    Buffer.concat([
      Buffer.alloc(4096, 7),
      Buffer.from("https://nodejs.org/download/release/v24.21.0/node-v24.21.0.tar.gz\0"),
      Buffer.alloc(64),
    ]),
  );
  const app = join(rootfs, "app");
  mkdirSync(app, { recursive: true });
  cpSync(join(repoRoot, "package.json"), join(app, "package.json"));
  // The production packages' package.json files, where npm ci --omit=dev puts them.
  for (const pkg of productionPackages()) {
    const target = join(app, pkg.path, "package.json");
    mkdirSync(dirname(target), { recursive: true });
    cpSync(join(repoRoot, pkg.path, "package.json"), target);
    // A subpath package.json (exports shims such as zod's v4/package.json) is not a package.
    if (pkg.name === "zod") {
      mkdirSync(join(app, pkg.path, "v4"), { recursive: true });
      writeFileSync(join(app, pkg.path, "v4", "package.json"), '{"type":"module"}');
    }
  }
  bom = generateSbom(rootfs, {
    name: "ghcr.io/keyward/keyward",
    version: "0.1.0",
    digest: `sha256:${"ab".repeat(32)}`,
    timestamp: "2026-01-01T00:00:00Z",
  });
});

afterAll(() => rmSync(rootfs, { recursive: true, force: true }));

describe("the image's SBOM (hack/release/sbom.ts)", () => {
  it("is CycloneDX 1.6 JSON describing the image by repository, version and digest", () => {
    expect(bom).toMatchObject({ bomFormat: "CycloneDX", specVersion: "1.6", version: 1 });
    expect(bom.serialNumber).toMatch(/^urn:uuid:[0-9a-f-]{36}$/);
    expect(bom.metadata.component).toMatchObject({
      type: "container",
      name: "ghcr.io/keyward/keyward",
      version: "0.1.0",
      purl: `pkg:oci/keyward@sha256%3A${"ab".repeat(32)}?repository_url=ghcr.io%2Fkeyward%2Fkeyward&tag=0.1.0`,
    });
    const refs = bom.components.map((c) => c["bom-ref"]);
    expect(new Set(refs).size).toBe(refs.length);
  });

  it("lists every npm package of the image's node_modules, with its purl and licence", () => {
    const expected = productionPackages();
    expect(expected.length).toBeGreaterThan(10);
    const npm = bom.components.filter((c) => c.purl?.startsWith("pkg:npm/") && c.type === "library");
    expect(npm.map((c) => `${c.group ? `${c.group}/` : ""}${c.name}@${c.version}`).sort()).toEqual(
      expected.map((p) => `${p.name}@${p.version}`).sort(),
    );
    // Also what a walk of the directory finds: no package of node_modules is left out.
    expect(npm).toHaveLength(npmPackageDirs(join(rootfs, "app", "node_modules")).length);
    for (const c of npm) {
      const name = `${c.group ? `${c.group}/` : ""}${c.name}`;
      const encoded = name.startsWith("@") ? `%40${name.slice(1)}` : name;
      expect(c.purl).toBe(`pkg:npm/${encoded}@${c.version}`);
      expect(c.licenses?.length, name).toBeGreaterThan(0);
    }
    expect(npm.find((c) => c.name === "zod")?.licenses).toEqual([{ license: { id: "MIT" } }]);
  });

  it("lists every Debian package of status.d with a pkg:deb purl (version percent-encoded, arch and distro)", () => {
    const deb = bom.components.filter((c) => c.purl?.startsWith("pkg:deb/"));
    expect(deb.map((c) => c.name).sort()).toEqual(Object.keys(debs).sort());
    expect(deb.find((c) => c.name === "libc6")?.purl).toBe("pkg:deb/debian/libc6@2.36-9%2Bdeb12u14?arch=amd64&distro=debian-12");
    expect(deb.find((c) => c.name === "libstdc++6")?.purl).toBe(
      "pkg:deb/debian/libstdc%2B%2B6@12.2.0-14%2Bdeb12u1?arch=amd64&distro=debian-12",
    );
    expect(deb.find((c) => c.name === "libc6")?.description).toBe("GNU C Library: Shared libraries");
    // The licences of the copyright file, where the image carries it (none for the others here).
    expect(deb.find((c) => c.name === "libc6")?.licenses).toEqual([{ license: { name: "GPL-2+" } }, { license: { name: "LGPL-2.1+" } }]);
    expect(deb.find((c) => c.name === "libgcc-s1")?.licenses).toBeUndefined();
  });

  it("lists keyward itself and the Node runtime with its version read from the binary", () => {
    const app = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { version: string; license: string };
    expect(bom.components.find((c) => c.type === "application")).toMatchObject({
      name: "keyward",
      version: app.version,
      licenses: [{ license: { id: app.license } }],
    });
    expect(bom.components.find((c) => c.name === "node")).toMatchObject({
      type: "platform",
      version: "24.21.0",
      cpe: "cpe:2.3:a:nodejs:node.js:24.21.0:*:*:*:*:*:*:*",
      licenses: [{ license: { id: "MIT" } }],
    });
    expect(bom.components.find((c) => c.type === "operating-system")).toMatchObject({ name: "debian", version: "12" });
  });

  it("parses dpkg stanzas with continuation lines", () => {
    expect(parseDpkgStatus("Package: a\nDescription: one\n two\n\nPackage: b\nVersion: 1\n")).toEqual([
      { Package: "a", Description: "one\ntwo" },
      { Package: "b", Version: "1" },
    ]);
  });
});
