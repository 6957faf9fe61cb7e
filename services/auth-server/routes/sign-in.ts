// The sign-in step of an authorization: GET /auth/sign-in shows the page again (after a failed
// attempt), POST /auth/sign-in checks the password, starts a sign-in session when they are on, and
// answers 303: to the consent page or straight back to the client (authenticated.ts).
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { sendRefusedSignIn, signIn } from '../authenticate.ts';
import { continueAsUser } from '../authenticated.ts';
import type { AuthContext } from '../context.ts';
import { PageError } from '../errors.ts';
import { checkCsrf, loadInteraction, markFailed } from '../interaction.ts';
import { sendSignInPage } from '../pages/sign-in-page.ts';
import { startSession } from '../sign-in-session.ts';

const querySchema = z.object({ interaction: z.string().optional() });
export const signInFormSchema = z.object({
  // A sealed interaction carries the request (state up to 2048 characters) encrypted.
  interaction: z.string().max(12_000).optional(),
  csrf: z.string().max(100).optional(),
  username: z.string().max(64).default(''),
  password: z.string().max(1024).default(''),
});

export function signInRoute(ctx: AuthContext): FastifyPluginAsync {
  return async (app) => {
    app.get('/auth/sign-in', async (request, reply) => {
      const query = querySchema.safeParse(request.query);
      const ix = await loadInteraction(
        ctx,
        request,
        query.success ? query.data.interaction : undefined,
        'authorize',
      );
      const client = ctx.directory.client(ix.clientId);
      if (client === undefined)
        throw new PageError(400, 'Unknown application', 'The application is no longer registered.');
      return sendSignInPage(reply, {
        action: '/auth/sign-in',
        interactionId: query.data?.interaction ?? '',
        csrf: ix.csrf,
        clientName: client.display_name,
        failed: ix.failed ?? false,
        ...(ix.loginHint !== undefined ? { username: ix.loginHint } : {}),
        redirectOrigin: new URL(ix.redirectUri).origin,
      });
    });

    app.post('/auth/sign-in', async (request, reply) => {
      const form = signInFormSchema.safeParse(request.body ?? {});
      if (!form.success)
        throw new PageError(400, 'Request refused', 'The sign-in form was malformed.');
      const { interaction: id = '', csrf, username, password } = form.data;
      const ix = await loadInteraction(ctx, request, id, 'authorize');
      checkCsrf(ix, csrf);
      const client = ctx.directory.client(ix.clientId);
      if (client === undefined)
        throw new PageError(400, 'Unknown application', 'The application is no longer registered.');

      const result = await signIn(ctx, request, username, password);
      if (result.kind === 'throttled' || result.kind === 'busy')
        return sendRefusedSignIn(reply, result);
      if (result.kind === 'failed') {
        request.log.info({ client_id: ix.clientId }, 'sign-in failed');
        const next = await markFailed(ctx, id, ix);
        return reply
          .code(303)
          .header('location', `/auth/sign-in?interaction=${encodeURIComponent(next)}`)
          .send();
      }
      const authTime = ctx.now();
      request.log.info({ client_id: ix.clientId, user: result.user }, 'signed in');
      await startSession(ctx, reply, result.user, authTime);
      return continueAsUser(ctx, reply, id, ix, client, result.user, authTime);
    });
  };
}
