// AccessToken's pure parts: the Secret's data hash and the decision observe takes from a Secret
// and the recorded status (durations and the renewal schedule: provider/token-schedule.test.ts).
import { describe, expect, it } from "vitest";
import {
  ANNOTATION_DATA_HASH,
  assess,
  dataHash,
  defaultSecretKeys,
  secretKeysOf,
  secretWatch,
  specSchema,
  type AccessTokenSpec,
  type AccessTokenStatus,
  type SecretObject,
} from "../../../src/resources/accesstoken.ts";
import { API_VERSION, type KubeObject } from "../../../src/engine/types.ts";

const UID = "0b7e6a52-6a3f-4b8e-9d5c-1f2e3d4c5b6a";
const IDENTITY = "a1b2c3d4-0003-4a00-8000-000000000002";
const TOKEN = "kwe.unit-test-token-value";
const b64 = (s: string): string => Buffer.from(s).toString("base64");

const spec: AccessTokenSpec = { identityId: IDENTITY, secretName: "api-token" };

function secretWith(data: Record<string, string>, opts: { uid?: string; hash?: string; owner?: string } = {}): SecretObject {
  const hash = opts.hash ?? dataHash(UID, data, defaultSecretKeys);
  return {
    metadata: {
      name: "api-token",
      namespace: "ns",
      annotations: { [ANNOTATION_DATA_HASH]: hash },
      ownerReferences: [{ apiVersion: API_VERSION, kind: "AccessToken", name: opts.owner ?? "t", uid: opts.uid ?? UID, controller: true }],
    },
    data,
  };
}

const written = { token: b64(TOKEN), tokenType: b64("Bearer"), expiresAt: b64("2030-01-01T02:00:00Z") };
const recorded: Partial<AccessTokenStatus> = {
  tokenId: "tok-1",
  identityId: IDENTITY,
  tokenName: "",
  secretName: "api-token",
  lastIssuedAt: "2030-01-01T00:00:00Z",
  expiresAt: "2030-01-01T02:00:00Z",
  secretDataHash: dataHash(UID, written, defaultSecretKeys),
};
const at = (iso: string): Date => new Date(iso);

describe("renewBefore", () => {
  it("takes Go-style durations only (parseGoDuration: test/unit/lib/duration.test.ts)", () => {
    expect(specSchema.safeParse({ ...spec, renewBefore: "1h30m" }).success).toBe(true);
    for (const text of ["10", "1d", "5 minutes"]) expect(specSchema.safeParse({ ...spec, renewBefore: text }).success, text).toBe(false);
  });
});

describe("secretKeysOf", () => {
  it("fills in the defaults", () => {
    expect(secretKeysOf({ secretKeys: { token: "access_token" } })).toEqual({
      token: "access_token",
      tokenType: "tokenType",
      expiresAt: "expiresAt",
    });
  });

  it("refuses two keys with one name", () => {
    expect(() => secretKeysOf({ secretKeys: { token: "expiresAt" } })).toThrow(/must differ/);
  });
});

describe("dataHash", () => {
  const base = dataHash(UID, written, defaultSecretKeys);

  it("changes with any written value and with the owner", () => {
    expect(dataHash(UID, { ...written, token: b64("other") }, defaultSecretKeys)).not.toBe(base);
    expect(dataHash(UID, { ...written, expiresAt: b64("2031-01-01T00:00:00Z") }, defaultSecretKeys)).not.toBe(base);
    expect(dataHash("another-uid", written, defaultSecretKeys)).not.toBe(base);
  });

  it("ignores keys keyward does not write", () => {
    expect(dataHash(UID, { ...written, extra: b64("x") }, defaultSecretKeys)).toBe(base);
  });

  it("does not contain the token in any encoding", () => {
    expect(base).not.toContain(TOKEN);
    expect(base).not.toContain(b64(TOKEN));
  });
});

describe("assess", () => {
  const now = at("2030-01-01T00:30:00Z");
  const run = (secret: SecretObject | undefined, status = recorded, s = spec, when = now) =>
    assess({ secret, ownerUid: UID, ownerName: "t", spec: s, status, now: when });

  it("missing Secret", () => expect(run(undefined).kind).toBe("missing"));

  it("a Secret an earlier copy of this AccessToken controlled (a restore: another UID) is taken over and issued again", () => {
    const restored = secretWith(written, { uid: "uid-before-the-restore" });
    expect(run(restored, {})).toMatchObject({ kind: "reissue", reason: "Unrecorded" });
  });

  it("a token Secret no controller owns (a Velero restore drops ownerReferences) is taken over and issued again", () => {
    const { ownerReferences: _dropped, ...kept } = secretWith(written, { uid: "uid-before-the-restore" }).metadata;
    const metadata = { ...kept, labels: { "keyward.dev/owner-kind": "AccessToken", "app.kubernetes.io/managed-by": "keyward" } };
    const restored: SecretObject = { metadata, data: written };
    expect(run(restored, {})).toMatchObject({ kind: "reissue", reason: "Unrecorded" });
    // A non-controller reference (another tool's) does not make it owned.
    const referenced = {
      ...restored,
      metadata: { ...metadata, ownerReferences: [{ apiVersion: "v1", kind: "ConfigMap", name: "x", uid: "u" }] },
    };
    expect(run(referenced, {})).toMatchObject({ kind: "reissue", reason: "Unrecorded" });
    // Without keyward's labels it is someone's own Secret of that name.
    expect(run({ ...restored, metadata: { ...metadata, labels: {} } }, {}).kind).toBe("conflict");
    // Written for another AccessToken of the namespace: never taken; for this one: taken.
    const forOther = {
      ...restored,
      metadata: { ...metadata, annotations: { ...metadata.annotations, "keyward.dev/access-token": "other" } },
    };
    expect(run(forOther, {}).kind).toBe("conflict");
    const forThis = { ...restored, metadata: { ...metadata, annotations: { ...metadata.annotations, "keyward.dev/access-token": "t" } } };
    expect(run(forThis, {})).toMatchObject({ kind: "reissue" });
  });

  it("an intact Secret whose owner reference was removed by hand is issued again, which makes it controlled again", () => {
    const { ownerReferences: _dropped, ...kept } = secretWith(written).metadata;
    const metadata = { ...kept, labels: { "keyward.dev/owner-kind": "AccessToken", "app.kubernetes.io/managed-by": "keyward" } };
    expect(run({ metadata, data: written })).toMatchObject({ kind: "reissue", reason: "Unrecorded" });
    expect(run(secretWith(written)).kind).toBe("valid");
  });

  it("a Secret controlled by someone else is a conflict", () => {
    expect(run(secretWith(written, { uid: "someone-else", owner: "other" })).kind).toBe("conflict");
    const unowned: SecretObject = { metadata: { name: "api-token", namespace: "ns" }, data: written };
    expect(run(unowned).kind).toBe("conflict");
  });

  it("an intact Secret before renewal is valid, with the schedule", () => {
    const v = run(secretWith(written));
    expect(v).toEqual({ kind: "valid", plan: { renewAt: at("2030-01-01T01:20:00Z"), clamped: false } });
  });

  it("renewal is due at expiry minus renewBefore", () => {
    expect(run(secretWith(written), recorded, spec, at("2030-01-01T01:19:59Z")).kind).toBe("valid");
    expect(run(secretWith(written), recorded, spec, at("2030-01-01T01:20:00Z"))).toMatchObject({ kind: "reissue", reason: "RenewalDue" });
    // A longer renewBefore makes it due sooner.
    expect(run(secretWith(written), recorded, spec, at("2030-01-01T01:05:00Z")).kind).toBe("valid");
    expect(run(secretWith(written), recorded, { ...spec, renewBefore: "1h" }, at("2030-01-01T01:05:00Z"))).toMatchObject({
      kind: "reissue",
      reason: "RenewalDue",
    });
  });

  it("edited data is detected by the hash", () => {
    const edited = secretWith({ ...written, token: b64("pasted-by-hand") }, { hash: recorded.secretDataHash! });
    expect(run(edited)).toMatchObject({ kind: "reissue", reason: "SecretEdited" });
  });

  it("data and annotation edited together still differ from status", () => {
    expect(run(secretWith({ ...written, token: b64("pasted-by-hand") }))).toMatchObject({ kind: "reissue", reason: "SecretEdited" });
  });

  it("an edited annotation is an edit", () => {
    expect(run(secretWith(written, { hash: "sha256:0000" }))).toMatchObject({ kind: "reissue", reason: "SecretEdited" });
  });

  it("renamed keys no longer hold what was written", () => {
    expect(run(secretWith(written), recorded, { ...spec, secretKeys: { token: "access_token" } })).toMatchObject({
      kind: "reissue",
      reason: "SecretEdited",
    });
  });

  it("another identity or token name is a spec change", () => {
    expect(run(secretWith(written), recorded, { ...spec, identityId: "a1b2c3d4-0003-4a00-8000-000000000001" })).toMatchObject({
      reason: "SpecChanged",
    });
    expect(run(secretWith(written), recorded, { ...spec, name: "renamed" })).toMatchObject({ reason: "SpecChanged" });
  });

  it("an owned Secret with no record in status is re-issued", () => {
    expect(run(secretWith(written), {})).toMatchObject({ kind: "reissue", reason: "Unrecorded" });
  });
});

describe("secretWatch", () => {
  const secret = (refs: NonNullable<KubeObject["metadata"]["ownerReferences"]>): KubeObject => ({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "s", namespace: "ns", ownerReferences: refs },
    spec: {},
  });

  it("maps a Secret to the AccessToken controlling it", () => {
    expect(
      secretWatch.mapToKeys(secret([{ apiVersion: API_VERSION, kind: "AccessToken", name: "tok", uid: UID, controller: true }])),
    ).toEqual([{ namespace: "ns", name: "tok" }]);
  });

  it("ignores other owners", () => {
    expect(secretWatch.mapToKeys(secret([{ apiVersion: "apps/v1", kind: "Deployment", name: "d", uid: UID, controller: true }]))).toEqual(
      [],
    );
    expect(secretWatch.mapToKeys(secret([{ apiVersion: API_VERSION, kind: "AccessToken", name: "tok", uid: UID }]))).toEqual([]);
  });
});
