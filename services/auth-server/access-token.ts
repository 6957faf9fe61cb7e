// Access tokens: JWTs per RFC 9068 (typ at+jwt) signed with the key ring's first key, and their
// verification for introspection and revocation (algorithm allow-list, issuer, typ, claims by zod).
import { SignJWT, jwtVerify } from 'jose';
import { z } from 'zod';
import type { ProfileClaims } from '../../lib/config/users-file.ts';
import type { KeyRing } from './key-ring.ts';
import { randomToken } from './random.ts';
import { formatScope } from './scopes.ts';

export interface AccessTokenInput {
  readonly issuer: string;
  readonly audience: string;
  readonly subject: string;
  readonly clientId: string;
  readonly scope: readonly string[];
  readonly authTime: number;
  readonly profile: Partial<ProfileClaims>;
  readonly nowMs: number;
  readonly ttlSeconds: number;
}

export interface IssuedAccessToken {
  readonly token: string;
  readonly jti: string;
  readonly expiresAt: number;
}

export async function issueAccessToken(
  keys: KeyRing,
  input: AccessTokenInput,
): Promise<IssuedAccessToken> {
  const signer = await keys.signer();
  const iat = Math.floor(input.nowMs / 1000);
  const exp = iat + input.ttlSeconds;
  const jti = randomToken(16);
  const token = await new SignJWT({
    ...input.profile,
    client_id: input.clientId,
    scope: formatScope(input.scope),
    auth_time: Math.floor(input.authTime / 1000),
  })
    .setProtectedHeader({ alg: signer.alg, kid: signer.kid, typ: 'at+jwt' })
    .setIssuer(input.issuer)
    .setSubject(input.subject)
    .setAudience(input.audience)
    .setIssuedAt(iat)
    .setNotBefore(iat)
    .setExpirationTime(exp)
    .setJti(jti)
    .sign(signer.key);
  return { token, jti, expiresAt: exp * 1000 };
}

export const accessTokenClaimsSchema = z.object({
  iss: z.string(),
  sub: z.string(),
  aud: z.union([z.string(), z.array(z.string())]),
  exp: z.number(),
  iat: z.number(),
  jti: z.string(),
  client_id: z.string(),
  scope: z.string(),
});
export type AccessTokenClaims = z.infer<typeof accessTokenClaimsSchema>;

/** Verifies one of our own access tokens; undefined when it is not one (bad signature, expired, ...). */
export async function verifyOwnAccessToken(
  keys: KeyRing,
  token: string,
  issuer: string,
  nowMs: number,
): Promise<AccessTokenClaims | undefined> {
  try {
    const { payload } = await jwtVerify(token, keys.verifierKeys(), {
      issuer,
      typ: 'at+jwt',
      algorithms: ['ES256', 'RS256'],
      currentDate: new Date(nowMs),
    });
    const parsed = accessTokenClaimsSchema.safeParse(payload);
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
