// RFC 8414 metadata and the JWKS (RFC 7517) with every published public key.
import type { FastifyPluginAsync } from 'fastify';
import type { AuthContext } from '../context.ts';

export function discoveryRoute(ctx: AuthContext): FastifyPluginAsync {
  return async (app) => {
    app.get('/.well-known/oauth-authorization-server', async (_request, reply) => {
      const base = ctx.settings.issuer;
      return reply.header('cache-control', 'public, max-age=300').send({
        issuer: base,
        authorization_endpoint: `${base}/auth`,
        token_endpoint: `${base}/token`,
        jwks_uri: `${base}/jwks.json`,
        revocation_endpoint: `${base}/revoke`,
        introspection_endpoint: `${base}/introspect`,
        scopes_supported: ctx.directory.allScopes(),
        response_types_supported: ['code'],
        response_modes_supported: ['query'],
        grant_types_supported: ['authorization_code', 'refresh_token'],
        token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
        revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
        introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
        code_challenge_methods_supported: ['S256'],
        authorization_response_iss_parameter_supported: true,
      });
    });
    app.get('/jwks.json', async (_request, reply) => {
      // Short cache: a rotation (new kid) is picked up by verifiers that refetch on an unknown kid.
      return reply.header('cache-control', 'public, max-age=60').type('application/jwk-set+json').send(ctx.keys.publicJwks());
    });
    app.get('/healthz', async (_request, reply) => reply.type('text/plain; charset=utf-8').send('OK'));
  };
}
