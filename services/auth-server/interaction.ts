// Pending sign-in/consent interactions and their protections: each is bound to the browser that
// started it (an HttpOnly cookie whose SHA-256 the interaction holds) and every form carries the
// interaction's CSRF token. A form that fails either check is refused with a 403 page.
//
// Until someone signs in, an interaction is held by the browser, not the server: it is sealed
// (JWE, dir + A256GCM, under a key derived from the signing keys) into the form or the account
// cookie. An anonymous flood of GET /auth or GET /consents therefore stores nothing, and cannot
// push security state (throttles, revocations) out of a full store. Only a successful sign-in,
// which the password throttle bounds, creates server-side state: the interaction moves to a new
// random id bound to a new cookie, so a cookie or an interaction planted in the victim's browser
// before the sign-in (fixation) is worth nothing after it. Over https the cookies carry the
// __Host- prefix (Secure, Path=/, no Domain: no sibling or parent domain can set them).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { readCookie, serializeCookie } from '../../lib/web/cookies.ts';
import type { AuthContext } from './context.ts';
import { PageError } from './errors.ts';
import { randomToken, safeEqual, sha256 } from './random.ts';
import { seal, unseal } from './sealed-token.ts';
import { interactionSchema, type Interaction } from './stores/types.ts';

const BROWSER_COOKIE = 'portcullis_browser';

/** A cookie's name: with the __Host- prefix whenever cookies are Secure (an https issuer). */
export function cookieName(ctx: Pick<AuthContext, 'secureCookies'>, name: string): string {
  return ctx.secureCookies ? `__Host-${name}` : name;
}

function setBrowserCookie(ctx: AuthContext, reply: FastifyReply): string {
  const value = randomToken();
  reply.header(
    'set-cookie',
    serializeCookie(cookieName(ctx, BROWSER_COOKIE), value, {
      path: '/',
      secure: ctx.secureCookies,
    }),
  );
  return sha256(value);
}

/** The browser-binding value: the existing cookie or a new one (set on the reply). */
export function bindBrowser(
  ctx: AuthContext,
  request: FastifyRequest,
  reply: FastifyReply,
): string {
  const existing = readCookie(request.headers.cookie, cookieName(ctx, BROWSER_COOKIE));
  if (existing !== undefined && existing.length >= 43) return sha256(existing);
  return setBrowserCookie(ctx, reply);
}

/** A stored interaction's id: 256 random bits. */
const STORED_ID = /^[A-Za-z0-9_-]{43}$/;
/** A sealed interaction: JWE compact serialization with an empty encrypted key (alg dir). */
const SEALED =
  /^[A-Za-z0-9_-]{1,512}\.\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{1,8000}\.[A-Za-z0-9_-]{22}$/;

/** Seals an interaction that has no signed-in user into an opaque string for the browser to carry. */
export async function sealInteraction(ctx: AuthContext, ix: Interaction): Promise<string> {
  if (ix.user !== undefined) throw new Error('a signed-in interaction is stored, never sealed');
  return seal(ctx.keys, JSON.stringify(ix));
}

/** The sealed interaction, or undefined when it was not sealed by a key this server holds. */
async function openSealed(ctx: AuthContext, sealed: string): Promise<Interaction | undefined> {
  const plaintext = await unseal(ctx.keys, sealed);
  if (plaintext === undefined) return undefined;
  try {
    const parsed = interactionSchema.safeParse(JSON.parse(plaintext));
    return parsed.success && parsed.data.user === undefined ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** True for an interaction the server holds (after sign-in); false for a sealed one. */
export function isStored(id: string): boolean {
  return STORED_ID.test(id);
}

/**
 * Completes an interaction exactly once: a stored one is taken atomically (a second completion
 * gets the expired page). A sealed one holds no state to consume; each use of it needs the
 * password again.
 */
export async function completeInteraction(ctx: AuthContext, id: string): Promise<void> {
  if (isStored(id) && (await ctx.stores.interactions.take(id)) === undefined) {
    throw new PageError(400, 'This page has expired', 'This sign-in was already completed.');
  }
}

/** Records a failed sign-in on the interaction; returns the id or sealed value to carry on with. */
export async function markFailed(ctx: AuthContext, id: string, ix: Interaction): Promise<string> {
  const failed = { ...ix, failed: true };
  if (!isStored(id)) return sealInteraction(ctx, failed);
  await ctx.stores.interactions.put(id, failed, Math.max(1, ix.expiresAt - ctx.now()));
  return id;
}

/**
 * After a successful sign-in: the interaction `id` is completed and `next` is stored under a new
 * id, bound to a new browser cookie (set on the reply). Returns the new id.
 */
export async function renewAfterSignIn(
  ctx: AuthContext,
  reply: FastifyReply,
  id: string,
  next: Interaction,
  ttlMs: number,
): Promise<string> {
  if (isStored(id) && (await ctx.stores.interactions.take(id)) === undefined) throw expired();
  const renewed = newInteractionId();
  await ctx.stores.interactions.put(
    renewed,
    { ...next, browserHash: setBrowserCookie(ctx, reply) },
    ttlMs,
  );
  return renewed;
}

const expired = () =>
  new PageError(
    400,
    'This page has expired',
    'This sign-in page is no longer valid. Start again from the application.',
  );
const forged = () =>
  new PageError(
    403,
    'Request refused',
    'This form was not sent from this site or has expired (CSRF check failed). Start again from the application.',
  );

type Kind = Interaction['kind'];

/** Loads an interaction of the given kind that belongs to this browser; throws a PageError otherwise. */
export async function loadInteraction<K extends Kind>(
  ctx: AuthContext,
  request: FastifyRequest,
  id: string | undefined,
  kind: K,
): Promise<Extract<Interaction, { kind: K }>> {
  if (id === undefined) throw expired();
  let ix: Interaction | undefined;
  if (STORED_ID.test(id)) ix = await ctx.stores.interactions.get(id);
  else if (SEALED.test(id)) ix = await openSealed(ctx, id);
  else throw expired();
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
