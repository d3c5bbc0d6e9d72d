// Health over time: one sample per keyward process every 10 s (RSS from /proc, the rest from its
// /metrics), a least-squares slope, and an SVG of the curves.

export interface Sample {
  /** Seconds since the soak began. */
  t: number;
  replica: string;
  pid: number;
  rssMb: number;
  /** From /metrics when keyward exports them (prom-client's default metrics), else absent. */
  heapUsedMb?: number;
  handles?: number;
  eventLoopLagP99Ms?: number;
  queueDepth: number;
  series: number;
  /** Resources the apiserver held at the last look (all kinds, all namespaces). */
  liveObjects?: number;
  /** keyward's service requests per second since the previous sample of this process. */
  serviceRps: number;
  /** The apiserver's requests per second (all clients) since the previous sample. */
  apiserverRps: number;
}

/** Sum of every sample of `metric` (any labels) in a Prometheus text. */
export function metricSum(text: string, metric: string): number | undefined {
  let sum: number | undefined;
  for (const line of text.split("\n")) {
    if (!line.startsWith(metric)) continue;
    const rest = line.slice(metric.length);
    if (rest[0] !== " " && rest[0] !== "{") continue;
    const value = Number(line.slice(line.lastIndexOf(" ") + 1));
    if (Number.isFinite(value)) sum = (sum ?? 0) + value;
  }
  return sum;
}

/** Series: the non-comment lines of a /metrics text. */
export const seriesCount = (text: string): number => text.split("\n").filter((l) => l !== "" && !l.startsWith("#")).length;

/** Least-squares slope of y over x (per unit of x); undefined below two points. */
export function slope(points: readonly { x: number; y: number }[]): number | undefined {
  if (points.length < 2) return undefined;
  const n = points.length;
  const mx = points.reduce((s, p) => s + p.x, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  const sxx = points.reduce((s, p) => s + (p.x - mx) ** 2, 0);
  if (sxx === 0) return undefined;
  return points.reduce((s, p) => s + (p.x - mx) * (p.y - my), 0) / sxx;
}

/**
 * The RSS (and heap) slope in MB/hour over the later part of the run (from `fromT` on), fitted on
 * the process that lived longest there: a restarted process starts low, so mixing lifetimes
 * would read a restart as a leak.
 */
export function laterSlopes(
  samples: readonly Sample[],
  fromT: number,
): { pid?: number; points: number; rssMbPerHour?: number; heapMbPerHour?: number; liveObjects?: [number, number] } {
  const later = samples.filter((s) => s.t >= fromT);
  const byPid = new Map<number, Sample[]>();
  for (const s of later) byPid.set(s.pid, [...(byPid.get(s.pid) ?? []), s]);
  const longest = [...byPid.entries()].sort((a, b) => b[1].length - a[1].length)[0];
  if (!longest) return { points: 0 };
  const [pid, own] = longest;
  const perHour = (v: number | undefined): number | undefined => (v === undefined ? undefined : Math.round(v * 3600 * 100) / 100);
  const heap = own.filter((s) => s.heapUsedMb !== undefined).map((s) => ({ x: s.t, y: s.heapUsedMb ?? 0 }));
  const first = own[0]?.liveObjects;
  const last = own[own.length - 1]?.liveObjects;
  return {
    pid,
    points: own.length,
    // What the slope should be read against: the resources at the window's start and end.
    ...(first !== undefined && last !== undefined ? { liveObjects: [first, last] as [number, number] } : {}),
    rssMbPerHour: perHour(slope(own.map((s) => ({ x: s.t, y: s.rssMb })))),
    heapMbPerHour: perHour(slope(heap)),
  };
}

interface Panel {
  title: string;
  value: (s: Sample) => number | undefined;
}

const panels: Panel[] = [
  { title: "RSS (MB)", value: (s) => s.rssMb },
  { title: "heap used (MB)", value: (s) => s.heapUsedMb },
  { title: "live resources", value: (s) => s.liveObjects },
  { title: "work-queue depth", value: (s) => s.queueDepth },
  { title: "metric series", value: (s) => s.series },
  { title: "handles", value: (s) => s.handles },
  { title: "event-loop lag p99 (ms)", value: (s) => s.eventLoopLagP99Ms },
  { title: "service requests/s", value: (s) => s.serviceRps },
  { title: "apiserver requests/s (all clients)", value: (s) => s.apiserverRps },
];

const colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"];

/** One panel per figure, one line per replica, and vertical marks at `events` (kills, restarts). */
export function plotSvg(samples: readonly Sample[], events: readonly { t: number; what: string }[], title: string): string {
  const width = 900;
  const panelHeight = 130;
  const left = 60;
  const right = 20;
  const shown = panels.filter((p) => samples.some((s) => p.value(s) !== undefined));
  const height = 40 + shown.length * (panelHeight + 30);
  const maxT = Math.max(1, ...samples.map((s) => s.t));
  const x = (t: number): number => left + ((width - left - right) * t) / maxT;
  const replicas = [...new Set(samples.map((s) => s.replica))].sort();
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${left}" y="20" font-size="14">${escapeXml(title)}</text>`,
  ];
  shown.forEach((panel, i) => {
    const top = 40 + i * (panelHeight + 30);
    const values = samples.map(panel.value).filter((v): v is number => v !== undefined);
    const max = Math.max(1e-9, ...values) * 1.05;
    const y = (v: number): number => top + panelHeight - (panelHeight * v) / max;
    parts.push(`<text x="${left}" y="${top - 4}">${escapeXml(panel.title)} (max ${round(Math.max(...values))})</text>`);
    parts.push(`<rect x="${left}" y="${top}" width="${width - left - right}" height="${panelHeight}" fill="none" stroke="#ccc"/>`);
    parts.push(
      `<text x="${left - 4}" y="${top + 8}" text-anchor="end">${round(max)}</text><text x="${left - 4}" y="${top + panelHeight}" text-anchor="end">0</text>`,
    );
    for (const e of events)
      parts.push(
        `<line x1="${x(e.t)}" x2="${x(e.t)}" y1="${top}" y2="${top + panelHeight}" stroke="#bbb" stroke-dasharray="2,2"><title>${escapeXml(e.what)}</title></line>`,
      );
    replicas.forEach((replica, r) => {
      // One polyline per process lifetime: a restart starts a new line.
      const byPid = new Map<number, string[]>();
      for (const s of samples.filter((q) => q.replica === replica)) {
        const v = panel.value(s);
        if (v === undefined) continue;
        byPid.set(s.pid, [...(byPid.get(s.pid) ?? []), `${x(s.t).toFixed(1)},${y(v).toFixed(1)}`]);
      }
      for (const points of byPid.values()) {
        parts.push(
          `<polyline fill="none" stroke="${colours[r % colours.length] ?? "black"}" stroke-width="1.2" points="${points.join(" ")}"/>`,
        );
      }
    });
  });
  const legendY = height - 8;
  replicas.forEach((replica, r) =>
    parts.push(`<text x="${left + r * 120}" y="${legendY}" fill="${colours[r % colours.length] ?? "black"}">${escapeXml(replica)}</text>`),
  );
  parts.push(
    `<text x="${width - right}" y="${legendY}" text-anchor="end">time: 0–${Math.round(maxT)} s; dashed: kills and restarts</text>`,
  );
  parts.push("</svg>");
  return parts.join("\n");
}

const round = (v: number): string => (v >= 100 ? v.toFixed(0) : v.toFixed(2));
const escapeXml = (s: string): string => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
