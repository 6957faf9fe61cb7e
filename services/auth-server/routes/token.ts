// POST /token (RFC 6749 3.2): the specification's JSON body or the RFC's form body; client
// authentication, then the grant from the registry.
import type { FastifyPluginAsync } from 'fastify';
import { authenticateClient } from '../client-auth.ts';
import type { AuthContext } from '../context.ts';
import { OAuthError } from '../errors.ts';
import { grants } from '../grants/registry.ts';
import { bodyParams, noStore } from '../oauth-reply.ts';
import { single } from '../params.ts';

export function tokenRoute(ctx: AuthContext): FastifyPluginAsync {
  return async (app) => {
    app.post('/token', { config: { oauth: true } }, async (request, reply) => {
      const params = bodyParams(request);
      const client = authenticateClient(ctx, request, params);
      const grantType = single(params, 'grant_type');
      if (grantType.kind !== 'value')
        throw new OAuthError('invalid_request', 'grant_type is required');
      const grant = grants.get(grantType.value);
      if (grant === undefined)
        throw new OAuthError(
          'unsupported_grant_type',
          `grant_type ${grantType.value.slice(0, 40)} is not supported`,
        );
      if (!client.grant_types.includes(grant.registeredAs)) {
        throw new OAuthError(
          'unauthorized_client',
          `the client may not use grant_type ${grantType.value}`,
        );
      }
      const body = await grant.handle(ctx, client, params, request.log);
      ctx.metrics.tokensIssued.inc({ grant_type: grant.registeredAs });
      return noStore(reply).code(200).type('application/json; charset=utf-8').send(body);
    });
  };
}
