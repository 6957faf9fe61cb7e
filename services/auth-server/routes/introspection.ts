// POST /introspect (RFC 7662): for confidential clients. A client learns only about tokens issued
// to itself, unless it is registered as a resource server (resource_server: true), which may
// introspect any client's tokens; otherwise any client could read another's users and scopes.
// Answers {active:false} for anything not currently valid or not the caller's, without saying why
// (RFC 7662 2.2 allows this for tokens the caller may not see).
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
      const client = authenticateClient(ctx, request, params);
      if (client.token_endpoint_auth_method === 'none')
        throw new OAuthError('invalid_client', 'introspection needs an authenticated client');
      const token = single(params, 'token');
      if (token.kind !== 'value') throw new OAuthError('invalid_request', 'token is required');
      const send = (body: Record<string, unknown>) =>
        noStore(reply).code(200).type('application/json; charset=utf-8').send(body);
      const now = ctx.now();
      /** False (and logged) when the token belongs to another client the caller may not look at. */
      const mayView = (tokenClientId: string) => {
        if (tokenClientId === client.client_id || client.resource_server === true) return true;
        request.log.info(
          { client_id: client.client_id, token_client_id: tokenClientId },
          "introspection of another client's token refused",
        );
        return false;
      };

      const refresh = parseRefreshToken(token.value);
      if (refresh !== undefined) {
        const family = await ctx.stores.refresh.inspect(refresh.familyId, refresh.hash, now);
        if (family === undefined || !family.active || !mayView(family.grant.clientId))
          return send({ active: false });
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
      if (
        claims === undefined ||
        !mayView(claims.client_id) ||
        (await ctx.stores.revoked.isRevoked(claims.jti))
      )
        return send({ active: false });
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
