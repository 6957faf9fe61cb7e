// The auth server as a fastify app: built from injected dependencies (AuthContext), never listens
// (main.ts does). Routes are plugins registered below; one error handler turns OAuthError into the
// RFC 6749 JSON, PageError into an HTML page, and anything else into a 4xx/5xx without details.
import formBody from '@fastify/formbody';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { AuthContext } from './context.ts';
import { OAuthError, PageError } from './errors.ts';
import { parseJsonKeepingRepeatedKeys } from './json-body.ts';
import { sendOAuthError } from './oauth-reply.ts';
import { sendErrorPage } from './pages/error-page.ts';
import { authorizeRoute } from './routes/authorize.ts';
import { consentRoute } from './routes/consent.ts';
import { consentsRoute } from './routes/consents.ts';
import { discoveryRoute } from './routes/discovery.ts';
import { endSessionRoute } from './routes/end-session.ts';
import { introspectionRoute } from './routes/introspection.ts';
import { revocationRoute } from './routes/revocation.ts';
import { signInRoute } from './routes/sign-in.ts';
import { staticRoute } from './routes/static.ts';
import { tokenRoute } from './routes/token.ts';
import { userinfoRoute } from './routes/userinfo.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Back-channel OAuth endpoint: errors are RFC 6749 JSON. */
    oauth?: boolean;
  }
}

export interface AuthServerDeps {
  readonly ctx: AuthContext;
  /** A pino logger; none (silent) in tests. */
  readonly logger?: FastifyBaseLogger;
  /** Take the client address from X-Forwarded-For (behind a trusted proxy only). */
  readonly trustProxy?: boolean;
}

export async function buildApp(deps: AuthServerDeps): Promise<FastifyInstance> {
  const app = Fastify({
    ...(deps.logger !== undefined ? { loggerInstance: deps.logger } : { logger: false }),
    trustProxy: deps.trustProxy ?? false,
    bodyLimit: 64 * 1024,
    // Request logs carry the path only: query strings and bodies may hold codes or state.
    logController: new LogController({ disableRequestLogging: true }),
  });
  await app.register(formBody, { bodyLimit: 64 * 1024 });
  // A repeated key in a JSON body is refused like a repeated form parameter.
  parseJsonKeepingRepeatedKeys(app);

  app.addHook('onResponse', async (request, reply) => {
    // routeOptions.url is the route template (/auth/sign-in), undefined when no route matched.
    deps.ctx.metrics.request(
      request.routeOptions.url,
      request.method,
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
    request.log.info(
      {
        method: request.method,
        path: request.url.split('?')[0],
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
      },
      'request',
    );
  });

  app.setErrorHandler(async (err, request, reply) => {
    if (err instanceof OAuthError) return sendOAuthError(reply, err);
    if (err instanceof PageError) return sendErrorPage(reply, err.status, err.title, err.message);
    const status =
      typeof err === 'object' &&
      err !== null &&
      'statusCode' in err &&
      typeof err.statusCode === 'number'
        ? err.statusCode
        : 500;
    const oauth = request.routeOptions.config.oauth === true;
    if (status >= 400 && status < 500) {
      if (oauth)
        return sendOAuthError(
          reply,
          new OAuthError('invalid_request', 'the request body could not be read'),
        );
      if (request.method === 'POST')
        return sendErrorPage(reply, 400, 'Request refused', 'The form could not be read.');
      return reply
        .code(status)
        .type('application/problem+json')
        .send({ type: 'about:blank', title: 'Bad Request', status });
    }
    // Name and message only: a store error may carry the command's arguments (hashes, CSRF tokens).
    const cause = err instanceof Error && err.cause instanceof Error ? err.cause : err;
    const summary =
      cause instanceof Error ? { type: cause.name, message: cause.message } : String(cause);
    if (cause instanceof Error && cause.message.startsWith('OOM ')) {
      // Redis at maxmemory with noeviction: nothing was written or forgotten; the request fails closed.
      request.log.error(
        { err: summary },
        'storage full: Redis refused a write (maxmemory reached); request refused, nothing changed',
      );
    } else {
      request.log.error({ err: summary }, 'request failed');
    }
    if (oauth)
      return sendOAuthError(
        reply,
        new OAuthError(
          'temporarily_unavailable',
          'the server could not complete the request; try again',
        ),
      );
    return sendErrorPage(
      reply,
      503,
      'Try again later',
      'The sign-in service could not complete the request. Try again in a moment.',
    );
  });
  app.setNotFoundHandler(async (request, reply) =>
    reply
      .code(404)
      .type('application/problem+json')
      .send({
        type: 'about:blank',
        title: 'Not Found',
        status: 404,
        detail: `no route ${request.method} ${request.url.split('?')[0]}`,
      }),
  );

  await app.register(discoveryRoute(deps.ctx));
  await app.register(staticRoute);
  await app.register(authorizeRoute(deps.ctx));
  await app.register(signInRoute(deps.ctx));
  await app.register(consentRoute(deps.ctx));
  await app.register(consentsRoute(deps.ctx));
  await app.register(tokenRoute(deps.ctx));
  await app.register(revocationRoute(deps.ctx));
  await app.register(introspectionRoute(deps.ctx));
  await app.register(userinfoRoute(deps.ctx));
  await app.register(endSessionRoute(deps.ctx));
  return app;
}
