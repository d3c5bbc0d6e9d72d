import { describe, expect, it } from "vitest";
import { ApiException } from "@kubernetes/client-node";
import { apiVersionOf, resourcePath } from "../../../src/kube/client.ts";
import { isConflict, isKubeNotFound, replacingPatch, statusCodeOf } from "../../../src/kube/objects.ts";
import { truncateMessage, MAX_EVENT_MESSAGE } from "../../../src/kube/events.ts";
import { errorSummary, errorFrom } from "../../../src/kube/rest.ts";

const widget = { group: "keyward.dev", version: "v1alpha1", plural: "projects", kind: "Project" };
const secret = { group: "", version: "v1", plural: "secrets", kind: "Secret" };

describe("resource paths", () => {
  it("builds core and group paths, collections, objects and subresources", () => {
    expect(resourcePath(widget)).toBe("/apis/keyward.dev/v1alpha1/projects");
    expect(resourcePath(widget, "ns")).toBe("/apis/keyward.dev/v1alpha1/namespaces/ns/projects");
    expect(resourcePath(widget, "ns", "p", "status")).toBe("/apis/keyward.dev/v1alpha1/namespaces/ns/projects/p/status");
    expect(resourcePath(secret, "ns", "s")).toBe("/api/v1/namespaces/ns/secrets/s");
    expect(apiVersionOf(widget)).toBe("keyward.dev/v1alpha1");
    expect(apiVersionOf(secret)).toBe("v1");
  });
});

describe("replacingPatch", () => {
  it("nulls every key dropped, at any depth, and replaces lists whole", () => {
    const from = { a: 1, gone: "x", nested: { keep: 1, drop: 2 }, list: [1, 2, 3] };
    const to = { a: 2, nested: { keep: 1 }, list: [3], added: true };
    expect(replacingPatch(from, to)).toEqual({ a: 2, gone: null, nested: { keep: 1, drop: null }, list: [3], added: true });
  });

  it("treats an undefined value as dropped", () => {
    expect(replacingPatch({ a: 1 }, { a: undefined })).toEqual({ a: null });
  });
});

describe("error predicates", () => {
  it("read the status code of ApiException and of plain errors carrying one", () => {
    expect(isKubeNotFound(new ApiException(404, "nf", "", {}))).toBe(true);
    expect(isConflict(new ApiException(409, "c", "", {}))).toBe(true);
    expect(isConflict(new ApiException(404, "nf", "", {}))).toBe(false);
    expect(statusCodeOf(Object.assign(new Error("x"), { statusCode: 410 }))).toBe(410);
    expect(statusCodeOf(new Error("plain"))).toBeUndefined();
    expect(statusCodeOf("string")).toBeUndefined();
  });

  it("summarise an ApiException on one line with the apiserver's message", () => {
    const body = JSON.stringify({ kind: "Status", message: 'widgets "x" not found', code: 404 });
    expect(errorSummary(new ApiException(404, "Unknown API Status Code!", body, { h: "v" }))).toBe('HTTP 404: widgets "x" not found');
    expect(errorSummary(new ApiException(500, "oops", undefined, {}))).toBe("HTTP 500");
    expect(errorSummary(new Error("first\nsecond"))).toBe("first");
  });

  it("summarise keyward's own apiserver errors with the Status message", () => {
    const err = errorFrom(
      409,
      JSON.stringify({ kind: "Status", message: "the object has been modified", reason: "Conflict", code: 409 }),
      "Conflict",
    );
    expect(err.reason).toBe("Conflict");
    expect(errorSummary(err)).toBe("HTTP 409: the object has been modified");
    expect(errorSummary(errorFrom(502, "<html>bad gateway</html>", "Bad Gateway"))).toBe("HTTP 502: Bad Gateway");
  });
});

describe("truncateMessage", () => {
  it("keeps short messages and cuts long ones to the limit", () => {
    expect(truncateMessage("short")).toBe("short");
    const cut = truncateMessage("y".repeat(3000));
    expect(cut).toHaveLength(MAX_EVENT_MESSAGE);
    expect(cut.endsWith("…")).toBe(true);
  });
});
