// Small statistics for benchmark output.
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx] ?? Number.NaN;
}

export const median = (values: readonly number[]): number => percentile(values, 50);

export function fmtMs(ms: number): string {
  return ms < 10 ? `${ms.toFixed(2)} ms` : `${ms.toFixed(0)} ms`;
}

export function table(rows: Array<Record<string, string | number>>): string {
  const first = rows[0];
  if (!first) return "";
  const cols = Object.keys(first);
  const width = cols.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c]).length)));
  const line = (cells: string[]): string => `| ${cells.map((c, i) => c.padEnd(width[i] ?? 0)).join(" | ")} |`;
  return [line(cols), line(width.map((w) => "-".repeat(w))), ...rows.map((r) => line(cols.map((c) => String(r[c]))))].join("\n");
}
