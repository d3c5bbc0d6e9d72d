import { z } from "zod";
import { optionalBoolean, optionalNumber, optionalString } from "./common.ts";

export const tokenDataSchema = z.looseObject({
  id: z.string(),
  accessTokenTTL: optionalNumber(),
  accessTokenMaxTTL: optionalNumber(),
  accessTokenNumUses: optionalNumber(),
  accessTokenNumUsesLimit: optionalNumber(),
  accessTokenLastUsedAt: optionalString(),
  accessTokenLastRenewedAt: optionalString(),
  isAccessTokenRevoked: optionalBoolean(),
  identityUAClientSecretId: optionalString(),
  identityId: optionalString(),
  createdAt: optionalString(),
  updatedAt: optionalString(),
  name: optionalString(),
  authMethod: optionalString(),
  accessTokenPeriod: optionalNumber(),
});
export type TokenData = z.infer<typeof tokenDataSchema>;

/** The create-token response. `accessToken` is a credential: never log this object. */
export const createTokenResponseSchema = z.looseObject({
  accessToken: z.string(),
  expiresIn: z.number(),
  accessTokenMaxTTL: z.number(),
  tokenType: z.literal("Bearer"),
  tokenData: tokenDataSchema,
});
export type CreateTokenResponse = z.infer<typeof createTokenResponseSchema>;

export const createTokenBodySchema = z.object({ name: z.string().optional() });
export type CreateTokenBody = z.input<typeof createTokenBodySchema>;
