import { describe, expect, it } from "vitest";
import { bucketKey, createTokenBucket, sharedBucket } from "../../../src/api/ratelimit.ts";

function clock(start = 0) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe("token bucket", () => {
  it("lets a burst through, then spaces requests at the rate, in order", () => {
    const c = clock();
    const b = createTokenBucket({ requestsPerSecond: 10, burst: 3 }, c.now);
    expect([b.reserve(), b.reserve(), b.reserve()]).toEqual([0, 0, 0]);
    expect([b.reserve(), b.reserve(), b.reserve()]).toEqual([100, 200, 300]);
  });

  it("refills with time, never above burst", () => {
    const c = clock();
    const b = createTokenBucket({ requestsPerSecond: 2, burst: 2 }, c.now);
    b.reserve();
    b.reserve();
    expect(b.reserve()).toBe(500);
    c.advance(10_000);
    expect([b.reserve(), b.reserve(), b.reserve()]).toEqual([0, 0, 500]);
  });

  it("reconfigures without losing the debt of waiting callers", () => {
    const c = clock();
    const b = createTokenBucket({ requestsPerSecond: 1, burst: 1 }, c.now);
    b.reserve();
    b.configure({ requestsPerSecond: 4, burst: 1 });
    expect(b.reserve()).toBe(250);
  });

  it("rejects nonsense limits", () => {
    expect(() => createTokenBucket({ requestsPerSecond: 0, burst: 1 })).toThrow(RangeError);
    expect(() => createTokenBucket({ requestsPerSecond: 1, burst: 0 })).toThrow(RangeError);
    expect(() => createTokenBucket({ requestsPerSecond: Number.NaN, burst: 1 })).toThrow(RangeError);
  });
});

describe("shared buckets", () => {
  it("are keyed by base URL, ignoring a trailing slash", () => {
    expect(bucketKey("http://a.example:8080/x/")).toBe(bucketKey("http://a.example:8080/x"));
    expect(bucketKey("http://a.example:8080")).not.toBe(bucketKey("http://b.example:8080"));
  });

  it("are one bucket for two clients of the same URL: the second sees the first's spending", () => {
    const url = `http://shared-${Date.now()}.example`;
    const first = sharedBucket(url, { requestsPerSecond: 1, burst: 1 });
    const second = sharedBucket(`${url}/`, { requestsPerSecond: 1, burst: 1 });
    expect(second).toBe(first);
    expect(first.reserve()).toBe(0);
    expect(second.reserve()).toBeGreaterThan(0);
    const other = sharedBucket(`http://other-${Date.now()}.example`, { requestsPerSecond: 1, burst: 1 });
    expect(other.reserve()).toBe(0);
  });

  it("take the newest limit given for the URL", () => {
    const url = `http://reconf-${Date.now()}.example`;
    sharedBucket(url, { requestsPerSecond: 1, burst: 1 });
    expect(sharedBucket(url, { requestsPerSecond: 5, burst: 2 }).limit).toEqual({ requestsPerSecond: 5, burst: 2 });
  });
});
