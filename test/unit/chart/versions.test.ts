// One version for everything a release ships: package.json's. The chart (version, appVersion),
// the kustomize overlay's image and the chart's default image must name it and the same
// repository, or an install from one path runs another build than from the other.
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { load } from "js-yaml";
import { describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "..", "..", "..");
const read = (path: string): string => readFileSync(join(root, path), "utf8");

const { version } = JSON.parse(read("package.json")) as { version: string };
const chart = load(read("charts/keyward/Chart.yaml")) as { version: string; appVersion: string };
const values = load(read("charts/keyward/values.yaml")) as { image: { repository: string; tag: string } };
const kustomization = load(read("config/manager/kustomization.yaml")) as {
  images: { name: string; newName: string; newTag: string }[];
};

describe("the version a release ships", () => {
  it("is package.json's in Chart.yaml (version and appVersion)", () => {
    expect(chart.version).toBe(version);
    expect(chart.appVersion).toBe(version);
  });

  it("is package.json's in the kustomize overlay, with the chart's default repository", () => {
    const image = kustomization.images.find((i) => i.name === "keyward");
    expect(image).toEqual({ name: "keyward", newName: values.image.repository, newTag: version });
  });

  it("is the chart's appVersion for the default image tag (no tag pinned in values.yaml)", () => {
    expect(values.image.tag).toBe("");
    expect(values.image.repository).toMatch(/^[a-z0-9.-]+\.[a-z]+\/[a-z0-9/_-]+$/);
  });

  it("is not yet in CHANGELOG.md as a released section (it is the Unreleased one)", () => {
    const changelog = read("CHANGELOG.md");
    expect(changelog).toMatch(new RegExp(`^## \\[Unreleased\\][^\\n]*\\n+To be released as ${version.replace(/\./g, "\\.")}\\b`, "m"));
    expect(changelog).not.toContain(`## [${version}]`);
  });
});
