// The helpers the docs site test relies on: the PNG decoder tells a blank screenshot from a
// drawn one (through every scanline filter), and the link scanner finds relative links only.
import { deflateSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { decodePng, relativeLinks } from "./support.ts";

function chunk(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(body.length, 0);
  head.write(type, 4, "latin1");
  return Buffer.concat([head, body, Buffer.alloc(4)]); // the CRC is not checked
}

/** An RGB PNG of `pixel(x, y)`, each scanline filtered with `filter(y)` (0 None … 4 Paeth). */
function encodePng(width: number, height: number, pixel: (x: number, y: number) => number[], filter: (y: number) => number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8;
  ihdr[9] = 2;
  const bpp = 3;
  const rows: Buffer[] = [];
  let prev = Buffer.alloc(width * bpp);
  for (let y = 0; y < height; y++) {
    const line = Buffer.from(Array.from({ length: width }, (_, x) => pixel(x, y)).flat());
    const type = filter(y);
    const out = Buffer.alloc(line.length);
    for (let i = 0; i < line.length; i++) {
      const a = i >= bpp ? line[i - bpp]! : 0;
      const b = prev[i]!;
      const c = i >= bpp ? prev[i - bpp]! : 0;
      const p = a + b - c;
      const predictor =
        type === 0 ? 0 : type === 1 ? a : type === 2 ? b : type === 3 ? (a + b) >> 1 : Math.abs(p - a) <= Math.abs(p - b) && Math.abs(p - a) <= Math.abs(p - c) ? a : Math.abs(p - b) <= Math.abs(p - c) ? b : c;
      out[i] = (line[i]! - predictor) & 0xff;
    }
    rows.push(Buffer.from([type]), out);
    prev = line;
  }
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([signature, chunk("IHDR", ihdr), chunk("IDAT", deflateSync(Buffer.concat(rows))), chunk("IEND", Buffer.alloc(0))]);
}

describe("decodePng", () => {
  it("finds one pixel value in a blank image", () => {
    const png = decodePng(encodePng(40, 30, () => [255, 255, 255], (y) => y % 5));
    expect(png).toEqual({ width: 40, height: 30, distinctPixels: 1, dominantShare: 1 });
  });

  it("counts every value of a drawn image, through all five filters", () => {
    const png = decodePng(encodePng(32, 20, (x, y) => [x * 8, y * 12, (x * y) % 256], (y) => y % 5));
    expect(png.distinctPixels).toBe(32 * 20);
    expect(png.dominantShare).toBeCloseTo(1 / (32 * 20));
  });

  it("refuses what is not a PNG", () => {
    expect(() => decodePng(Buffer.from("<html></html>"))).toThrow(/not a PNG/);
  });
});

describe("relativeLinks", () => {
  it("returns relative targets without fragments, and skips web links, anchors and code", () => {
    const md = [
      "See [the docs](docs/index.md#top), ![logo](img/logo.png \"Logo\") and [site](https://example.com).",
      "[same page](#install) and `[not a link](nope.md)`",
      "```sh",
      "[also not](inside-fence.md)",
      "```",
      "[ref]: ../LICENSE",
      "[mail](mailto:security@example.com)",
    ].join("\n");
    expect(relativeLinks(md)).toEqual(["docs/index.md", "img/logo.png", "../LICENSE"]);
  });
});
