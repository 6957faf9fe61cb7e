// Pending sign-in/consent interactions and their protections: each is bound to the browser that
// started it (an HttpOnly cookie whose SHA-256 the interaction stores) and every form carries the
// interaction's CSRF token. A form that fails either check is refused with a 403 page. A
// successful sign-in moves the interaction to a new id bound to a new cookie, so a cookie or an
// interaction id planted in the victim's browser before the sign-in (fixation) is worth nothing
// after it. Over https the cookies carry the __Host- prefix (Secure, Path=/, no Domain: no
// sibling or parent domain can set them).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { readCookie, serializeCookie } from './cookies.ts';
import type { AuthContext } from './context.ts';
import { PageError } from './errors.ts';
import { randomToken, safeEqual, sha256 } from './random.ts';
import type { Interaction } from './stores/types.ts';

const BROWSER_COOKIE = 'portcullis_browser';

/** A cookie's name: with the __Host- prefix whenever cookies are Secure (an https issuer). */
export function cookieName(ctx: Pick<AuthContext, 'secureCookies'>, name: string): string {
  return ctx.secureCookies ? `__Host-${name}` : name;
}

function setBrowserCookie(ctx: AuthContext, reply: FastifyReply): string {
  const value = randomToken();
  reply.header('set-cookie', serializeCookie(cookieName(ctx, BROWSER_COOKIE), value, { path: '/', secure: ctx.secureCookies }));
  return sha256(value);
}

/** The browser-binding value: the existing cookie or a new one (set on the reply). */
export function bindBrowser(ctx: AuthContext, request: FastifyRequest, reply: FastifyReply): string {
  const existing = readCookie(request.headers.cookie, cookieName(ctx, BROWSER_COOKIE));
  if (existing !== undefined && existing.length >= 43) return sha256(existing);
  return setBrowserCookie(ctx, reply);
}

/**
 * After a successful sign-in: the interaction `id` is removed and `next` is stored under a new id,
 * bound to a new browser cookie (set on the reply). Returns the new id.
 */
export async function renewAfterSignIn(ctx: AuthContext, reply: FastifyReply, id: string, next: Interaction, ttlMs: number): Promise<string> {
  if ((await ctx.stores.interactions.take(id)) === undefined) throw expired();
  const renewed = newInteractionId();
  await ctx.stores.interactions.put(renewed, { ...next, browserHash: setBrowserCookie(ctx, reply) }, ttlMs);
  return renewed;
}

const expired = () =>
  new PageError(400, 'This page has expired', 'This sign-in page is no longer valid. Start again from the application.');
const forged = () =>
  new PageError(403, 'Request refused', 'This form was not sent from this site or has expired (CSRF check failed). Start again from the application.');

type Kind = Interaction['kind'];

/** Loads an interaction of the given kind that belongs to this browser; throws a PageError otherwise. */
export async function loadInteraction<K extends Kind>(
  ctx: AuthContext,
  request: FastifyRequest,
  id: string | undefined,
  kind: K,
): Promise<Extract<Interaction, { kind: K }>> {
  if (id === undefined || !/^[A-Za-z0-9_-]{43}$/.test(id)) throw expired();
  const ix = await ctx.stores.interactions.get(id);
  if (ix === undefined || ix.kind !== kind || ix.expiresAt <= ctx.now()) throw expired();
  const cookie = readCookie(request.headers.cookie, cookieName(ctx, BROWSER_COOKIE));
  if (cookie === undefined || !safeEqual(sha256(cookie), ix.browserHash)) throw forged();
  return ix as Extract<Interaction, { kind: K }>;
}

/** Throws the 403 page unless the submitted CSRF token is the interaction's. */
export function checkCsrf(ix: Interaction, submitted: string | undefined): void {
  if (submitted === undefined || submitted === '' || !safeEqual(submitted, ix.csrf)) throw forged();
}

export function newInteractionId(): string {
  return randomToken();
}
