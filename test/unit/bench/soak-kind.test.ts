// The kind site's reading of its node script's output (bench/soak/kind.ts): one block per keyward
// container, its RSS and its /metrics text; a container whose /metrics did not answer is left out.
import { describe, expect, it } from "vitest";
import { parseNodeSamples } from "../../../bench/soak/kind.ts";

describe("parseNodeSamples", () => {
  it("reads each container's pod, pid, RSS and /metrics, and leaves out one whose /metrics gave nothing", () => {
    const text = [
      "=== keyward-abc-1 4242 102400",
      "# HELP workqueue_depth Current depth",
      'workqueue_depth{name="Project"} 3',
      "=== keyward-abc-2 5151 90000",
      "=== keyward-abc-3 6161 81920",
      "nodejs_heap_size_used_bytes 1000",
      "",
    ].join("\n");
    const samples = parseNodeSamples(text);
    expect(samples.map((s) => [s.identity, s.pid, s.rssBytes])).toEqual([
      ["keyward-abc-1", 4242, 102400 * 1024],
      ["keyward-abc-3", 6161, 81920 * 1024],
    ]);
    expect(samples[0]?.metrics).toContain('workqueue_depth{name="Project"} 3');
    expect(samples[1]?.metrics).toBe("nodejs_heap_size_used_bytes 1000\n");
  });

  it("reads nothing from a node with no keyward container", () => {
    expect(parseNodeSamples("")).toEqual([]);
  });
});
