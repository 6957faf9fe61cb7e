// The consent step: shown the first time a user authorizes a client and again only when new scopes
// are asked for. Allow stores the consent (server-side) and redirects with a code; Deny redirects
// with error=access_denied. Both answer 303 and complete the interaction exactly once (atomic take).
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { redirectWithCode, redirectWithError } from '../authorization-response.ts';
import type { AuthContext } from '../context.ts';
import { PageError } from '../errors.ts';
import { checkCsrf, loadInteraction } from '../interaction.ts';
import { sendConsentPage } from '../pages/consent-page.ts';

const querySchema = z.object({ interaction: z.string().optional() });
const consentFormSchema = z.object({
  interaction: z.string().max(100).optional(),
  csrf: z.string().max(100).optional(),
  decision: z.enum(['allow', 'deny']).optional(),
});

const notSignedIn = () =>
  new PageError(400, 'This page has expired', 'Sign in first. Start again from the application.');

export function consentRoute(ctx: AuthContext): FastifyPluginAsync {
  return async (app) => {
    app.get('/auth/consent', async (request, reply) => {
      const query = querySchema.safeParse(request.query);
      const id = query.success ? query.data.interaction : undefined;
      const ix = await loadInteraction(ctx, request, id, 'authorize');
      if (ix.user === undefined) throw notSignedIn();
      const client = ctx.directory.client(ix.clientId);
      if (client === undefined)
        throw new PageError(400, 'Unknown application', 'The application is no longer registered.');
      return sendConsentPage(reply, {
        interactionId: id ?? '',
        csrf: ix.csrf,
        clientName: client.display_name,
        username: ix.user,
        scopes: ix.scope,
        redirectOrigin: new URL(ix.redirectUri).origin,
      });
    });

    app.post('/auth/consent', async (request, reply) => {
      const form = consentFormSchema.safeParse(request.body ?? {});
      if (!form.success)
        throw new PageError(400, 'Request refused', 'The consent form was malformed.');
      const { interaction: id = '', csrf, decision } = form.data;
      const ix = await loadInteraction(ctx, request, id, 'authorize');
      checkCsrf(ix, csrf);
      const user = ix.user;
      if (user === undefined || ix.authTime === undefined) throw notSignedIn();
      if (decision === undefined)
        throw new PageError(400, 'Request refused', 'Choose Allow or Deny.');
      const taken = await ctx.stores.interactions.take(id);
      if (taken === undefined)
        throw new PageError(
          400,
          'This page has expired',
          'This authorization was already completed.',
        );
      if (decision === 'deny') {
        request.log.info({ client_id: ix.clientId, user }, 'consent denied');
        return redirectWithError(ctx, reply, ix, 'access_denied', 'the user denied the request');
      }
      await ctx.stores.consents.grant(user, ix.clientId, ix.scope, ctx.now());
      request.log.info(
        { client_id: ix.clientId, user, scope: ix.scope.join(' ') },
        'consent granted',
      );
      return redirectWithCode(ctx, reply, { ...ix, user, authTime: ix.authTime });
    });
  };
}
