// GET/POST /end-session: RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0). Ends this
// browser's sign-in session and, when the request names a client (by id_token_hint or client_id)
// and one of its registered post_logout_redirect_uris (exact match), sends the browser there with
// state. A bad hint or an unregistered URI is an HTML page, never a redirect. Without a valid
// id_token_hint of the session's own user the user confirms first (a cross-site page cannot sign
// them out: the session cookie is SameSite=Lax, so a forged POST carries none).
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { compactVerify, decodeJwt, decodeProtectedHeader } from 'jose';
import { html, sendPage } from '../../../lib/web/html.ts';
import type { AuthContext } from '../context.ts';
import { PageError } from '../errors.ts';
import { single, toParams, type Params } from '../params.ts';
import { currentSession, endSession } from '../sign-in-session.ts';

/** The hint's client and user when it is an id_token this server signed (expired ones count: Logout 1.0 section 2). */
async function readHint(
  ctx: AuthContext,
  token: string,
): Promise<{ clientId: string; user: string } | undefined> {
  try {
    if (decodeProtectedHeader(token).typ !== 'JWT') return undefined;
    await compactVerify(token, ctx.keys.verifierKeys(), { algorithms: ['ES256', 'RS256'] });
    const claims = decodeJwt(token);
    if (
      claims.iss !== ctx.settings.issuer ||
      typeof claims.aud !== 'string' ||
      typeof claims.sub !== 'string'
    )
      return undefined;
    return { clientId: claims.aud, user: claims.sub };
  } catch {
    return undefined;
  }
}

const refused = (message: string) => new PageError(400, 'Sign-out refused', message);

export function endSessionRoute(ctx: AuthContext): FastifyPluginAsync {
  return async (app) => {
    const handler = async (request: FastifyRequest, reply: FastifyReply) => {
      const params: Params =
        toParams(request.method === 'GET' ? request.query : request.body) ?? {};
      const value = (name: string) => {
        const p = single(params, name);
        if (p.kind === 'repeated') throw refused(`The parameter ${name} is repeated.`);
        return p.kind === 'value' ? p.value : undefined;
      };
      const hintToken = value('id_token_hint');
      const hint = hintToken === undefined ? undefined : await readHint(ctx, hintToken);
      if (hintToken !== undefined && hint === undefined)
        throw refused('The sign-in named by the application (id_token_hint) was not issued here.');
      const clientId = value('client_id');
      if (hint !== undefined && clientId !== undefined && clientId !== hint.clientId)
        throw refused('client_id and id_token_hint name different applications.');
      const client = ctx.directory.client(hint?.clientId ?? clientId ?? '');
      const target = value('post_logout_redirect_uri');
      if (
        target !== undefined &&
        (client === undefined || !(client.post_logout_redirect_uris ?? []).includes(target))
      ) {
        throw refused(
          'The address to return to (post_logout_redirect_uri) is not registered for this application.',
        );
      }
      const state = value('state');

      // A hint speaks for the session only when it names the session's user (Logout 1.0 section 2):
      // anyone holding an id_token of their own could otherwise sign a victim out with a link.
      const session = hint === undefined ? undefined : await currentSession(ctx, request);
      const hintSpeaks =
        hint !== undefined && (session === undefined || session.user === hint.user);
      if (!hintSpeaks && !(request.method === 'POST' && value('confirm') === 'yes')) {
        const hidden = Object.entries({
          client_id: client?.client_id,
          post_logout_redirect_uri: target,
          state,
        }).map(([k, v]) =>
          v === undefined ? html`` : html`<input type="hidden" name="${k}" value="${v}">`,
        );
        return sendPage(
          reply,
          'Sign out',
          html`<h1 id="sign-out-title">Sign out?</h1>
<p class="lead">${client === undefined ? html`End your sign-in here.` : html`<strong>${client.display_name}</strong> asks to end your sign-in here.`}</p>
<form method="post" action="/end-session">${hidden}<input type="hidden" name="confirm" value="yes">
<button type="submit" id="sign-out">Sign out</button></form>`,
          target !== undefined ? { formTargets: [new URL(target).origin] } : {},
        );
      }

      const user = await endSession(ctx, request, reply);
      request.log.info({ client_id: client?.client_id, user }, 'signed out');
      if (target === undefined) {
        return sendPage(
          reply,
          'Signed out',
          html`<h1 id="signed-out">Signed out</h1><p class="lead">You can close this page.</p>`,
        );
      }
      const url = new URL(target);
      if (state !== undefined) url.searchParams.append('state', state);
      return reply
        .code(303)
        .header('location', url.toString())
        .header('cache-control', 'no-store')
        .header('referrer-policy', 'no-referrer')
        .send();
    };
    app.get('/end-session', handler);
    app.post('/end-session', handler);
  };
}
