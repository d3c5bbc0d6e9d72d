import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../../../src/engine/types.ts";
import { ReconcileError } from "../../../../src/engine/errors.ts";
import { checkAllowedBaseUrl, tokenFrom } from "../../../../src/resources/provider/credentials.ts";

const VALUE = "s3cr3t-value-never-shown";

function secret(
  labels: Record<string, string> = {},
  annotations: Record<string, string> = {},
  data: Record<string, string> = { token: Buffer.from(VALUE).toString("base64") },
): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { namespace: "team", name: "creds", labels, annotations },
    data,
  } as unknown as KubeObject;
}

function reasonOf(f: () => unknown): { reason: string; retryable: boolean; message: string } {
  try {
    f();
  } catch (err) {
    if (err instanceof ReconcileError) return { reason: err.reason, retryable: err.retryable, message: err.message };
    throw err;
  }
  throw new Error("did not throw");
}

const where = { namespace: "team", name: "creds" };
const marked = { "keyward.dev/credentials": "true" };

describe("tokenFrom", () => {
  it("reads the token of a marked Secret", () => {
    expect(tokenFrom(secret(marked), where, "https://a.test", ["*"])).toBe(VALUE);
  });

  it("refuses a Secret without the mark (or with another value), terminally, naming the label and never the value", () => {
    for (const labels of [{} as Record<string, string>, { "keyward.dev/credentials": "false" }, { "keyward.dev/credentials": "yes" }]) {
      const r = reasonOf(() => tokenFrom(secret(labels), where, "https://a.test", ["*"]));
      expect(r).toMatchObject({ reason: "CredentialsNotMarked", retryable: false });
      expect(r.message).toContain("keyward.dev/credentials=true");
      expect(r.message).not.toContain(VALUE);
    }
  });

  it("honours the Secret's allowed-base-urls annotation", () => {
    const pinned = secret(marked, { "keyward.dev/allowed-base-urls": "https://a.test, https://b.test/api" });
    expect(tokenFrom(pinned, where, "https://b.test/api", [])).toBe(VALUE);
    const r = reasonOf(() => tokenFrom(pinned, where, "https://evil.test", []));
    expect(r).toMatchObject({ reason: "BaseUrlNotAllowed", retryable: false });
    expect(r.message).not.toContain(VALUE);
  });

  it("a marked Secret without the annotation goes nowhere unless the admin's list is set, and says both ways to allow it", () => {
    const r = reasonOf(() => tokenFrom(secret(marked), where, "https://a.test", []));
    expect(r).toMatchObject({ reason: "BaseUrlNotAllowed", retryable: false });
    expect(r.message).toContain("keyward.dev/allowed-base-urls=https://a.test");
    expect(r.message).toContain("--allowed-base-urls");
    expect(r.message).toContain("allowedBaseUrls");
    expect(r.message).not.toContain(VALUE);
    // The admin's list (checked by checkAllowedBaseUrl before) is enough on its own.
    expect(tokenFrom(secret(marked), where, "https://a.test", ["https://a.test"])).toBe(VALUE);
    // The annotation still pins under an admin's list, even `*`.
    const pinned = secret(marked, { "keyward.dev/allowed-base-urls": "https://a.test" });
    expect(reasonOf(() => tokenFrom(pinned, where, "https://b.test", ["*"]))).toMatchObject({ reason: "BaseUrlNotAllowed" });
  });

  it("a missing Secret or key is retryable (it may appear)", () => {
    expect(reasonOf(() => tokenFrom(undefined, where, "https://a.test", ["*"]))).toMatchObject({
      reason: "CredentialsNotFound",
      retryable: true,
    });
    expect(reasonOf(() => tokenFrom(secret(marked, {}, {}), where, "https://a.test", ["*"]))).toMatchObject({
      reason: "CredentialsNotFound",
      retryable: true,
    });
  });
});

describe("checkAllowedBaseUrl", () => {
  it("leaves it to the Secret without a list, allows anything with `*`, and only listed URLs with a list", () => {
    expect(() => checkAllowedBaseUrl("ProviderConfig/team/default", "https://evil.test", [])).not.toThrow();
    expect(() => checkAllowedBaseUrl("ProviderConfig/team/default", "https://evil.test", ["*"])).not.toThrow();
    expect(() => checkAllowedBaseUrl("ProviderConfig/team/default", "https://a.test/api", ["https://a.test"])).not.toThrow();
    expect(reasonOf(() => checkAllowedBaseUrl("ProviderConfig/team/default", "https://evil.test", ["https://a.test"]))).toMatchObject({
      reason: "BaseUrlNotAllowed",
      retryable: false,
    });
  });
});
