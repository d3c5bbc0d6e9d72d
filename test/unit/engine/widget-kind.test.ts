// The test-only Widget kind (test/support/widget) as the generator and the registry see it: its
// descriptor yields a structural CRD carrying its CEL rule, its reasons agree with every reason
// keyward registers, and it stays out of the registry, so nothing derived from it changes.
import { describe, expect, it } from "vitest";
import { crdFromSources } from "../../../src/crd/crd.ts";
import { renderCrdFiles } from "../../../src/crd/files.ts";
import { kinds, reasonRegistry } from "../../../src/resources/registry.ts";
import { crdSource, specSchema, widgetKind } from "../../support/widget/kind.ts";
import { WidgetStore } from "../../support/widget/store.ts";

const widget = widgetKind(new WidgetStore());

describe("the Widget test kind", () => {
  it("generates a structural CRD in its own group, with its CEL rule and printer columns", () => {
    const crd = crdFromSources(widget.crd);
    expect(crd.metadata.name).toBe("widgets.test.keyward.dev");
    const [version] = crd.spec.versions;
    const spec = version?.schema.openAPIV3Schema.properties?.["spec"];
    expect(spec?.required).toEqual(["size", "color"]);
    expect(spec?.["x-kubernetes-validations"]?.map((r) => r.message)).toEqual([crdSource.specValidations?.[0]?.message]);
    expect(version?.additionalPrinterColumns?.map((c) => c.name)).toEqual(["Color", "Size", "Widget-ID", "Ready", "Synced", "Age"]);
  });

  it("has a spec the CRD admits but its schema refuses (the engine's InvalidSpec)", () => {
    const spec = crdFromSources(widget.crd).spec.versions[0]?.schema.openAPIV3Schema.properties?.["spec"];
    expect(spec?.properties?.["size"]).toMatchObject({ minimum: 1, maximum: 10 });
    expect(spec?.properties?.["color"]?.enum).toContain("gold");
    expect(specSchema.safeParse({ size: 5, color: "gold" }).success).toBe(false);
    expect(specSchema.safeParse({ size: 3, color: "gold" }).success).toBe(true);
  });

  it("declares reasons that mean what the same names mean everywhere else", () => {
    const registry = reasonRegistry([...kinds, widget]);
    expect(registry.get("Painting")).toMatchObject({ means: "progress", kinds: ["Widget"] });
    expect(registry.get("WidgetMissing")?.means).toBe("failed");
  });

  it("is in no registry: the generated CRDs and the reasons derived from the registry do not know it", () => {
    expect(kinds.map((k) => k.ref.group)).not.toContain(widget.ref.group);
    expect([...renderCrdFiles(kinds.map((k) => k.crd)).keys()]).not.toContain("widgets.test.keyward.dev.yaml");
    for (const name of Object.keys(widget.reasons)) expect(reasonRegistry().has(name)).toBe(false);
  });
});
