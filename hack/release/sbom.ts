// A CycloneDX 1.6 SBOM of keyward's image, read from its root filesystem (`docker export` of the
// image, or any directory laid out the same way):
//   - each Debian package /var/lib/dpkg/status.d/<package> records (the distroless convention),
//     purl pkg:deb/debian/<name>@<version>?arch=…&distro=debian-<VERSION_ID>, with the licences of
//     its copyright file when the image carries it;
//   - Node itself (/usr/local/bin/node; its version is read from the binary, which names its
//     release URL, so an image of another architecture needs no emulator), purl pkg:generic/node;
//   - keyward (/app/package.json) and every npm package under /app/node_modules, nested ones
//     included, purl pkg:npm/<name>@<version>, with the licence its package.json declares.
// Syft would read the same files, but building it from its Go module takes minutes and a large
// module download on every fresh CI machine; what the image holds is three well-defined places.
//
//   node hack/release/sbom.ts ROOTFS --name ghcr.io/keyward/keyward --version 0.1.0 [--digest sha256:…] > sbom.cdx.json
import { createHash, randomUUID } from "node:crypto";
import { existsSync, lstatSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";

export interface SbomOptions {
  /** The image's repository, ghcr.io/keyward/keyward. */
  name: string;
  version: string;
  /** The image's manifest digest, sha256:…, when known. */
  digest?: string;
  /** ISO timestamp; defaults to now. */
  timestamp?: string;
  serialNumber?: string;
}

export interface Component {
  type: "application" | "library" | "operating-system" | "platform";
  "bom-ref": string;
  name: string;
  group?: string;
  version: string;
  purl?: string;
  cpe?: string;
  description?: string;
  licenses?: ({ license: { id: string } | { name: string } } | { expression: string })[];
  hashes?: { alg: "SHA-256"; content: string }[];
  properties?: { name: string; value: string }[];
}

export interface Bom {
  bomFormat: "CycloneDX";
  specVersion: "1.6";
  serialNumber: string;
  version: 1;
  metadata: {
    timestamp: string;
    tools: { components: { type: "application"; name: string; version: string }[] };
    component: (Component & { type: "application" }) | (Omit<Component, "type"> & { type: "container" });
  };
  components: Component[];
}

/** Percent-encoding of a purl segment (purl-spec: everything but unreserved characters). */
function purlEncode(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** The stanzas of a dpkg status file (Field: value, continuation lines folded in). */
export function parseDpkgStatus(text: string): Record<string, string>[] {
  const stanzas: Record<string, string>[] = [];
  for (const block of text.split(/\n\s*\n/)) {
    const fields: Record<string, string> = {};
    let last: string | undefined;
    for (const line of block.split("\n")) {
      if (/^\s/.test(line) && last !== undefined) {
        fields[last] = `${fields[last] ?? ""}\n${line.trim()}`;
        continue;
      }
      const m = /^([A-Za-z0-9-]+):\s?(.*)$/.exec(line);
      if (m?.[1] === undefined) continue;
      last = m[1];
      fields[last] = m[2] ?? "";
    }
    if (fields["Package"] !== undefined) stanzas.push(fields);
  }
  return stanzas;
}

function osRelease(rootfs: string): Record<string, string> {
  for (const path of ["etc/os-release", "usr/lib/os-release"]) {
    const file = join(rootfs, path);
    if (!existsSync(file)) continue;
    const out: Record<string, string> = {};
    for (const line of readFileSync(file, "utf8").split("\n")) {
      const m = /^([A-Z_]+)=(.*)$/.exec(line.trim());
      if (m?.[1] !== undefined) out[m[1]] = (m[2] ?? "").replace(/^"(.*)"$/, "$1");
    }
    return out;
  }
  return {};
}

/**
 * The licences a Debian package's machine-readable copyright file (/usr/share/doc/<package>/copyright,
 * DEP-5) names in its `License:` fields, as names (Debian's short names are not all SPDX ids).
 * None when the image carries no copyright file for it.
 */
export function debLicenses(rootfs: string, pkg: string): NonNullable<Component["licenses"]> {
  const file = join(rootfs, "usr", "share", "doc", pkg, "copyright");
  if (!existsSync(file)) return [];
  const names = new Set<string>();
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const m = /^License:\s*(\S.*)$/.exec(line);
    if (m?.[1] !== undefined) names.add(m[1].trim());
  }
  return [...names].sort().map((name) => ({ license: { name } }));
}

function debComponents(rootfs: string): Component[] {
  const dir = join(rootfs, "var", "lib", "dpkg", "status.d");
  if (!existsSync(dir)) return [];
  const os = osRelease(rootfs);
  const distro = os["ID"] && os["VERSION_ID"] ? `${os["ID"]}-${os["VERSION_ID"]}` : undefined;
  const components: Component[] = [];
  for (const file of readdirSync(dir).sort()) {
    if (file.endsWith(".md5sums")) continue;
    for (const pkg of parseDpkgStatus(readFileSync(join(dir, file), "utf8"))) {
      const name = pkg["Package"] ?? file;
      const version = pkg["Version"] ?? "";
      const arch = pkg["Architecture"];
      const qualifiers = [arch ? `arch=${purlEncode(arch)}` : undefined, distro ? `distro=${purlEncode(distro)}` : undefined].filter(
        Boolean,
      );
      const purl = `pkg:deb/debian/${purlEncode(name)}@${purlEncode(version)}${qualifiers.length ? `?${qualifiers.join("&")}` : ""}`;
      const properties = [{ name: "keyward:status.d", value: `/var/lib/dpkg/status.d/${file}` }];
      if (pkg["Source"]) properties.push({ name: "debian:source", value: pkg["Source"] });
      const licenses = debLicenses(rootfs, name);
      components.push({
        type: "library",
        "bom-ref": purl,
        name,
        version,
        purl,
        ...(pkg["Description"] ? { description: pkg["Description"].split("\n")[0] ?? "" } : {}),
        ...(licenses.length > 0 ? { licenses } : {}),
        properties,
      });
    }
  }
  return components;
}

function nodeComponent(rootfs: string): Component | undefined {
  const file = join(rootfs, "usr", "local", "bin", "node");
  if (!existsSync(file)) return undefined;
  const binary = readFileSync(file);
  // process.release.sourceUrl, compiled into every official build.
  const at = binary.indexOf("https://nodejs.org/download/release/v");
  if (at < 0) throw new Error(`${file}: no Node release URL in the binary: is it an official build?`);
  const version = /^v(\d+\.\d+\.\d+)\//.exec(binary.subarray(at + 36, at + 60).toString("latin1"))?.[1];
  if (version === undefined) throw new Error(`${file}: unreadable Node version`);
  return {
    type: "platform",
    "bom-ref": `pkg:generic/node@${version}`,
    name: "node",
    version,
    purl: `pkg:generic/node@${version}?download_url=${purlEncode(`https://nodejs.org/download/release/v${version}/`)}`,
    cpe: `cpe:2.3:a:nodejs:node.js:${version}:*:*:*:*:*:*:*`,
    description: "Node.js runtime (/usr/local/bin/node)",
    licenses: [{ license: { id: "MIT" } }],
    hashes: [{ alg: "SHA-256", content: createHash("sha256").update(binary).digest("hex") }],
  };
}

interface PackageJson {
  name?: string;
  version?: string;
  description?: string;
  license?: string | { type?: string };
  licenses?: ({ type?: string } | string)[];
}

function licensesOf(pkg: PackageJson): Component["licenses"] {
  const declared: string[] = [];
  if (typeof pkg.license === "string") declared.push(pkg.license);
  else if (pkg.license?.type) declared.push(pkg.license.type);
  for (const l of pkg.licenses ?? []) {
    const type = typeof l === "string" ? l : l.type;
    if (type) declared.push(type);
  }
  return declared.map((l) =>
    /^[A-Za-z0-9.+-]+$/.test(l) ? { license: { id: l } } : / (AND|OR|WITH) |^\(/.test(l) ? { expression: l } : { license: { name: l } },
  );
}

/** Every package directory under `dir` (a node_modules): name and @scope/name, nested node_modules too. */
export function npmPackageDirs(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const entry of readdirSync(dir).sort()) {
    if (entry.startsWith(".")) continue;
    const path = join(dir, entry);
    if (!lstatSync(path).isDirectory()) continue;
    const dirs = entry.startsWith("@")
      ? readdirSync(path)
          .sort()
          .map((e) => join(path, e))
          .filter((p) => lstatSync(p).isDirectory())
      : [path];
    for (const pkg of dirs) {
      if (existsSync(join(pkg, "package.json"))) out.push(pkg);
      out.push(...npmPackageDirs(join(pkg, "node_modules")));
    }
  }
  return out;
}

function npmPurl(name: string, version: string): string {
  const [scope, bare] = name.startsWith("@") ? name.split("/", 2) : [undefined, name];
  return `pkg:npm/${scope ? `${purlEncode(scope)}/` : ""}${purlEncode(bare ?? name)}@${purlEncode(version)}`;
}

function npmComponents(rootfs: string, appDir: string): Component[] {
  const seen = new Map<string, number>();
  const components: Component[] = [];
  for (const dir of npmPackageDirs(join(rootfs, appDir, "node_modules"))) {
    const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as PackageJson;
    if (!pkg.name || !pkg.version) throw new Error(`${dir}/package.json has no name or version`);
    const purl = npmPurl(pkg.name, pkg.version);
    // One component per installed copy: two copies of one version get distinct bom-refs.
    const n = (seen.get(purl) ?? 0) + 1;
    seen.set(purl, n);
    const [group, name] = pkg.name.startsWith("@") ? (pkg.name.split("/", 2) as [string, string]) : [undefined, pkg.name];
    components.push({
      type: "library",
      "bom-ref": n === 1 ? purl : `${purl}#${n}`,
      ...(group ? { group } : {}),
      name,
      version: pkg.version,
      purl,
      ...(pkg.description ? { description: pkg.description } : {}),
      licenses: licensesOf(pkg),
      properties: [{ name: "keyward:path", value: `/${dir.slice(rootfs.length).replace(/^\/+/, "")}` }],
    });
  }
  return components;
}

/** The SBOM of the image whose root filesystem is `rootfs`. */
export function generateSbom(rootfs: string, options: SbomOptions): Bom {
  const appDir = "app";
  const app = JSON.parse(readFileSync(join(rootfs, appDir, "package.json"), "utf8")) as PackageJson;
  const node = nodeComponent(rootfs);
  const os = osRelease(rootfs);
  const components: Component[] = [
    {
      type: "application",
      "bom-ref": npmPurl(app.name ?? "keyward", app.version ?? options.version),
      name: app.name ?? "keyward",
      version: app.version ?? options.version,
      purl: npmPurl(app.name ?? "keyward", app.version ?? options.version),
      licenses: licensesOf(app),
      properties: [{ name: "keyward:path", value: `/${appDir}` }],
    },
    ...(node ? [node] : []),
    ...(os["ID"]
      ? [
          {
            type: "operating-system" as const,
            "bom-ref": `os:${os["ID"]}@${os["VERSION_ID"] ?? ""}`,
            name: os["ID"],
            version: os["VERSION_ID"] ?? "",
            description: os["PRETTY_NAME"] ?? os["ID"],
          },
        ]
      : []),
    ...debComponents(rootfs),
    ...npmComponents(rootfs, appDir),
  ];
  const ref = options.digest ? `${options.name}@${options.digest}` : `${options.name}:${options.version}`;
  const lastSlash = options.name.lastIndexOf("/");
  const containerPurl = options.digest
    ? `pkg:oci/${purlEncode(options.name.slice(lastSlash + 1))}@${purlEncode(options.digest)}?repository_url=${purlEncode(options.name)}&tag=${purlEncode(options.version)}`
    : undefined;
  return {
    bomFormat: "CycloneDX",
    specVersion: "1.6",
    serialNumber: options.serialNumber ?? `urn:uuid:${randomUUID()}`,
    version: 1,
    metadata: {
      timestamp: options.timestamp ?? new Date().toISOString(),
      tools: { components: [{ type: "application", name: "keyward hack/release/sbom.ts", version: options.version }] },
      component: {
        type: "container",
        "bom-ref": ref,
        name: options.name,
        version: options.version,
        ...(containerPurl ? { purl: containerPurl } : {}),
      },
    },
    components,
  };
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { name: { type: "string" }, version: { type: "string" }, digest: { type: "string" }, timestamp: { type: "string" } },
  });
  const [rootfs] = positionals;
  if (rootfs === undefined || !values.name || !values.version) {
    process.stderr.write("usage: sbom.ts ROOTFS --name REPOSITORY --version VERSION [--digest sha256:...] [--timestamp ISO]\n");
    process.exit(2);
  }
  const bom = generateSbom(rootfs, {
    name: values.name,
    version: values.version,
    ...(values.digest ? { digest: values.digest } : {}),
    ...(values.timestamp ? { timestamp: values.timestamp } : {}),
  });
  process.stdout.write(`${JSON.stringify(bom, null, 2)}\n`);
}
