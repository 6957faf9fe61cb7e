// GET/POST /userinfo (OpenID Connect Core 5.3): the claims the access token's scopes release, for
// an access token of this server (signature, issuer, typ at+jwt, expiry), meant for this
// server's resource audience, not revoked, and granted `openid`. The token comes as a Bearer
// Authorization header or, on POST, as a form field (RFC 6750 2.1, 2.2); errors answer with
// RFC 6750 3's WWW-Authenticate challenge.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { verifyOwnAccessToken } from '../access-token.ts';
import type { AuthContext } from '../context.ts';
import { noStore } from '../oauth-reply.ts';
import { single, toParams } from '../params.ts';
import { OPENID, userClaims } from '../scopes.ts';
import { bearerChallenge, bearerFromHeader } from '../../../lib/web/bearer.ts';

type BearerError = 'invalid_request' | 'invalid_token' | 'insufficient_scope';
const STATUS: Record<BearerError, number> = {
  invalid_request: 400,
  invalid_token: 401,
  insufficient_scope: 403,
};

/** RFC 6750 3: no credentials at all is a bare challenge; anything else names the error. */
function challenge(
  ctx: AuthContext,
  reply: FastifyReply,
  error: BearerError | undefined,
  description: string,
): FastifyReply {
  const header = bearerChallenge(
    ctx.settings.issuer,
    error,
    description,
    error === 'insufficient_scope' ? OPENID : undefined,
  );
  return noStore(reply)
    .code(error === undefined ? 401 : STATUS[error])
    .header('www-authenticate', header)
    .type('application/json; charset=utf-8')
    .send({ error: error ?? 'invalid_token', error_description: description });
}

type Presented =
  { kind: 'none' } | { kind: 'malformed'; reason: string } | { kind: 'token'; token: string };

function presentedToken(request: FastifyRequest): Presented {
  const header = bearerFromHeader(request.headers.authorization);
  const form =
    request.method === 'POST' &&
    request.headers['content-type']?.startsWith('application/x-www-form-urlencoded') === true
      ? toParams(request.body)
      : undefined;
  const inBody = form === undefined ? ({ kind: 'absent' } as const) : single(form, 'access_token');
  if (inBody.kind === 'repeated') return { kind: 'malformed', reason: 'access_token repeated' };
  if (header.kind !== 'none') {
    if (inBody.kind === 'value') return { kind: 'malformed', reason: 'one token, in one place' };
    return header.kind === 'token'
      ? header
      : { kind: 'malformed', reason: 'the Authorization header is malformed' };
  }
  return inBody.kind === 'value' ? { kind: 'token', token: inBody.value } : { kind: 'none' };
}

export function userinfoRoute(ctx: AuthContext): FastifyPluginAsync {
  return async (app) => {
    const handler = async (request: FastifyRequest, reply: FastifyReply) => {
      const presented = presentedToken(request);
      if (presented.kind === 'none')
        return challenge(ctx, reply, undefined, 'a Bearer access token is required');
      if (presented.kind === 'malformed')
        return challenge(ctx, reply, 'invalid_request', presented.reason);
      const claims = await verifyOwnAccessToken(
        ctx.keys,
        presented.token,
        ctx.settings.issuer,
        ctx.now(),
      );
      if (claims === undefined)
        return challenge(ctx, reply, 'invalid_token', 'the access token is invalid or expired');
      const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
      if (!audiences.includes(ctx.settings.audience))
        return challenge(
          ctx,
          reply,
          'invalid_token',
          'the access token is not meant for this server',
        );
      if (await ctx.stores.revoked.isRevoked(claims.jti))
        return challenge(ctx, reply, 'invalid_token', 'the access token was revoked');
      const scope = claims.scope.split(' ');
      if (!scope.includes(OPENID))
        return challenge(ctx, reply, 'insufficient_scope', 'the openid scope is required');
      const user = ctx.directory.user(claims.sub);
      if (user === undefined)
        return challenge(ctx, reply, 'invalid_token', 'the user no longer exists');
      return noStore(reply)
        .type('application/json; charset=utf-8')
        .send({ sub: claims.sub, ...userClaims(user, scope) });
    };
    app.get('/userinfo', handler);
    app.post('/userinfo', handler);
  };
}
