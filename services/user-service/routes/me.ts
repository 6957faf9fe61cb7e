// GET /me: the resource server endpoint (RFC 6750). Requires a Bearer access token (RFC 9068 JWT)
// verified against the auth server's JWKS with an algorithm allow-list, issuer, audience, typ and
// expiry; scope `profile` returns the signed-in user's profile as released in the token.
// Errors: 401 + WWW-Authenticate (error="invalid_token" when a token was presented),
// 400 invalid_request for a malformed Authorization header, 403 insufficient_scope.
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { z } from 'zod';
import { bearerChallenge, bearerFromHeader } from '../../../lib/web/bearer.ts';

export interface ResourceServerSettings {
  readonly issuer: string;
  readonly audience: string;
  /** JWKS of the auth server, e.g. http://localhost:9000/jwks.json. */
  readonly jwksUrl: string;
}

/** Claims of a verified access token (RFC 9068 section 2.2) plus the profile claims it may carry. */
export const accessTokenClaimsSchema = z.object({
  iss: z.string(),
  sub: z.string().min(1),
  aud: z.union([z.string(), z.array(z.string())]),
  exp: z.number(),
  iat: z.number(),
  jti: z.string(),
  client_id: z.string(),
  scope: z.string().default(''),
  name: z.string().optional(),
  given_name: z.string().optional(),
  family_name: z.string().optional(),
  preferred_username: z.string().optional(),
  picture: z.string().optional(),
  locale: z.string().optional(),
  zoneinfo: z.string().optional(),
  email: z.string().optional(),
  email_verified: z.boolean().optional(),
});
export type VerifiedAccessToken = z.infer<typeof accessTokenClaimsSchema>;

export type TokenCheck =
  | { readonly ok: true; readonly claims: VerifiedAccessToken }
  | { readonly ok: false; readonly reason: string; readonly unavailable?: boolean };

export type AccessTokenVerifier = (token: string) => Promise<TokenCheck>;

/** Verifies tokens with keys from `keys` (a remote JWKS in production, a local set in tests). */
export function createAccessTokenVerifier(
  settings: ResourceServerSettings,
  keys?: JWTVerifyGetKey,
): AccessTokenVerifier {
  const jwks =
    keys ??
    createRemoteJWKSet(new URL(settings.jwksUrl), {
      timeoutDuration: 2000,
      cooldownDuration: 1000,
    });
  return async (token) => {
    try {
      const { payload } = await jwtVerify(token, jwks, {
        issuer: settings.issuer,
        audience: settings.audience,
        algorithms: ['ES256', 'RS256'],
        typ: 'at+jwt',
        requiredClaims: ['exp', 'iat', 'sub', 'jti'],
      });
      const claims = accessTokenClaimsSchema.safeParse(payload);
      return claims.success
        ? { ok: true, claims: claims.data }
        : { ok: false, reason: 'the token lacks required claims' };
    } catch (err) {
      if (err instanceof joseErrors.JWTExpired)
        return { ok: false, reason: 'the access token expired' };
      if (err instanceof joseErrors.JWTClaimValidationFailed)
        return { ok: false, reason: `the access token is not valid here (${err.claim})` };
      if (
        err instanceof joseErrors.JWKSTimeout ||
        (err instanceof Error && err.name === 'TypeError')
      ) {
        return { ok: false, reason: 'the key set could not be fetched', unavailable: true };
      }
      return { ok: false, reason: 'the access token is invalid' };
    }
  };
}

const REALM = 'user-service';
const PROFILE_CLAIMS = [
  'name',
  'given_name',
  'family_name',
  'preferred_username',
  'picture',
  'locale',
  'zoneinfo',
  'email',
  'email_verified',
] as const;

function bearerError(
  reply: FastifyReply,
  status: number,
  error: string | undefined,
  description: string,
  scope?: string,
): FastifyReply {
  return reply
    .code(status)
    .header('www-authenticate', bearerChallenge(REALM, error, description, scope))
    .header('cache-control', 'no-store')
    .type('application/json; charset=utf-8')
    .send(
      error === undefined
        ? { error: 'unauthorized', error_description: description }
        : { error, error_description: description },
    );
}

export function meRoute(verify: AccessTokenVerifier): FastifyPluginAsync {
  return async (app) => {
    app.get('/me', async (request, reply) => {
      const bearer = bearerFromHeader(request.headers.authorization);
      // RFC 6750 3.1: no credentials -> a bare challenge without an error code.
      if (bearer.kind === 'none')
        return bearerError(reply, 401, undefined, 'a Bearer access token is required');
      if (bearer.kind === 'malformed')
        return bearerError(reply, 400, 'invalid_request', 'the Authorization header is malformed');
      const check = await verify(bearer.token);
      if (!check.ok) {
        if (check.unavailable === true) {
          request.log.warn({ reason: check.reason }, 'token verification unavailable');
          return reply.code(503).header('retry-after', '1').type('application/problem+json').send({
            type: 'about:blank',
            title: 'Service Unavailable',
            status: 503,
            detail: check.reason,
          });
        }
        return bearerError(reply, 401, 'invalid_token', check.reason);
      }
      const scopes = check.claims.scope.split(' ');
      if (!scopes.includes('profile'))
        return bearerError(
          reply,
          403,
          'insufficient_scope',
          'the profile scope is required',
          'profile',
        );
      const profile: Record<string, unknown> = { sub: check.claims.sub };
      for (const claim of PROFILE_CLAIMS)
        if (check.claims[claim] !== undefined) profile[claim] = check.claims[claim];
      return reply.header('cache-control', 'no-store').send(profile);
    });
  };
}
