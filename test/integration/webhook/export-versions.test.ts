// kubectl keyward export on a cluster that serves v1beta1: keyward's CRDs as generated (v1alpha1
// stored, v1beta1 served through keyward's conversion webhook) in the keyward.dev group, on a
// control plane of this file's own (the suite's shared one serves the storage version alone).
// Objects created as v1alpha1 export as v1beta1, the version the cluster prefers, and the export
// applies as it is; --api-version v1alpha1 writes what is stored; with the webhook gone, the
// default export fails whole, naming the way out, and --api-version v1alpha1 still exports.
import { KubeConfig } from "@kubernetes/client-node";
import { loadAll } from "js-yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keywardSamples } from "../../support/samples.ts";
import { crdToYaml } from "../../../src/crd/crd.ts";
import { servedCrd } from "../../../src/crd/conversion-schema.ts";
import { toYaml } from "../../../src/crd/yaml.ts";
import { createKube } from "../../../src/kube/client.ts";
import { createLogger } from "../../../src/log.ts";
import { convert, type ConvertibleObject } from "../../../src/resources/conversion.ts";
import { kinds } from "../../../src/resources/registry.ts";
import { startConversionWebhook, type ConversionWebhook } from "../../../src/webhook/webhook.ts";
import { freePort, startControlPlane, type ControlPlane } from "../../controlplane/controlplane.ts";
import { waitForCrdsEstablished } from "../../controlplane/crds-established.ts";
import { kubectl as testKubectl, waitFor } from "../../controlplane/testenv.ts";
import { installPlugin, type InstalledPlugin } from "../support/plugin.ts";

// The webhook listens on this machine's loopback, and the file starts its own apiserver.
const existingCluster = Boolean(process.env["KEYWARD_E2E_KUBECONFIG"]);

const NS = "team-a";

type Obj = ConvertibleObject & {
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
  spec: Record<string, ConvertibleObject[string]>;
};

/** Every namespaced sample (every namespaced kind, every destination), as v1alpha1. */
function namespacedSamples(): Obj[] {
  const clusterScoped = new Set(kinds.filter((k) => k.crd.scope === "Cluster").map((k) => k.ref.kind));
  return keywardSamples("v1alpha1")
    .filter((o) => !clusterScoped.has(o.kind))
    .map((o) => ({ ...o, metadata: { ...o.metadata, namespace: NS } }));
}

const keyOf = (o: { kind: string; metadata: { name: string } }): string => `${o.kind}/${o.metadata.name}`;

describe.skipIf(existingCluster)("kubectl keyward export where v1beta1 is served", () => {
  let plane: ControlPlane;
  let webhook: ConversionWebhook | undefined;
  let plugin: InstalledPlugin;
  const crdNames = kinds.map((k) => `${k.crd.plural}.${k.ref.group}`);

  const kubectl = (args: string[], input = "") => testKubectl(args, { input, kubeconfig: plane.kubeconfigPath });
  const mustKubectl = async (args: string[], input = ""): Promise<string> => {
    const r = await kubectl(args, input);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")}: ${r.stderr.trim()}`);
    return r.stdout;
  };
  const exportAs = (args: string[]) => plugin.run(["export", "-n", NS, ...args], { KUBECONFIG: plane.kubeconfigPath });
  const docs = (yaml: string): Obj[] => (loadAll(yaml) as (Obj | null)[]).filter((d): d is Obj => d !== null);

  beforeAll(async () => {
    plane = await startControlPlane({ withControllerManager: false });
    plugin = installPlugin();
    const port = await freePort();
    const url = `https://127.0.0.1:${port}/convert`;
    await mustKubectl(["apply", "--server-side", "-f", "-"], kinds.map((k) => crdToYaml(servedCrd(k, { url }))).join("---\n"));
    await waitForCrdsEstablished(
      (args) => mustKubectl(args),
      crdNames.map((n) => `crd/${n}`),
      120_000,
    );
    await mustKubectl(["create", "namespace", "keyward-system"]);
    await mustKubectl(["create", "namespace", NS]);
    const kc = new KubeConfig();
    kc.loadFromFile(plane.kubeconfigPath);
    webhook = startConversionWebhook({
      kube: createKube(kc),
      log: createLogger({ level: "warn" }),
      port,
      bindAddress: "127.0.0.1",
      selfSigned: {
        namespace: "keyward-system",
        service: "keyward-webhook",
        secretName: "keyward-webhook-tls",
        extraIpAddresses: ["127.0.0.1"],
        ours: (config) => config.url === url,
      },
      crdNames,
      kinds,
    });
    await webhook.serving;
    for (const name of crdNames) {
      await waitFor(
        async () => ((await kubectl(["get", name.replace(".keyward.dev", ".v1beta1.keyward.dev"), "-A"])).code === 0 ? true : undefined),
        {
          timeoutMs: 60_000,
          description: `${name} served as v1beta1`,
        },
      );
    }
    for (const sample of namespacedSamples()) await mustKubectl(["create", "-f", "-"], toYaml(sample));
  }, 300_000);

  afterAll(async () => {
    await webhook?.stop();
    plugin?.remove();
    await plane?.stop();
  });

  it("writes v1beta1, the version the cluster prefers, as the webhook converts it, and the export applies as it is", async () => {
    const result = await exportAs([]);
    expect(result.code, result.stderr).toBe(0);
    const exported = docs(result.stdout);
    const alpha = docs(await exportAs(["--api-version", "v1alpha1"]).then((r) => r.stdout));
    expect(exported.map(keyOf).sort()).toEqual(namespacedSamples().map(keyOf).sort());
    for (const doc of exported) {
      expect(doc.apiVersion, keyOf(doc)).toBe("keyward.dev/v1beta1");
      const stored = alpha.find((a) => keyOf(a) === keyOf(doc));
      expect(stored, keyOf(doc)).toBeDefined();
      // what the webhook made of the stored object, with the defaults v1beta1's schema fills in
      expect(doc.spec, keyOf(doc)).toMatchObject(convert(stored as Obj, "v1beta1").spec);
    }
    // SecretSync as v1beta1's union: a destination member under its type
    const sync = exported.find((d) => d.kind === "SecretSync");
    expect(sync?.spec["destination"]).toMatchObject({ type: expect.any(String) as unknown });
    const applied = await kubectl(["apply", "--dry-run=server", "-f", "-"], result.stdout);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout.trim().split("\n")).toHaveLength(exported.length);
  });

  it("writes what is stored with --api-version v1alpha1, the same objects as the samples", async () => {
    const result = await exportAs(["--api-version", "keyward.dev/v1alpha1"]);
    expect(result.code, result.stderr).toBe(0);
    const exported = docs(result.stdout);
    const samples = namespacedSamples();
    expect(exported.map(keyOf).sort()).toEqual(samples.map(keyOf).sort());
    for (const doc of exported) {
      expect(doc.apiVersion).toBe("keyward.dev/v1alpha1");
      expect(doc.spec, keyOf(doc)).toMatchObject(samples.find((s) => keyOf(s) === keyOf(doc))?.spec ?? {});
    }
  });

  it("with no webhook answering, exports nothing by default and says how to read what is stored", async () => {
    await webhook?.stop();
    webhook = undefined;
    // The apiserver keeps what it converted before (its watch cache holds each event's encodings):
    // an object written since then is what has to go through the webhook.
    const late = namespacedSamples().find((o) => o.kind === "Project") as Obj;
    await mustKubectl(["create", "-f", "-"], toYaml({ ...late, metadata: { ...late.metadata, name: "written-while-down" } }));
    const result = await exportAs([]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("--api-version v1alpha1 reads what is stored, unconverted");
    expect(result.stderr).toContain("nothing exported");
    const stored = await exportAs(["--api-version", "v1alpha1"]);
    expect(stored.code, stored.stderr).toBe(0);
    expect(docs(stored.stdout)).toHaveLength(namespacedSamples().length + 1);
  });
});
