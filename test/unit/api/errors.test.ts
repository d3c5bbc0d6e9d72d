import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  ApiError,
  REDACTED,
  ResponseValidationError,
  TransportError,
  formatPath,
  redact,
  responseIssues,
  serviceMessage,
} from "../../../src/api/errors.ts";
import { toTransportError } from "../../../src/api/http.ts";

describe("error helpers", () => {
  it("redact replaces every occurrence of each secret", () => {
    expect(redact("a tok-123 b tok-123 c", ["tok-123", undefined])).toBe(`a ${REDACTED} b ${REDACTED} c`);
    expect(redact("short ab", ["ab"])).toBe("short ab");
  });

  // Found by client-decoding.property.test.ts: a 400 whose message is an object echoing the
  // Authorization header is rendered with JSON.stringify, which escapes the token's `"` and `\`.
  it("redact also replaces a secret as JSON escapes it (quotes, backslashes, control characters)", () => {
    const token = 'tok-"quoted"\\slash\u0001';
    const rendered = serviceMessage([{ path: ["x"], message: "bad" }, { code: `Bearer ${token}` }]);
    expect(rendered).toContain(JSON.stringify(token).slice(1, -1));
    const out = redact(`${rendered} raw ${token}`, [token]);
    expect(out).not.toContain(token);
    expect(out).not.toContain(JSON.stringify(token).slice(1, -1));
    expect(out).toBe(`x: bad; {"code":"Bearer ${REDACTED}"} raw ${REDACTED}`);
  });

  it("renders 422 zod issue lists readably", () => {
    const issues = [
      { code: "too_big", path: ["name"], message: "Too big: expected string to have <=64 characters" },
      { code: "invalid_type", path: ["roles", 0, "role"], message: "Required" },
    ];
    expect(serviceMessage(issues)).toBe("name: Too big: expected string to have <=64 characters; roles[0].role: Required");
    expect(serviceMessage("plain")).toBe("plain");
    expect(serviceMessage(undefined)).toBe("");
  });

  it("formats paths", () => {
    expect(formatPath([])).toBe("(root)");
    expect(formatPath(["a", 2, "b"])).toBe("a[2].b");
  });

  it("response issues name the field and the failure, never the value", () => {
    const secret = "s3cr3t-passphrase";
    const schema = z.object({ estConfig: z.object({ passphrase: z.number() }), tokenType: z.literal("Bearer") });
    const result = schema.safeParse({ estConfig: { passphrase: secret }, tokenType: secret });
    expect(result.success).toBe(false);
    if (result.success) return;
    const err = new ResponseValidationError("listCertificateProfiles", responseIssues(result.error.issues));
    expect(err.message).toContain("estConfig.passphrase");
    expect(err.message).toContain("tokenType");
    expect(`${err.message}${JSON.stringify(err)}${String(err.stack)}`).not.toContain(secret);
    expect(err.retryable).toBe(false);
  });

  it("ApiError: retryable for 429 and 5xx, mayHaveLanded only for 5xx", () => {
    const e = (status: number) => new ApiError({ operation: "op", status, error: "E", message: "m" });
    expect([e(400), e(404), e(429), e(500), e(503)].map((x) => x.retryable)).toEqual([false, false, true, true, true]);
    expect([e(429), e(503)].map((x) => x.mayHaveLanded)).toEqual([false, true]);
    expect(e(404)).toBeInstanceOf(Error);
  });

  it("classifies transport failures; mayHaveLanded is whether the request was written", () => {
    const notSent = { sent: false, timedOut: false, aborted: false };
    const sent = { ...notSent, sent: true };
    const classify = (code: string, progress = notSent) => toTransportError(Object.assign(new Error("x"), { code }), "op", "h:1", progress);
    expect(classify("ECONNREFUSED")).toMatchObject({ kind: "connection-refused", retryable: true, mayHaveLanded: false });
    expect(classify("UND_ERR_CONNECT_TIMEOUT")).toMatchObject({ kind: "timeout", mayHaveLanded: false });
    expect(classify("ENOTFOUND")).toMatchObject({ kind: "dns", mayHaveLanded: false });
    expect(classify("UND_ERR_HEADERS_TIMEOUT", sent)).toMatchObject({ kind: "timeout", retryable: true, mayHaveLanded: true });
    expect(classify("UND_ERR_SOCKET", sent)).toMatchObject({ kind: "dropped-response", mayHaveLanded: true });
    expect(classify("UND_ERR_SOCKET")).toMatchObject({ kind: "dropped-response", mayHaveLanded: false });
    expect(classify("ECONNRESET", sent)).toMatchObject({ kind: "connection-reset", mayHaveLanded: true });
    expect(classify("DEPTH_ZERO_SELF_SIGNED_CERT")).toMatchObject({ kind: "tls", retryable: false, mayHaveLanded: false });
    expect(classify("UND_ERR_ABORTED", { ...sent, timedOut: true })).toMatchObject({
      kind: "timeout",
      retryable: true,
      mayHaveLanded: true,
    });
    expect(classify("UND_ERR_ABORTED", { ...notSent, timedOut: true })).toMatchObject({ kind: "timeout", mayHaveLanded: false });
    expect(classify("UND_ERR_ABORTED", { ...sent, aborted: true })).toMatchObject({ kind: "aborted", retryable: false });
    expect(classify("ECONNREFUSED")).toBeInstanceOf(TransportError);
  });
});
