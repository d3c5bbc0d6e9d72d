// v1alpha1 deprecated once the chart stores v1beta1 (crds.storageVersion), on the real
// apiserver: the chart's CRDs so rendered, moved to a test group of their own with conversion
// None (the rest of the suite keeps keyward.dev's CRDs as they are, and no webhook runs here),
// answer a v1alpha1 request with the apiserver's warning naming v1beta1, and a v1beta1 one with
// none.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kubectl, kubectlStdout, applyYaml } from "../../controlplane/testenv.ts";
import { waitForCrdsEstablished } from "../../controlplane/crds-established.ts";
import { parseYamlDocuments, renderChart, type Doc } from "../../unit/chart/helm.ts";

const GROUP = `d${randomBytes(4).toString("hex")}.test.keyward.dev`;

type Crd = Doc & {
  spec: { group: string; names: { kind: string; plural: string }; conversion?: unknown; versions: { name: string }[] };
};

describe("v1alpha1 once v1beta1 is stored", () => {
  const names: string[] = [];

  beforeAll(async () => {
    const rendered = parseYamlDocuments(await renderChart({ setJson: { crds: { storageVersion: "v1beta1" } } }));
    const crds = (rendered.filter((d) => d.kind === "CustomResourceDefinition") as Crd[]).map((crd) => {
      const name = `${crd.spec.names.plural}.${GROUP}`;
      names.push(name);
      const { annotations: _, ...metadata } = crd.metadata as Crd["metadata"] & { annotations?: unknown };
      return { ...crd, metadata: { ...metadata, name }, spec: { ...crd.spec, group: GROUP, conversion: { strategy: "None" } } };
    });
    await applyYaml(crds.map((c) => JSON.stringify(c)).join("\n---\n"), "default", { extraArgs: ["--server-side"] });
    await waitForCrdsEstablished(
      kubectlStdout,
      names.map((n) => `crd/${n}`),
      120_000,
    );
  }, 180_000);

  afterAll(async () => {
    if (names.length > 0) await kubectl(["delete", "crd", ...names, "--wait=false"]);
  });

  it("warns on every v1alpha1 request, naming the v1beta1 kind to use, and never on v1beta1", async () => {
    expect(names).toHaveLength(7);
    for (const name of names) {
      const plural = name.slice(0, name.indexOf("."));
      const kind = (JSON.parse(await kubectlStdout(["get", "crd", name, "-o", "json"])) as Crd).spec.names.kind;
      const alpha = await kubectl(["get", `${plural}.v1alpha1.${GROUP}`, "-A"]);
      expect(alpha.code, alpha.stderr).toBe(0);
      expect(alpha.stderr).toContain(`Warning: keyward.dev/v1alpha1 ${kind} is deprecated; use keyward.dev/v1beta1 ${kind}`);
      const beta = await kubectl(["get", `${plural}.v1beta1.${GROUP}`, "-A"]);
      expect(beta.code, beta.stderr).toBe(0);
      expect(beta.stderr).not.toContain("deprecated");
    }
  });
});
