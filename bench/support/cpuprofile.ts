// Summarises a V8 .cpuprofile (node --cpu-prof; the engine bench's ENGINE_BENCH_CPU_PROF) as
// self-time tables: the top functions, and the time by file (keyward's own files by path, each
// dependency as one package, Node's internals by module). Proportions are what a profile says on
// a shared machine; the absolute milliseconds carry the profiler's overhead and the load.
//
//   node bench/support/cpuprofile.ts <file.cpuprofile> [--top 30] [--idle] [--svg out.svg] [--from S] [--to S]
//
// --from/--to: only the samples between S seconds after the profile's start and S (a phase).
// --idle keeps "(idle)" in the shares (left out by default: the tables are shares of CPU used).
// --svg writes a flame graph (inclusive time, root at the bottom) as a standalone SVG.
import { readFileSync, writeFileSync } from "node:fs";
import { basename } from "node:path";
import { pathToFileURL } from "node:url";

export interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
export interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  hitCount?: number;
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

export interface Row {
  name: string;
  ms: number;
  share: number;
}

export interface Summary {
  /** Sampled wall time, ms. */
  totalMs: number;
  /** Time not idle, ms (the denominator of the shares unless idle is kept). */
  busyMs: number;
  idleMs: number;
  byFunction: Row[];
  byFile: Row[];
  byGroup: Row[];
}

const SPECIAL = new Set(["(idle)", "(program)", "(garbage collector)", "(root)"]);

/** A window of the profile, in seconds from its start (a phase: skip the start-up, say). */
export interface Span {
  fromS?: number;
  toS?: number;
}

/** Self time per node id, in ms, from the samples and their time deltas (hitCount when absent). */
export function selfTimes(profile: CpuProfile, span: Span = {}): Map<number, number> {
  const out = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  if (samples.length > 0) {
    const from = (span.fromS ?? 0) * 1e6;
    const to = (span.toS ?? Number.POSITIVE_INFINITY) * 1e6;
    // A sample's time is the gap to the next sample (the delta recorded with it is the gap before it).
    let at = 0;
    for (let i = 0; i < samples.length; i++) {
      at += deltas[i] ?? 0;
      if (at < from || at > to) continue;
      const id = samples[i] as number;
      const next = deltas[i + 1] ?? 0;
      out.set(id, (out.get(id) ?? 0) + Math.max(0, next) / 1000);
    }
    return out;
  }
  const total = (profile.endTime - profile.startTime) / 1000;
  const hits = profile.nodes.reduce((sum, n) => sum + (n.hitCount ?? 0), 0) || 1;
  for (const n of profile.nodes) out.set(n.id, ((n.hitCount ?? 0) / hits) * total);
  return out;
}

/** The file a frame belongs to: keyward's own by path under the repository, a package by name, Node's by module. */
export function fileOf(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (SPECIAL.has(functionName) && url === "") return functionName;
  if (url === "") return "(native/V8)";
  if (url.startsWith("node:")) return url;
  const nm = url.lastIndexOf("/node_modules/");
  if (nm >= 0) {
    const rest = url.slice(nm + "/node_modules/".length).split("/");
    const pkg = rest[0]?.startsWith("@") ? `${rest[0]}/${rest[1] ?? ""}` : (rest[0] ?? "");
    return `npm:${pkg}`;
  }
  const m = /\/(src|dist|bench|test)\/(.*)$/.exec(url);
  return m ? `${m[1]}/${m[2]}` : url;
}

/** The coarse group of a file: keyward's directory (src/kube, src/engine, ...), a package, node:internal, V8. */
export function groupOf(file: string): string {
  if (file.startsWith("npm:")) return file;
  if (file.startsWith("node:")) return "node:internal";
  const m = /^(src|dist)\/([^/]+)\//.exec(file);
  if (m) return `keyward ${m[1]}/${m[2]}`;
  if (/^(src|dist)\//.test(file)) return "keyward (top level)";
  return file;
}

export function summarise(profile: CpuProfile, opts: { top?: number; keepIdle?: boolean; span?: Span } = {}): Summary {
  const self = selfTimes(profile, opts.span);
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const byFunction = new Map<string, number>();
  const byFile = new Map<string, number>();
  const byGroup = new Map<string, number>();
  let totalMs = 0;
  let idleMs = 0;
  for (const [id, ms] of self) {
    const node = nodes.get(id);
    if (!node || ms === 0) continue;
    totalMs += ms;
    const frame = node.callFrame;
    if (frame.functionName === "(idle)") {
      idleMs += ms;
      if (!opts.keepIdle) continue;
    }
    const file = fileOf(frame);
    const fn = SPECIAL.has(frame.functionName)
      ? frame.functionName
      : `${frame.functionName || "(anonymous)"} ${file === "(native/V8)" ? "" : `${file}:${frame.lineNumber + 1}`}`.trim();
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + ms);
    byFile.set(file, (byFile.get(file) ?? 0) + ms);
    const group = groupOf(file);
    byGroup.set(group, (byGroup.get(group) ?? 0) + ms);
  }
  const busyMs = totalMs - idleMs;
  const denominator = opts.keepIdle ? totalMs : busyMs;
  const rows = (m: Map<string, number>, top: number): Row[] =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, ms]) => ({ name, ms, share: denominator === 0 ? 0 : ms / denominator }));
  const top = opts.top ?? 30;
  return { totalMs, busyMs, idleMs, byFunction: rows(byFunction, top), byFile: rows(byFile, top), byGroup: rows(byGroup, top) };
}

export function markdown(title: string, rows: Row[]): string {
  const lines = [`| ${title} | self ms | share |`, "|---|---:|---:|"];
  for (const r of rows) lines.push(`| ${r.name.replaceAll("|", "\\|")} | ${r.ms.toFixed(0)} | ${(100 * r.share).toFixed(1)}% |`);
  return lines.join("\n");
}

// ---------------------------------------------------------------------------------------------
// Flame graph: inclusive time per call path, merged by function, as an SVG.

interface Flame {
  name: string;
  file: string;
  ms: number;
  children: Map<string, Flame>;
}

function flameTree(profile: CpuProfile, span: Span = {}): Flame {
  const self = selfTimes(profile, span);
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const root: Flame = { name: "all", file: "", ms: 0, children: new Map() };
  const rootNode = profile.nodes[0];
  if (!rootNode) return root;
  const walk = (node: ProfileNode, into: Flame): number => {
    let ms = self.get(node.id) ?? 0;
    if (node.callFrame.functionName === "(idle)") return 0;
    for (const childId of node.children ?? []) {
      const child = nodes.get(childId);
      if (!child) continue;
      const name = child.callFrame.functionName || "(anonymous)";
      const file = fileOf(child.callFrame);
      const id = `${name} ${file}`;
      let f = into.children.get(id);
      if (!f) into.children.set(id, (f = { name, file, ms: 0, children: new Map() }));
      const childMs = walk(child, f);
      f.ms += childMs;
      ms += childMs;
    }
    return ms;
  };
  root.ms = walk(rootNode, root);
  return root;
}

const escapeXml = (s: string): string => s.replace(/[<>&"]/g, (c) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", '"': "&quot;" })[c] ?? c);

function colour(file: string): string {
  if (file.startsWith("src/") || file.startsWith("dist/")) return "#e8743b";
  if (file.startsWith("npm:")) return "#f2c14e";
  if (file.startsWith("node:")) return "#7fb3d5";
  return "#c0c0c0";
}

export function flameSvg(profile: CpuProfile, title: string, span: Span = {}, width = 1600): string {
  const root = flameTree(profile, span);
  const rowHeight = 16;
  const rects: string[] = [];
  let depthMax = 0;
  const place = (f: Flame, x: number, depth: number): void => {
    const w = root.ms === 0 ? 0 : (f.ms / root.ms) * width;
    if (w < 0.3) return;
    depthMax = Math.max(depthMax, depth);
    rects.push(
      `<g><title>${escapeXml(`${f.name} ${f.file} — ${f.ms.toFixed(0)} ms (${((100 * f.ms) / (root.ms || 1)).toFixed(1)}%)`)}</title>` +
        `<rect x="${x.toFixed(1)}" y="D${depth}" width="${w.toFixed(1)}" height="${rowHeight - 1}" fill="${colour(f.file)}"/>` +
        (w > 40
          ? `<text x="${(x + 3).toFixed(1)}" y="T${depth}" font-size="11">${escapeXml(f.name.slice(0, Math.floor(w / 7)))}</text>`
          : "") +
        "</g>",
    );
    let cx = x;
    for (const child of [...f.children.values()].sort((a, b) => b.ms - a.ms)) {
      place(child, cx, depth + 1);
      cx += root.ms === 0 ? 0 : (child.ms / root.ms) * width;
    }
  };
  place(root, 0, 0);
  const height = (depthMax + 2) * rowHeight + 20;
  // Root at the bottom: depth d sits at height - (d + 1) * rowHeight.
  const body = rects
    .join("\n")
    .replace(/y="D(\d+)"/g, (_m, d: string) => `y="${height - (Number(d) + 1) * rowHeight}"`)
    .replace(/y="T(\d+)"/g, (_m, d: string) => `y="${height - (Number(d) + 1) * rowHeight + 12}"`);
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="monospace">\n` +
    `<text x="4" y="14" font-size="13">${escapeXml(title)} — CPU, idle left out; hover for times</text>\n${body}\n</svg>\n`
  );
}

// ---------------------------------------------------------------------------------------------

function main(argv: string[]): void {
  const files: string[] = [];
  let top = 30;
  let keepIdle = false;
  let svg: string | undefined;
  const span: Span = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === "--top") top = Number(argv[++i]);
    else if (a === "--idle") keepIdle = true;
    else if (a === "--svg") svg = argv[++i];
    else if (a === "--from") span.fromS = Number(argv[++i]);
    else if (a === "--to") span.toS = Number(argv[++i]);
    else files.push(a);
  }
  if (files.length !== 1) {
    console.error("usage: node bench/support/cpuprofile.ts <file.cpuprofile> [--top N] [--idle] [--svg out.svg] [--from S] [--to S]");
    process.exit(2);
  }
  const file = files[0] as string;
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const s = summarise(profile, { top, keepIdle, span });
  console.log(
    `${basename(file)}: ${(s.totalMs / 1000).toFixed(1)} s sampled, ${(s.busyMs / 1000).toFixed(2)} s busy, ` +
      `${(s.idleMs / 1000).toFixed(1)} s idle; shares of ${keepIdle ? "all sampled time" : "busy time"}\n`,
  );
  console.log(markdown("by group", s.byGroup));
  console.log();
  console.log(markdown("by file", s.byFile));
  console.log();
  console.log(markdown("by function (self)", s.byFunction));
  if (svg !== undefined) {
    writeFileSync(svg, flameSvg(profile, basename(file), span));
    console.log(`\nflame graph: ${svg}`);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) main(process.argv.slice(2));
