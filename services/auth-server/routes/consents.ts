// The "Connected applications" page: a user signs in (same password check and throttle as the
// authorization flow), lists the consents stored for them and revokes any of them. Revoking a
// consent also revokes that client's refresh-token families (and their access tokens) for the user.
// Before sign-in the session is sealed into the account cookie (nothing stored for a visitor);
// after it, the cookie holds the id of a stored session.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { sendRefusedSignIn, signIn } from '../authenticate.ts';
import type { AuthContext } from '../context.ts';
import { readCookie, serializeCookie } from '../../../lib/web/cookies.ts';
import { PageError } from '../errors.ts';
import {
  bindBrowser,
  checkCsrf,
  cookieName,
  isStored,
  loadInteraction,
  markFailed,
  renewAfterSignIn,
  sealInteraction,
} from '../interaction.ts';
import { revokeFamily } from '../issue-tokens.ts';
import { sendConsentsPage } from '../pages/consents-page.ts';
import { sendSignInPage } from '../pages/sign-in-page.ts';
import { randomToken } from '../random.ts';
import type { Interaction } from '../stores/types.ts';

const ACCOUNT_COOKIE = 'portcullis_account';
const formSchema = z.object({
  csrf: z.string().max(100).optional(),
  username: z.string().max(64).default(''),
  password: z.string().max(1024).default(''),
  client_id: z.string().max(128).optional(),
});

export function consentsRoute(ctx: AuthContext): FastifyPluginAsync {
  const ttlMs = ctx.settings.interactionTtlSeconds * 1000;
  // The __Host- prefix requires Path=/; without it the cookie stays on the pages that use it.
  const account = {
    name: cookieName(ctx, ACCOUNT_COOKIE),
    path: ctx.secureCookies ? '/' : '/consents',
  };
  const setAccount = (reply: FastifyReply, id: string, maxAge?: number) =>
    reply.header(
      'set-cookie',
      serializeCookie(account.name, id, {
        path: account.path,
        secure: ctx.secureCookies,
        ...(maxAge === undefined ? {} : { maxAge }),
      }),
    );
  const back = (reply: FastifyReply) => reply.code(303).header('location', '/consents').send();

  /** The account session of this browser, or undefined. */
  async function session(
    request: FastifyRequest,
  ): Promise<{ id: string; ix: Extract<Interaction, { kind: 'account' }> } | undefined> {
    const id = readCookie(request.headers.cookie, account.name);
    if (id === undefined) return undefined;
    try {
      return { id, ix: await loadInteraction(ctx, request, id, 'account') };
    } catch {
      return undefined;
    }
  }

  async function requireSession(request: FastifyRequest, csrf: string | undefined) {
    const s = await session(request);
    if (s === undefined)
      throw new PageError(403, 'Request refused', 'Your session has expired. Sign in again.');
    checkCsrf(s.ix, csrf);
    return s;
  }

  return async (app) => {
    app.get('/consents', async (request, reply) => {
      let s = await session(request);
      if (s === undefined) {
        const ix: Interaction = {
          kind: 'account',
          browserHash: bindBrowser(ctx, request, reply),
          csrf: randomToken(),
          expiresAt: ctx.now() + ttlMs,
        };
        const id = await sealInteraction(ctx, ix);
        setAccount(reply, id);
        s = { id, ix };
      }
      const user = s.ix.user;
      if (user === undefined) {
        return sendSignInPage(reply, {
          action: '/consents/sign-in',
          interactionId: s.id,
          csrf: s.ix.csrf,
          failed: s.ix.failed ?? false,
        });
      }
      const consents = [...(await ctx.stores.consents.list(user))].map(([clientId, consent]) => ({
        clientId,
        clientName: ctx.directory.client(clientId)?.display_name ?? clientId,
        consent,
      }));
      return sendConsentsPage(reply, { username: user, csrf: s.ix.csrf, consents });
    });

    app.post('/consents/sign-in', async (request, reply) => {
      const form = formSchema.safeParse(request.body ?? {});
      if (!form.success)
        throw new PageError(400, 'Request refused', 'The sign-in form was malformed.');
      const s = await requireSession(request, form.data.csrf);
      const result = await signIn(ctx, request, form.data.username, form.data.password);
      if (result.kind === 'throttled' || result.kind === 'busy')
        return sendRefusedSignIn(reply, result);
      if (result.kind === 'failed') {
        const next = await markFailed(ctx, s.id, s.ix);
        if (next !== s.id) setAccount(reply, next);
        return back(reply);
      }
      const left = Math.max(1, s.ix.expiresAt - ctx.now());
      // Signed in: a new session id and binding cookie (a session planted before is worth nothing).
      setAccount(
        reply,
        await renewAfterSignIn(
          ctx,
          reply,
          s.id,
          { ...s.ix, user: result.user, failed: false, csrf: randomToken() },
          left,
        ),
      );
      return back(reply);
    });

    app.post('/consents/revoke', async (request, reply) => {
      const form = formSchema.safeParse(request.body ?? {});
      if (!form.success) throw new PageError(400, 'Request refused', 'The form was malformed.');
      const s = await requireSession(request, form.data.csrf);
      const user = s.ix.user;
      const clientId = form.data.client_id;
      if (user === undefined || clientId === undefined)
        throw new PageError(400, 'Request refused', 'Sign in first.');
      // Only this server's registered clients: an id from elsewhere names state that is not this
      // server's to change, and an unknown one would only write an empty record.
      if (ctx.directory.client(clientId) === undefined) {
        request.log.info(
          { user, client_id: clientId },
          'consent revocation refused: client not registered',
        );
        throw new PageError(400, 'Request refused', 'That application is not registered here.');
      }
      await ctx.stores.consents.revoke(user, clientId);
      for (const familyId of await ctx.stores.refresh.familiesOf(user, clientId))
        await revokeFamily(ctx, familyId);
      // The user's sign-in sessions end too: the next authorization asks for the password again.
      await ctx.stores.sessions.deleteUser(user);
      request.log.info({ user, client_id: clientId }, 'consent revoked');
      return back(reply);
    });

    app.post('/consents/sign-out', async (request, reply) => {
      const form = formSchema.safeParse(request.body ?? {});
      const s = await requireSession(request, form.success ? form.data.csrf : undefined);
      if (isStored(s.id)) await ctx.stores.interactions.delete(s.id);
      setAccount(reply, '', 0);
      return back(reply);
    });
  };
}
