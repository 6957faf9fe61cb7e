// POST /introspect (RFC 7662): for confidential clients (e.g. a resource server registered as a
// client). Answers {active:false} for anything not currently valid, without saying why.
import type { FastifyPluginAsync } from 'fastify';
import { verifyOwnAccessToken } from '../access-token.ts';
import { authenticateClient } from '../client-auth.ts';
import type { AuthContext } from '../context.ts';
import { OAuthError } from '../errors.ts';
import { parseRefreshToken } from '../issue-tokens.ts';
import { bodyParams, noStore } from '../oauth-reply.ts';
import { single } from '../params.ts';
import { formatScope } from '../scopes.ts';

export function introspectionRoute(ctx: AuthContext): FastifyPluginAsync {
  return async (app) => {
    app.post('/introspect', { config: { oauth: true } }, async (request, reply) => {
      const params = bodyParams(request);
      const client = authenticateClient(ctx, request.headers.authorization, params);
      if (client.token_endpoint_auth_method === 'none') throw new OAuthError('invalid_client', 'introspection needs an authenticated client');
      const token = single(params, 'token');
      if (token.kind !== 'value') throw new OAuthError('invalid_request', 'token is required');
      const send = (body: Record<string, unknown>) => noStore(reply).code(200).type('application/json; charset=utf-8').send(body);
      const now = ctx.now();

      const refresh = parseRefreshToken(token.value);
      if (refresh !== undefined) {
        const family = await ctx.stores.refresh.inspect(refresh.familyId, refresh.hash, now);
        if (family === undefined || !family.active) return send({ active: false });
        return send({
          active: true,
          token_type: 'refresh_token',
          client_id: family.grant.clientId,
          username: family.grant.user,
          sub: family.grant.user,
          scope: formatScope(family.grant.scope),
          exp: Math.floor(family.expiresAt / 1000),
          iss: ctx.settings.issuer,
        });
      }
      const claims = await verifyOwnAccessToken(ctx.keys, token.value, ctx.settings.issuer, now);
      if (claims === undefined || (await ctx.stores.revoked.isRevoked(claims.jti))) return send({ active: false });
      return send({
        active: true,
        token_type: 'Bearer',
        client_id: claims.client_id,
        username: claims.sub,
        sub: claims.sub,
        scope: claims.scope,
        aud: claims.aud,
        iss: claims.iss,
        exp: claims.exp,
        iat: claims.iat,
        jti: claims.jti,
      });
    });
  };
}
