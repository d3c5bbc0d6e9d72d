import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.ts";

describe("configuration", () => {
  it("has production defaults", () => {
    const c = loadConfig([], {});
    expect(c).toMatchObject({
      namespaces: [],
      concurrency: 4,
      resyncInterval: 600_000,
      metricsPort: 8080,
      healthPort: 8081,
      leaderElect: false,
      logLevel: "info",
    });
  });

  it("reads the environment and lets flags win", () => {
    const c = loadConfig(["--concurrency", "9", "--resync-interval", "45s"], {
      CONCURRENCY: "2",
      WATCH_NAMESPACES: "a, b,,c",
      LEADER_ELECT: "true",
      RESYNC_INTERVAL: "1h",
    });
    expect(c.concurrency).toBe(9);
    expect(c.resyncInterval).toBe(45_000);
    expect(c.namespaces).toEqual(["a", "b", "c"]);
    expect(c.leaderElect).toBe(true);
  });

  it("names every bad setting in one clear error", () => {
    expect(() => loadConfig(["--concurrency", "0"], { RESYNC_INTERVAL: "soon", LOG_LEVEL: "loud" })).toThrow(
      /--concurrency \/ CONCURRENCY[\s\S]*--resync-interval \/ RESYNC_INTERVAL: "soon" is not a duration[\s\S]*--log-level \/ LOG_LEVEL/,
    );
  });

  it("reads the base-URL allow-list and names a bad entry", () => {
    expect(loadConfig([], {}).allowedBaseUrls).toEqual([]);
    expect(loadConfig(["--allowed-base-urls", "https://a.test, https://b.test/api"], {}).allowedBaseUrls).toEqual([
      "https://a.test",
      "https://b.test/api",
    ]);
    expect(() => loadConfig([], { ALLOWED_BASE_URLS: "https://a.test,a.test" })).toThrow(
      /--allowed-base-urls \/ ALLOWED_BASE_URLS: "a.test" is not a URL/,
    );
    // `*` alone opens every URL; beside URLs it is a mistake.
    expect(loadConfig(["--allowed-base-urls", "*"], {}).allowedBaseUrls).toEqual(["*"]);
    expect(() => loadConfig(["--allowed-base-urls", "*,https://a.test"], {})).toThrow(/--allowed-base-urls \/ ALLOWED_BASE_URLS: "\*"/);
  });

  it("reads the AccessToken namespaces (default: every watched namespace)", () => {
    expect(loadConfig([], {}).accessTokenNamespaces).toEqual([]);
    expect(loadConfig([], { ACCESS_TOKEN_NAMESPACES: "a, b" }).accessTokenNamespaces).toEqual(["a", "b"]);
  });

  it("reads the response size limit (default 16 MiB) in bytes or with a binary suffix", () => {
    expect(loadConfig([], {}).maxResponseBytes).toBe(16 * 1024 * 1024);
    expect(loadConfig(["--max-response-bytes", "512Ki"], { MAX_RESPONSE_BYTES: "1Gi" }).maxResponseBytes).toBe(512 * 1024);
    expect(loadConfig([], { MAX_RESPONSE_BYTES: "1048576" }).maxResponseBytes).toBe(1_048_576);
    expect(() => loadConfig([], { MAX_RESPONSE_BYTES: "4MB" })).toThrow(/--max-response-bytes \/ MAX_RESPONSE_BYTES: "4MB" is not a size/);
    expect(() => loadConfig([], { MAX_RESPONSE_BYTES: "10" })).toThrow(/--max-response-bytes/);
  });

  it("reads the apiserver request and exec plugin timeouts (default 30 s each)", () => {
    expect(loadConfig([], {}).kubeRequestTimeout).toBe(30_000);
    expect(loadConfig(["--kube-request-timeout", "5s"], { KUBE_REQUEST_TIMEOUT: "1m" }).kubeRequestTimeout).toBe(5_000);
    expect(() => loadConfig([], { KUBE_REQUEST_TIMEOUT: "10ms" })).toThrow(/--kube-request-timeout \/ KUBE_REQUEST_TIMEOUT/);
    expect(loadConfig([], {}).execPluginTimeout).toBe(30_000);
    expect(loadConfig([], { EXEC_PLUGIN_TIMEOUT: "2m" }).execPluginTimeout).toBe(120_000);
  });

  it("reviews /metrics callers by default, or serves /metrics on localhost only on a port of its own", () => {
    expect(loadConfig([], {}).metricsAuth).toBe("kubernetes");
    expect(loadConfig(["--metrics-auth", "localhost"], { METRICS_AUTH: "kubernetes" }).metricsAuth).toBe("localhost");
    expect(() => loadConfig([], { METRICS_AUTH: "none" })).toThrow(/--metrics-auth \/ METRICS_AUTH/);
    expect(() => loadConfig(["--metrics-auth", "localhost", "--metrics-port", "9000", "--health-port", "9000"], {})).toThrow(
      /--metrics-auth \/ METRICS_AUTH: localhost serves \/metrics on 127\.0\.0\.1 only/,
    );
    // One port for both is fine when callers are reviewed: the probes need no token.
    expect(loadConfig(["--metrics-port", "9000", "--health-port", "9000"], {}).metricsAuth).toBe("kubernetes");
  });

  it("checks the leader election times at start and names the setting to change", () => {
    expect(loadConfig(["--lease-duration", "30s", "--renew-deadline", "20s", "--retry-period", "5s"], {})).toMatchObject({
      leaseDuration: 30_000,
      renewDeadline: 20_000,
      retryPeriod: 5_000,
    });
    expect(() => loadConfig(["--renew-deadline", "15s"], {})).toThrow(
      /--renew-deadline \/ RENEW_DEADLINE: renew deadline 15s must be below the lease duration 15s/,
    );
    expect(() => loadConfig([], { RETRY_PERIOD: "10s" })).toThrow(
      /--retry-period \/ RETRY_PERIOD: retry period 10s must be below the renew deadline 10s/,
    );
  });

  it("reads the Deployment `keyward uninstall` stops first, as namespace/name", () => {
    expect(loadConfig([], {}).stopDeployment).toBeUndefined();
    expect(loadConfig([], { STOP_DEPLOYMENT: "keyward-system/kw-keyward" }).stopDeployment).toEqual({
      namespace: "keyward-system",
      name: "kw-keyward",
    });
    expect(() => loadConfig(["--stop-deployment", "kw-keyward"], {})).toThrow(
      /--stop-deployment \/ STOP_DEPLOYMENT: "kw-keyward" is not namespace\/name/,
    );
  });

  it("rejects unknown flags", () => {
    expect(() => loadConfig(["--no-such-flag", "1"], {})).toThrow(/no-such-flag/);
  });

  it("reads durations in the flag format (test/unit/lib/duration.test.ts has the format itself)", () => {
    expect(loadConfig(["--resync-interval", "1.5m"], {}).resyncInterval).toBe(90_000);
    expect(() => loadConfig(["--resync-interval", "10 minutes"], {})).toThrow(/"10 minutes" is not a duration/);
  });
});
