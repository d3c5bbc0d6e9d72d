// A small test CRD (group <random>.test.keyward.dev, kind Widget, status subresource) so each
// test file has a kind of its own that it may create, break and recreate.
import { randomBytes } from "node:crypto";
import type { V1CustomResourceDefinition } from "@kubernetes/client-node";
import type { KindRef } from "../../../src/kube/client.ts";
import type { KubeObject } from "../../../src/engine/types.ts";
import { isKubeNotFound, statusCodeOf } from "../../../src/kube/objects.ts";
import { waitFor, type TestApis } from "../../controlplane/testenv.ts";

export interface WidgetCrd {
  kind: KindRef;
  create(): Promise<void>;
  /** Deletes the CRD (and so every Widget) and waits until it is gone. */
  delete(): Promise<void>;
}

function definition(kind: KindRef): V1CustomResourceDefinition {
  // client-node's model spells the extension x_kubernetes_preserve_unknown_fields; the
  // serializer silently drops the YAML spelling, and every field would be pruned.
  const open = { type: "object", x_kubernetes_preserve_unknown_fields: true };
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${kind.plural}.${kind.group}` },
    spec: {
      group: kind.group,
      scope: "Namespaced",
      names: { plural: kind.plural, singular: "widget", kind: kind.kind, listKind: `${kind.kind}List` },
      versions: [
        {
          name: kind.version,
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: { openAPIV3Schema: { type: "object", properties: { spec: open, status: open } } },
        },
      ],
    },
  };
}

export function widgetCrd(apis: TestApis): WidgetCrd {
  const kind: KindRef = {
    group: `w${randomBytes(4).toString("hex")}.test.keyward.dev`,
    version: "v1alpha1",
    plural: "widgets",
    kind: "Widget",
  };
  const api = apis.apiext;
  const name = `${kind.plural}.${kind.group}`;
  return {
    kind,
    async create() {
      await api.createCustomResourceDefinition({ body: definition(kind) });
      // Established is not the end of it: the resource must also be served before a list works.
      await waitFor(
        async () => {
          try {
            await apis.custom.listCustomObjectForAllNamespaces({ group: kind.group, version: kind.version, resourcePlural: kind.plural });
            return true;
          } catch (err) {
            // 404 until discovery serves it; 429 "storage is (re)initializing" while its watch cache fills.
            if (isKubeNotFound(err) || statusCodeOf(err) === 429) return undefined;
            throw err;
          }
        },
        { timeoutMs: 60_000, description: `CRD ${name} to be served` },
      );
    },
    async delete() {
      await api.deleteCustomResourceDefinition({ name });
      await waitFor(
        async () => {
          try {
            await api.readCustomResourceDefinition({ name });
            return undefined;
          } catch (err) {
            if (isKubeNotFound(err)) return true;
            throw err;
          }
        },
        { timeoutMs: 60_000, description: `CRD ${name} to be deleted` },
      );
    },
  };
}

export async function createWidget(
  apis: TestApis,
  kind: KindRef,
  namespace: string,
  name: string,
  spec: Record<string, unknown> = {},
): Promise<KubeObject> {
  return (await apis.custom.createNamespacedCustomObject({
    group: kind.group,
    version: kind.version,
    namespace,
    plural: kind.plural,
    body: { apiVersion: `${kind.group}/${kind.version}`, kind: kind.kind, metadata: { name, namespace }, spec },
  })) as KubeObject;
}

export async function deleteWidget(apis: TestApis, kind: KindRef, namespace: string, name: string): Promise<void> {
  await apis.custom.deleteNamespacedCustomObject({ group: kind.group, version: kind.version, namespace, plural: kind.plural, name });
}
