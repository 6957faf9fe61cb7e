// Optional sign-in sessions (AUTH_SIGN_IN_SESSIONS, off by default): after a password sign-in the
// browser gets an HttpOnly SameSite=Lax cookie (__Host- over https) whose SHA-256 names the
// session in the store; the next authorization, for any client of this server, skips the sign-in
// page while the session lives (idle and absolute lifetimes). Consent rules do not change.
// RP-initiated logout, a revoked consent, or the user leaving the users file ends it.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { readCookie, serializeCookie } from '../../lib/web/cookies.ts';
import type { AuthContext } from './context.ts';
import { cookieName } from './interaction.ts';
import { randomToken, sha256 } from './random.ts';
import type { SignInSession } from './stores/types.ts';

const SESSION_COOKIE = 'portcullis_session';

/** Fastify adds each set-cookie header to those already set on the reply. */
function appendCookie(reply: FastifyReply, cookie: string): void {
  reply.header('set-cookie', cookie);
}

/** Starts a session for a user who just signed in with their password (no-op when sessions are off). */
export async function startSession(
  ctx: AuthContext,
  reply: FastifyReply,
  user: string,
  authTime: number,
): Promise<void> {
  const settings = ctx.settings.sessions;
  if (settings === undefined) return;
  const value = randomToken();
  const now = ctx.now();
  await ctx.stores.sessions.create(
    sha256(value),
    { user, authTime, endsAt: now + settings.maxAgeSeconds * 1000 },
    now,
    settings.idleSeconds * 1000,
  );
  appendCookie(
    reply,
    serializeCookie(cookieName(ctx, SESSION_COOKIE), value, {
      path: '/',
      secure: ctx.secureCookies,
    }),
  );
}

/** This browser's live session, for a user who still exists; undefined when off or none. */
export async function currentSession(
  ctx: AuthContext,
  request: FastifyRequest,
): Promise<SignInSession | undefined> {
  const settings = ctx.settings.sessions;
  if (settings === undefined) return undefined;
  const value = readCookie(request.headers.cookie, cookieName(ctx, SESSION_COOKIE));
  if (value === undefined || value.length < 43) return undefined;
  const session = await ctx.stores.sessions.touch(
    sha256(value),
    ctx.now(),
    settings.idleSeconds * 1000,
  );
  if (session === undefined) return undefined;
  if (ctx.directory.user(session.user) === undefined) {
    await ctx.stores.sessions.delete(sha256(value));
    return undefined;
  }
  return session;
}

/** Ends this browser's session and clears its cookie; returns the user it belonged to. */
export async function endSession(
  ctx: AuthContext,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<string | undefined> {
  const value = readCookie(request.headers.cookie, cookieName(ctx, SESSION_COOKIE));
  if (value === undefined || value.length < 43) return undefined;
  const session =
    ctx.settings.sessions === undefined
      ? undefined
      : await ctx.stores.sessions.touch(sha256(value), ctx.now(), 1);
  await ctx.stores.sessions.delete(sha256(value));
  appendCookie(
    reply,
    serializeCookie(cookieName(ctx, SESSION_COOKIE), '', {
      path: '/',
      secure: ctx.secureCookies,
      maxAge: 0,
    }),
  );
  return session?.user;
}
