// ClusterProviderConfig's pure parts: which namespaces it allows, and what its spec schema
// accepts (the connector both provider kinds share: provider/connector.test.ts).
import { describe, expect, it } from "vitest";
import { namespaceAllowed, selectorMatches, specSchema as clusterSpec } from "../../../src/resources/clusterproviderconfig.ts";
import { specSchema } from "../../../src/resources/providerconfig.ts";

const IDENTITY = "a1b2c3d4-0003-4a00-8000-000000000001";

describe("selectorMatches", () => {
  const labels = { team: "payments", env: "prod" };
  it.each([
    [{}, true],
    [{ matchLabels: { team: "payments" } }, true],
    [{ matchLabels: { team: "payments", env: "dev" } }, false],
    [{ matchExpressions: [{ key: "env", operator: "In" as const, values: ["prod", "staging"] }] }, true],
    [{ matchExpressions: [{ key: "env", operator: "In" as const, values: ["dev"] }] }, false],
    [{ matchExpressions: [{ key: "env", operator: "NotIn" as const, values: ["prod"] }] }, false],
    [{ matchExpressions: [{ key: "tier", operator: "NotIn" as const, values: ["web"] }] }, true],
    [{ matchExpressions: [{ key: "team", operator: "Exists" as const }] }, true],
    [{ matchExpressions: [{ key: "tier", operator: "Exists" as const }] }, false],
    [{ matchExpressions: [{ key: "tier", operator: "DoesNotExist" as const }] }, true],
    [{ matchLabels: { team: "payments" }, matchExpressions: [{ key: "env", operator: "DoesNotExist" as const }] }, false],
  ])("%j → %s", (selector, expected) => {
    expect(selectorMatches(selector, labels)).toBe(expected);
  });

  it("treats a namespace without labels as having none", () => {
    expect(selectorMatches({ matchLabels: { team: "payments" } }, undefined)).toBe(false);
    expect(selectorMatches({ matchExpressions: [{ key: "team", operator: "DoesNotExist" }] }, undefined)).toBe(true);
  });
});

describe("namespaceAllowed", () => {
  it("allows a listed namespace or one the selector matches, and nothing without either", () => {
    expect(namespaceAllowed({ namespaces: ["a"] }, "a", {})).toBe(true);
    expect(namespaceAllowed({ namespaces: ["a"] }, "b", { team: "x" })).toBe(false);
    expect(namespaceAllowed({ namespaceSelector: { matchLabels: { team: "x" } } }, "b", { team: "x" })).toBe(true);
    expect(namespaceAllowed({ namespaceSelector: { matchLabels: { team: "x" } }, namespaces: ["c"] }, "c", {})).toBe(true);
    expect(namespaceAllowed({}, "a", { team: "x" })).toBe(false);
    expect(namespaceAllowed({ namespaceSelector: {} }, "anything", undefined)).toBe(true);
  });

  it("is what the spec schema accepts: a selector, a list, tokenAuth or a static token", () => {
    expect(
      clusterSpec.safeParse({
        baseUrl: "https://s.example.com",
        credentialsSecretRef: { name: "t" },
        namespaceSelector: { matchLabels: { a: "b" } },
        namespaces: ["x"],
      }).success,
    ).toBe(true);
    expect(
      clusterSpec.safeParse({ baseUrl: "https://s.example.com", tokenAuth: { identityId: IDENTITY, bootstrapSecretRef: { name: "t" } } })
        .success,
    ).toBe(true);
    expect(
      clusterSpec.safeParse({
        baseUrl: "https://s.example.com",
        credentialsSecretRef: { name: "t" },
        namespaceSelector: { matchExpressions: [{ key: "a", operator: "Equals" }] },
      }).success,
    ).toBe(false);
    expect(
      specSchema.safeParse({ baseUrl: "https://s.example.com", tokenAuth: { identityId: "not-a-uuid", bootstrapSecretRef: { name: "t" } } })
        .success,
    ).toBe(false);
  });
});
