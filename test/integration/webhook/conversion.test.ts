// The conversion webhook on the real apiserver: keyward's CRDs as generated (v1alpha1 stored,
// v1beta1 served, strategy Webhook), in a test group of their own so the rest of the suite keeps
// the storage version alone, calling a keyward webhook of this test by URL. The webhook makes its
// CA and certificate (a Secret in the test's namespace) and writes the bundle into the CRDs
// itself; then every sample (every kind, every destination) is created as v1alpha1 and read as
// v1beta1, written as v1beta1 and read as v1alpha1; an object that cannot be converted is refused
// with the field named in the apiserver's error, a list holding it refused whole; and `kubectl
// explain` of each destination member lists exactly that member's fields.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keywardSamples } from "../../support/samples.ts";
import { crdToYaml, type CustomResourceDefinition, type JSONSchemaProps } from "../../../src/crd/crd.ts";
import { servedCrd } from "../../../src/crd/conversion-schema.ts";
import { toYaml } from "../../../src/crd/yaml.ts";
import { createKube } from "../../../src/kube/client.ts";
import { createLogger } from "../../../src/log.ts";
import { convert, type ConvertibleObject } from "../../../src/resources/conversion.ts";
import type { Kind } from "../../../src/resources/kind.ts";
import { kinds } from "../../../src/resources/registry.ts";
import { SECRET_KEYS, injectCaBundle } from "../../../src/webhook/keeper.ts";
import { startConversionWebhook, type ConversionWebhook } from "../../../src/webhook/webhook.ts";
import { freePort } from "../../controlplane/controlplane.ts";
import { waitForCrdsEstablished } from "../../controlplane/crds-established.ts";
import {
  applyYaml,
  createTestNamespace,
  kubectl,
  kubectlStdout,
  testKubeConfig,
  waitFor,
  type TestNamespace,
} from "../../controlplane/testenv.ts";

// The webhook listens on this machine's loopback: an existing cluster's apiserver (kind) cannot reach it.
const existingCluster = Boolean(process.env["KEYWARD_E2E_KUBECONFIG"]);

const GROUP = `c${randomBytes(4).toString("hex")}.test.keyward.dev`;

/** keyward's kinds, served in the test's group (the webhook converts these). */
const testKinds: Kind[] = kinds.map((k) => ({ ...k, ref: { ...k.ref, group: GROUP } }));
const crdName = (k: Kind): string => `${k.crd.plural}.${GROUP}`;

/** A kind's CRD as generated, in the test's group, its webhook at `url`. */
function testCrd(kind: Kind, url: string): CustomResourceDefinition {
  const crd = servedCrd(kind, { url });
  return { ...crd, metadata: { name: crdName(kind) }, spec: { ...crd.spec, group: GROUP } };
}

/**
 * ProjectMembership's v1alpha1 with its temporaryMode enum lifted: an object stored before a
 * schema tightened, which the conversion refuses (v1beta1 has no form for an unknown mode).
 */
function loosened(crd: CustomResourceDefinition): CustomResourceDefinition {
  const out = structuredClone(crd);
  const alpha = out.spec.versions.find((v) => v.name === "v1alpha1");
  const mode = alpha?.schema.openAPIV3Schema.properties?.["spec"]?.properties?.["roles"]?.items?.properties?.["temporaryMode"];
  if (!mode?.enum) throw new Error("ProjectMembership v1alpha1 has no temporaryMode enum to lift");
  delete mode.enum;
  return out;
}

type Obj = ConvertibleObject & {
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
  spec: Record<string, ConvertibleObject[string]>;
};

/** Every sample in v1alpha1, moved to this file's group. */
function samples(): Obj[] {
  return keywardSamples("v1alpha1").map((o) => ({ ...o, apiVersion: `${GROUP}/v1alpha1` }));
}

const clusterScoped = (kind: string): boolean => testKinds.find((k) => k.ref.kind === kind)?.crd.scope === "Cluster";
const pluralOf = (kind: string): string => testKinds.find((k) => k.ref.kind === kind)?.crd.plural ?? "?";

describe.skipIf(existingCluster)("the conversion webhook on a real apiserver", () => {
  let ns: TestNamespace;
  let url: string;
  let webhook: ConversionWebhook;
  const crds: CustomResourceDefinition[] = [];
  const created: string[][] = [];

  const where = (o: Obj): string[] => (clusterScoped(o.kind) ? [] : ["-n", ns.name]);
  const get = async (o: Obj, version: string): Promise<Obj> =>
    JSON.parse(await kubectlStdout(["get", `${pluralOf(o.kind)}.${version}.${GROUP}`, o.metadata.name, ...where(o), "-o", "json"])) as Obj;
  const create = async (o: Obj): Promise<void> => {
    const result = await kubectl(["create", ...where(o), "-f", "-"], { input: toYaml(o) });
    expect(result.code, `${o.kind} ${o.metadata.name}: ${result.stderr}`).toBe(0);
    created.push([`${pluralOf(o.kind)}.${GROUP}`, o.metadata.name, ...where(o)]);
  };

  beforeAll(async () => {
    ns = await createTestNamespace("conv-webhook");
    const port = await freePort();
    url = `https://127.0.0.1:${port}/convert`;
    for (const k of testKinds) {
      const crd = testCrd(k, url);
      crds.push(k.ref.kind === "ProjectMembership" ? loosened(crd) : crd);
    }
    // no caBundle: the webhook writes it
    await applyYaml(crds.map(crdToYaml).join("---\n"), "default", { extraArgs: ["--server-side", "--force-conflicts"] });
    await waitForCrdsEstablished(
      kubectlStdout,
      crds.map((c) => `crd/${c.metadata.name}`),
      120_000,
    );
    webhook = startConversionWebhook({
      kube: createKube(testKubeConfig()),
      log: createLogger({ level: "warn" }),
      port,
      bindAddress: "127.0.0.1",
      selfSigned: {
        namespace: ns.name,
        service: "keyward-webhook",
        secretName: "keyward-webhook-tls",
        extraIpAddresses: ["127.0.0.1"],
        ours: (config) => config.url === url,
      },
      crdNames: crds.map((c) => c.metadata.name),
      kinds: testKinds,
    });
    await webhook.serving;
    await waitFor(
      async () => {
        const list = JSON.parse(await kubectlStdout(["get", "crd", ...crds.map((c) => c.metadata.name), "-o", "json"])) as {
          items: { spec: { conversion?: { webhook?: { clientConfig?: { caBundle?: string } } } } }[];
        };
        return list.items.every((c) => c.spec.conversion?.webhook?.clientConfig?.caBundle) ? true : undefined;
      },
      { timeoutMs: 60_000, description: "the CA bundle in every CRD" },
    );
    for (const c of crds) {
      await waitFor(async () => ((await kubectl(["get", c.metadata.name, "-A"])).code === 0 ? true : undefined), {
        timeoutMs: 60_000,
        description: `${c.metadata.name} to be served`,
      });
    }
  }, 240_000);

  afterAll(async () => {
    // Each request bounded, and the CRDs go before the webhook stops: an object this file stored
    // that cannot be converted (below) makes every list of its kind at the preferred version fail
    // for the rest of the suite (the namespace controller's, kubectl get -A) while it stays.
    const bounded = ["--wait=false", "--request-timeout=60s"];
    for (const [resource, name, ...rest] of created) await kubectl(["delete", resource ?? "", name ?? "", ...rest, ...bounded]);
    await kubectl(["delete", "crd", ...crds.map((c) => c.metadata.name), ...bounded]);
    await webhook?.stop();
    await ns?.cleanup();
  });

  it("keeps its CA and certificate in a Secret and writes the bundle into each CRD", async () => {
    const secret = JSON.parse(await kubectlStdout(["get", "secret", "keyward-webhook-tls", "-n", ns.name, "-o", "json"])) as {
      data: Record<string, string>;
    };
    expect(Object.keys(secret.data).sort()).toEqual(Object.values(SECRET_KEYS).sort());
    const bundle = secret.data[SECRET_KEYS.bundle];
    for (const c of crds) {
      const live = JSON.parse(await kubectlStdout(["get", "crd", c.metadata.name, "-o", "json"])) as {
        spec: { conversion: { strategy: string; webhook: { clientConfig: { url: string; caBundle: string } } } };
      };
      expect(live.spec.conversion.strategy).toBe("Webhook");
      expect(live.spec.conversion.webhook.clientConfig).toEqual({ url, caBundle: bundle });
    }
    // a bundle the CRDs already hold is not written again; another webhook's CRDs are left alone
    const names = crds.map((c) => c.metadata.name);
    const pem = Buffer.from(bundle ?? "", "base64").toString("utf8");
    expect(await injectCaBundle(createKube(testKubeConfig()), names, pem, (config) => config.url === url)).toEqual([]);
    expect(
      await injectCaBundle(createKube(testKubeConfig()), names, "other", (config) => config.url === "https://elsewhere/convert"),
    ).toEqual([]);
  });

  it("serves every sample (every kind, every destination) created as v1alpha1 as v1beta1, and back", async () => {
    const all = samples();
    expect(new Set(all.map((o) => o.kind))).toEqual(new Set(kinds.map((k) => k.ref.kind)));
    for (const sample of all) await create(sample);
    for (const sample of all) {
      const alpha = await get(sample, "v1alpha1");
      const beta = await get(sample, "v1beta1");
      expect(beta.apiVersion).toBe(`${GROUP}/v1beta1`);
      // the webhook's conversion, plus whatever defaults the v1beta1 schema fills in
      expect(beta.spec, `${sample.kind} ${sample.metadata.name}`).toMatchObject(convert(alpha, "v1beta1", testKinds).spec);
      expect(beta.metadata.name).toBe(alpha.metadata.name);
      // written back as v1beta1, it reads as the same v1alpha1 object
      const replaced = await kubectl(["replace", ...where(sample), "-f", "-"], { input: JSON.stringify(beta) });
      expect(replaced.code, replaced.stderr).toBe(0);
      const again = await get(sample, "v1alpha1");
      expect(again.spec, `${sample.kind} ${sample.metadata.name}`).toMatchObject(alpha.spec);
      expect(again.metadata.annotations ?? {}).not.toHaveProperty("conversion.keyward.dev/v1beta1");
    }
    // SecretSync's union in v1beta1: the destination's member, under its type
    const sync = await get(
      all.find((o) => o.metadata.name === "payments-to-code-host") ?? (all.find((o) => o.kind === "SecretSync") as Obj),
      "v1beta1",
    );
    expect(sync.spec["destination"]).toMatchObject({ type: expect.any(String) as unknown });
    expect(sync.spec).not.toHaveProperty("destinationConfig");
  });

  it("stores an object written as v1beta1 and serves it as v1alpha1", async () => {
    for (const sample of samples()) {
      const name = `${sample.metadata.name}-beta`;
      const beta = { ...convert({ ...sample, metadata: { ...sample.metadata, name } }, "v1beta1", testKinds) } as Obj;
      await create(beta);
      const alpha = await get(beta, "v1alpha1");
      expect(alpha.apiVersion).toBe(`${GROUP}/v1alpha1`);
      expect(alpha.spec, `${sample.kind} ${name}`).toMatchObject(sample.spec);
    }
  });

  it("refuses an object it cannot convert, naming the field in the apiserver's error, and a list holding it whole", async () => {
    const bad: Obj = {
      apiVersion: `${GROUP}/v1alpha1`,
      kind: "ProjectMembership",
      metadata: { name: "absolute-mode" },
      spec: {
        projectId: "p-1",
        username: "ana@example.com",
        roles: [
          { role: "member" },
          {
            role: "viewer",
            isTemporary: true,
            temporaryMode: "absolute",
            temporaryRange: "1h",
            temporaryAccessStartTime: "2030-01-01T00:00:00Z",
          },
        ],
      },
    };
    await create(bad);
    const one = await kubectl(["get", `projectmemberships.v1beta1.${GROUP}`, bad.metadata.name, "-n", ns.name, "-o", "json"]);
    expect(one.code).not.toBe(0);
    expect(one.stderr).toContain("spec.roles[1].temporaryMode");
    expect(one.stderr).toContain("ProjectMembership");
    const list = await kubectl(["get", `projectmemberships.v1beta1.${GROUP}`, "-n", ns.name, "-o", "json"]);
    expect(list.code).not.toBe(0);
    expect(list.stderr).toContain("spec.roles[1].temporaryMode");
    // stored as it was: its own version still reads it
    expect((await get(bad, "v1alpha1")).spec).toEqual(bad.spec);
  });

  it("kubectl explain of each destination member lists exactly that member's fields", async () => {
    const beta = crds.find((c) => c.spec.names.kind === "SecretSync")?.spec.versions.find((v) => v.name === "v1beta1");
    const destination = beta?.schema.openAPIV3Schema.properties?.["spec"]?.properties?.["destination"];
    const members = Object.entries<JSONSchemaProps>(destination?.properties ?? {}).filter(([name]) => name !== "type");
    expect(members.length).toBe(7);
    for (const [member, schema] of members) {
      const text = await kubectlStdout(["explain", `secretsyncs.spec.destination.${member}`, "--api-version", `${GROUP}/v1beta1`]);
      const fields = [...text.matchAll(/^ {2}(\w+)\t/gm)].map((m) => m[1]).sort();
      expect(fields, member).toEqual(Object.keys(schema.properties ?? {}).sort());
    }
  });
});
