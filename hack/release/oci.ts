// An OCI image layout (oci-layout, index.json, blobs/sha256/…) from the directory of an unpacked
// `docker save`. Docker 25 and later save that layout themselves (index.json and oci-layout beside
// manifest.json): the directory is then kept as it is. Older engines (Debian bookworm's docker.io
// is 20.10) write only the legacy manifest.json: its config is kept byte for byte (the image ID
// stays the config digest) and each layer is gzip-compressed into a blob.
//
//   node hack/release/oci.ts SAVED_DIR OUT_DIR REFERENCE     (REFERENCE: ghcr.io/keyward/keyward:0.1.0)
// Prints the manifest's digest. Pack OUT_DIR with tar to get the archive (hack/release.sh does).
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";

export const MEDIA = {
  index: "application/vnd.oci.image.index.v1+json",
  manifest: "application/vnd.oci.image.manifest.v1+json",
  config: "application/vnd.oci.image.config.v1+json",
  layerGzip: "application/vnd.oci.image.layer.v1.tar+gzip",
} as const;

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
  platform?: { architecture: string; os: string; variant?: string };
}

export interface OciIndex {
  schemaVersion: 2;
  mediaType?: string;
  manifests: Descriptor[];
}

function digestOf(data: Buffer): string {
  return `sha256:${createHash("sha256").update(data).digest("hex")}`;
}

function writeBlob(out: string, data: Buffer): string {
  const digest = digestOf(data);
  const dir = join(out, "blobs", "sha256");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, digest.slice("sha256:".length)), data);
  return digest;
}

/** The tag of a reference (after the last ':' following the last '/'), or "latest". */
export function tagOf(reference: string): string {
  const afterSlash = reference.slice(reference.lastIndexOf("/") + 1);
  const at = afterSlash.indexOf(":");
  return at < 0 ? "latest" : afterSlash.slice(at + 1);
}

/**
 * Writes the OCI layout of the image unpacked from `docker save` in `saved` to `out`, its index
 * naming `reference` (io.containerd.image.name, and the tag as org.opencontainers.image.ref.name);
 * returns the manifest's digest.
 */
export function toOciLayout(saved: string, out: string, reference: string): string {
  if (existsSync(join(saved, "index.json")) && existsSync(join(saved, "oci-layout"))) {
    cpSync(saved, out, { recursive: true });
    const index = JSON.parse(readFileSync(join(out, "index.json"), "utf8")) as OciIndex;
    const manifest = index.manifests[0];
    if (manifest === undefined) throw new Error(`${saved}/index.json lists no manifest`);
    return manifest.digest;
  }
  const saves = JSON.parse(readFileSync(join(saved, "manifest.json"), "utf8")) as { Config: string; Layers: string[] }[];
  if (saves.length !== 1 || saves[0] === undefined) throw new Error(`${saved}/manifest.json: expected one image, found ${saves.length}`);
  const { Config, Layers } = saves[0];
  const configBytes = readFileSync(join(saved, Config));
  const config = JSON.parse(configBytes.toString("utf8")) as {
    architecture: string;
    os: string;
    variant?: string;
    rootfs: { diff_ids: string[] };
  };
  if (config.rootfs.diff_ids.length !== Layers.length)
    throw new Error(`${saved}: ${Layers.length} layers but ${config.rootfs.diff_ids.length} diff_ids`);
  mkdirSync(out, { recursive: true });
  const layers: Descriptor[] = Layers.map((path, i) => {
    const tar = readFileSync(join(saved, path));
    if (digestOf(tar) !== config.rootfs.diff_ids[i])
      throw new Error(`${path}: its digest is not the config's diff_id ${config.rootfs.diff_ids[i]}`);
    const gz = gzipSync(tar, { level: 6 });
    return { mediaType: MEDIA.layerGzip, digest: writeBlob(out, gz), size: gz.length };
  });
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: MEDIA.manifest,
      config: { mediaType: MEDIA.config, digest: writeBlob(out, configBytes), size: configBytes.length },
      layers,
    }),
  );
  const manifestDigest = writeBlob(out, manifest);
  const index: OciIndex = {
    schemaVersion: 2,
    mediaType: MEDIA.index,
    manifests: [
      {
        mediaType: MEDIA.manifest,
        digest: manifestDigest,
        size: manifest.length,
        platform: { architecture: config.architecture, os: config.os, ...(config.variant ? { variant: config.variant } : {}) },
        annotations: { "io.containerd.image.name": reference, "org.opencontainers.image.ref.name": tagOf(reference) },
      },
    ],
  };
  writeFileSync(join(out, "index.json.tmp"), `${JSON.stringify(index)}\n`);
  renameSync(join(out, "index.json.tmp"), join(out, "index.json"));
  writeFileSync(join(out, "oci-layout"), `${JSON.stringify({ imageLayoutVersion: "1.0.0" })}\n`);
  return manifestDigest;
}

if (import.meta.main) {
  const [saved, out, reference] = process.argv.slice(2);
  if (saved === undefined || out === undefined || reference === undefined) {
    process.stderr.write("usage: oci.ts SAVED_DIR OUT_DIR REFERENCE\n");
    process.exit(2);
  }
  process.stdout.write(`${toOciLayout(saved, out, reference)}\n`);
}
