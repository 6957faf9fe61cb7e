// ID tokens (OpenID Connect Core 2, 3.1.3.6, 12.2): a JWS with typ JWT from the key ring that
// signs access tokens. The typ (JWT, never at+jwt) and the audience (the client id alone, never
// the access tokens' resource audience) keep the two apart: neither validates as the other.
import { createHash } from 'node:crypto';
import { SignJWT } from 'jose';
import type { KeyRing } from './key-ring.ts';

/** Longest nonce accepted on /auth (characters): it is sealed into the interaction and stored with the code. */
export const MAX_NONCE_LENGTH = 512;

export interface IdTokenInput {
  readonly issuer: string;
  readonly subject: string;
  readonly clientId: string;
  /** Epoch ms of the user's authentication. */
  readonly authTime: number;
  /** The access token issued beside it, for at_hash. */
  readonly accessToken: string;
  /** Claims released by the granted scopes (profile, email, groups). */
  readonly claims: Record<string, unknown>;
  readonly nonce?: string;
  readonly sid?: string;
  readonly nowMs: number;
  /** Epoch s; the access token's, so the id_token never outlives it. */
  readonly expiresAt: number;
}

/**
 * at_hash (Core 3.1.3.6): the left half of the access token's hash, with the hash of the JWS
 * algorithm (SHA-256 for both ES256 and RS256), base64url.
 */
export function accessTokenHash(accessToken: string): string {
  const digest = createHash('sha256').update(accessToken, 'ascii').digest();
  return digest.subarray(0, digest.length / 2).toString('base64url');
}

export async function issueIdToken(keys: KeyRing, input: IdTokenInput): Promise<string> {
  const signer = await keys.signer();
  const iat = Math.floor(input.nowMs / 1000);
  return new SignJWT({
    ...input.claims,
    azp: input.clientId,
    auth_time: Math.floor(input.authTime / 1000),
    at_hash: accessTokenHash(input.accessToken),
    ...(input.nonce !== undefined ? { nonce: input.nonce } : {}),
    ...(input.sid !== undefined ? { sid: input.sid } : {}),
  })
    .setProtectedHeader({ alg: signer.alg, kid: signer.kid, typ: 'JWT' })
    .setIssuer(input.issuer)
    .setSubject(input.subject)
    .setAudience(input.clientId)
    .setIssuedAt(iat)
    .setExpirationTime(input.expiresAt)
    .sign(signer.key);
}
