// Chart.yaml's kubeVersion is the range `npm run test:matrix` covers, and the helm the tests build
// (hack/tools/ensure-helm.sh) knows a Kubernetes version new enough to render the chart without a
// cluster, as a released helm does.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { load } from "js-yaml";
import { describe, expect, it } from "vitest";
import { supportedMinors } from "../../controlplane/versions.ts";
import { chartDir, helm, templateArgs } from "./helm.ts";

const chart = load(readFileSync(join(chartDir, "Chart.yaml"), "utf8")) as { kubeVersion?: string };

describe("the chart's kubeVersion", () => {
  it("starts at the oldest minor the matrix tests", () => {
    expect(chart.kubeVersion).toBe(`>=${supportedMinors()[0]?.slice(1) ?? ""}.0-0`);
  });

  it.each(["1.32.0", "v1.32.13", "v1.37.2", "v1.32.4-eks-1234567"])("renders for Kubernetes %s", async (kube) => {
    const result = await helm([...templateArgs({}), "--kube-version", kube]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("kind: Deployment");
  });

  it("is refused on Kubernetes 1.31 with helm's message", async () => {
    const result = await helm([...templateArgs({}), "--kube-version", "v1.31.9"]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("chart requires kubeVersion: >=1.32.0-0 which is incompatible with Kubernetes v1.31.9");
  });

  it("renders and lints without --kube-version: the built helm assumes its client-go's Kubernetes, not 1.20", async () => {
    const rendered = await helm(templateArgs({}));
    expect(rendered.stderr).toBe("");
    expect(rendered.code).toBe(0);
    const lint = await helm(["lint", chartDir]);
    expect(lint.code).toBe(0);
    expect(lint.stdout).toContain("0 chart(s) failed");
  });
});
