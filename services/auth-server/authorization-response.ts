// The end of an authorization request: the redirect to the client with either a code or an error,
// always with state and iss (RFC 6749 4.1.2, RFC 9207). Codes are 256-bit random values stored by
// hash and bound to client, redirect_uri, PKCE challenge, scope and user.
import type { FastifyReply } from 'fastify';
import type { AuthContext } from './context.ts';
import type { OAuthErrorCode } from './errors.ts';
import { randomToken, sha256 } from './random.ts';

export interface RedirectTarget {
  readonly redirectUri: string;
  readonly state?: string;
}

function redirectTo(
  ctx: AuthContext,
  reply: FastifyReply,
  target: RedirectTarget,
  params: Record<string, string>,
): FastifyReply {
  const url = new URL(target.redirectUri);
  for (const [k, v] of Object.entries(params)) url.searchParams.append(k, v);
  if (target.state !== undefined) url.searchParams.append('state', target.state);
  url.searchParams.append('iss', ctx.settings.issuer);
  return reply
    .code(303)
    .header('location', url.toString())
    .header('cache-control', 'no-store')
    .header('referrer-policy', 'no-referrer')
    .send();
}

export function redirectWithError(
  ctx: AuthContext,
  reply: FastifyReply,
  target: RedirectTarget,
  error: OAuthErrorCode,
  description: string,
): FastifyReply {
  return redirectTo(ctx, reply, target, { error, error_description: description });
}

export interface CodeGrant extends RedirectTarget {
  readonly clientId: string;
  readonly scope: readonly string[];
  readonly user: string;
  readonly authTime: number;
  readonly codeChallenge?: string;
  readonly nonce?: string;
}

export async function redirectWithCode(
  ctx: AuthContext,
  reply: FastifyReply,
  grant: CodeGrant,
): Promise<FastifyReply> {
  const code = randomToken();
  const ttlMs = ctx.settings.codeTtlSeconds * 1000;
  await ctx.stores.codes.put(
    sha256(code),
    {
      clientId: grant.clientId,
      redirectUri: grant.redirectUri,
      scope: [...grant.scope],
      user: grant.user,
      authTime: grant.authTime,
      ...(grant.codeChallenge !== undefined ? { codeChallenge: grant.codeChallenge } : {}),
      ...(grant.nonce !== undefined ? { nonce: grant.nonce } : {}),
      expiresAt: ctx.now() + ttlMs,
    },
    ttlMs,
  );
  return redirectTo(ctx, reply, grant, { code });
}
