// The resolver reads a ProviderConfig's spec on every pass of every object that uses it, and
// parses it once per generation (src/engine/spec-cache.ts): the same generation hands the
// connector the same parsed spec; a new generation is parsed again, and refused if invalid.
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../../../src/engine/types.ts";
import type { Kube } from "../../../../src/kube/client.ts";
import type { KubeAccess } from "../../../../src/kube/kubeconfig.ts";
import { createLogger } from "../../../../src/log.ts";
import { createProviderResolver, type ProviderConfigSpec } from "../../../../src/resources/providerconfig.ts";
import type { Connector } from "../../../../src/resources/provider/connector.ts";

describe("the ProviderConfig resolver's spec", () => {
  it("is parsed once per generation, again on a new one, and refused when the new one is invalid", async () => {
    let config: KubeObject = {
      apiVersion: "keyward.dev/v1alpha1",
      kind: "ProviderConfig",
      metadata: { namespace: "ns", name: "default", uid: "pc-uid", generation: 1 },
      spec: { baseUrl: "https://service.example", credentialsSecretRef: { name: "token" } },
    };
    const cache = { hasSynced: () => true, get: () => config };
    const kube = {
      access: {} as KubeAccess,
      cache: { peek: (kind: { plural: string }) => (kind.plural === "providerconfigs" ? cache : undefined) },
    } as unknown as Kube;
    const seen: ProviderConfigSpec[] = [];
    const connector = {
      connect: (_id: string, spec: ProviderConfigSpec) => {
        seen.push(spec);
        return Promise.resolve({});
      },
      forget: () => undefined,
      tokenSchedule: () => undefined,
    } as unknown as Connector;
    const resolver = createProviderResolver({ kube, log: createLogger({ level: "silent" }), connector });

    await resolver.connect("ns", "default");
    await resolver.connect("ns", "default");
    expect(seen).toHaveLength(2);
    expect(seen[1]).toBe(seen[0]);

    config = {
      ...config,
      metadata: { ...config.metadata, generation: 2 },
      spec: { baseUrl: "ftp://service.example", credentialsSecretRef: { name: "token" } },
    };
    await expect(resolver.connect("ns", "default")).rejects.toMatchObject({ reason: "ProviderConfigInvalid" });
    await expect(resolver.connect("ns", "default")).rejects.toMatchObject({
      reason: "ProviderConfigInvalid",
      message: expect.stringContaining("ProviderConfig ns/default is invalid: baseUrl") as unknown,
    });

    config = {
      ...config,
      metadata: { ...config.metadata, generation: 3 },
      spec: { baseUrl: "https://other.example", credentialsSecretRef: { name: "token" } },
    };
    await resolver.connect("ns", "default");
    expect(seen).toHaveLength(3);
    expect(seen[2]?.baseUrl).toBe("https://other.example");
  });
});
