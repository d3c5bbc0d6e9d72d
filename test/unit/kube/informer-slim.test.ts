// What the informer cache keeps of an object (src/kube/informer.ts slim): a Secret's data up to a
// bound (the rest marked, to be read from the apiserver), only keyward's own labels and
// annotations of a Secret and of keyward's kinds, never kubectl's last-applied copy or managedFields.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { CACHED_SECRET_DATA_BYTES, dataOmitted, slim } from "../../../src/kube/informer.ts";
import { secretKind, namespaceKind } from "../../../src/kube/client.ts";
import type { KubeObject } from "../../../src/kube/types.ts";

const projectKind = { group: "keyward.dev", version: "v1alpha1", plural: "projects", kind: "Project" };
const big = "x".repeat(256 * 1024);

describe("slim", () => {
  it("a Secret of 1 MiB keeps its small token and keyward's keys, and is marked for what it left out", () => {
    const secret = {
      metadata: {
        name: "s",
        namespace: "a",
        labels: { "keyward.dev/credentials": "true", "other.example/x": big.slice(0, 63) },
        annotations: { "keyward.dev/allowed-base-urls": "https://a", "kubectl.kubernetes.io/last-applied-configuration": big, note: big },
        managedFields: [{}],
        finalizers: ["keyward.dev/in-use"],
      },
      data: { token: "dG9rZW4=", blob: "A".repeat(1024 * 1024) },
    } as unknown as KubeObject & { data: Record<string, string> };
    const kept = slim(secret, secretKind) as typeof secret;
    expect(kept.data).toEqual({ token: "dG9rZW4=" });
    expect(dataOmitted(kept)).toBe(true);
    expect(kept.metadata.labels).toEqual({ "keyward.dev/credentials": "true" });
    expect(kept.metadata.annotations).toEqual({ "keyward.dev/allowed-base-urls": "https://a" });
    expect(kept.metadata.finalizers).toEqual(["keyward.dev/in-use"]);
    expect(JSON.stringify(kept).length).toBeLessThan(CACHED_SECRET_DATA_BYTES + 1024);
  });

  it("a Secret within the bound is kept whole and not marked", () => {
    const secret = { metadata: { name: "s", namespace: "a" }, data: { token: "dG9rZW4=", ca: "Y2E=" } } as unknown as KubeObject;
    const kept = slim(secret, secretKind) as KubeObject & { data: unknown };
    expect(kept.data).toEqual({ token: "dG9rZW4=", ca: "Y2E=" });
    expect(dataOmitted(kept)).toBe(false);
  });

  it("keyward's own kinds keep spec, status and keyward's annotations only", () => {
    const project = {
      metadata: {
        name: "p",
        namespace: "a",
        annotations: { "keyward.dev/paused": "true", "keyward.dev/sync-requested-at": "t", note: big },
      },
      spec: { name: "p" },
      status: { id: "1" },
    } as unknown as KubeObject;
    const kept = slim(project, projectKind);
    expect(kept.metadata.annotations).toEqual({ "keyward.dev/paused": "true", "keyward.dev/sync-requested-at": "t" });
    expect(kept.spec).toEqual({ name: "p" });
    expect(kept.status).toEqual({ id: "1" });
  });

  it("other kinds keep their labels and annotations, without last-applied", () => {
    const ns = {
      metadata: { name: "a", labels: { team: "x" }, annotations: { note: "n", "kubectl.kubernetes.io/last-applied-configuration": big } },
    } as unknown as KubeObject;
    const kept = slim(ns, namespaceKind);
    expect(kept.metadata.labels).toEqual({ team: "x" });
    expect(kept.metadata.annotations).toEqual({ note: "n" });
  });

  // A watch event's metadata as the apiserver orders it, managedFields in the middle. V8's own
  // check (%HasFastProperties, natives syntax: a child process) says whether the kept metadata is
  // still an ordinary object or became a dictionary, as deleting the field in place made it.
  it("drops managedFields without turning the kept metadata into a dictionary", () => {
    const informer = fileURLToPath(new URL("../../../src/kube/informer.ts", import.meta.url));
    const script = `
      const { slim } = await import(${JSON.stringify(informer)});
      const event = JSON.parse(${JSON.stringify(
        JSON.stringify({
          apiVersion: "keyward.dev/v1alpha1",
          kind: "Project",
          metadata: {
            annotations: { "keyward.dev/external-id": "e" },
            creationTimestamp: "2026-11-28T06:42:40Z",
            generation: 1,
            managedFields: [{ manager: "keyward", operation: "Update" }],
            name: "p",
            namespace: "a",
            resourceVersion: "443",
            uid: "u",
          },
          spec: {},
        }),
      )});
      const kept = slim(event, { group: "keyward.dev", version: "v1alpha1", plural: "projects", kind: "Project" });
      console.log(JSON.stringify({ fast: %HasFastProperties(kept.metadata), keys: Object.keys(kept.metadata) }));`;
    const run = spawnSync(process.execPath, ["--allow-natives-syntax", "--input-type=module", "-e", script], {
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(run.stderr).toBe("");
    expect(JSON.parse(run.stdout)).toEqual({
      fast: true,
      keys: ["annotations", "creationTimestamp", "generation", "name", "namespace", "resourceVersion", "uid"],
    });
  });
});
