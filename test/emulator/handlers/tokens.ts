// Create-token for a machine identity: mints an opaque bearer token the emulator then accepts.
import { randomBytes, randomUUID } from "node:crypto";
import { hashToken } from "../auth.ts";
import { notFound } from "../errors.ts";
import type { HandlerContext, Route } from "../router.ts";
import type { MintedTokenRec } from "../state.ts";
import { parse } from "../schemas/parse.ts";
import { createTokenBody } from "../schemas/tokens.ts";

function createToken({ core, params, body }: HandlerContext): unknown {
  const { name } = parse(createTokenBody, body ?? {});
  const identityId = params["identityId"] ?? "";
  const identity = core.state.identities[identityId];
  if (!identity) throw notFound(`Identity with ID '${identityId}' not found`);
  const accessToken = `kwe.${randomBytes(32).toString("base64url")}`;
  const createdAt = new Date();
  const record: MintedTokenRec = {
    id: randomUUID(),
    hash: hashToken(accessToken),
    identityId,
    name: name ?? null,
    createdAt: createdAt.toISOString(),
    expiresAt: identity.accessTokenTTL > 0 ? createdAt.getTime() + identity.accessTokenTTL * 1000 : null,
  };
  core.state.tokens[record.hash] = record;
  // Every tokenData field is sent; those a fresh token-auth token has no value for are null.
  const tokenData = {
    id: record.id,
    accessTokenTTL: identity.accessTokenTTL,
    accessTokenMaxTTL: identity.accessTokenMaxTTL,
    accessTokenNumUses: 0,
    accessTokenNumUsesLimit: 0,
    accessTokenLastUsedAt: null,
    accessTokenLastRenewedAt: null,
    isAccessTokenRevoked: false,
    identityUAClientSecretId: null,
    identityId,
    createdAt: record.createdAt,
    updatedAt: record.createdAt,
    name: record.name,
    authMethod: "token-auth",
    accessTokenPeriod: 0,
  };
  // The token lives accessTokenTTL whatever the answer says (answeredExpiresIn: a seeded lie).
  const expiresIn = identity.answeredExpiresIn ?? identity.accessTokenTTL;
  return { accessToken, expiresIn, accessTokenMaxTTL: identity.accessTokenMaxTTL, tokenType: "Bearer", tokenData };
}

export const tokenRoutes: Route[] = [
  {
    method: "POST",
    path: "/api/v1/auth/token-auth/identities/:identityId/tokens",
    operation: "createIdentityToken",
    limit: "write",
    handle: createToken,
  },
];
