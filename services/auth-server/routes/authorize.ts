// GET /auth: the authorization endpoint (RFC 6749 4.1.1, RFC 9700 2.1, RFC 7636).
// Order matters: client_id and redirect_uri are checked first and their errors are an HTML page,
// never a redirect (no open redirector). Every later error goes back to the client's redirect URI
// with error, state and iss. A valid request starts an interaction, sealed into the sign-in form
// (nothing is stored for an anonymous request), and shows the sign-in page, unless a sign-in
// session (off by default) already names the user.
import type { FastifyPluginAsync } from 'fastify';
import { redirectWithError } from '../authorization-response.ts';
import type { AuthContext } from '../context.ts';
import { OAuthError, PageError } from '../errors.ts';
import { bindBrowser, sealInteraction } from '../interaction.ts';
import { sendSignInPage } from '../pages/sign-in-page.ts';
import { repeatedNames, single, toParams } from '../params.ts';
import { randomToken } from '../random.ts';
import { redirectUriAllowed } from '../../../lib/config/redirect-uri.ts';
import { consentCovers, continueAsUser } from '../authenticated.ts';
import { parseOidcRequest, type OidcRequest } from '../oidc-request.ts';
import { currentSession } from '../sign-in-session.ts';
import type { Interaction } from '../stores/types.ts';

type AuthorizeInteraction = Extract<Interaction, { kind: 'authorize' }>;
import { OFFLINE_ACCESS, parseScope } from '../scopes.ts';

/** BASE64URL(SHA-256(verifier)) is always 43 characters (RFC 7636 4.2). */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
const MAX_STATE_LENGTH = 2048;

export function authorizeRoute(ctx: AuthContext): FastifyPluginAsync {
  return async (app) => {
    app.get('/auth', async (request, reply) => {
      const params = toParams(request.query) ?? {};
      const clientIdParam = single(params, 'client_id');
      if (clientIdParam.kind !== 'value') {
        throw new PageError(
          400,
          'Unknown application',
          'The request does not name exactly one application (client_id).',
        );
      }
      const client = ctx.directory.client(clientIdParam.value);
      if (client === undefined)
        throw new PageError(
          400,
          'Unknown application',
          'The application that sent you here is not registered.',
        );
      const redirectParam = single(params, 'redirect_uri');
      if (redirectParam.kind !== 'value' || !redirectUriAllowed(client, redirectParam.value)) {
        throw new PageError(
          400,
          'Invalid redirect address',
          'The address to return to (redirect_uri) is missing or is not registered for this application, so you are not sent back.',
        );
      }
      const stateParam = single(params, 'state');
      const target = {
        redirectUri: redirectParam.value,
        ...(stateParam.kind === 'value' && stateParam.value.length <= MAX_STATE_LENGTH
          ? { state: stateParam.value }
          : {}),
      };
      const fail = (error: OAuthError) =>
        redirectWithError(ctx, reply, target, error.error, error.message);

      const repeated = repeatedNames(params);
      if (repeated.length > 0)
        return fail(
          new OAuthError('invalid_request', `parameter repeated: ${repeated.join(', ')}`),
        );
      if (stateParam.kind === 'value' && stateParam.value.length > MAX_STATE_LENGTH) {
        return fail(
          new OAuthError('invalid_request', `state is longer than ${MAX_STATE_LENGTH} characters`),
        );
      }
      const responseType = single(params, 'response_type');
      if (responseType.kind !== 'value')
        return fail(new OAuthError('invalid_request', 'response_type is required'));
      if (responseType.value !== 'code')
        return fail(
          new OAuthError('unsupported_response_type', 'only response_type=code is supported'),
        );
      if (!client.grant_types.includes('authorization_code')) {
        return fail(
          new OAuthError(
            'unauthorized_client',
            'the client may not use the authorization code grant',
          ),
        );
      }

      const scopeParam = single(params, 'scope');
      const asked = scopeParam.kind === 'value' ? parseScope(scopeParam.value) : [...client.scopes];
      // offline_access from a client that may not refresh is ignored (OpenID Connect Core 11).
      const scope = client.grant_types.includes('refresh_token')
        ? asked
        : asked?.filter((s) => s !== OFFLINE_ACCESS);
      if (scope === undefined || scope.length === 0)
        return fail(new OAuthError('invalid_scope', 'scope is malformed or empty'));
      const unknown = scope.filter((s) => !client.scopes.includes(s));
      if (unknown.length > 0)
        return fail(
          new OAuthError(
            'invalid_scope',
            `scope not allowed for this client: ${unknown.join(' ')}`,
          ),
        );

      const challenge = single(params, 'code_challenge');
      const method = single(params, 'code_challenge_method');
      if (challenge.kind === 'value') {
        if (method.kind !== 'value' || method.value !== 'S256') {
          return fail(
            new OAuthError(
              'invalid_request',
              'code_challenge_method must be S256 (plain is not supported)',
            ),
          );
        }
        if (!S256_CHALLENGE.test(challenge.value))
          return fail(new OAuthError('invalid_request', 'code_challenge is not a S256 challenge'));
      } else if (method.kind === 'value') {
        return fail(
          new OAuthError('invalid_request', 'code_challenge_method without code_challenge'),
        );
      } else if (client.token_endpoint_auth_method === 'none') {
        return fail(
          new OAuthError(
            'invalid_request',
            'PKCE (code_challenge with S256) is required for public clients',
          ),
        );
      }

      let oidc: OidcRequest;
      try {
        oidc = parseOidcRequest(params);
      } catch (err) {
        if (err instanceof OAuthError) return fail(err);
        throw err;
      }
      const csrf = randomToken();
      const ix: AuthorizeInteraction = {
        kind: 'authorize',
        clientId: client.client_id,
        redirectUri: target.redirectUri,
        scope,
        ...(target.state !== undefined ? { state: target.state } : {}),
        ...(challenge.kind === 'value' ? { codeChallenge: challenge.value } : {}),
        ...(oidc.nonce !== undefined ? { nonce: oidc.nonce } : {}),
        ...(oidc.prompt.includes('consent') ? { forceConsent: true } : {}),
        ...(oidc.loginHint !== undefined ? { loginHint: oidc.loginHint } : {}),
        browserHash: bindBrowser(ctx, request, reply),
        csrf,
        expiresAt: ctx.now() + ctx.settings.interactionTtlSeconds * 1000,
      };
      // A live sign-in session (when turned on) stands for the password, unless the request asks
      // for a new sign-in (prompt=login) or the sign-in is older than max_age.
      const session = await currentSession(ctx, request);
      if (
        session !== undefined &&
        !oidc.prompt.includes('login') &&
        (oidc.maxAge === undefined || ctx.now() - session.authTime <= oidc.maxAge * 1000)
      ) {
        const covered = await consentCovers(ctx, client, ix, session.user);
        if (oidc.prompt.includes('none') && !covered) {
          return fail(
            new OAuthError(
              'consent_required',
              'the user has not allowed this application these scopes',
            ),
          );
        }
        return continueAsUser(ctx, reply, '', ix, client, session.user, session.authTime, covered);
      }
      // Without a usable session the sign-in page must show: prompt=none cannot be answered.
      if (oidc.prompt.includes('none'))
        return fail(new OAuthError('login_required', 'the user must sign in'));

      const id = await sealInteraction(ctx, ix);
      return sendSignInPage(reply, {
        action: '/auth/sign-in',
        interactionId: id,
        csrf,
        clientName: client.display_name,
        failed: false,
        ...(oidc.loginHint !== undefined ? { username: oidc.loginHint } : {}),
        redirectOrigin: new URL(target.redirectUri).origin,
      });
    });
  };
}
