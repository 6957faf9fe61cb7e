// The user service as a fastify app: built from injected dependencies, never listens (main.ts does).
// Every file in routes/ is a fastify plugin registered here; the list below is the registry.
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { meRoute, type AccessTokenVerifier } from './routes/me.ts';
import { readyRoute } from './routes/ready.ts';

export interface UserServiceDeps {
  /** fastify logger option: a pino instance/options, or false in tests. */
  readonly logger?: FastifyServerOptions['logger'];
  /** Verifies Bearer access tokens for GET /me (routes/me.ts); without it /me is not served. */
  readonly verifyAccessToken?: AccessTokenVerifier;
}

export async function buildApp(deps: UserServiceDeps = {}): Promise<FastifyInstance> {
  // No per-request log lines: the probe is hit every few seconds and by the benchmarks.
  const app = Fastify({
    logger: deps.logger ?? false,
    logController: new LogController({ disableRequestLogging: true }),
  });
  await app.register(readyRoute);
  if (deps.verifyAccessToken !== undefined) await app.register(meRoute(deps.verifyAccessToken));
  return app;
}
