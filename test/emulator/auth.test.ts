import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadDefaultSeed } from "./default-seed.ts";
import { call, eventually, ids, start } from "./helpers.ts";
import type { Emulator } from "./server.ts";

type TokenReply = {
  accessToken: string;
  expiresIn: number;
  accessTokenMaxTTL: number;
  tokenType: string;
  tokenData: Record<string, unknown>;
};

let emu: Emulator;
beforeAll(async () => {
  emu = await start({
    seed: {
      ...loadDefaultSeed(),
      identities: [
        { id: ids.identity, accessTokenTTL: 7200 },
        { id: ids.shortIdentity, accessTokenTTL: 0.05 },
      ],
    },
  });
});
afterAll(() => emu.close());

describe("authentication", () => {
  it("answers 401 Token missing without a token and 403 for an unknown one", async () => {
    const missing = await call(emu, "GET", "/api/v1/projects", { token: null });
    expect(missing.status).toBe(401);
    expect(missing.body).toMatchObject({ statusCode: 401, message: "Token missing" });
    expect(Object.keys(missing.body).sort()).toEqual(["error", "message", "reqId", "statusCode"]);
    expect((await call(emu, "GET", "/api/v1/projects", { token: "not-a-token" })).status).toBe(403);
  });

  it("requires a token on the sync endpoints too", async () => {
    expect((await call(emu, "GET", `/api/v1/secret-syncs/monitoring/${ids.project}`, { token: null })).status).toBe(401);
  });

  it("answers 404 for a path no operation serves", async () => {
    expect((await call(emu, "GET", "/api/v1/nothing-here")).status).toBe(404);
    expect((await call(emu, "PUT", "/api/v1/projects")).status).toBe(404);
  });
});

describe("create token", () => {
  it("mints a bearer token the emulator accepts, with the documented response", async () => {
    const res = await call<TokenReply>(emu, "POST", `/api/v1/auth/token-auth/identities/${ids.identity}/tokens`, { body: { name: "ci" } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ expiresIn: 7200, accessTokenMaxTTL: 2592000, tokenType: "Bearer" });
    expect(res.body.tokenData).toMatchObject({
      identityId: ids.identity,
      accessTokenTTL: 7200,
      name: "ci",
      isAccessTokenRevoked: false,
      accessTokenNumUses: 0,
    });
    const listed = await call(emu, "GET", "/api/v1/projects", { token: res.body.accessToken });
    expect(listed.status).toBe(200);
  });

  it("sends every tokenData field, null where a fresh token has no value", async () => {
    const res = await call<TokenReply>(emu, "POST", `/api/v1/auth/token-auth/identities/${ids.identity}/tokens`, { body: {} });
    expect(res.body.tokenData).toMatchObject({
      name: null,
      accessTokenLastUsedAt: null,
      accessTokenLastRenewedAt: null,
      identityUAClientSecretId: null,
    });
    expect(Object.keys(res.body.tokenData).sort()).toEqual([
      "accessTokenLastRenewedAt",
      "accessTokenLastUsedAt",
      "accessTokenMaxTTL",
      "accessTokenNumUses",
      "accessTokenNumUsesLimit",
      "accessTokenPeriod",
      "accessTokenTTL",
      "authMethod",
      "createdAt",
      "id",
      "identityId",
      "identityUAClientSecretId",
      "isAccessTokenRevoked",
      "name",
      "updatedAt",
    ]);
  });

  it("accepts a request without a body; 404 for an unknown identity; 401 without a token", async () => {
    expect((await call(emu, "POST", `/api/v1/auth/token-auth/identities/${ids.identity}/tokens`)).status).toBe(200);
    expect((await call(emu, "POST", "/api/v1/auth/token-auth/identities/no-such-identity/tokens", { body: {} })).status).toBe(404);
    expect((await call(emu, "POST", `/api/v1/auth/token-auth/identities/${ids.identity}/tokens`, { token: null, body: {} })).status).toBe(
      401,
    );
  });

  it("stops accepting a token once the identity's TTL has run out (403)", async () => {
    const res = await call<TokenReply>(emu, "POST", `/api/v1/auth/token-auth/identities/${ids.shortIdentity}/tokens`, { body: {} });
    const expired = await eventually(async () => {
      const reply = await call(emu, "GET", "/api/v1/projects", { token: res.body.accessToken });
      return reply.status === 200 ? undefined : reply;
    });
    expect(expired.status).toBe(403);
    expect(expired.body).toMatchObject({ statusCode: 403, message: expect.stringMatching(/expired/) as unknown });
  });
});

describe("rate limit", () => {
  it("limits reads, writes and project creations per token and minute with Retry-After", async () => {
    const limited = await start({ rateLimit: { readsPerMinute: 2, writesPerMinute: 1, projectCreatesPerMinute: 1 } });
    try {
      for (let i = 0; i < 2; i += 1) expect((await call(limited, "GET", "/api/v1/projects")).status).toBe(200);
      const over = await call(limited, "GET", "/api/v1/projects");
      expect(over.status).toBe(429);
      expect(over.body).toMatchObject({ statusCode: 429, error: "RateLimitExceeded" });
      expect(Number(over.headers.get("retry-after"))).toBeGreaterThan(0);
      expect((await call(limited, "POST", "/api/v2/workspace", { body: { projectName: "one" } })).status).toBe(200);
      expect((await call(limited, "POST", "/api/v2/workspace", { body: { projectName: "two" } })).status).toBe(429);
      expect((await call(limited, "PATCH", "/api/v1/projects/x", { body: {} })).status).toBe(404);
      expect((await call(limited, "PATCH", "/api/v1/projects/x", { body: {} })).status).toBe(429);
    } finally {
      await limited.close();
    }
  });
});
