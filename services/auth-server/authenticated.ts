// What follows once the user is known (a password sign-in, or a live sign-in session): straight
// back to the client with a code when the client is first-party or consent is stored for every
// requested scope (and the request did not say prompt=consent), else the consent step.
import type { FastifyReply } from 'fastify';
import type { RegisteredClient } from '../../lib/config/client-registry.ts';
import { redirectWithCode } from './authorization-response.ts';
import type { AuthContext } from './context.ts';
import { completeInteraction, renewAfterSignIn } from './interaction.ts';
import { randomToken } from './random.ts';
import type { Interaction } from './stores/types.ts';

type AuthorizeInteraction = Extract<Interaction, { kind: 'authorize' }>;

/** True when no consent page is needed for this request. */
export async function consentCovers(
  ctx: AuthContext,
  client: RegisteredClient,
  ix: AuthorizeInteraction,
  user: string,
): Promise<boolean> {
  if (ix.forceConsent === true) return false;
  if (client.skip_consent === true) return true;
  const consent = await ctx.stores.consents.get(user, ix.clientId);
  return consent !== undefined && ix.scope.every((s) => consent.scopes.includes(s));
}

/**
 * `id` is the interaction's current id ('' when none was handed out, e.g. after a session);
 * `covered` is consentCovers' answer when the caller already asked it.
 */
export async function continueAsUser(
  ctx: AuthContext,
  reply: FastifyReply,
  id: string,
  ix: AuthorizeInteraction,
  client: RegisteredClient,
  user: string,
  authTime: number,
  covered?: boolean,
): Promise<FastifyReply> {
  if (covered ?? (await consentCovers(ctx, client, ix, user))) {
    if (id !== '') await completeInteraction(ctx, id);
    return redirectWithCode(ctx, reply, { ...ix, user, authTime });
  }
  // A new id, binding cookie and CSRF token for the consent step: nothing from before the
  // sign-in (possibly planted by someone else) carries over.
  const ttlMs = Math.max(1, ix.expiresAt - ctx.now());
  const renewed = await renewAfterSignIn(
    ctx,
    reply,
    id,
    { ...ix, user, authTime, failed: false, csrf: randomToken() },
    ttlMs,
  );
  return reply
    .code(303)
    .header('location', `/auth/consent?interaction=${encodeURIComponent(renewed)}`)
    .send();
}
