// The .cpuprofile summary of bench/support/cpuprofile.ts: self time from the samples' time
// deltas, grouped by function, file and group, idle left out of the shares, and a time window.
import { describe, expect, it } from "vitest";
import { fileOf, flameSvg, groupOf, summarise, type CpuProfile } from "../../../bench/support/cpuprofile.ts";

const frame = (functionName: string, url = "") => ({ functionName, url, lineNumber: 9, columnNumber: 0 });
// root -> idle; root -> work (keyward) -> parse (zod); root -> gc
const profile: CpuProfile = {
  nodes: [
    { id: 1, callFrame: frame("(root)"), children: [2, 3, 5] },
    { id: 2, callFrame: frame("(idle)") },
    { id: 3, callFrame: frame("work", "file:///repo/dist/engine/managed.js"), children: [4] },
    { id: 4, callFrame: frame("parse", "file:///repo/node_modules/zod/v4/core/schemas.js") },
    { id: 5, callFrame: frame("(garbage collector)") },
  ],
  startTime: 0,
  endTime: 10_000,
  // Each sample's time is the delta that follows it: idle 4 ms, work 1, parse 3, gc 2.
  samples: [2, 3, 4, 5, 2],
  timeDeltas: [0, 4000, 1000, 3000, 2000],
};

describe("cpuprofile summary", () => {
  it("names files and groups", () => {
    expect(fileOf(frame("f", "file:///repo/dist/kube/rest.js"))).toBe("dist/kube/rest.js");
    expect(fileOf(frame("f", "file:///x/node_modules/@pinojs/redact/index.js"))).toBe("npm:@pinojs/redact");
    expect(fileOf(frame("f", "node:internal/http2/core"))).toBe("node:internal/http2/core");
    expect(groupOf("dist/kube/rest.js")).toBe("keyward dist/kube");
    expect(groupOf("node:internal/http2/core")).toBe("node:internal");
  });

  it("takes each sample's time from the delta after it and leaves idle out of the shares", () => {
    const s = summarise(profile);
    expect(s.totalMs).toBe(10);
    expect(s.idleMs).toBe(4);
    expect(s.busyMs).toBe(6);
    expect(s.byFunction.map((r) => [r.name, r.ms, Number(r.share.toFixed(3))])).toEqual([
      ["parse npm:zod:10", 3, 0.5],
      ["(garbage collector)", 2, 0.333],
      ["work dist/engine/managed.js:10", 1, 0.167],
    ]);
    expect(s.byGroup.map((r) => r.name)).toEqual(["npm:zod", "(garbage collector)", "keyward dist/engine"]);
    expect(summarise(profile, { keepIdle: true }).byFunction[0]).toMatchObject({ name: "(idle)", ms: 4 });
  });

  it("cuts a window in seconds from the start", () => {
    // Samples at 0, 4, 5, 8 and 10 ms: from 0.0045 s keeps parse (at 5) and gc (at 8).
    const s = summarise(profile, { span: { fromS: 0.0045 } });
    expect(s.busyMs).toBe(5);
    expect(s.byFunction.map((r) => r.name)).toEqual(["parse npm:zod:10", "(garbage collector)"]);
  });

  it("draws a flame graph with inclusive times", () => {
    const svg = flameSvg(profile, "test");
    expect(svg).toContain("<svg");
    expect(svg).toMatch(/work dist\/engine\/managed\.js — 4 ms/);
  });
});
