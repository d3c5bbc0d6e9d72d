// Bearer tokens: the static ones given at start, and those minted by create-token (kept as
// sha256 hashes, valid until the identity's TTL runs out).
import { createHash } from "node:crypto";
import type { Core } from "./core.ts";
import { tokenInvalid, tokenMissing } from "./errors.ts";

export function hashToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

export type AuthResult = { kind: "none" } | { kind: "valid"; token: string } | { kind: "invalid"; reason: "unknown" | "expired" };

export function readBearer(header: string | undefined): string | undefined {
  const match = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

export function authenticate(core: Core, header: string | undefined): AuthResult {
  const token = readBearer(header);
  if (token === undefined) return { kind: "none" };
  if (core.staticTokens.has(token)) return { kind: "valid", token };
  const minted = core.state.tokens[hashToken(token)];
  if (!minted) return { kind: "invalid", reason: "unknown" };
  if (minted.expiresAt !== null && Date.now() >= minted.expiresAt) return { kind: "invalid", reason: "expired" };
  return { kind: "valid", token };
}

/** Throws the service's answer to a request whose credentials do not pass. */
export function enforceAuth(result: AuthResult, anonymousAllowed: boolean): void {
  if (result.kind === "none" && !anonymousAllowed) throw tokenMissing();
  if (result.kind === "invalid") {
    throw tokenInvalid(
      result.reason === "expired"
        ? "Your token has expired. Please re-authenticate."
        : "The provided access token is invalid. Please use a valid token or generate a new one and try again.",
    );
  }
}
