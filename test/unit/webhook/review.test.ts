// The conversion webhook's answer to a ConversionReview (src/webhook/review.ts): every object
// converted with the uid echoed, or the whole review refused naming the object and the field;
// bodies that are not reviews refused without converting anything.
import { describe, expect, it } from "vitest";
import { reviewConversion, type ConversionReviewResponse } from "../../../src/webhook/review.ts";
import { convert, type ConvertibleObject } from "../../../src/resources/conversion.ts";

const member = (name: string, roles: Record<string, string | boolean>[]): ConvertibleObject => ({
  apiVersion: "keyward.dev/v1alpha1",
  kind: "ProjectMembership",
  metadata: { name, namespace: "team-a", uid: `uid-${name}` },
  spec: { projectRef: { name: "payments" }, username: "bob@example.com", roles },
});

const token: ConvertibleObject = {
  apiVersion: "keyward.dev/v1alpha1",
  kind: "AccessToken",
  metadata: { name: "ci", namespace: "team-a" },
  spec: { identityId: "id-1", secretName: "ci-token" },
};

const review = (objects: unknown[], desiredAPIVersion = "keyward.dev/v1beta1", uid = "705ab4f5-6393-11e8-b7cc-42010a800002"): unknown => ({
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "ConversionReview",
  request: { uid, desiredAPIVersion, objects },
});

const responseOf = (body: unknown): ConversionReviewResponse["response"] => (body as ConversionReviewResponse).response;

describe("reviewConversion", () => {
  it("converts every object to the desired version and echoes the uid", () => {
    const objects = [member("a", [{ role: "admin", isTemporary: true, temporaryMode: "relative", temporaryRange: "8h" }]), token];
    const outcome = reviewConversion(review(objects));
    expect(outcome.httpStatus).toBe(200);
    const response = responseOf(outcome.body);
    expect(response.uid).toBe("705ab4f5-6393-11e8-b7cc-42010a800002");
    expect(response.result).toEqual({ status: "Success" });
    expect(response.convertedObjects).toEqual(objects.map((o) => convert(o, "v1beta1")));
    expect(response.convertedObjects?.[0]?.["spec"]).toMatchObject({
      roles: [{ role: "admin", temporary: { mode: "Relative", range: "8h" } }],
    });
    expect(response.convertedObjects?.[1]).toMatchObject({ apiVersion: "keyward.dev/v1beta1", spec: { identityID: "id-1" } });
    // and back
    const back = reviewConversion(review(response.convertedObjects ?? [], "keyward.dev/v1alpha1"));
    expect(responseOf(back.body).convertedObjects).toEqual(objects);
  });

  it("refuses the whole review when one object cannot be converted, naming it and the field, and returns none converted", () => {
    const objects = [
      token,
      member("ok", [{ role: "viewer" }]),
      member("bad", [{ role: "viewer" }, { role: "a", isTemporary: true, temporaryMode: "absolute" }]),
    ];
    const outcome = reviewConversion(review(objects));
    expect(outcome.httpStatus).toBe(200);
    const response = responseOf(outcome.body);
    expect(response.convertedObjects).toBeUndefined();
    expect(response.result.status).toBe("Failure");
    expect(response.result).toMatchObject({
      message: expect.stringMatching(/^objects\[2\] \(ProjectMembership team-a\/bad\): spec\.roles\[1\]\.temporaryMode: /) as unknown,
    });
    expect(outcome.refusedField).toBe("spec.roles[1].temporaryMode");
    expect(outcome.objects).toBe(3);
  });

  it.each([
    [
      "another group",
      review([{ ...token, apiVersion: "other.dev/v1alpha1" }]),
      "apiVersion",
      "apiVersion: must be a version of keyward.dev",
    ],
    ["a kind keyward does not serve", review([{ ...token, kind: "Widget" }]), "kind", "kind: not a kind this webhook converts"],
    ["a version keyward does not serve", review([token], "keyward.dev/v2"), "apiVersion", "AccessToken is served as v1alpha1 and v1beta1"],
    ["an object that is not one", review([token, "a string"]), "<root>", "objects[1]: must be an object"],
    ["objects that are not a list", review({} as unknown as unknown[]), "request.objects", "request.objects: must be a list"],
    ["a desired version that is not group/version", review([token], "v1beta1"), "request.desiredAPIVersion", "must be <group>/<version>"],
  ])("refuses %s, naming the field", (_what, body, field, message) => {
    const outcome = reviewConversion(body);
    expect(outcome.refusedField).toBe(field);
    expect(responseOf(outcome.body).result).toMatchObject({ status: "Failure", message: expect.stringContaining(message) as unknown });
    expect(responseOf(outcome.body).convertedObjects).toBeUndefined();
  });

  it.each([
    ["not an object", "x"],
    ["another kind", { apiVersion: "apiextensions.k8s.io/v1", kind: "AdmissionReview", request: {} }],
    ["no request", { apiVersion: "apiextensions.k8s.io/v1", kind: "ConversionReview" }],
    ["no uid", { apiVersion: "apiextensions.k8s.io/v1", kind: "ConversionReview", request: { objects: [] } }],
    ["a uid too long to be the apiserver's", review([], "keyward.dev/v1beta1", "u".repeat(129))],
  ])("answers 400 to a body that is not a review (%s)", (_what, body) => {
    const outcome = reviewConversion(body);
    expect(outcome.httpStatus).toBe(400);
    expect(outcome.objects).toBe(0);
  });

  it("bounds the refusal's message and never copies a long value whole", () => {
    const long = "x".repeat(5000);
    const outcome = reviewConversion(review([member("bad", [{ role: "a", isTemporary: true, temporaryMode: long }])]));
    const result = responseOf(outcome.body).result as { message: string };
    expect(result.message.length).toBeLessThanOrEqual(1024);
    expect(result.message).not.toContain(long);
  });
});
