// POST /revoke (RFC 7009): a client revokes its own refresh token (the whole family) or access
// token (deny list until it expires). Unknown, foreign or malformed tokens still get 200.
import type { FastifyPluginAsync } from 'fastify';
import { verifyOwnAccessToken } from '../access-token.ts';
import { authenticateClient } from '../client-auth.ts';
import type { AuthContext } from '../context.ts';
import { OAuthError } from '../errors.ts';
import { parseRefreshToken, revokeFamily } from '../issue-tokens.ts';
import { bodyParams, noStore } from '../oauth-reply.ts';
import { single } from '../params.ts';

export function revocationRoute(ctx: AuthContext): FastifyPluginAsync {
  return async (app) => {
    app.post('/revoke', { config: { oauth: true } }, async (request, reply) => {
      const params = bodyParams(request);
      const client = authenticateClient(ctx, request, params);
      const token = single(params, 'token');
      if (token.kind !== 'value') throw new OAuthError('invalid_request', 'token is required');
      const refresh = parseRefreshToken(token.value);
      if (refresh !== undefined) {
        const family = await ctx.stores.refresh.inspect(refresh.familyId, refresh.hash, ctx.now());
        if (family !== undefined && family.grant.clientId === client.client_id) {
          await revokeFamily(ctx, refresh.familyId);
          request.log.info({ client_id: client.client_id }, 'refresh token revoked');
        }
      } else {
        const claims = await verifyOwnAccessToken(
          ctx.keys,
          token.value,
          ctx.settings.issuer,
          ctx.now(),
        );
        if (claims !== undefined && claims.client_id === client.client_id) {
          await ctx.stores.revoked.revoke(claims.jti, claims.exp * 1000, ctx.now());
          request.log.info({ client_id: client.client_id }, 'access token revoked');
        }
      }
      return noStore(reply).code(200).send();
    });
  };
}
