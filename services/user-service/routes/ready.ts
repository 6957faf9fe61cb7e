// GET /healthcheck/ready: the specification's readiness probe — 200, text/plain, `OK`.
import type { FastifyPluginAsync } from 'fastify';

export const readyRoute: FastifyPluginAsync = async (app) => {
  app.get(
    '/healthcheck/ready',
    {
      schema: {
        response: { 200: { type: 'string', description: 'The plain text OK' } },
      },
    },
    async (_request, reply) => {
      return reply.code(200).type('text/plain; charset=utf-8').send('OK');
    },
  );
};
