// The demo client application: "Sign in" starts the flow (state + PKCE kept server-side in the
// session), /callback checks state and iss, exchanges the code, verifies the access token, and
// shows the profile from GET /me fetched THROUGH THE GATEWAY with USER-ID set to the token's sub.
import formBody from '@fastify/formbody';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import { z } from 'zod';
import { readCookie, serializeCookie } from '../../lib/web/cookies.ts';
import type { OAuthClient } from './oauth.ts';
import {
  errorPage,
  homePage,
  sendDemoPage as sendPage,
  signedInPage,
  stylesheet,
  type SignedInView,
} from './pages.ts';
import { randomBytes } from 'node:crypto';

export interface DemoClientDeps {
  readonly oauth: OAuthClient;
  readonly issuer: string;
  /** GET /me through the sidecar, e.g. http://localhost:8080/me. */
  readonly meUrl: string;
  /** Epoch ms; sessions expire by it. main.ts passes the real clock, tests a fake one. */
  readonly now: () => number;
  readonly logger?: FastifyBaseLogger;
}

interface Session {
  pending?: { state: string; verifier: string; nonce?: string };
  view?: SignedInView;
  expiresAt: number;
}

const COOKIE = 'demo_session';
const SESSION_TTL_MS = 30 * 60_000;

const callbackSchema = z.object({
  code: z.string().max(512).optional(),
  state: z.string().max(2048).optional(),
  iss: z.string().max(512).optional(),
  error: z.string().max(256).optional(),
  error_description: z.string().max(1024).optional(),
});

export async function buildApp(deps: DemoClientDeps): Promise<FastifyInstance> {
  const app = Fastify({
    ...(deps.logger !== undefined ? { loggerInstance: deps.logger } : { logger: false }),
    logController: new LogController({ disableRequestLogging: true }),
  });
  await app.register(formBody);
  const sessions = new Map<string, Session>();
  const authOrigin = new URL(deps.issuer).origin;
  const sendDemoPage = (
    reply: FastifyReply,
    title: string,
    body: Parameters<typeof sendPage>[3],
    status = 200,
  ) => sendPage(reply, authOrigin, title, body, status);

  /** This browser's live session, if any. Only POST /login creates one: a page view costs no memory. */
  const current = (request: FastifyRequest): Session | undefined => {
    const id = readCookie(request.headers.cookie, COOKIE);
    const existing = id === undefined ? undefined : sessions.get(id);
    return existing !== undefined && existing.expiresAt > deps.now() ? existing : undefined;
  };
  const session = (request: FastifyRequest, reply: FastifyReply): Session => {
    const existing = current(request);
    if (existing !== undefined) return existing;
    const now = deps.now();
    for (const [k, s] of sessions) if (s.expiresAt <= now) sessions.delete(k);
    const fresh: Session = { expiresAt: now + SESSION_TTL_MS };
    issueId(reply, fresh);
    return fresh;
  };
  const issueId = (reply: FastifyReply, s: Session) => {
    const newId = randomBytes(32).toString('base64url');
    sessions.set(newId, s);
    reply.header('set-cookie', serializeCookie(COOKIE, newId, { path: '/', secure: false }));
  };
  /** Signing in moves the session to a new id (no session fixation): the id from before stops working. */
  const rotate = (request: FastifyRequest, reply: FastifyReply, s: Session) => {
    const old = readCookie(request.headers.cookie, COOKIE);
    if (old !== undefined && sessions.get(old) === s) sessions.delete(old);
    issueId(reply, s);
  };

  app.get('/static/demo.css', async (_request, reply) =>
    reply.type('text/css; charset=utf-8').send(stylesheet),
  );

  app.get('/', async (request, reply) => {
    const view = current(request)?.view;
    return view !== undefined
      ? sendDemoPage(reply, 'Signed in', signedInPage(view))
      : sendDemoPage(reply, 'Home', homePage());
  });

  app.post('/login', async (request, reply) => {
    const s = session(request, reply);
    const { url, pending } = await deps.oauth.start();
    s.pending = pending;
    return reply.code(303).header('location', url).send();
  });

  app.post('/logout', async (request, reply) => {
    const s = current(request);
    delete s?.view;
    delete s?.pending;
    return reply.code(303).header('location', '/').send();
  });

  app.get('/callback', async (request, reply) => {
    const s = current(request);
    const query = callbackSchema.safeParse(request.query);
    const pending = s?.pending;
    delete s?.pending;
    if (!query.success)
      return sendDemoPage(
        reply,
        'Error',
        errorPage('invalid_request', 'the callback parameters are malformed'),
        400,
      );
    const q = query.data;
    if (s === undefined || pending === undefined || q.state !== pending.state) {
      return sendDemoPage(
        reply,
        'Error',
        errorPage('state_mismatch', 'this response does not belong to a sign-in started here'),
        400,
      );
    }
    if (q.iss !== deps.issuer)
      return sendDemoPage(
        reply,
        'Error',
        errorPage(
          'issuer_mismatch',
          'the response did not come from the expected issuer (RFC 9207)',
        ),
        400,
      );
    if (q.error !== undefined)
      return sendDemoPage(reply, 'Error', errorPage(q.error, q.error_description));
    if (q.code === undefined)
      return sendDemoPage(
        reply,
        'Error',
        errorPage('invalid_request', 'no code in the response'),
        400,
      );

    try {
      const tokens = await deps.oauth.exchange(q.code, pending.verifier);
      const claims = await deps.oauth.verify(tokens.access_token);
      // Asked for openid: the sign-in is the id_token's, checked before anything else is believed.
      let idClaims: Record<string, unknown> | undefined;
      if (pending.nonce !== undefined) {
        if (tokens.id_token === undefined)
          throw new Error('no id_token in the token response (openid was asked for)');
        idClaims = { ...(await deps.oauth.verifyIdToken(tokens.id_token, pending.nonce)) };
        if (idClaims['sub'] !== claims.sub)
          throw new Error('the id_token and the access token name different users');
      }
      const me = await fetch(deps.meUrl, {
        headers: {
          authorization: `Bearer ${tokens.access_token}`,
          'USER-ID': String(claims.sub ?? ''),
          accept: 'application/json',
        },
        signal: AbortSignal.timeout(5000),
      });
      const profile: unknown = await me
        .json()
        .catch(() => ({ error: 'the response was not JSON' }));
      s.view = {
        profile,
        profileStatus: me.status,
        claims: { ...claims },
        scope: tokens.scope ?? '',
        hasRefreshToken: tokens.refresh_token !== undefined,
        ...(idClaims !== undefined ? { idTokenClaims: idClaims } : {}),
      };
      rotate(request, reply, s);
      request.log.info({ sub: claims.sub, me_status: me.status }, 'signed in');
      return reply.code(303).header('location', '/').send();
    } catch (err) {
      request.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'sign-in failed');
      return sendDemoPage(
        reply,
        'Error',
        errorPage(
          'exchange_failed',
          err instanceof Error ? err.message : 'the code exchange failed',
        ),
        502,
      );
    }
  });

  return app;
}
