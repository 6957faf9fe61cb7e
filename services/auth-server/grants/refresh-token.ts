// grant_type=refresh_token (RFC 6749 6, RFC 9700 4.14): rotation on every use; presenting an
// already-rotated token revokes the whole family (and its access tokens), except the token rotated
// away last within the reuse grace window (AUTH_REFRESH_REUSE_GRACE_SECONDS): a client whose
// replicas refreshed at once gets the same successor again. With `openid` in the
// scope a new id_token comes along (OpenID Connect Core 12.2: same auth_time, no nonce).
import { OAuthError } from '../errors.ts';
import {
  denyAccessTokens,
  issueTokens,
  newRefreshToken,
  parseRefreshToken,
} from '../issue-tokens.ts';
import { single } from '../params.ts';
import { REFRESH_TOKEN_CTY, seal, unseal } from '../sealed-token.ts';
import { parseScope } from '../scopes.ts';
import type { Grant } from './types.ts';

export const refreshTokenGrant: Grant = {
  registeredAs: 'refresh_token',
  async handle(ctx, client, params, log) {
    const tokenParam = single(params, 'refresh_token');
    if (tokenParam.kind !== 'value')
      throw new OAuthError(
        'invalid_request',
        tokenParam.kind === 'repeated' ? 'refresh_token repeated' : 'refresh_token is required',
      );
    const scopeParam = single(params, 'scope');
    if (scopeParam.kind === 'repeated') throw new OAuthError('invalid_request', 'scope repeated');
    const parsed = parseRefreshToken(tokenParam.value);
    if (parsed === undefined) throw new OAuthError('invalid_grant', 'the refresh token is invalid');

    const now = ctx.now();
    // Check the owner before rotating: another client's attempt must not advance the family.
    const family = await ctx.stores.refresh.inspect(parsed.familyId, parsed.hash, now);
    if (family === undefined || family.grant.clientId !== client.client_id)
      throw new OAuthError('invalid_grant', 'the refresh token is invalid');

    let scope = family.grant.scope;
    if (scopeParam.kind === 'value') {
      const asked = parseScope(scopeParam.value);
      if (
        asked === undefined ||
        asked.length === 0 ||
        asked.some((s) => !family.grant.scope.includes(s))
      ) {
        throw new OAuthError('invalid_scope', 'the scope exceeds the original grant');
      }
      scope = asked;
    }

    const next = newRefreshToken(parsed.familyId);
    const graceMs = ctx.settings.refreshReuseGraceSeconds * 1000;
    const grace =
      graceMs > 0
        ? { ms: graceMs, sealedSuccessor: await seal(ctx.keys, next.token, REFRESH_TOKEN_CTY) }
        : undefined;
    const rotated = await ctx.stores.refresh.rotate(
      parsed.familyId,
      parsed.hash,
      next.hash,
      now,
      ctx.settings.refreshTokenTtlSeconds * 1000,
      grace,
    );
    let successor = next.token;
    if (rotated.status === 'grace') {
      const opened = await unseal(ctx.keys, rotated.successor, REFRESH_TOKEN_CTY);
      if (opened === undefined)
        throw new OAuthError('invalid_grant', 'the refresh token is invalid or expired');
      successor = opened;
      log.info(
        { client_id: client.client_id, user: rotated.grant.user },
        'refresh token presented again within the reuse grace window; its successor returned',
      );
    }
    if (rotated.status === 'reused') {
      await denyAccessTokens(ctx, rotated.jtis);
      log.warn(
        { client_id: client.client_id, user: rotated.grant.user },
        'refresh token reused; the family is revoked',
      );
      throw new OAuthError(
        'invalid_grant',
        'the refresh token was already used; the grant is revoked',
      );
    }
    if (rotated.status === 'invalid')
      throw new OAuthError('invalid_grant', 'the refresh token is invalid or expired');

    const { body, access } = await issueTokens(ctx, client, {
      user: rotated.grant.user,
      scope,
      authTime: rotated.grant.authTime,
    });
    await ctx.stores.refresh.addAccessToken(parsed.familyId, access);
    if (rotated.status === 'ok')
      log.info({ client_id: client.client_id, user: rotated.grant.user }, 'refresh token rotated');
    return { ...body, refresh_token: successor };
  },
};
