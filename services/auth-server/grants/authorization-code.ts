// grant_type=authorization_code (RFC 6749 4.1.3, RFC 7636 4.6, RFC 9700 2.1.1 and 4.5). The request
// is checked against the code first (the code was issued to this client, for this redirect_uri,
// and the PKCE verifier matches) without touching it: a request that fails those checks neither
// burns the owner's code nor revokes anything. Only then is the code consumed, atomically, so it
// is never redeemable twice; a replay that passes the same checks (the owner again) revokes what
// the first redemption issued (RFC 6749 4.1.2).
import { createHash } from 'node:crypto';
import { OAuthError } from '../errors.ts';
import { issueNewGrant, revokeFamily, denyAccessTokens } from '../issue-tokens.ts';
import { single } from '../params.ts';
import { safeEqual, sha256 } from '../random.ts';
import type { Grant } from './types.ts';

/** RFC 7636 4.1: 43-128 unreserved characters. */
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;
/** How long a redeemed code is remembered for replay detection (ms). */
const REPLAY_MEMORY_MS = 10 * 60_000;

function required(params: Parameters<Grant['handle']>[2], name: string): string {
  const p = single(params, name);
  if (p.kind === 'value') return p.value;
  throw new OAuthError(
    'invalid_request',
    p.kind === 'repeated' ? `${name} repeated` : `${name} is required`,
  );
}

export const authorizationCodeGrant: Grant = {
  registeredAs: 'authorization_code',
  async handle(ctx, client, params, log) {
    const code = required(params, 'code');
    const redirectUri = required(params, 'redirect_uri');
    const verifier = single(params, 'code_verifier');
    if (verifier.kind === 'repeated')
      throw new OAuthError('invalid_request', 'code_verifier repeated');

    const codeHash = sha256(code);
    const record = await ctx.stores.codes.peek(codeHash);
    if (record === undefined)
      throw new OAuthError('invalid_grant', 'the authorization code is invalid or expired');
    if (record.clientId !== client.client_id)
      throw new OAuthError('invalid_grant', 'the authorization code was issued to another client');
    if (record.redirectUri !== redirectUri)
      throw new OAuthError(
        'invalid_grant',
        'redirect_uri does not match the authorization request',
      );
    if (record.codeChallenge !== undefined) {
      if (verifier.kind !== 'value')
        throw new OAuthError('invalid_grant', 'code_verifier is required (PKCE)');
      if (!VERIFIER.test(verifier.value))
        throw new OAuthError('invalid_grant', 'code_verifier is malformed');
      const computed = createHash('sha256').update(verifier.value, 'ascii').digest('base64url');
      if (!safeEqual(computed, record.codeChallenge))
        throw new OAuthError('invalid_grant', 'code_verifier does not match the code_challenge');
    } else if (verifier.kind === 'value') {
      throw new OAuthError(
        'invalid_grant',
        'code_verifier sent but the authorization request had no code_challenge',
      );
    }

    const consumed = await ctx.stores.codes.consume(codeHash, REPLAY_MEMORY_MS);
    if (consumed.status === 'unknown')
      throw new OAuthError('invalid_grant', 'the authorization code is invalid or expired');
    if (consumed.status === 'replayed') {
      if (consumed.issued !== undefined) {
        const access = { jti: consumed.issued.jti, expiresAt: consumed.issued.accessExpiresAt };
        if (consumed.issued.familyId !== undefined)
          await revokeFamily(ctx, consumed.issued.familyId, [access]);
        else await denyAccessTokens(ctx, [access]);
      }
      log.warn(
        { client_id: client.client_id },
        'authorization code replayed; its tokens are revoked',
      );
      throw new OAuthError('invalid_grant', 'the authorization code was already used');
    }
    if (consumed.record.expiresAt <= ctx.now())
      throw new OAuthError('invalid_grant', 'the authorization code is invalid or expired');

    const issued = await issueNewGrant(ctx, client, {
      user: record.user,
      scope: record.scope,
      authTime: record.authTime,
      ...(record.nonce !== undefined ? { nonce: record.nonce } : {}),
    });
    const replayedMeanwhile = await ctx.stores.codes.attachIssued(codeHash, {
      ...(issued.familyId !== undefined ? { familyId: issued.familyId } : {}),
      jti: issued.access.jti,
      accessExpiresAt: issued.access.expiresAt,
    });
    if (replayedMeanwhile) {
      if (issued.familyId !== undefined) await revokeFamily(ctx, issued.familyId, [issued.access]);
      else await denyAccessTokens(ctx, [issued.access]);
      throw new OAuthError('invalid_grant', 'the authorization code was already used');
    }
    log.info(
      { client_id: client.client_id, user: record.user, scope: record.scope.join(' ') },
      'code exchanged',
    );
    return issued.body;
  },
};
