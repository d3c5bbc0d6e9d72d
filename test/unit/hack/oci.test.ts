// hack/release/oci.ts: the OCI image layout of the release's image archive, from what `docker
// save` writes (the legacy layout of engines before 25, or their OCI layout, kept as it is).
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import { MEDIA, tagOf, toOciLayout, type OciIndex } from "../../../hack/release/oci.ts";

const dirs: string[] = [];
const tmp = (): string => {
  const dir = mkdtempSync(join(tmpdir(), "oci-"));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const sha = (data: Buffer): string => `sha256:${createHash("sha256").update(data).digest("hex")}`;

/** A legacy `docker save` directory of one image with two layers. */
function legacySave(): { dir: string; config: Buffer; layers: Buffer[] } {
  const dir = tmp();
  const layers = [Buffer.alloc(10240, 1), Buffer.alloc(20480, 2)];
  const config = Buffer.from(
    JSON.stringify({
      architecture: "arm64",
      os: "linux",
      variant: "v8",
      config: { User: "65532:65532" },
      rootfs: { type: "layers", diff_ids: layers.map(sha) },
    }),
  );
  const id = sha(config).slice("sha256:".length);
  writeFileSync(join(dir, `${id}.json`), config);
  layers.forEach((layer, i) => {
    mkdirSync(join(dir, `l${i}`));
    writeFileSync(join(dir, `l${i}`, "layer.tar"), layer);
  });
  writeFileSync(
    join(dir, "manifest.json"),
    JSON.stringify([{ Config: `${id}.json`, RepoTags: ["ghcr.io/keyward/keyward:1.2.3"], Layers: ["l0/layer.tar", "l1/layer.tar"] }]),
  );
  return { dir, config, layers };
}

describe("toOciLayout", () => {
  it("writes an OCI image layout from a legacy docker save: config kept byte for byte, gzip layers, an index naming the image", () => {
    const { dir, config, layers } = legacySave();
    const out = join(tmp(), "oci");
    const digest = toOciLayout(dir, out, "ghcr.io/keyward/keyward:1.2.3");
    expect(JSON.parse(readFileSync(join(out, "oci-layout"), "utf8"))).toEqual({ imageLayoutVersion: "1.0.0" });
    const index = JSON.parse(readFileSync(join(out, "index.json"), "utf8")) as OciIndex;
    expect(index).toMatchObject({ schemaVersion: 2, mediaType: MEDIA.index });
    expect(index.manifests).toHaveLength(1);
    expect(index.manifests[0]).toMatchObject({
      mediaType: MEDIA.manifest,
      digest,
      platform: { architecture: "arm64", os: "linux", variant: "v8" },
      annotations: { "io.containerd.image.name": "ghcr.io/keyward/keyward:1.2.3", "org.opencontainers.image.ref.name": "1.2.3" },
    });
    // Every blob is named by its digest; the manifest's size is its length.
    const blob = (d: string): Buffer => readFileSync(join(out, "blobs", "sha256", d.slice("sha256:".length)));
    for (const name of readdirSync(join(out, "blobs", "sha256"))) expect(sha(blob(`sha256:${name}`))).toBe(`sha256:${name}`);
    const manifestBytes = blob(digest);
    expect(manifestBytes.length).toBe(index.manifests[0]?.size);
    const manifest = JSON.parse(manifestBytes.toString("utf8")) as {
      config: { digest: string; mediaType: string };
      layers: { digest: string; mediaType: string; size: number }[];
    };
    expect(manifest.config).toMatchObject({ mediaType: MEDIA.config, digest: sha(config) });
    expect(blob(manifest.config.digest).equals(config)).toBe(true);
    expect(manifest.layers.map((l) => l.mediaType)).toEqual([MEDIA.layerGzip, MEDIA.layerGzip]);
    manifest.layers.forEach((l, i) => {
      expect(blob(l.digest).length).toBe(l.size);
      expect(gunzipSync(blob(l.digest)).equals(layers[i] ?? Buffer.alloc(0))).toBe(true);
    });
  });

  it("refuses a layer whose content is not the config's diff_id", () => {
    const { dir } = legacySave();
    writeFileSync(join(dir, "l1", "layer.tar"), Buffer.alloc(20480, 3));
    expect(() => toOciLayout(dir, join(tmp(), "oci"), "ghcr.io/keyward/keyward:1.2.3")).toThrow(
      /l1\/layer.tar: its digest is not the config's diff_id/,
    );
  });

  it("keeps the OCI layout Docker 25 and later save, returning its manifest digest", () => {
    const dir = tmp();
    writeFileSync(join(dir, "oci-layout"), '{"imageLayoutVersion":"1.0.0"}');
    const index = { schemaVersion: 2, manifests: [{ mediaType: MEDIA.manifest, digest: `sha256:${"c".repeat(64)}`, size: 1 }] };
    writeFileSync(join(dir, "index.json"), JSON.stringify(index));
    const out = join(tmp(), "oci");
    expect(toOciLayout(dir, out, "ghcr.io/keyward/keyward:1.2.3")).toBe(`sha256:${"c".repeat(64)}`);
    expect(JSON.parse(readFileSync(join(out, "index.json"), "utf8"))).toEqual(index);
  });

  it("reads the tag of a reference, also with a registry port", () => {
    expect(tagOf("ghcr.io/keyward/keyward:0.3.0")).toBe("0.3.0");
    expect(tagOf("localhost:5000/keyward")).toBe("latest");
  });
});
