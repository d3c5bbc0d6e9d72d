import { describe, expect, it } from "vitest";
import { baseUrlAllowed, invalidBaseUrl, parseBaseUrlList } from "../../../src/lib/baseurl.ts";

describe("baseUrlAllowed", () => {
  const allowed = ["https://secrets.example.com", "https://eu.example.com/tenant-a/"];

  it("allows the same origin, and paths at or below an entry's path", () => {
    expect(baseUrlAllowed("https://secrets.example.com", allowed)).toBe(true);
    expect(baseUrlAllowed("https://secrets.example.com/", allowed)).toBe(true);
    expect(baseUrlAllowed("https://secrets.example.com/any/path", allowed)).toBe(true);
    expect(baseUrlAllowed("https://eu.example.com/tenant-a", allowed)).toBe(true);
    expect(baseUrlAllowed("https://eu.example.com/tenant-a/api", allowed)).toBe(true);
    expect(baseUrlAllowed("https://SECRETS.example.com:443", allowed)).toBe(true);
  });

  it.each([
    ["another host", "https://evil.test"],
    ["the allowed host as a prefix of another", "https://secrets.example.com.evil.test"],
    ["user info pointing elsewhere", "https://secrets.example.com@evil.test"],
    ["another scheme", "http://secrets.example.com"],
    ["another port", "https://secrets.example.com:8443"],
    ["a sibling path", "https://eu.example.com/tenant-ab"],
    ["a path that climbs out", "https://eu.example.com/tenant-a/../tenant-b"],
    ["an encoded climb", "https://eu.example.com/tenant-a/%2e%2e/tenant-b"],
    ["not a URL", "secrets.example.com"],
    ["another protocol", "file:///etc/passwd"],
  ])("refuses %s", (_what, url) => {
    expect(baseUrlAllowed(url, allowed)).toBe(false);
  });

  it("an empty list allows nothing (the caller treats empty as 'no allow-list')", () => {
    expect(baseUrlAllowed("https://secrets.example.com", [])).toBe(false);
  });
});

describe("the allow-list's entries", () => {
  it("parses a comma-separated list", () => {
    expect(parseBaseUrlList(" https://a.test , https://b.test/x,, ")).toEqual(["https://a.test", "https://b.test/x"]);
    expect(parseBaseUrlList("")).toEqual([]);
  });

  it("says why an entry is not a base URL", () => {
    expect(invalidBaseUrl("https://a.test/api")).toBeUndefined();
    expect(invalidBaseUrl("a.test")).toMatch(/not a URL/);
    expect(invalidBaseUrl("ftp://a.test")).toMatch(/not an http\(s\) URL/);
    expect(invalidBaseUrl("https://a.test/?x=1")).toMatch(/query or fragment/);
  });
});
