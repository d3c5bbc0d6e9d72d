// Machine-identity access tokens: the create-token response, and that a minted token is a
// working bearer token. The token value itself never reaches a detail message.

import type { ProbeContext } from "./context.ts";
import { compare, expectError, expectOk, field, fieldString, UNKNOWN_UUID } from "./context.ts";
import { shapeProblems, createTokenSpec } from "./shapes.ts";

const tokensPath = (identityId: string): string => `/api/v1/auth/token-auth/identities/${identityId}/tokens`;

export async function probeTokens(ctx: ProbeContext): Promise<void> {
  const identityId = ctx.fixtures.identityId;
  const name = `probe-${ctx.runId}`;
  const res = await ctx.call("POST", tokensPath(identityId), { body: { name } });
  const tokenData = field(res.body, "tokenData");
  ctx.record("token.create.shape", "create token answers accessToken, expiresIn, accessTokenMaxTTL, tokenType Bearer and tokenData", [
    ...expectOk(res),
    ...shapeProblems(res.body, createTokenSpec),
  ]);
  ctx.record("token.create.request-fields", "tokenData names the identity and carries the requested name, not revoked", [
    ...compare("tokenData.identityId", field(tokenData, "identityId"), identityId),
    ...compare("tokenData.name", field(tokenData, "name"), name),
    ...compare("tokenData.isAccessTokenRevoked", field(tokenData, "isAccessTokenRevoked"), false),
  ]);
  const minted = fieldString(res.body, "accessToken");
  if (minted === undefined || minted === "") {
    ctx.record("token.minted-works", "a minted token works as a bearer token", ["no accessToken to try"]);
  } else {
    const list = await ctx.call("GET", "/api/v1/projects", { token: minted });
    ctx.record("token.minted-works", "a minted token works as a bearer token (list projects answers 200)", expectOk(list));
  }

  const unnamed = await ctx.call("POST", tokensPath(identityId), { body: {} });
  ctx.record("token.create.name-optional", "create token without a name is accepted", [
    ...expectOk(unnamed),
    ...shapeProblems(unnamed.body, createTokenSpec),
  ]);
  const unknown = await ctx.call("POST", tokensPath(UNKNOWN_UUID), { body: { name } });
  ctx.record("token.create.unknown-identity", "create token for an unknown identity answers 404", expectError(unknown, 404));
}
