import { describe, expect, it } from "vitest";
import {
  bucketFor,
  bucketKey,
  bucketsHeld,
  createTokenBucket,
  credentialKey,
  holdOffCredential,
  MAX_HOLD_OFF_MS,
  sweepIdleBuckets,
} from "../../../src/api/ratelimit.ts";

function clock(start = 0) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe("token bucket", () => {
  it("lets a burst through, then turns callers away with their turn, one interval apart, taking nothing", () => {
    const c = clock();
    const b = createTokenBucket({ requestsPerSecond: 10, burst: 3 }, c.now);
    expect([b.take(), b.take(), b.take()]).toEqual([0, 0, 0]);
    // Nobody waits: each is told when to come back, and the turns are spread so they do not return at once.
    expect([b.take(), b.take(), b.take()]).toEqual([100, 200, 300]);
    // Coming back at its turn, the first finds its token (turning away consumed none).
    c.advance(100);
    expect(b.take()).toBe(0);
    c.advance(100);
    expect(b.take()).toBe(0);
  });

  it("refills with time, never above burst", () => {
    const c = clock();
    const b = createTokenBucket({ requestsPerSecond: 2, burst: 2 }, c.now);
    b.take();
    b.take();
    expect(b.take()).toBe(500);
    c.advance(10_000);
    expect([b.take(), b.take(), b.take()]).toEqual([0, 0, 500]);
  });

  it("a Retry-After holds every caller off until it has passed, however many tokens are left", () => {
    const c = clock();
    const b = createTokenBucket({ requestsPerSecond: 10, burst: 5 }, c.now);
    b.holdOff(2_000);
    expect(b.take()).toBe(2_000);
    expect(b.take()).toBe(2_100);
    c.advance(2_000);
    expect(b.take()).toBe(0);
  });

  it("a Retry-After of garbage size cannot park the credential for ever", () => {
    const c = clock();
    const b = createTokenBucket({ requestsPerSecond: 10, burst: 5 }, c.now);
    b.holdOff(Number.POSITIVE_INFINITY);
    b.holdOff(Number.NaN);
    b.holdOff(-5);
    expect(b.take()).toBe(0);
    b.holdOff(1e15);
    expect(b.take()).toBe(MAX_HOLD_OFF_MS);
  });

  it("is idle once full and not held off (dropping it then loses nothing)", () => {
    const c = clock();
    const b = createTokenBucket({ requestsPerSecond: 10, burst: 2 }, c.now);
    expect(b.idle()).toBe(true);
    b.take();
    expect(b.idle()).toBe(false);
    c.advance(100);
    expect(b.idle()).toBe(true);
    b.holdOff(50);
    expect(b.idle()).toBe(false);
  });

  it("rejects nonsense limits", () => {
    expect(() => createTokenBucket({ requestsPerSecond: 0, burst: 1 })).toThrow(RangeError);
    expect(() => createTokenBucket({ requestsPerSecond: 1, burst: 0 })).toThrow(RangeError);
    expect(() => createTokenBucket({ requestsPerSecond: Number.NaN, burst: 1 })).toThrow(RangeError);
  });
});

describe("buckets per credential", () => {
  it("base URLs are normalised, ignoring a trailing slash", () => {
    expect(bucketKey("http://a.example:8080/x/")).toBe(bucketKey("http://a.example:8080/x"));
    expect(bucketKey("http://a.example:8080")).not.toBe(bucketKey("http://b.example:8080"));
  });

  it("a credential is a hash of base URL and token, never the token in clear", () => {
    const token = "kw-secret-token-value-0123456789";
    const key = credentialKey("http://svc.example/", token);
    expect(key).not.toContain(token);
    expect(key).not.toContain("kw-secret");
    expect(key).toBe(credentialKey("http://svc.example", token));
    expect(key).not.toBe(credentialKey("http://svc.example", `${token}x`));
    expect(key).not.toBe(credentialKey("http://other.example", token));
  });

  it("two clients of one credential and limit share a bucket: the second sees the first's spending", () => {
    const url = `http://shared-${Date.now()}.example`;
    const limit = { requestsPerSecond: 1, burst: 1 };
    const cred = credentialKey(url, "token-a");
    expect(bucketFor(cred, limit).take()).toBe(0);
    expect(bucketFor(credentialKey(`${url}/`, "token-a"), limit).take()).toBeGreaterThan(0);
    // Another token at the same URL is another budget at the service, and here.
    expect(bucketFor(credentialKey(url, "token-b"), limit).take()).toBe(0);
  });

  it("two namespaces with the same base URL and different limits each keep their own: neither reconfigures the other", () => {
    const url = `http://two-ns-${Date.now()}.example`;
    const c = clock();
    const a = { cred: credentialKey(url, "token-of-namespace-a"), limit: { requestsPerSecond: 1, burst: 1 } };
    const b = { cred: credentialKey(url, "token-of-namespace-b"), limit: { requestsPerSecond: 100, burst: 50 } };
    expect(bucketFor(a.cred, a.limit, c.now).take()).toBe(0);
    // B is seen later, with a generous limit: A's bucket keeps A's.
    for (let i = 0; i < 50; i++) expect(bucketFor(b.cred, b.limit, c.now).take()).toBe(0);
    expect(bucketFor(a.cred, a.limit, c.now).limit).toEqual({ requestsPerSecond: 1, burst: 1 });
    expect(bucketFor(a.cred, a.limit, c.now).take()).toBe(1000);
    expect(bucketFor(b.cred, b.limit, c.now).limit).toEqual({ requestsPerSecond: 100, burst: 50 });
    expect(bucketFor(b.cred, b.limit, c.now).take()).toBe(10);
  });

  it("even one token in two configs with different limits: neither config's limit changes the other's bucket", () => {
    const url = `http://same-token-${Date.now()}.example`;
    const c = clock();
    const cred = credentialKey(url, "shared-token");
    bucketFor(cred, { requestsPerSecond: 1, burst: 1 }, c.now).take();
    bucketFor(cred, { requestsPerSecond: 1000, burst: 1000 }, c.now).take();
    expect(bucketFor(cred, { requestsPerSecond: 1, burst: 1 }, c.now).limit).toEqual({ requestsPerSecond: 1, burst: 1 });
    expect(bucketFor(cred, { requestsPerSecond: 1, burst: 1 }, c.now).take()).toBe(1000);
  });

  it("the service's Retry-After holds off the whole credential: every bucket of its token, whatever the limit, and no other token", () => {
    const url = `http://held-${Date.now()}.example`;
    const c = clock();
    const cred = credentialKey(url, "token-429");
    const other = credentialKey(url, "token-fine");
    const slow = { requestsPerSecond: 1, burst: 5 };
    const fast = { requestsPerSecond: 100, burst: 5 };
    bucketFor(cred, slow, c.now);
    bucketFor(cred, fast, c.now);
    bucketFor(other, fast, c.now);
    holdOffCredential(cred, 30_000);
    expect(bucketFor(cred, slow, c.now).take()).toBe(30_000);
    expect(bucketFor(cred, fast, c.now).take()).toBe(30_000);
    expect(bucketFor(other, fast, c.now).take()).toBe(0);
    c.advance(30_000);
    expect(bucketFor(cred, fast, c.now).take()).toBe(0);
  });

  it("idle buckets are dropped (rotated tokens leave nothing behind)", () => {
    const c = clock();
    const url = `http://rotating-${Date.now()}.example`;
    const before = bucketsHeld();
    for (let i = 0; i < 20; i++) bucketFor(credentialKey(url, `token-${i}`), { requestsPerSecond: 10, burst: 1 }, c.now).take();
    expect(bucketsHeld()).toBeGreaterThanOrEqual(before + 20);
    c.advance(60_000);
    // The sweep (run every so many lookups) drops the buckets that are full again.
    sweepIdleBuckets();
    expect(bucketsHeld()).toBeLessThanOrEqual(before);
  });
});
