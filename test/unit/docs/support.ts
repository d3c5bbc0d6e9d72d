// Helpers of the docs site tests: a PNG decoder (node:zlib, no dependency), the relative links of
// a Markdown file, and a static file server for the built site on a loopback port.
import { readFile, stat } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { extname, join, normalize, sep } from "node:path";
import { inflateSync } from "node:zlib";

export interface Png {
  width: number;
  height: number;
  /** Distinct pixel values (all channels of a pixel together). */
  distinctPixels: number;
  /** The share of pixels holding the most common value, 0..1. */
  dominantShare: number;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
/** Bytes per pixel by PNG colour type, at 8 bits per channel. */
const CHANNELS: Record<number, number> = { 0: 1, 2: 3, 4: 2, 6: 4 };

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/** Undoes a scanline's filter in place; `prev` is the unfiltered line above (zeros for the first). */
function unfilter(type: number, line: Buffer, prev: Buffer, bpp: number): void {
  for (let i = 0; i < line.length; i++) {
    const left = i >= bpp ? line[i - bpp]! : 0;
    const up = prev[i]!;
    const upLeft = i >= bpp ? prev[i - bpp]! : 0;
    const add = type === 0 ? 0 : type === 1 ? left : type === 2 ? up : type === 3 ? (left + up) >> 1 : paeth(left, up, upLeft);
    line[i] = (line[i]! + add) & 0xff;
  }
}

/** Decodes an 8-bit, non-interlaced PNG (what Chromium writes) and counts its pixel values. */
export function decodePng(data: Buffer): Png {
  if (!data.subarray(0, 8).equals(PNG_SIGNATURE)) throw new Error("not a PNG");
  let offset = 8;
  let width = 0;
  let height = 0;
  let bpp = 0;
  const idat: Buffer[] = [];
  while (offset < data.length) {
    const length = data.readUInt32BE(offset);
    const type = data.toString("latin1", offset + 4, offset + 8);
    const body = data.subarray(offset + 8, offset + 8 + length);
    if (type === "IHDR") {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      const bitDepth = body[8]!;
      const colorType = body[9]!;
      const interlace = body[12]!;
      const channels = CHANNELS[colorType];
      if (bitDepth !== 8 || channels === undefined || interlace !== 0) {
        throw new Error(`unsupported PNG: bit depth ${bitDepth}, colour type ${colorType}, interlace ${interlace}`);
      }
      bpp = channels;
    } else if (type === "IDAT") {
      idat.push(body);
    }
    offset += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * bpp;
  let prev = Buffer.alloc(stride);
  const counts = new Map<string, number>();
  for (let y = 0; y < height; y++) {
    const start = y * (stride + 1);
    const line = Buffer.from(raw.subarray(start + 1, start + 1 + stride));
    unfilter(raw[start]!, line, prev, bpp);
    for (let x = 0; x < stride; x += bpp) {
      const key = line.toString("hex", x, x + bpp);
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    prev = line;
  }
  const dominant = Math.max(...counts.values());
  return { width, height, distinctPixels: counts.size, dominantShare: dominant / (width * height) };
}

/**
 * The relative link targets of a Markdown file: inline links and images `[x](target)` and
 * reference definitions `[x]: target`, outside fenced code and inline code; without web, mail
 * and same-page (`#...`) links, and without the `#fragment`.
 */
export function relativeLinks(markdown: string): string[] {
  const prose = markdown
    .replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "")
    .replace(/`[^`\n]*`/g, "");
  const targets: string[] = [];
  for (const m of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) targets.push(m[1]!);
  for (const m of prose.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)) targets.push(m[1]!);
  return targets
    .filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t) && !t.startsWith("#"))
    .map((t) => decodeURI(t.split("#")[0]!))
    .filter((t) => t !== "");
}

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript",
  ".css": "text/css",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".json": "application/json",
  ".woff2": "font/woff2",
};

/** Serves `dir` on 127.0.0.1 (an ephemeral port), as a host of VitePress's clean URLs would. */
export async function serveDir(dir: string): Promise<{ url: string; close: () => Promise<void> }> {
  const resolveFile = async (pathname: string): Promise<string | undefined> => {
    const rel = normalize(decodeURIComponent(pathname)).replace(/^([/\\])+/, "");
    if (rel.split(sep).includes("..")) return undefined;
    for (const candidate of [rel, `${rel}.html`, join(rel, "index.html")]) {
      const file = join(dir, candidate);
      const info = await stat(file).catch(() => undefined);
      if (info?.isFile()) return file;
    }
    return undefined;
  };
  const server: Server = createServer((req, res) => {
    const pathname = new URL(req.url ?? "/", "http://127.0.0.1").pathname;
    void resolveFile(pathname).then(async (file) => {
      if (!file) {
        res.writeHead(404).end("not found");
        return;
      }
      const body = await readFile(file);
      res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" }).end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
