// Admin endpoints on their own port (fastify is fine off the hot path): liveness, readiness and
// Prometheus metrics.
import Fastify, { type FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';

export interface AdminDeps {
  readonly registry: Registry;
  /** Readiness: null when ready, otherwise the reason. */
  readonly notReadyReason: () => string | null;
}

export function buildAdminApp(deps: AdminDeps): FastifyInstance {
  const app = Fastify({ logger: false });
  app.get('/healthz', async (_req, reply) => reply.type('text/plain; charset=utf-8').send('ok'));
  app.get('/readyz', async (_req, reply) => {
    const reason = deps.notReadyReason();
    if (reason === null) return reply.type('text/plain; charset=utf-8').send('ready');
    return reply.code(503).type('text/plain; charset=utf-8').send(`not ready: ${reason}`);
  });
  app.get('/metrics', async (_req, reply) => {
    const body = await deps.registry.metrics();
    return reply.type(deps.registry.contentType).send(body);
  });
  return app;
}
