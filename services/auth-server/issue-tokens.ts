// Token issuance shared by the grants: an access token (RFC 9068 JWT) and, when the client may
// refresh, an opaque refresh token `<familyId>.<secret>` whose family carries the grant.
import { issueAccessToken } from './access-token.ts';
import type { RegisteredClient } from '../../lib/config/auth-server.ts';
import type { AuthContext } from './context.ts';
import { OAuthError } from './errors.ts';
import { randomToken, sha256 } from './random.ts';
import { formatScope, releasedClaims } from './scopes.ts';
import type { AccessTokenRef } from './stores/types.ts';

/** RFC 6749 section 5.1. */
export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  scope: string;
  refresh_token?: string;
}

export interface Issued {
  readonly body: TokenResponse;
  readonly access: AccessTokenRef;
  readonly familyId?: string;
}

const REFRESH = /^([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/;

export function newRefreshToken(familyId: string = randomToken(16)): { token: string; familyId: string; hash: string } {
  const token = `${familyId}.${randomToken()}`;
  return { token, familyId, hash: sha256(token) };
}

export function parseRefreshToken(token: string): { familyId: string; hash: string } | undefined {
  const m = REFRESH.exec(token);
  return m?.[1] === undefined ? undefined : { familyId: m[1], hash: sha256(token) };
}

export async function issueAccess(ctx: AuthContext, client: RegisteredClient, user: string, scope: readonly string[], authTime: number) {
  const record = ctx.directory.user(user);
  if (record === undefined) throw new OAuthError('invalid_grant', 'the user no longer exists');
  return issueAccessToken(ctx.keys, {
    issuer: ctx.settings.issuer,
    audience: ctx.settings.audience,
    subject: user,
    clientId: client.client_id,
    scope,
    authTime,
    profile: releasedClaims(record.profile, scope),
    nowMs: ctx.now(),
    ttlSeconds: ctx.settings.accessTokenTtlSeconds,
  });
}

/** A new grant (from a code): access token plus, when allowed, the first refresh token of a new family. */
export async function issueNewGrant(ctx: AuthContext, client: RegisteredClient, user: string, scope: readonly string[], authTime: number): Promise<Issued> {
  const access = await issueAccess(ctx, client, user, scope, authTime);
  const body: TokenResponse = {
    access_token: access.token,
    token_type: 'Bearer',
    expires_in: ctx.settings.accessTokenTtlSeconds,
    scope: formatScope(scope),
  };
  const ref = { jti: access.jti, expiresAt: access.expiresAt };
  if (!client.grant_types.includes('refresh_token')) return { body, access: ref };
  const refresh = newRefreshToken();
  const now = ctx.now();
  await ctx.stores.refresh.create(
    refresh.familyId,
    refresh.hash,
    { clientId: client.client_id, user, scope: [...scope], authTime },
    now,
    ctx.settings.refreshTokenTtlSeconds * 1000,
    now + ctx.settings.refreshFamilyMaxAgeSeconds * 1000,
  );
  await ctx.stores.refresh.addAccessToken(refresh.familyId, ref);
  body.refresh_token = refresh.token;
  return { body, access: ref, familyId: refresh.familyId };
}

/** Revokes a family and puts its access tokens on the deny list (introspection reports them inactive). */
export async function revokeFamily(ctx: AuthContext, familyId: string, alsoAccess: readonly AccessTokenRef[] = []): Promise<void> {
  const jtis = [...(await ctx.stores.refresh.revoke(familyId)), ...alsoAccess];
  await denyAccessTokens(ctx, jtis);
}

export async function denyAccessTokens(ctx: AuthContext, refs: readonly AccessTokenRef[]): Promise<void> {
  const now = ctx.now();
  await Promise.all(refs.map((r) => ctx.stores.revoked.revoke(r.jti, r.expiresAt, now)));
}
