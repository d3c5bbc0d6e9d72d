// A V8 heap snapshot (.heapsnapshot, as --heapsnapshot-signal writes it) summarised: self size by
// constructor, and the objects that retain the most (dominator tree, weak edges left out), each
// named by the path that holds it (its dominators' edge names), e.g. `(context).cache` — what
// owns the memory. Run on a file: `node --max-old-space-size=4096 bench/support/heapsnapshot.ts F`;
// `… heapsnapshot.ts --diff A B`: what grew from A to B (a pair taken in one process, minutes
// apart), by constructor and by owner.

export interface Snapshot {
  snapshot: {
    meta: { node_fields: string[]; node_types: [string[], ...unknown[]]; edge_fields: string[]; edge_types: [string[], ...unknown[]] };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

export interface HeapSummary {
  totalBytes: number;
  nodes: number;
  byConstructor: { name: string; bytes: number; count: number }[];
  owners: { name: string; bytes: number }[];
  /** Strings held more than once, by the bytes of their copies beyond the first. */
  duplicateStrings: { value: string; copies: number; extraBytes: number }[];
}

export function summarise(s: Snapshot, ownersShown = 20): HeapSummary {
  const meta = s.snapshot.meta;
  const nf = meta.node_fields.length;
  const ef = meta.edge_fields.length;
  const nType = meta.node_fields.indexOf("type");
  const nName = meta.node_fields.indexOf("name");
  const nSize = meta.node_fields.indexOf("self_size");
  const nEdges = meta.node_fields.indexOf("edge_count");
  const eType = meta.edge_fields.indexOf("type");
  const eName = meta.edge_fields.indexOf("name_or_index");
  const eTo = meta.edge_fields.indexOf("to_node");
  const nodeTypes = meta.node_types[0];
  const edgeTypes = meta.edge_types[0];
  const weak = edgeTypes.indexOf("weak");
  const count = s.nodes.length / nf;
  const firstEdge = new Uint32Array(count + 1);
  for (let i = 0; i < count; i++) firstEdge[i + 1] = (firstEdge[i] ?? 0) + (s.nodes[i * nf + nEdges] ?? 0);
  const typeOf = (i: number): string => nodeTypes[s.nodes[i * nf + nType] ?? 0] ?? "?";
  const nameOf = (i: number): string => s.strings[s.nodes[i * nf + nName] ?? 0] ?? "?";
  const sizeOf = (i: number): number => s.nodes[i * nf + nSize] ?? 0;
  const groupOf = (i: number): string => {
    const t = typeOf(i);
    return t === "object" || t === "native" ? nameOf(i) : `(${t})`;
  };

  const groups = new Map<string, { bytes: number; count: number }>();
  let totalBytes = 0;
  for (let i = 0; i < count; i++) {
    const g = groupOf(i);
    const e = groups.get(g) ?? { bytes: 0, count: 0 };
    e.bytes += sizeOf(i);
    e.count += 1;
    groups.set(g, e);
    totalBytes += sizeOf(i);
  }
  const byConstructor = [...groups.entries()].map(([name, v]) => ({ name, ...v })).sort((a, b) => b.bytes - a.bytes);

  // Dominators (Cooper, Harvey, Kennedy), over strong edges from the root (node 0).
  const post = new Int32Array(count).fill(-1);
  const order: number[] = [];
  const stack: number[] = [0];
  const cursor = new Uint32Array(count);
  const seen = new Uint8Array(count);
  seen[0] = 1;
  while (stack.length > 0) {
    const v = stack[stack.length - 1] ?? 0;
    const e = (firstEdge[v] ?? 0) + (cursor[v] ?? 0);
    if (e < (firstEdge[v + 1] ?? 0)) {
      cursor[v] = (cursor[v] ?? 0) + 1;
      if (s.edges[e * ef + eType] === weak) continue;
      const w = (s.edges[e * ef + eTo] ?? 0) / nf;
      if (!seen[w]) {
        seen[w] = 1;
        stack.push(w);
      }
    } else {
      stack.pop();
      post[v] = order.length;
      order.push(v);
    }
  }
  const predStart = new Uint32Array(count + 1);
  for (let v = 0; v < count; v++) {
    if (!seen[v]) continue;
    for (let e = firstEdge[v] ?? 0; e < (firstEdge[v + 1] ?? 0); e++) {
      if (s.edges[e * ef + eType] === weak) continue;
      const w = (s.edges[e * ef + eTo] ?? 0) / nf;
      predStart[w + 1] = (predStart[w + 1] ?? 0) + 1;
    }
  }
  for (let i = 0; i < count; i++) predStart[i + 1] = (predStart[i + 1] ?? 0) + (predStart[i] ?? 0);
  const preds = new Uint32Array(predStart[count] ?? 0);
  const fill = predStart.slice();
  for (let v = 0; v < count; v++) {
    if (!seen[v]) continue;
    for (let e = firstEdge[v] ?? 0; e < (firstEdge[v + 1] ?? 0); e++) {
      if (s.edges[e * ef + eType] === weak) continue;
      const w = (s.edges[e * ef + eTo] ?? 0) / nf;
      const at = fill[w] ?? 0;
      preds[at] = v;
      fill[w] = at + 1;
    }
  }
  const idom = new Int32Array(count).fill(-1);
  idom[0] = 0;
  const intersect = (a: number, b: number): number => {
    while (a !== b) {
      while ((post[a] ?? 0) < (post[b] ?? 0)) a = idom[a] ?? 0;
      while ((post[b] ?? 0) < (post[a] ?? 0)) b = idom[b] ?? 0;
    }
    return a;
  };
  for (let changed = true; changed;) {
    changed = false;
    for (let k = order.length - 2; k >= 0; k--) {
      const v = order[k] ?? 0;
      let d = -1;
      for (let p = predStart[v] ?? 0; p < (predStart[v + 1] ?? 0); p++) {
        const u = preds[p] ?? 0;
        if ((idom[u] ?? -1) === -1) continue;
        d = d === -1 ? u : intersect(u, d);
      }
      if (d !== -1 && idom[v] !== d) {
        idom[v] = d;
        changed = true;
      }
    }
  }
  // Children before parents: post order.
  const retained = new Float64Array(count);
  for (const v of order) {
    retained[v] = (retained[v] ?? 0) + sizeOf(v);
    const d = idom[v] ?? -1;
    if (v !== 0 && d >= 0) retained[d] = (retained[d] ?? 0) + (retained[v] ?? 0);
  }

  // The edge name by which the dominator holds v (the first strong one, else any).
  const edgeName = (from: number, to: number): string => {
    for (let e = firstEdge[from] ?? 0; e < (firstEdge[from + 1] ?? 0); e++) {
      if ((s.edges[e * ef + eTo] ?? 0) / nf !== to) continue;
      const t = edgeTypes[s.edges[e * ef + eType] ?? 0];
      const n = s.edges[e * ef + eName] ?? 0;
      return t === "element" || t === "hidden" ? `[${n}]` : (s.strings[n] ?? "?");
    }
    return "?";
  };
  const pathOf = (v: number): string => {
    const parts: string[] = [];
    for (let x = v, depth = 0; x !== 0 && depth < 4; depth++) {
      const d = idom[x] ?? 0;
      parts.unshift(edgeName(d, x));
      if (typeOf(d) !== "hidden" && typeOf(d) !== "array" && groupOf(d) !== "system / Context" && nameOf(d) !== "") {
        parts.unshift(groupOf(d));
        break;
      }
      x = d;
    }
    return `${parts.join(".")} → ${groupOf(v)}`;
  };
  // The biggest retainers that are Maps, Sets, arrays or plain objects: the stores.
  const candidates: number[] = [];
  for (let v = 0; v < count; v++) {
    if (typeOf(v) !== "object") continue;
    const n = nameOf(v);
    if ((n === "Map" || n === "Set" || n === "Array" || n === "Object" || n === "WeakMap") && (retained[v] ?? 0) > 256 * 1024)
      candidates.push(v);
  }
  candidates.sort((a, b) => (retained[b] ?? 0) - (retained[a] ?? 0));
  const owners = candidates.slice(0, ownersShown).map((v) => ({ name: pathOf(v), bytes: retained[v] ?? 0 }));
  const strings = new Map<string, { copies: number; bytes: number }>();
  for (let v = 0; v < count; v++) {
    if (typeOf(v) !== "string") continue;
    const value = nameOf(v);
    const e = strings.get(value) ?? { copies: 0, bytes: 0 };
    e.copies += 1;
    e.bytes += sizeOf(v);
    strings.set(value, e);
  }
  const duplicateStrings = [...strings.entries()]
    .filter(([, e]) => e.copies > 1)
    .map(([value, e]) => ({ value: value.slice(0, 60), copies: e.copies, extraBytes: e.bytes - e.bytes / e.copies }))
    .sort((a, b) => b.extraBytes - a.extraBytes)
    .slice(0, 25);
  return { totalBytes, nodes: count, byConstructor, owners, duplicateStrings };
}

/** What grew from `a` to `b`: the constructors and owners whose bytes changed most, largest growth first. */
export function heapGrowth(
  a: HeapSummary,
  b: HeapSummary,
  shown = 25,
): { totalBytes: number; byConstructor: { name: string; bytes: number; count: number }[]; owners: { name: string; bytes: number }[] } {
  const delta = <T extends { name: string; bytes: number }>(
    before: T[],
    after: T[],
    extra: (x: T | undefined, y: T | undefined) => object,
  ) => {
    const names = new Set([...before.map((x) => x.name), ...after.map((y) => y.name)]);
    const byName = (list: T[], name: string): T | undefined => list.find((x) => x.name === name);
    return [...names]
      .map((name) => {
        const x = byName(before, name);
        const y = byName(after, name);
        return { name, bytes: (y?.bytes ?? 0) - (x?.bytes ?? 0), ...extra(x, y) };
      })
      .sort((p, q) => Math.abs(q.bytes) - Math.abs(p.bytes))
      .slice(0, shown);
  };
  return {
    totalBytes: b.totalBytes - a.totalBytes,
    byConstructor: delta(a.byConstructor, b.byConstructor, (x, y) => ({ count: (y?.count ?? 0) - (x?.count ?? 0) })) as {
      name: string;
      bytes: number;
      count: number;
    }[],
    owners: delta(a.owners, b.owners, () => ({})),
  };
}

if (import.meta.main && process.argv[2] === "--diff") {
  const { readFileSync } = await import("node:fs");
  const [fileA, fileB] = process.argv.slice(3);
  if (!fileA || !fileB) throw new Error("--diff A B: two .heapsnapshot files");
  const read = (f: string): HeapSummary => summarise(JSON.parse(readFileSync(f, "utf8")) as Snapshot, 60);
  const g = heapGrowth(read(fileA), read(fileB));
  const mb = (b: number): string => `${b >= 0 ? "+" : ""}${(b / 2 ** 20).toFixed(2)}`;
  console.log(`${fileA} → ${fileB}: ${mb(g.totalBytes)} MB`);
  for (const c of g.byConstructor) console.log(`  ${c.name.padEnd(44)} ${mb(c.bytes).padStart(8)} MB ${String(c.count).padStart(9)}`);
  console.log("retained by owner:");
  for (const o of g.owners) console.log(`  ${mb(o.bytes).padStart(8)} MB  ${o.name}`);
} else if (import.meta.main) {
  const { readFileSync } = await import("node:fs");
  for (const file of process.argv.slice(2)) {
    const h = summarise(JSON.parse(readFileSync(file, "utf8")) as Snapshot, 30);
    const mb = (b: number): string => (b / 2 ** 20).toFixed(2);
    console.log(`${file}: ${mb(h.totalBytes)} MB in ${h.nodes} objects`);
    for (const c of h.byConstructor.slice(0, 25))
      console.log(`  ${c.name.padEnd(44)} ${mb(c.bytes).padStart(8)} MB ${String(c.count).padStart(9)}`);
    console.log("retained:");
    for (const o of h.owners) console.log(`  ${mb(o.bytes).padStart(8)} MB  ${o.name}`);
    console.log("duplicated strings (bytes beyond the first copy):");
    for (const d of h.duplicateStrings)
      console.log(`  ${mb(d.extraBytes).padStart(8)} MB ${String(d.copies).padStart(7)}×  ${JSON.stringify(d.value)}`);
  }
}
