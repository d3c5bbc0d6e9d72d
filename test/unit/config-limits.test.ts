// The admin's limits on what a tenant can hold: the ceiling on every provider config's request
// timeout, and the cap on the workers one namespace holds.
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.ts";
import { requestTimeoutMs } from "../../src/resources/provider/connector.ts";
import { timeoutNote } from "../../src/resources/provider/connection-check.ts";

describe("--max-request-timeout", () => {
  it("defaults to 30 s, reads MAX_REQUEST_TIMEOUT and lets the flag win", () => {
    expect(loadConfig([], {}).maxRequestTimeout).toBe(30_000);
    expect(loadConfig([], { MAX_REQUEST_TIMEOUT: "2m" }).maxRequestTimeout).toBe(120_000);
    expect(loadConfig(["--max-request-timeout", "5s"], { MAX_REQUEST_TIMEOUT: "2m" }).maxRequestTimeout).toBe(5_000);
  });

  it("is between 1 s and the CRD's own limit of 300 s, and a bad one names the setting", () => {
    expect(loadConfig(["--max-request-timeout", "300s"], {}).maxRequestTimeout).toBe(300_000);
    for (const bad of ["301s", "500ms", "soon"]) {
      expect(() => loadConfig(["--max-request-timeout", bad], {})).toThrow(/--max-request-timeout \/ MAX_REQUEST_TIMEOUT/);
    }
  });

  it("caps a provider config's timeoutSeconds, its default of 10 s included, and never raises one", () => {
    expect(requestTimeoutMs({ timeoutSeconds: 300 }, 30_000)).toBe(30_000);
    expect(requestTimeoutMs({ timeoutSeconds: 5 }, 30_000)).toBe(5_000);
    expect(requestTimeoutMs({}, 30_000)).toBe(10_000);
    expect(requestTimeoutMs({}, 2_000)).toBe(2_000);
    expect(requestTimeoutMs({ timeoutSeconds: 300 })).toBe(300_000);
  });

  it("the Ready message says when the ceiling cut the timeout asked for, and nothing when it did not", () => {
    expect(timeoutNote({ timeoutSeconds: 300 }, 30_000)).toBe(
      "; requests time out after 30 s, not the 300 s asked (capped by keyward's --max-request-timeout)",
    );
    expect(timeoutNote({}, 2_000)).toContain("after 2 s, not the 10 s asked");
    expect(timeoutNote({ timeoutSeconds: 20 }, 20_000)).toBe("");
    expect(timeoutNote(undefined, 10_000)).toBe("");
  });
});

describe("--max-in-flight-per-namespace", () => {
  it("is absent by default (the operator's default applies), 0 for no cap, and never negative", () => {
    expect(loadConfig([], {}).maxInFlightPerNamespace).toBeUndefined();
    expect(loadConfig([], { MAX_IN_FLIGHT_PER_NAMESPACE: "3" }).maxInFlightPerNamespace).toBe(3);
    expect(loadConfig(["--max-in-flight-per-namespace", "0"], {}).maxInFlightPerNamespace).toBe(0);
    expect(() => loadConfig(["--max-in-flight-per-namespace=-1"], {})).toThrow(
      /--max-in-flight-per-namespace \/ MAX_IN_FLIGHT_PER_NAMESPACE/,
    );
  });
});
