// What `helm uninstall` leaves, on the real apiserver: keyward's CRDs as generated (v1alpha1
// stored, v1beta1 served, converted by the release's webhook Service), in a test group of their
// own, and no webhook pod behind that Service, as after the release's Deployment is gone. Before
// the uninstall's last step a read naming no version fails; after stopConversion (the pre-delete
// Job's, src/uninstall.ts) the CRDs serve v1alpha1 alone with conversion None, and the leftover
// objects read, update and delete with no webhook. A CRD calling another release's webhook is
// left as it is. While a CRD lists two stored versions (a storage switch whose rewrite has not
// run), the step is refused and no CRD changes: those objects would read unconverted.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { crdToYaml, type CustomResourceDefinition } from "../../../src/crd/crd.ts";
import { servedCrd } from "../../../src/crd/conversion-schema.ts";
import { createKube } from "../../../src/kube/client.ts";
import { createLogger } from "../../../src/log.ts";
import type { Kind } from "../../../src/resources/kind.ts";
import { kinds } from "../../../src/resources/registry.ts";
import { MixedStorageError, mixedStorage, stopConversion } from "../../../src/uninstall.ts";
import { callsService } from "../../../src/webhook/keeper.ts";
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

// The apiserver of an existing cluster (kind) would try a Service of this test's namespace too, but
// the suite's own apiserver is where the CRDs of a test group are created and removed.
const existingCluster = Boolean(process.env["KEYWARD_E2E_KUBECONFIG"]);

const GROUP = `u${randomBytes(4).toString("hex")}.test.keyward.dev`;
const OTHER_GROUP = `o${randomBytes(4).toString("hex")}.test.keyward.dev`;
const SERVICE = "kw-webhook";

const converting = kinds.filter((k) => k.conversion.from !== k.conversion.to);
const project = kinds.find((k) => k.ref.kind === "Project") as Kind;

function testCrd(kind: Kind, group: string, namespace: string, service: string): CustomResourceDefinition {
  const crd = servedCrd(kind, { service: { namespace, name: service, path: "/convert", port: 443 } });
  return { ...crd, metadata: { name: `${kind.crd.plural}.${group}` }, spec: { ...crd.spec, group } };
}

const projectYaml = (group: string, namespace: string, name: string): string =>
  [
    `apiVersion: ${group}/v1alpha1`,
    "kind: Project",
    "metadata:",
    `  name: ${name}`,
    `  namespace: ${namespace}`,
    "  finalizers: [keyward.dev/finalizer]",
    "spec:",
    `  name: ${name}`,
    `  slug: ${name}`,
    "",
  ].join("\n");

describe.skipIf(existingCluster)("the uninstall's last step: keyward's CRDs without their webhook", () => {
  let ns: TestNamespace;
  const crds: CustomResourceDefinition[] = [];
  let other: CustomResourceDefinition;

  beforeAll(async () => {
    ns = await createTestNamespace("uninstall-conv");
    for (const k of converting) crds.push(testCrd(k, GROUP, ns.name, SERVICE));
    other = testCrd(project, OTHER_GROUP, ns.name, "another-release-webhook");
    await applyYaml([...crds, other].map(crdToYaml).join("---\n"), "default", { extraArgs: ["--server-side", "--force-conflicts"] });
    await waitForCrdsEstablished(
      kubectlStdout,
      [...crds, other].map((c) => `crd/${c.metadata.name}`),
      120_000,
    );
    // Created as the stored version, which needs no conversion.
    for (const name of ["left-a", "left-b"]) {
      await waitFor(
        async () => ((await kubectl(["create", "-f", "-"], { input: projectYaml(GROUP, ns.name, name) })).code === 0 ? true : undefined),
        { timeoutMs: 60_000, description: `Project ${name} created` },
      );
    }
  }, 240_000);

  afterAll(async () => {
    for (const name of ["left-a", "left-b"])
      await kubectl([
        "patch",
        `projects.v1alpha1.${GROUP}`,
        name,
        "-n",
        ns.name,
        "--type",
        "merge",
        "-p",
        '{"metadata":{"finalizers":null}}',
      ]);
    await ns?.cleanup();
    await kubectl(["delete", "crd", ...[...crds, other].map((c) => c.metadata.name), "--wait=false"]);
  });

  it("is refused, changing no CRD, while a CRD lists two stored versions (a storage switch not yet rewritten)", async () => {
    const kube = createKube(testKubeConfig());
    const log = createLogger({ level: "fatal" });
    const names = [...crds, other].map((c) => c.metadata.name);
    const mixed = crds[0]?.metadata.name ?? "";
    const storedVersions = (versions: string[]) =>
      kubectlStdout([
        "patch",
        "crd",
        mixed,
        "--subresource=status",
        "--type=merge",
        "-p",
        JSON.stringify({ status: { storedVersions: versions } }),
      ]);
    await storedVersions(["v1alpha1", "v1beta1"]);
    try {
      expect(await mixedStorage(kube, names, callsService(ns.name, SERVICE))).toEqual([
        { crd: mixed, storedVersions: ["v1alpha1", "v1beta1"] },
      ]);
      const refused = await stopConversion(kube, names, callsService(ns.name, SERVICE), log).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(refused).toBeInstanceOf(MixedStorageError);
      expect((refused as Error).message).toContain(`${mixed}: v1alpha1, v1beta1`);
      expect((refused as Error).message).toContain("Switching the storage version");
      for (const c of crds) {
        const live = JSON.parse(await kubectlStdout(["get", "crd", c.metadata.name, "-o", "json"])) as {
          spec: { conversion: { strategy: string } };
        };
        expect(live.spec.conversion.strategy, c.metadata.name).toBe("Webhook");
      }
      // Another release's CRD in two versions is not ours to judge.
      expect(await mixedStorage(kube, names, callsService(ns.name, "another-release-webhook"))).toEqual([]);
    } finally {
      // The rewrite's last step.
      await storedVersions(["v1alpha1"]);
    }
  });

  it("before: with no webhook pod a read naming no version fails; after: v1alpha1 alone is served and the objects read, update and delete", async () => {
    const plural = `projects.${GROUP}`;
    const before = await kubectl(["get", plural, "-n", ns.name, "-o", "name"]);
    expect(before.code).not.toBe(0);
    expect(before.stderr).toMatch(/conversion webhook for .*Kind=Project failed/);

    const kube = createKube(testKubeConfig());
    const log = createLogger({ level: "fatal" });
    const names = [...crds, other].map((c) => c.metadata.name);
    const changed = await stopConversion(kube, names, callsService(ns.name, SERVICE), log);
    expect(changed.sort()).toEqual(crds.map((c) => c.metadata.name).sort());
    // A second run finds nothing to do; another release's CRD is never touched.
    expect(await stopConversion(kube, names, callsService(ns.name, SERVICE), log)).toEqual([]);

    for (const c of crds) {
      const live = JSON.parse(await kubectlStdout(["get", "crd", c.metadata.name, "-o", "json"])) as {
        spec: { versions: { name: string; served: boolean; storage: boolean }[]; conversion: { strategy: string; webhook?: unknown } };
      };
      expect(live.spec.versions.map((v) => [v.name, v.served, v.storage])).toEqual([
        ["v1alpha1", true, true],
        ["v1beta1", false, false],
      ]);
      expect(live.spec.conversion).toEqual({ strategy: "None" });
    }
    const untouched = JSON.parse(await kubectlStdout(["get", "crd", other.metadata.name, "-o", "json"])) as {
      spec: { conversion: { strategy: string }; versions: { served: boolean }[] };
    };
    expect(untouched.spec.conversion.strategy).toBe("Webhook");
    expect(untouched.spec.versions.every((v) => v.served)).toBe(true);

    // The discovery of the served versions follows the CRD a moment later.
    const listed = await waitFor(
      async () => {
        const r = await kubectl(["get", plural, "-n", ns.name, "-o", "json"]);
        return r.code === 0 ? (JSON.parse(r.stdout) as { items: { apiVersion: string; metadata: { name: string } }[] }) : undefined;
      },
      { timeoutMs: 30_000, description: "an unqualified read to work" },
    );
    expect(listed.items.map((o) => [o.apiVersion, o.metadata.name])).toEqual([
      [`${GROUP}/v1alpha1`, "left-a"],
      [`${GROUP}/v1alpha1`, "left-b"],
    ]);
    // What deleting a leftover takes: its finalizer released (an update), then the delete itself.
    for (const name of ["left-a", "left-b"]) {
      const patched = await kubectl(["patch", plural, name, "-n", ns.name, "--type", "merge", "-p", '{"metadata":{"finalizers":null}}']);
      expect(patched.code, patched.stderr).toBe(0);
      const deleted = await kubectl(["delete", plural, name, "-n", ns.name, "--wait=true", "--timeout=30s"]);
      expect(deleted.code, deleted.stderr).toBe(0);
    }
    expect((await kubectlStdout(["get", plural, "-n", ns.name, "-o", "name"])).trim()).toBe("");
  });
});
