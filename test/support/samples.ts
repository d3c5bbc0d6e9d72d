// config/samples, parsed: keyward's objects as users are shown them (v1beta1), and in another
// version through keyward's own conversion, for the tests that apply, convert or check them.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { loadAll } from "js-yaml";
import { convert, type ConvertibleObject } from "../../src/resources/conversion.ts";

export const samplesDir = join(import.meta.dirname, "..", "..", "config", "samples");

export type SampleObject = ConvertibleObject & {
  kind: string;
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
  spec: Record<string, ConvertibleObject[string]>;
};

/** The sample files (kustomization.yaml aside), sorted. */
export function sampleFiles(): string[] {
  return readdirSync(samplesDir)
    .filter((f) => f.endsWith(".yaml") && f !== "kustomization.yaml")
    .sort();
}

/** Every keyward object of the named sample files (every file by default; their Secrets aside), in file order, in `version`. */
export function keywardSamples(version: "v1alpha1" | "v1beta1" = "v1beta1", files: readonly string[] = sampleFiles()): SampleObject[] {
  return files
    .flatMap((f) => loadAll(readFileSync(join(samplesDir, f), "utf8")) as SampleObject[])
    .filter((o) => o.apiVersion.startsWith("keyward.dev/"))
    .map((o) => (o.apiVersion === `keyward.dev/${version}` ? o : convert(o, version)));
}
