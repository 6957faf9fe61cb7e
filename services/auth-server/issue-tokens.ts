// Token issuance shared by the grants: an access token (RFC 9068 JWT), an id_token when `openid`
// is granted (OpenID Connect Core 3.1.3.3, 12.2) and, when the client may refresh, an opaque
// refresh token `<familyId>.<secret>` whose family carries the grant.
import { issueAccessToken } from './access-token.ts';
import { issueIdToken } from './id-token.ts';
import type { RegisteredClient } from '../../lib/config/client-registry.ts';
import type { AuthContext } from './context.ts';
import { OAuthError } from './errors.ts';
import { randomToken, sha256 } from './random.ts';
import { OFFLINE_ACCESS, OPENID, formatScope, userClaims } from './scopes.ts';
import type { AccessTokenRef } from './stores/types.ts';

/** RFC 6749 section 5.1. */
export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  scope: string;
  refresh_token?: string;
  id_token?: string;
}

export interface Issued {
  readonly body: TokenResponse;
  readonly access: AccessTokenRef;
  readonly familyId?: string;
}

const REFRESH = /^([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/;

export function newRefreshToken(familyId: string = randomToken(16)): {
  token: string;
  familyId: string;
  hash: string;
} {
  const token = `${familyId}.${randomToken()}`;
  return { token, familyId, hash: sha256(token) };
}

export function parseRefreshToken(token: string): { familyId: string; hash: string } | undefined {
  const m = REFRESH.exec(token);
  return m?.[1] === undefined ? undefined : { familyId: m[1], hash: sha256(token) };
}

/** What one authorization granted: who, which scopes, when they authenticated (epoch ms). */
export interface GrantFacts {
  readonly user: string;
  readonly scope: readonly string[];
  readonly authTime: number;
  /** The authorization request's nonce (code exchange only; Core 12.2 leaves it out on refresh). */
  readonly nonce?: string;
}

/**
 * A refresh token goes to a client registered for the grant; with `openid`, only when
 * `offline_access` was granted too (Core 11). A plain OAuth request keeps the registration rule.
 */
export function mayRefresh(client: RegisteredClient, scope: readonly string[]): boolean {
  if (!client.grant_types.includes('refresh_token')) return false;
  return !scope.includes(OPENID) || scope.includes(OFFLINE_ACCESS);
}

/** The access token and, when `openid` is granted, the id_token: the token response minus refresh_token. */
export async function issueTokens(
  ctx: AuthContext,
  client: RegisteredClient,
  grant: GrantFacts,
): Promise<{ body: TokenResponse; access: AccessTokenRef }> {
  const record = ctx.directory.user(grant.user);
  if (record === undefined) throw new OAuthError('invalid_grant', 'the user no longer exists');
  const claims = userClaims(record, grant.scope);
  const nowMs = ctx.now();
  const access = await issueAccessToken(ctx.keys, {
    issuer: ctx.settings.issuer,
    audience: ctx.settings.audience,
    subject: grant.user,
    clientId: client.client_id,
    scope: grant.scope,
    authTime: grant.authTime,
    profile: claims,
    nowMs,
    ttlSeconds: ctx.settings.accessTokenTtlSeconds,
  });
  const body: TokenResponse = {
    access_token: access.token,
    token_type: 'Bearer',
    expires_in: ctx.settings.accessTokenTtlSeconds,
    scope: formatScope(grant.scope),
  };
  if (grant.scope.includes(OPENID)) {
    body.id_token = await issueIdToken(ctx.keys, {
      issuer: ctx.settings.issuer,
      subject: grant.user,
      clientId: client.client_id,
      authTime: grant.authTime,
      accessToken: access.token,
      claims,
      ...(grant.nonce !== undefined ? { nonce: grant.nonce } : {}),
      nowMs,
      expiresAt: access.expiresAt / 1000,
    });
  }
  return { body, access: { jti: access.jti, expiresAt: access.expiresAt } };
}

/** A new grant (from a code): access token, id_token with openid, and when allowed the first refresh token of a new family. */
export async function issueNewGrant(
  ctx: AuthContext,
  client: RegisteredClient,
  grant: GrantFacts,
): Promise<Issued> {
  const { user, scope, authTime } = grant;
  const { body, access: ref } = await issueTokens(ctx, client, grant);
  if (!mayRefresh(client, scope)) return { body, access: ref };
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
export async function revokeFamily(
  ctx: AuthContext,
  familyId: string,
  alsoAccess: readonly AccessTokenRef[] = [],
): Promise<void> {
  const jtis = [...(await ctx.stores.refresh.revoke(familyId)), ...alsoAccess];
  await denyAccessTokens(ctx, jtis);
}

export async function denyAccessTokens(
  ctx: AuthContext,
  refs: readonly AccessTokenRef[],
): Promise<void> {
  const now = ctx.now();
  await Promise.all(refs.map((r) => ctx.stores.revoked.revoke(r.jti, r.expiresAt, now)));
}
