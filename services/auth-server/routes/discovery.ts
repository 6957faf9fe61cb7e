// Metadata (RFC 8414 and OpenID Connect Discovery, one document: metadata.ts) and the JWKS
// (RFC 7517) with every published public key.
import type { FastifyPluginAsync } from 'fastify';
import type { AuthContext } from '../context.ts';
import { serverMetadata } from '../metadata.ts';

export function discoveryRoute(ctx: AuthContext): FastifyPluginAsync {
  return async (app) => {
    for (const path of [
      '/.well-known/oauth-authorization-server',
      '/.well-known/openid-configuration',
    ]) {
      app.get(path, async (_request, reply) =>
        reply.header('cache-control', 'public, max-age=300').send(serverMetadata(ctx)),
      );
    }
    app.get('/jwks.json', async (_request, reply) => {
      // Short cache: a rotation (new kid) is picked up by verifiers that refetch on an unknown kid.
      return reply
        .header('cache-control', 'public, max-age=60')
        .type('application/jwk-set+json')
        .send(ctx.keys.publicJwks());
    });
    app.get('/healthz', async (_request, reply) =>
      reply.type('text/plain; charset=utf-8').send('OK'),
    );
  };
}
